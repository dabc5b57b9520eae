/* SPDX-License-Identifier: MIT
 *
 * Device-tree discovery (aarch64): fills the Arm part of `struct platform` (plat/plat.h)
 * from a flattened device tree blob (Devicetree Specification v0.4, chapter 5), plus the
 * few extra facts the kernel needs that have no place there (`struct plat_dtb_extra`).
 * Portable C, run once on the boot core before anything else is shared; the same file is
 * compiled into host tests and fuzzers. It reads the blob only through a bounds-checked
 * cursor, trusts no header field, offset, length or string, walks the tree iteratively
 * with a fixed depth and bounded node and property counts, and never asserts or writes
 * outside `*out` and `*extra` on hostile input.
 */
#ifndef PLAT_DTB_H
#define PLAT_DTB_H

#include "lib/compiler.h"
#include "plat/plat.h"

#define PLAT_DTB_MAX_SIZE (2u << 20)  /* totalsize limit (bytes), as Linux's arm64 limit */
#define PLAT_DTB_MAX_DEPTH 16u        /* nodes nested deeper than this: rejected */
#define PLAT_DTB_MAX_NODES 4096u      /* more nodes: rejected */
#define PLAT_DTB_MAX_PROPS 32768u     /* more properties (whole tree): rejected */
#define PLAT_DTB_MAX_RSVMAP 256u      /* /memreserve/ entries before the terminator */
#define PLAT_DTB_MAX_RESERVED 32u     /* reserved ranges reported; more: rejected (fail closed) */

/* `boot_mpidr` value asking for the first enabled CPU node to be marked boot_cpu (tests,
 * tools). No MPIDR_EL1 has every bit set (bits 63:40 are RES0). */
#define PLAT_DTB_BOOT_FIRST UINT64_MAX

/* Where a blob was rejected or a value ignored: one counter per site. */
enum plat_dtb_site {
	PLAT_DTB_HDR_SHORT,        /* fewer bytes than the header */
	PLAT_DTB_HDR_MAGIC,
	PLAT_DTB_HDR_VERSION,      /* version < 16 or last_comp_version > 17 */
	PLAT_DTB_HDR_SIZE,         /* totalsize below the header, above len or the limit */
	PLAT_DTB_HDR_BLOCK,        /* a block offset/size outside totalsize */
	PLAT_DTB_HDR_ALIGN,        /* structure block not 4-aligned, rsvmap not 8-aligned */
	PLAT_DTB_RSVMAP,           /* /memreserve/ unterminated, too long or wrapping */
	PLAT_DTB_STRUCT_TRUNC,     /* a token, name or value past the structure block */
	PLAT_DTB_STRUCT_TOKEN,     /* unknown or misplaced token (second root, stray END_NODE) */
	PLAT_DTB_STRUCT_NAME,      /* node name not NUL-terminated in the structure block */
	PLAT_DTB_STRUCT_PROP_NAME, /* property name offset outside strings, or unterminated */
	PLAT_DTB_STRUCT_PROP_ORDER,/* property after a child node, or outside any node */
	PLAT_DTB_STRUCT_DEPTH,     /* nesting deeper than PLAT_DTB_MAX_DEPTH */
	PLAT_DTB_STRUCT_TOO_MANY,  /* more than PLAT_DTB_MAX_NODES / _PROPS */
	PLAT_DTB_STRUCT_NO_END,    /* no FDT_END after the root node */
	PLAT_DTB_CPU_REG,          /* cpu reg missing, wrong length or not an affinity */
	PLAT_DTB_CPU_DUP,          /* two cpus with one affinity (second ignored) */
	PLAT_DTB_CPU_TOO_MANY,     /* cpus beyond PLAT_MAX_CPUS (ignored) */
	PLAT_DTB_CPU_NONE,         /* no cpu node, or none matching boot_mpidr */
	PLAT_DTB_CPU_BOOT_DISABLED,/* the boot cpu's status says disabled (marked enabled) */
	PLAT_DTB_MEM_REG,          /* memory reg of the wrong length, or its cells unusable */
	PLAT_DTB_MEM_BAD,          /* no reg, or a range empty, wrapping, untranslatable (ignored) */
	PLAT_DTB_MEM_TOO_MANY,     /* ranges beyond PLAT_MAX_MEM_RANGES (ignored) */
	PLAT_DTB_MEM_NONE,         /* no usable memory range */
	PLAT_DTB_RESERVED,         /* a /reserved-memory child unusable, or too many ranges */
	PLAT_DTB_GIC_REG,          /* GIC reg missing, short or not translatable */
	PLAT_DTB_GIC_DUP,          /* a second GIC node (ignored) */
	PLAT_DTB_GIC_NONE,
	PLAT_DTB_ECAM_BAD,         /* ECAM reg, bus-range or domain invalid (ignored) */
	PLAT_DTB_ECAM_TOO_MANY,    /* beyond PLAT_MAX_ECAM (ignored) */
	PLAT_DTB_UART_STDOUT,      /* stdout-path unusable: first PL011 used instead */
	PLAT_DTB_UART_BAD,         /* a PL011 whose reg is unusable (ignored) */
	PLAT_DTB_EXTRA_BAD,        /* RTC, ITS, v2m, PSCI or timer node unusable (ignored) */
	PLAT_DTB_BOOTARGS_BAD,     /* /chosen bootargs not NUL-terminated (ignored) */
	PLAT_DTB__SITES
};

/* Rejection counters and the last warning of the most recent calls. Written only by this
 * module on the boot core; read afterwards by the boot log and telemetry. */
struct plat_dtb_stats {
	uint32_t rejects[PLAT_DTB__SITES];
	const char *warning; /* last non-fatal problem (static string) or NULL */
};

