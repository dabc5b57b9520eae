/* SPDX-License-Identifier: MIT
 *
 * The node's devices: virtio over PCI, on any architecture. The platform enumerates the
 * bus (drivers/pci.h) and maps the BARs of its virtio functions; this module probes and
 * drives them, runs the TLS self-test, then builds the node over the NIC and the data
 * disk (kernel/node/node.h). Boot core, once, after the heap and the CSPRNG exist and
 * before the other cores start; node_devices_loop_add on each core before its loop.
 */
#ifndef KERNEL_NODE_DEVICES_H
#define KERNEL_NODE_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/pci.h"
#include "kernel/bootmode.h"
#include "kernel/loop.h"

struct node_devices_config {
	struct pci_bus *bus;     /* scanned, virtio BARs mapped; NULL: no PCI (linked) */
	const char *cfg_how;     /* how configuration space is reached, for the log (linked) */
	int scan_err;            /* the scan's error (-E_NOMEM: the device table filled) */
	const char *cmdline;     /* the kernel command line (linked; development knobs) */
	size_t cmdline_len;
	uint32_t n_cores;        /* cores the platform will start, boot core included */
};

/* Map every usable memory BAR of every virtio function of b through its port (the
 * platform does it while it may still map: x86_64 before sealing its tables, aarch64
 * before switching its MMU on). The number that could not be mapped. Boot core. */
uint32_t node_devices_map_bars(struct pci_bus *b);
/* The boot mode (kernel/bootmode.h) and, for the installer, the ESP image and the BIOS
 * boot image (store/biosimg.h) the boot loader passed (linked; NULL: none; a platform
 * without BIOS boot passes NULL, 0 for it). Before node_devices_init; without it the mode
 * is SERVE.
 * LIVE (and DIAG, which never builds a node on a disk): the node serves without any disk,
 * none is ever written. INSTALL, INSTALL_ERASE: node_devices_init probes the devices and
 * runs the installer (kernel/node/install.h) instead of building a node; it returns once
 * the disk is written, and the platform powers off. */
void node_devices_set_boot(enum boot_mode mode, const uint8_t *esp, size_t esp_len, const uint8_t *bios,
			   size_t bios_len);
/* Probe and drive every virtio function, self-test TLS, build the node. Failures are
 * logged and counted, never fatal here. cfg borrowed (its pointers linked). */
void node_devices_init(const struct node_devices_config *cfg);
/* Core `core`'s share: its virtio-rng seed mixed into its CSPRNG, then the node's loop
 * handlers. On that core, before its loop runs. */
void node_devices_loop_add(struct kloop *l, uint32_t core);
/* Block self-tests (and the TLS self-test) that failed; block devices found. */
uint32_t node_devices_selftest_failures(void);
uint32_t node_devices_block_count(void);

/* For kernel/node/node.c, once the cores are known (boot core): the NIC's MSI-X entries
 * (with own_pairs, pair p to core p, else every pair to core 0; its configuration to
 * core 0), true when interrupts work (false: the node polls); and each disk's
 * configuration vector to the storage core. */
bool node_devices_nic_vectors(bool own_pairs, uint32_t n_net);
void node_devices_disk_vectors(uint32_t store_core);

#endif
