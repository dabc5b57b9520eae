/* SPDX-License-Identifier: MIT
 *
 * The running node (kernel/node/): out of the layers, on the boot core, it builds one
 * network stack (kernel/knet) with its broker (kernel/node/broker.h) per data core, the
 * core mesh (kernel/xcore) and its per-core demultiplexers (kernel/kdemux), flow steering
 * (kernel/ksteer, net/rss), the address messages from core 0 to the workers, the broker
 * shards' transport, the links between the data cores and the storage core
 * (kernel/kstore.h), and the per-core statistics lines. Portable: what the platform gives
 * (clocks, the calling core, wake-ups, regions, interrupt vectors) comes through
 * kernel/node/port.h. The platform finds the devices and hands them over in
 * struct node_config.
 *
 * Contract: node_init runs once on the boot core before any other core starts;
 * node_cores_started once after they started, on the boot core, before its own loop;
 * node_loop_add once per core, on that core, before its loop runs. After that every core
 * touches only its own per-core state and the SPSC rings of the mesh (kernel/xcore.h).
 * Cores: 0 .. n_net - 1 run a stack and a broker shard (data cores); with a data disk and
 * more than one core, the highest core is the storage core and runs nothing else
 * (ADR-031); with one core, core 0 runs storage from its loop.
 */
#ifndef KERNEL_NODE_NODE_H
#define KERNEL_NODE_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vnet;
struct blk_dev;
struct kloop;

struct node_config {
	struct vnet *nic;          /* the network device, initialised (linked) */
	struct blk_dev *disk;      /* the data disk, or NULL: no persistence (linked) */
	const char *disk_name;     /* its name in the console's lines (linked) */
	const char *cmdline;       /* the kernel command line (linked; development knobs) */
	size_t cmdline_len;
	uint32_t n_cores;          /* cores the platform will start, boot core included */
	bool live;                 /* urmqtt.mode=live: disk is NULL on purpose; serve from RAM
				    * even when storage is required (the console says so) */
};

/* Build the node (see above); failures are logged and leave fewer cores serving, or
 * none (the console says why). storage.required without a data disk stops the machine. */
void node_init(const struct node_config *cfg);
/* n_started cores run (boot core included): steer over those, hand the device's pairs to
 * their cores, let storage start. */
void node_cores_started(uint32_t n_started);
/* This core's loop handlers: mesh, network stack, storage, statistics. */
void node_loop_add(struct kloop *l, uint32_t core);
/* A message waits for core in the mesh (the platform's idle path asks before it halts:
 * see the wake-up protocol in node.c). */
bool node_mesh_pending(uint32_t core);
/* Development builds, test=net: per-core statistics lines once a second. Before
 * node_loop_add. */
void node_stats_enable(void);
struct node_ctl;
/* A change for every data core (kernel/node/broker.h: node_broker_ctl_apply), taken on the
 * calling data core: applied there in its next loop pass and sent to the others. 0, or
 * -E_AGAIN while this core's previous change is still on its way. */
int node_ctl_broadcast(const struct node_ctl *op);
/* Development builds: the kernel command line's key=N (decimal, lo..hi) into *out; false
 * when absent, out of range (logged) or in a production build (never read there). */
bool node_knob_u32(const char *cmdline, size_t len, const char *key, uint32_t lo, uint32_t hi,
		   uint32_t *out /* out */);
/* Whether the node keeps state on a disk, and which core runs storage (decided by
 * node_init, read-only after). */
bool node_store_on(void);
uint32_t node_store_core(void);

#endif
