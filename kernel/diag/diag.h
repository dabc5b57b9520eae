/* SPDX-License-Identifier: MIT
 *
 * The diagnostics boot mode (urmqtt.mode=diag, the ISO's "diagnostics" entry): report the
 * machine and measure it, then return so the platform powers off. What it reports: the CPU
 * (the platform fills struct diag_cpu), memory, every PCI function, the virtio-net device
 * (MAC, link, queue pairs) and every virtio-blk / virtio-scsi disk (capacity, block size,
 * read-only); what it measures: memory copy throughput, each disk's sequential read
 * throughput (bounded), P-256 ECDSA sign and verify, X25519 and AES-128-GCM / SHA-256
 * throughput through the code the broker uses (PSA with our curve driver, mbedTLS's GCM
 * and SHA-256), each for a bounded time. Then a human summary and the same as one JSON
 * object on one console line: "DIAG-JSON-BEGIN <object> DIAG-JSON-END", which also gives
 * the bounds used ("limits").
 * Writes to a disk only into the largest run no partition of its valid GPT covers
 * (kernel/diag/gpt_free.h), at most diag.disk_write_mb, and only after the operator typed
 * WIPE at the console prompt within the prompt's time (diag.wipe_prompt_s); otherwise
 * nothing is written, and the JSON says why ("skipped").
 * Boot core only, once, after the heap and the CSPRNG exist, before any other core runs
 * and before any other driver touched the devices (it probes them itself; the broker is
 * never built in this mode). Never stops the boot on a broken device: reported, skipped.
 */
#ifndef KERNEL_DIAG_DIAG_H
#define KERNEL_DIAG_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/pci.h"
#include "kernel/console_in.h"

/* The run's operational bounds (measurement time, sample sizes, the WIPE prompt) come from
 * the configuration's [diag] section (kernel/diag/limits.c, struct diag_limits). These two
 * are array sizes, compile-time bounds on purpose: the disks probed and the CPU features
 * listed (static arrays of the run and of struct diag_cpu). */
#define DIAG_MAX_DISKS 4u
#define DIAG_MAX_FEATURES 16u

struct diag_cpu {
	const char *arch;                    /* "x86_64", "aarch64" (static) */
	char vendor[16];                     /* CPUID vendor string, or the MIDR implementer's name */
	char model[64];                      /* brand string, or "MIDR 0x..." */
	uint32_t count;                      /* CPUs the firmware lists (MADT / device tree) */
	uint64_t clock_hz;                   /* the kernel's counter frequency (TSC, CNTFRQ) */
	uint32_t n_features;
	const char *features[DIAG_MAX_FEATURES]; /* static names: "aes", "sha", "rdrand", ... */
};

/* The platform's CPU description: name (static) is added to c's features when has is
 * true and there is room (DIAG_MAX_FEATURES). */
void diag_cpu_feature(struct diag_cpu *c, bool has, const char *name);

struct diag_platform {
	struct diag_cpu cpu;
	uint64_t mem_total;                  /* bytes of RAM the firmware's map gives as usable */
	uint64_t mem_free;                   /* bytes the page allocator has free now */
	struct pci_bus *bus;                 /* scanned, virtio BARs mapped; NULL: none (linked) */
	const char *pci_how;                 /* how configuration space is reached (static) */
	const struct console_in_ops *console;/* the operator's console (linked) */
	uint64_t (*now_ns)(void);
	uint32_t wipe_prompt_s;              /* 0: diag.wipe_prompt_s (development knob) */
};

/* Run the diagnostics; returns when the report is out (the caller powers off).
 * 0, or the first error that kept the JSON from being printed (-E_OVERFLOW). p borrowed. */
int diag_run(const struct diag_platform *p);

#endif