enum plat_dtb_psci {
	PLAT_DTB_PSCI_NONE,
	PLAT_DTB_PSCI_HVC,
	PLAT_DTB_PSCI_SMC,
};

/* Facts the aarch64 kernel needs besides `struct platform`. Addresses are CPU physical
 * addresses (translated through every parent `ranges`); 0 when absent. */
/* A PCI host bridge's memory window: bus addresses [pci_base, pci_base + len) appear to
 * the CPU at cpu_base. len 0: none. */
struct plat_dtb_window {
	uint64_t cpu_base, pci_base, len;
};

struct plat_dtb_extra {
	uint64_t rtc_base;      /* first "arm,pl031" */
	uint64_t gits_base;     /* first "arm,gic-v3-its" */
	uint64_t gicv2m_base;   /* first "arm,gic-v2m-frame" */
	enum plat_dtb_psci psci; /* method of the "arm,psci*" node */
	/* "arm,armv8-timer" interrupts, PPI numbers (GIC INTID = 16 + ppi); valid only when
	 * has_timer. Entries are secure phys, non-secure phys, virtual, hypervisor. */
	bool has_timer;
	uint32_t timer_phys_ppi; /* non-secure physical (entry 1) */
	uint32_t timer_virt_ppi; /* virtual (entry 2) */
	/* /chosen bootargs: linked (points into the blob); bootargs[bootargs_len] is NUL.
	 * NULL when absent or malformed. */
	const char *bootargs;
	size_t bootargs_len;
	/* Memory the kernel must not use: /memreserve/ entries, then the reg ranges of the
	 * /reserved-memory children. Not subtracted from platform.mem. */
	/* The memory windows of the first ECAM host (its `ranges`, 3 child address cells):
	 * the first 32-bit and the first 64-bit memory-space entry, for a kernel that assigns
	 * the BARs firmware left unassigned. Unusable entries are ignored (counted at
	 * PLAT_DTB_ECAM_BAD). */
	struct plat_dtb_window pci_mem32, pci_mem64;
	uint32_t n_reserved;
	struct plat_mem_range reserved[PLAT_DTB_MAX_RESERVED];
};

/* Affinity of an MPIDR_EL1 value packed the way plat_cpu.apic_id holds it on aarch64:
 * Aff3 in bits 31:24, Aff2..Aff0 in bits 23:0 (the layout of GICR_TYPER[63:32]). */
static inline uint32_t plat_dtb_mpidr_aff(uint64_t mpidr)
{
	return (uint32_t)((mpidr >> 8) & 0xff000000u) | (uint32_t)(mpidr & 0xffffffu);
}

/* Parse the flattened device tree at `blob` (at most `len` readable bytes; the header's
 * totalsize must fit in them) and fill the device-tree fields of *out: cpus, mem, GIC
 * (gic_version, gicd/gicr/gicc_addr), ecam and uart_base. Other fields are left as the
 * caller set them. *extra (may be NULL) is filled completely.
 *
 *  - cpus: every node of /cpus with device_type "cpu", in node order; acpi_uid is the
 *    index among those nodes, apic_id the packed affinity of the first reg entry (1 or 2
 *    cells per /cpus #address-cells), enabled when status is absent, "okay" or "ok".
 *    boot_cpu marks the cpu whose affinity is plat_dtb_mpidr_aff(boot_mpidr) (it is also
 *    marked enabled: it runs), or the first enabled cpu for PLAT_DTB_BOOT_FIRST. CPUs
 *    beyond PLAT_MAX_CPUS are counted and dropped, but the boot cpu always keeps a slot.
 *  - mem: each reg range of every available device_type "memory" node, in order.
 *  - GIC: the first available "arm,gic-v3" (gicd = reg[0], gicr = reg[1]) or
 *    "arm,cortex-a15-gic" / "arm,gic-400" (gicd = reg[0], gicc = reg[1]) node.
 *  - ecam: every available "pci-host-ecam-generic"; base is the address of bus 0 (as in
 *    ACPI's MCFG: reg base - bus_start << 20); bus_end clamped to what reg covers.
 *  - uart_base: the /chosen stdout-path (or linux,stdout-path) node, options after ':'
 *    stripped, an alias resolved through /aliases, if it is an available "arm,pl011";
 *    else the first available "arm,pl011".
 * Disabled nodes (status other than okay/ok) are skipped. A missing `ranges` on a bus is
 * taken as identity (lenient: firmware omits it on interrupt controllers).
 *
 * Returns 0, or a negative -E_* with *why set to a one-line static reason; on failure
 * the device-tree fields of *out and all of *extra are zero. A blob without a boot cpu,
 * memory or a GIC is a failure (-E_NOENT). `blob` is linked to *extra (bootargs) and
 * otherwise borrowed; `out` and `extra` borrowed. Boot core only. */
int plat_dtb_parse(const void *blob, size_t len, uint64_t boot_mpidr, struct platform *out /* out */,
		   struct plat_dtb_extra *extra /* out */, const char **why /* out */) MUST_CHECK;

/* The fields of out and extra that describe an Arm machine's CPUs, GIC, ECAM and console,
 * zeroed (memory is the boot loader's: left as it is). Shared by the device-tree and the
 * ACPI parser (plat/acpi_arm.c), which fill the same description. */
void plat_arm_fields_clear(struct platform *out, struct plat_dtb_extra *extra);

/* Counters since boot (never NULL). */
const struct plat_dtb_stats *plat_dtb_stats(void);
/* Short name of a site for logs; never NULL. */
const char *plat_dtb_site_name(enum plat_dtb_site site);

#endif
