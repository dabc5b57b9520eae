/* SPDX-License-Identifier: MIT
 *
 * The node's virtio-blk disks after boot: their configuration changes (a host resizing a
 * disk under a running guest), handled on the storage core's loop (the core that owns the
 * disks; core 0 without storage). The platform probes each disk, runs its boot self-test
 * and registers it here with the self-test's DMA buffer; whether its configuration vector
 * reaches the storage core is kernel/node/devices.c's (node_devices_disk_vectors),
 * and a disk whose vector does not is polled once a second instead.
 */
#ifndef KERNEL_NODE_DISKS_H
#define KERNEL_NODE_DISKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/virtio_blk.h"
#include "kernel/loop.h"

#define NODE_MAX_DISKS 4u

/* Boot core, before the loops start: disk v (linked; the first registered is the data
 * disk storage uses, when storage is on) with buf_len bytes of DMA memory for its
 * self-test (linked, at least 2 * max(4 KiB, its logical block)); cfg_irq: its
 * configuration vector is programmed. -E_NOMEM beyond NODE_MAX_DISKS. */
int node_disk_add(struct vblk *v, uint8_t *buf, size_t buf_len, bool cfg_irq);
/* Disk i's configuration vector no longer reaches the storage core: poll it. Boot core,
 * before the loops start. */
void node_disk_polled(uint32_t i);
/* Whether disk i's configuration changes come by interrupt. */
bool node_disk_irq(uint32_t i);
/* The configuration-change handler on core's loop when core owns the disks. */
void node_disks_loop_add(struct kloop *l, uint32_t core);

#endif
