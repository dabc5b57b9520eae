/* SPDX-License-Identifier: MIT
 *
 * Storage in the kernel: the storage core's side (store/ is the portable layer). It owns
 * the data disk's synchronous I/O, SQLite's bounded heap (kernel heap, tag "store"), the
 * database and the storage engine, and it runs on one core: the highest started core when
 * there are several (it then runs nothing else), or core 0 from its loop, within
 * storage.pass_budget_us per pass, when there is one. Its first pass brings storage up
 * (store/boot.h: recognise, format a blank disk, create or check the database) and starts
 * the restore of every data core's sessions; a disk that is missing, foreign, damaged or
 * of another layout stops the machine with the reason when storage.required is true, and
 * otherwise tells the data cores to serve without persistence (STORE_K_OFF).
 *
 * The watchdog: the storage core's long waits are for the disk (each bounded by
 * storage.io_timeout_ms) and long database statements; both say they are alive through
 * kloop_progress, so a slow disk is not taken for a stuck core.
 *
 * Kernel-only; one instance (static). kstore_init on the boot core before the cores start;
 * everything else on the storage core.
 */
#ifndef KERNEL_KSTORE_H
#define KERNEL_KSTORE_H

#include "drivers/blk.h"
#include "kernel/loop.h"
#include "lib/compiler.h"

struct kstore_config {
	struct blk_dev *blk;       /* the data disk (linked), or NULL: this machine has none */
	const char *disk_name;     /* for the console, e.g. "virtio-blk0" (linked) */
	uint32_t core;             /* the storage core */
	uint32_t n_data;           /* data cores 0 .. n_data - 1 (their shards' count) */
	bool dedicated;            /* the storage core runs nothing else */
	bool required;             /* storage unusable: stop the machine (storage.required) */
	/* One message to data core dst: 0, or -E_AGAIN without mesh credit. */
	int (*send)(uint32_t dst, uint16_t kind, const void *data, uint32_t len);
	uint32_t payload_max;      /* bytes one message carries */
	uint8_t home_key[16];      /* the shards' home-core key (copied) */
	uint64_t (*now_ns)(void);
	int64_t (*wall_ms)(void);  /* Unix milliseconds, 0 unknown */
	uint32_t report_ms;        /* the storage line's period; 0 never */
	struct kstore_knobs {      /* development builds' command line; 0: the configuration's */
		uint32_t backup_first_s, backup_interval_s; /* storage.backup_first_s / _interval_s */
		uint32_t retention_s;  /* storage.telemetry_retention_days, in seconds */
		uint32_t checkpoint_pages; /* storage.checkpoint_pages */
	} knobs;
};

/* Memory and settings (boot core, before the cores start; no disk I/O). 0, -E_INVAL,
 * -E_NOMEM (logged). Without a disk it only remembers to say "off" on its first pass. */
MUST_CHECK int kstore_init(const struct kstore_config *cfg);
/* The data cores that serve, final (core 0, once the cores started; dev_serve_alone may
 * have shrunk them to one): the storage core begins only after this (release/acquire). */
void kstore_go(uint32_t n_data);
/* Add the storage handler to the storage core's loop (that core, before its loop runs). */
void kstore_loop_add(struct kloop *l);
/* A storage message from data core src (kinds 0x0300-0x037f, data borrowed): the storage
 * core's mesh handler. */
void kstore_input(uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len);
/* One core: the data core's link hands its messages here (queued for the next pass).
 * 0 or -E_AGAIN (full). */
MUST_CHECK int kstore_local(uint16_t kind, const void *data, uint32_t len);
/* The data disk's capacity grew (the storage core's configuration-change handler): the
 * layout grows to it without a restart. */
void kstore_disk_grew(void);
/* Add storage's figures (kernel/node/opsd.h: OPSD_F_DB_*, DISK_ERRORS, STORE_FAILED,
 * STORE_LAGGING) into f; nothing when storage is not running. On the storage core. */
struct opsd_figures;
void kstore_figures(struct opsd_figures *f);
/* Log the storage line now (storage core). */
void kstore_report(void);

#endif
