/* SPDX-License-Identifier: MIT
 *
 * The installer of the ISO's install entries (urmqtt.mode=install / install-erase, issue 20):
 * from the machine's block devices it picks the one target (every disk but the boot medium
 * and read-only ones; more than one candidate is refused, naming them), says which disk and
 * its size, refuses a disk that holds data unless erasing was asked for, then writes layout
 * v2 of docs/DISK-FORMAT.md for that disk's size (store_layout_plan, the kernel's own first
 * format plan) with the ESP image the boot loader passed as a module in the ESP partition
 * and both superblock slots zero, so the installed system's first boot formats the data
 * partition in place (the ESP never moves). With a BIOS boot image (store/biosimg.h) and a
 * disk of 512-byte blocks whose plan leaves room for its core, the disk also boots by BIOS
 * as the release's raw disk does: GRUB's core in a BIOS boot partition (the GPT's third
 * entry, the ESP stays the first) and its boot code in LBA 0; otherwise the console says
 * why it boots by UEFI only, and a malformed image stops the install naming what is wrong.
 * Order: the GPT areas zeroed first, the ESP, the BIOS core and boot code, the superblock
 * slots, the GPT last; a stop part-way never leaves a disk that looks installed. Boot core, before the other cores start; every refusal and error stops the
 * machine with a message naming the disk (kernel/panic.h).
 */
#ifndef KERNEL_NODE_INSTALL_H
#define KERNEL_NODE_INSTALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/blk.h"

#define NODE_INSTALL_MAX_DISKS 8u

struct node_install_config {
	bool erase;                          /* install-erase: write over a disk holding data */
	uint32_t n_disks;
	struct blk_dev *disks[NODE_INSTALL_MAX_DISKS]; /* linked, nothing in flight */
	const char *names[NODE_INSTALL_MAX_DISKS];     /* "virtio-blk0" (linked) */
	const uint8_t *esp;                  /* the ESP image (the module; linked), NULL: none */
	size_t esp_len;
	const uint8_t *bios;                 /* the BIOS boot image (store/biosimg.h; the "bios"
					      * module; linked), NULL: none (UEFI boot only) */
	size_t bios_len;
	uint8_t *bounce;                     /* DMA memory (linked), bounce_len bytes */
	size_t bounce_len;                   /* a multiple of 4 KiB, at least 64 KiB */
	uint8_t *scratch;                    /* STORE_LAYOUT_SCRATCH bytes (linked) */
	size_t scratch_len;
};

/* Install, or stop the machine saying why. Returns only when the disk is written and
 * flushed ("install: done"); the caller powers off. */
void node_install(const struct node_install_config *c);

#endif
