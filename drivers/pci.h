/* SPDX-License-Identifier: MIT
 *
 * PCI(e) enumeration over ECAM, BAR sizing, capability lists and MSI-X, for drivers/.
 * Configuration space is device-controlled input: every pointer, size and count read from
 * it is validated before use, and a device whose config space is malformed (capability
 * loops, BARs that are not powers of two, misaligned, overlapping each other or a range the
 * caller forbids, MSI-X tables outside their BAR) is rejected with a message and counted
 * per site in struct pci_stats. Nothing here follows an unvalidated pointer, recurses on
 * device data or allocates: the caller provides the device array.
 *
 * Design note.
 * Invariants:
 *  1. Every pci_dev in bus->devs[0..n_devs) was fully read at enumeration; its caps[]
 *     entries are offsets in [0x40, 0xfc], dword-aligned, pairwise distinct, and at most
 *     PCI_MAX_CAPS of them.
 *  2. A BAR with PCI_BAR_OK is a naturally aligned power-of-two range that does not wrap,
 *     overlaps no forbidden range and no other PCI_BAR_OK BAR of the same space.
 *  3. Bus numbers are visited at most once and lie in [bus_start, bus_end]; the walk
 *     is a bounded work list, not recursion.
 *  4. An assigned address lies inside its window and above every address handed out
 *     before it (the windows are bump allocators, never reused).
 * States of a device: FOUND (pci_bus_scan) -> ENABLED (pci_dev_enable) ->
 * MSI-X ON (pci_msix_init + pci_msix_enable). REJECTED devices keep flag PCI_DEV_BAD and
 * are never enabled.
 */
#ifndef DRIVERS_PCI_H
#define DRIVERS_PCI_H

#include "drivers/port.h"

#define PCI_MAX_BARS 6
#define PCI_MAX_CAPS 24      /* a walk longer than this is treated as hostile */
#define PCI_MAX_BUS_QUEUE 64 /* bridges waiting to be scanned */

#define PCI_CAP_MSIX 0x11
#define PCI_CAP_VENDOR 0x09

enum pci_bar_flags {
	PCI_BAR_OK = 1u << 0,    /* implemented, assigned, validated: usable */
	PCI_BAR_IO = 1u << 1,    /* I/O space (never mapped) */
	PCI_BAR_64 = 1u << 2,    /* 64-bit memory BAR (the next index is its upper half) */
	PCI_BAR_PREFETCH = 1u << 3,
	PCI_BAR_UPPER = 1u << 4, /* upper half of the previous 64-bit BAR */
};

enum pci_dev_flags {
	PCI_DEV_BAD = 1u << 0,    /* rejected: never enable or drive it */
	PCI_DEV_BRIDGE = 1u << 1, /* header type 1 */
	PCI_DEV_ENABLED = 1u << 2,
};

struct pci_bar {
	uint64_t phys, len;
	uintptr_t va; /* 0 until pci_bar_map */
	uint32_t flags;
};

struct pci_cap {
	uint8_t id, off;
};

struct pci_dev {
	uint8_t bus, dev, fn, header_type;
	uint16_t vendor, device, subsys_vendor, subsys_id;
	uint8_t class_code, subclass, prog_if, revision;
	uint32_t flags;
	uint8_t n_bars;
	uint8_t n_caps;
	struct pci_bar bars[PCI_MAX_BARS];
	struct pci_cap caps[PCI_MAX_CAPS];
};

struct pci_range {
	uint64_t base, len;
};

/* A host bridge's memory window (from the device tree's `ranges`): PCI bus addresses
 * [pci_base, pci_base + len) appear to the CPU at cpu_base. */
struct pci_window {
	uint64_t cpu_base, pci_base, len;
};

/* Rejection sites: each increments stats.rejected[site] once per occurrence. */
enum pci_reject {
	PCI_REJ_BUS_RANGE,   /* bridge secondary bus outside the window, or already seen */
	PCI_REJ_BUS_QUEUE,   /* more pending bridges than PCI_MAX_BUS_QUEUE */
	PCI_REJ_DEV_FULL,    /* more functions than the caller's array holds */
	PCI_REJ_HEADER,      /* unknown header type */
	PCI_REJ_CAP_PTR,     /* capability pointer below 0x40 */
	PCI_REJ_CAP_LOOP,    /* capability offset visited twice */
	PCI_REJ_CAP_COUNT,   /* more than the configured number of capabilities */
	PCI_REJ_BAR_SIZE,    /* size mask not a power of two, or reserved type */
	PCI_REJ_BAR_ALIGN,   /* base not aligned to size, or wraps */
	PCI_REJ_BAR_FORBID,  /* overlaps a caller-forbidden range */
	PCI_REJ_BAR_OVERLAP, /* overlaps another device's BAR */
	PCI_REJ_BAR_64_LAST, /* 64-bit BAR in the last slot */
	PCI_REJ_MSIX_BAR,    /* MSI-X table/PBA in an unusable BAR or outside it */
	PCI_REJ_MSIX_SIZE,   /* MSI-X entry index out of the table */
	PCI_REJ__COUNT
};

struct pci_stats {
	uint32_t rejected[PCI_REJ__COUNT];
	uint32_t n_unassigned_bars; /* base 0: firmware left it and no window had room: unusable */
	uint32_t n_assigned_bars;   /* base 0, given an address from a window (pci_config) */
};

struct pci_config {
	uint8_t bus_start, bus_end;         /* the ECAM window */
	struct pci_dev *devs;               /* linked: caller array of max_devs */
	uint32_t max_devs;
	const struct pci_range *forbidden;  /* linked: RAM, kernel image, ... */
	uint32_t n_forbidden;
	uint32_t max_caps;                  /* <= PCI_MAX_CAPS; 0 means PCI_MAX_CAPS */
	/* Memory BARs the firmware left at 0 (a machine booted without firmware, such as
	 * QEMU virt with -kernel) get naturally aligned addresses from these windows, in scan
	 * order: 64-bit BARs from mem64 (else mem32), 32-bit ones from mem32 (pci_base +
	 * len must stay below 4 GiB). len 0: no window; such BARs stay unusable. An assigned
	 * BAR is validated like any other (forbidden ranges, overlaps). Devices behind a
	 * bridge are not assigned (the bridge's own window would have to be programmed). */
	struct pci_window mem32, mem64;
};

struct pci_bus {
	const struct drv_port *port; /* linked */
	struct pci_config cfg;
	uint32_t n_devs;
	uint64_t mem32_used, mem64_used; /* bytes of each window handed out (from its base) */
	struct pci_stats stats;
};

/* Initialise over the caller's config (copied; its arrays are linked). -E_INVAL on bad
 * config. */
int pci_bus_init(struct pci_bus *b, const struct drv_port *port, const struct pci_config *cfg) MUST_CHECK;

/* Enumerate from bus_start through bridges. Fills cfg.devs; rejected devices are
 * recorded with PCI_DEV_BAD. Returns 0 (even when some devices were rejected) or -E_NOMEM
 * when the device array overflowed (the devices found so far stay valid). */
int pci_bus_scan(struct pci_bus *b) MUST_CHECK;

/* The i-th capability with this id at or after index *iter; advances *iter. Returns the
 * config offset, or 0 when none is left. */
uint8_t pci_dev_find_cap(const struct pci_dev *d, uint8_t id, uint32_t *iter);

uint32_t pci_cfg_read32(struct pci_bus *b, const struct pci_dev *d, uint16_t off);
uint8_t pci_cfg_read8(struct pci_bus *b, const struct pci_dev *d, uint16_t off);
void pci_cfg_write32(struct pci_bus *b, const struct pci_dev *d, uint16_t off, uint32_t v);

/* Turn on memory decoding and bus mastering (and INTx off). -E_PERM for a BAD device. */
int pci_dev_enable(struct pci_bus *b, struct pci_dev *d) MUST_CHECK;

/* Map a PCI_BAR_OK memory BAR through port->map_bar (once; later calls reuse it).
 * *va is the address of byte 0 of the BAR. */
int pci_bar_map(struct pci_bus *b, struct pci_dev *d, uint32_t bar, uintptr_t *va /* out */) MUST_CHECK;

/* Validate that [off, off+len) lies inside usable memory BAR `bar` of d. */
bool pci_bar_contains(const struct pci_dev *d, uint32_t bar, uint64_t off, uint64_t len);

struct pci_msix {
	struct pci_dev *dev; /* linked */
	uint8_t cap;         /* config offset of the capability */
	uint16_t n_entries;
	uintptr_t table;     /* mapped table */
};

/* Find and validate the MSI-X capability of d, map its table, mask every entry and leave
 * MSI-X enabled with the function masked. -E_NOENT without MSI-X, -E_INVAL when the table
 * or PBA is not inside a usable memory BAR (counted). */
int pci_msix_init(struct pci_bus *b, struct pci_dev *d, struct pci_msix *m /* out */) MUST_CHECK;
/* Program entry with the message the interrupt controller gave (addr/data) and unmask it.
 * -E_RANGE for an entry outside the table. */
int pci_msix_set(struct pci_bus *b, struct pci_msix *m, uint16_t entry, uint64_t addr, uint32_t data) MUST_CHECK;
int pci_msix_mask(struct pci_bus *b, struct pci_msix *m, uint16_t entry, bool masked) MUST_CHECK;
/* Clear the function mask: programmed, unmasked entries may now fire. */
void pci_msix_enable(struct pci_bus *b, struct pci_msix *m);

#endif
