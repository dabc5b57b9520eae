/* SPDX-License-Identifier: MIT
 *
 * ACPI on Arm (plat/acpi_arm.h): RSDP -> XSDT -> MADT (GICC, GICD, GICR, ITS, MSI frame),
 * GTDT, SPCR, MCFG, FADT (ARM_BOOT_ARCH) -> DSDT (the PCI host bridge's _CRS), into the
 * same description the device tree gives (plat/dtb.c). Owns nothing but goes through the
 * walker and counters of plat/acpi.c (plat/acpi_int.h); every table byte is read through
 * a cursor over a mapping whose length and checksum the walker verified; no recursion,
 * every loop bounded by a table's length.
 *
 * Layouts: ACPI 6.5 5.2.12.14-19 (MADT GICC 0x0B, GICD 0x0C, MSI frame 0x0D, GICR 0x0E,
 * ITS 0x0F), 5.2.25 (GTDT), 5.2.9 (FADT ARM_BOOT_ARCH at 129), the Microsoft SPCR
 * specification (interface type at 36, base address GAS at 40), 6.4.3.5 (the resource
 * descriptors of _CRS), 19.6 (AML NameOp, BufferOp, PkgLength).
 */
#include "plat/acpi_arm.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "plat/acpi_int.h"

#define MADT_GICC 0x0bu
#define MADT_GICD 0x0cu
#define MADT_MSI_FRAME 0x0du
#define MADT_GICR 0x0eu
#define MADT_ITS 0x0fu
#define GICC_MIN_LEN 76u   /* ACPI 5.1; 6.0 made it 80, 6.3 82 */
#define GTDT_VIRT_GSIV 64u /* offset of the virtual EL1 timer GSIV */
#define GTDT_PHYS_GSIV 56u /* non-secure EL1 */
#define SPCR_BASE_GAS 40u
#define SPCR_PL011 0x03u
#define SPCR_SBSA_32 0x0du
#define SPCR_SBSA 0x0eu
#define FADT_ARM_BOOT_ARCH 129u
#define FADT_PSCI_COMPLIANT 1u
#define FADT_PSCI_USE_HVC 2u
#define GIC_PPI_BASE 16u

/* ---- MADT ------------------------------------------------------------------------- */

struct madt_state {
	uint64_t boot_mpidr;
	bool have_gicd, have_gicr, have_gicc_base;
	uint32_t gicd_version;
};

static void gicc_add(struct platform *out, struct madt_state *st, uint32_t uid, uint32_t flags, uint64_t mpidr,
		     uint64_t gicc_base)
{
	bool enabled = (flags & 1u) != 0;
	bool online_capable = (flags & 8u) != 0;
	if (!enabled && !online_capable)
		return;
	/* MPIDR: only the affinity fields may be set (bits 39:32 and 23:0). */
	if ((mpidr & ~0xff00ffffffull) != 0) {
		plat_acpi_count(PLAT_ACPI_GICC_BAD);
		return;
	}
	uint32_t aff = plat_dtb_mpidr_aff(mpidr);
	for (uint32_t i = 0; i < out->n_cpus; i++) {
		if (out->cpus[i].apic_id == aff) {
			plat_acpi_count(PLAT_ACPI_GICC_BAD);
			return;
		}
	}
	bool boot = st->boot_mpidr != PLAT_DTB_BOOT_FIRST && aff == plat_dtb_mpidr_aff(st->boot_mpidr);
	if (out->n_cpus >= PLAT_MAX_CPUS) {
		plat_acpi_count(PLAT_ACPI_MADT_TOO_MANY);
		if (!boot)
			return;
		/* the boot cpu always keeps a slot: it replaces the last one */
		out->n_cpus--;
	}
	struct plat_cpu *c = &out->cpus[out->n_cpus++];
	c->apic_id = aff;
	c->acpi_uid = uid;
	c->enabled = enabled || boot; /* it runs */
	c->boot_cpu = boot;
	if (!st->have_gicc_base && gicc_base != 0) {
		out->gicc_addr = gicc_base;
		st->have_gicc_base = true;
	}
}

static int madt_arm_parse(struct platform *out, struct plat_dtb_extra *extra, struct madt_state *st,
			  struct plat_acpi_sdt *t, const char **why)
{
	struct cur *c = &t->c;
	cur_skip(c, 8); /* local interrupt controller address (unused on Arm), flags */
	if (!cur_ok(c))
		return plat_acpi_reject(PLAT_ACPI_MADT_SHORT, why, -E_INVAL);
	/* Each turn consumes at least 2 bytes: at most len/2 turns. */
	while (cur_left(c) > 0) {
		if (cur_left(c) < 2)
			return plat_acpi_reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
		uint8_t type = cur_u8(c);
		uint8_t elen = cur_u8(c);
		if (elen < 2 || (size_t)(elen - 2) > cur_left(c))
			return plat_acpi_reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
		struct cur e = cur_sub(c, (size_t)elen - 2);
		cur_skip(&e, 2); /* reserved */
		switch (type) {
		case MADT_GICC: {
			if (elen < GICC_MIN_LEN)
				return plat_acpi_reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			(void)cur_le32(&e); /* CPU interface number */
			uint32_t uid = cur_le32(&e);
			uint32_t flags = cur_le32(&e);
			cur_skip(&e, 4 + 4 + 8); /* parking version, performance GSIV, parked address */
			uint64_t base = cur_le64(&e);
			cur_skip(&e, 8 + 8 + 4 + 8); /* GICV, GICH, VGIC maintenance GSIV, GICR base */
			uint64_t mpidr = cur_le64(&e);
			if (cur_ok(&e))
				gicc_add(out, st, uid, flags, mpidr, base);
			break;
		}
		case MADT_GICD: {
			if (elen < 24)
				return plat_acpi_reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			cur_skip(&e, 4); /* GIC id */
			uint64_t base = cur_le64(&e);
			cur_skip(&e, 4); /* system vector base: reserved */
			uint8_t ver = cur_u8(&e);
			if (st->have_gicd || base == 0) {
				plat_acpi_count(PLAT_ACPI_GIC_DUP);
			} else {
				st->have_gicd = true;
				out->gicd_addr = base;
				st->gicd_version = ver;
			}
			break;
		}
		case MADT_MSI_FRAME: {
			if (elen < 24)
				return plat_acpi_reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			cur_skip(&e, 4); /* frame id */
			uint64_t base = cur_le64(&e);
			if (extra->gicv2m_base != 0 || base == 0)
				plat_acpi_count(PLAT_ACPI_GIC_DUP);
			else
				extra->gicv2m_base = base;
			break;
		}
		case MADT_GICR: {
			if (elen < 16)
				return plat_acpi_reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			uint64_t base = cur_le64(&e);
			if (st->have_gicr || base == 0) {
				plat_acpi_count(PLAT_ACPI_GIC_DUP);
			} else {
				st->have_gicr = true;
				out->gicr_addr = base;
			}
			break;
		}
		case MADT_ITS: {
			if (elen < 20)
				return plat_acpi_reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			cur_skip(&e, 4); /* ITS id */
			uint64_t base = cur_le64(&e);
			if (extra->gits_base != 0 || base == 0)
				plat_acpi_count(PLAT_ACPI_GIC_DUP);
			else
				extra->gits_base = base;
			break;
		}
		default: /* x86 entries and anything newer: not ours */
			break;
		}
		if (!cur_ok(&e))
			return plat_acpi_reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
	}

	/* GIC version: as the GICD says; 0 ("not said", ACPI 5.1) from what else is there. */
	uint32_t v = st->gicd_version;
	if (v == 0)
		v = st->have_gicr ? 3 : 2;
	if (v == 4)
		v = 3; /* a GICv4 is driven as a GICv3; the device tree calls it "arm,gic-v3" */
	if (!st->have_gicd || (v != 2 && v != 3))
		return plat_acpi_reject(PLAT_ACPI_GIC_NONE, why, -E_NOENT);
	out->gic_version = v;
	/* Keep only what the version uses, as the device tree reports it. */
	if (v == 3) {
		out->gicc_addr = 0;
		extra->gicv2m_base = 0;
	} else {
		out->gicr_addr = 0;
		extra->gits_base = 0;
	}
	if (v == 3 && !st->have_gicr)
		return plat_acpi_reject(PLAT_ACPI_GIC_NONE, why, -E_NOENT);
	if (v == 2 && out->gicc_addr == 0)
		return plat_acpi_reject(PLAT_ACPI_GIC_NONE, why, -E_NOENT);

	bool have_boot = false;
	for (uint32_t i = 0; i < out->n_cpus; i++)
		have_boot |= out->cpus[i].boot_cpu;
	if (!have_boot && st->boot_mpidr == PLAT_DTB_BOOT_FIRST) {
		for (uint32_t i = 0; i < out->n_cpus && !have_boot; i++) {
			if (out->cpus[i].enabled)
				out->cpus[i].boot_cpu = have_boot = true;
		}
	}
	if (!have_boot)
		return plat_acpi_reject(PLAT_ACPI_MADT_NO_CPU, why, -E_NOENT);
	return 0;
}

/* ---- GTDT, SPCR, FADT ------------------------------------------------------------- */

static void gtdt_parse(struct plat_dtb_extra *extra, struct plat_acpi_sdt *t)
{
	struct cur c = t->c;
	cur_skip(&c, GTDT_PHYS_GSIV - PLAT_ACPI_SDT_HDR_LEN);
	uint32_t phys = cur_le32(&c);
	cur_skip(&c, 4);
	uint32_t virt = cur_le32(&c);
	/* PPIs are GSIVs 16..31 */
	if (!cur_ok(&c) || phys < GIC_PPI_BASE || phys >= 32 || virt < GIC_PPI_BASE || virt >= 32) {
		plat_acpi_warn(PLAT_ACPI_GTDT_BAD);
		return;
	}
	extra->has_timer = true;
	extra->timer_phys_ppi = phys - GIC_PPI_BASE;
	extra->timer_virt_ppi = virt - GIC_PPI_BASE;
}

static void spcr_parse(struct platform *out, struct plat_acpi_sdt *t)
{
	struct cur c = t->c;
	uint8_t type = cur_u8(&c);
	cur_skip(&c, SPCR_BASE_GAS - PLAT_ACPI_SDT_HDR_LEN - 1);
	uint8_t space = cur_u8(&c);
	cur_skip(&c, 3);
	uint64_t base = cur_le64(&c);
	if (!cur_ok(&c) || space != 0 || base == 0 || (base & 0xfffu) != 0 ||
	    (type != SPCR_PL011 && type != SPCR_SBSA && type != SPCR_SBSA_32)) {
		plat_acpi_warn(PLAT_ACPI_SPCR_BAD);
		return;
	}
	out->uart_base = base;
}

/* The ARM boot flags, and the DSDT's address (X_DSDT, else DSDT). */
static void fadt_arm_parse(struct plat_dtb_extra *extra, struct plat_acpi_sdt *t, uint64_t *dsdt)
{
	struct cur c = t->c;
	cur_skip(&c, 40 - PLAT_ACPI_SDT_HDR_LEN);
	uint32_t dsdt32 = cur_le32(&c);
	*dsdt = 0;
	if (t->len >= 148) {
		struct cur x = t->c;
		cur_skip(&x, 140 - PLAT_ACPI_SDT_HDR_LEN);
		*dsdt = cur_le64(&x);
	}
	if (*dsdt == 0 && cur_ok(&c))
		*dsdt = dsdt32;
	c = t->c;
	cur_skip(&c, FADT_ARM_BOOT_ARCH - PLAT_ACPI_SDT_HDR_LEN);
	uint16_t arm = cur_le16(&c);
	if (!cur_ok(&c) || !(arm & FADT_PSCI_COMPLIANT)) {
		plat_acpi_warn(PLAT_ACPI_PSCI_NONE);
		return;
	}
	extra->psci = (arm & FADT_PSCI_USE_HVC) ? PLAT_DTB_PSCI_HVC : PLAT_DTB_PSCI_SMC;
}

/* ---- DSDT: the PCI host bridge's memory windows ------------------------------------- */

/* AML PkgLength (19.6.4): lead byte, 0-3 following bytes. The value counts its own bytes. */
static bool aml_pkglen(struct cur *c, uint32_t *len, uint32_t *nbytes)
{
	uint8_t lead = cur_u8(c);
	uint32_t n = lead >> 6;
	uint32_t v = n == 0 ? lead & 0x3fu : lead & 0x0fu;
	for (uint32_t k = 0; k < n; k++)
		v |= (uint32_t)cur_u8(c) << (4 + 8 * k);
	*len = v;
	*nbytes = n + 1;
	return cur_ok(c);
}

/* One AML integer (ZeroOp, OneOp, Byte/Word/DWord/QWordPrefix). */
static bool aml_integer(struct cur *c, uint64_t *v)
{
	switch (cur_u8(c)) {
	case 0x00: *v = 0; break;
	case 0x01: *v = 1; break;
	case 0x0a: *v = cur_u8(c); break;
	case 0x0b: *v = cur_le16(c); break;
	case 0x0c: *v = cur_le32(c); break;
	case 0x0e: *v = cur_le64(c); break;
	default: return false;
	}
	return cur_ok(c);
}

/* A resource template (6.4): small and large descriptors up to the End Tag. Takes the
 * first DWord and the first QWord memory range; true when it also holds a bus-number
 * range (it is a host bridge's). Bounded by the buffer: every descriptor consumes bytes. */
static bool crs_parse(struct cur *b, struct plat_dtb_window *w32, struct plat_dtb_window *w64)
{
	bool bus = false;
	struct plat_dtb_window m32 = { 0, 0, 0 }, m64 = { 0, 0, 0 };
	while (cur_left(b) > 0) {
		uint8_t tag = cur_u8(b);
		if (!(tag & 0x80)) { /* small: length in bits 2:0 */
			if ((tag >> 3) == 0x0f)
				break; /* End Tag */
			cur_skip(b, tag & 7u);
			if (!cur_ok(b))
				return false;
			continue;
		}
		uint16_t dlen = cur_le16(b);
		struct cur d = cur_sub(b, dlen);
		if (!cur_ok(b))
			return false;
		uint8_t item = tag & 0x7fu;
		if (item != 0x07 && item != 0x08 && item != 0x0a)
			continue; /* not a DWord, Word or QWord address space */
		uint8_t rtype = cur_u8(&d);
		cur_skip(&d, 2); /* general and type-specific flags */
		uint64_t min, tra, len;
		if (item == 0x0a) {
			cur_skip(&d, 8);
			min = cur_le64(&d);
			cur_skip(&d, 8);
			tra = cur_le64(&d);
			len = cur_le64(&d);
		} else if (item == 0x07) {
			cur_skip(&d, 4);
			min = cur_le32(&d);
			cur_skip(&d, 4);
			tra = cur_le32(&d);
			len = cur_le32(&d);
		} else {
			cur_skip(&d, 2);
			min = cur_le16(&d);
			cur_skip(&d, 2);
			tra = cur_le16(&d);
			len = cur_le16(&d);
		}
		if (!cur_ok(&d))
			return false;
		if (rtype == 2)
			bus = true;
		if (rtype != 0 || len == 0 || min > UINT64_MAX - tra)
			continue;
		struct plat_dtb_window win = { min + tra, min, len };
		if (item == 0x07 && m32.len == 0)
			m32 = win;
		else if (item == 0x0a && m64.len == 0)
			m64 = win;
	}
	if (!bus)
		return false;
	*w32 = m32;
	*w64 = m64;
	return true;
}

/* Bounded scan of the DSDT body for Name(_CRS, Buffer(){...}) definitions; the first one
 * holding a bus-number range is the (first) host bridge's. O(len) candidates, each
 * parsed within its own buffer. */
static bool dsdt_pci_windows(struct plat_acpi_sdt *d, struct plat_dtb_extra *extra)
{
	size_t n = cur_left(&d->c);
	const uint8_t *aml = cur_ptr(&d->c, n);
	if (!aml)
		return false;
	for (size_t i = 1; i + 5 <= n; i++) {
		if (aml[i - 1] != 0x08 || memcmp(aml + i, "_CRS", 4) != 0)
			continue;
		struct cur c = cur_make(aml + i + 4, n - i - 4);
		uint32_t plen, pbytes;
		uint64_t blen;
		if (cur_u8(&c) != 0x11 || !aml_pkglen(&c, &plen, &pbytes) || plen < pbytes ||
		    plen - pbytes > cur_left(&c))
			continue;
		struct cur body = cur_sub(&c, plen - pbytes);
		if (!aml_integer(&body, &blen) || blen > cur_left(&body))
			continue;
		struct cur buf = cur_sub(&body, (size_t)blen);
		if (crs_parse(&buf, &extra->pci_mem32, &extra->pci_mem64))
			return true;
	}
	return false;
}

/* ---- root ------------------------------------------------------------------------- */

static bool oem_is_qemu(const struct plat_acpi_sdt *t)
{
	return memcmp(t->oem_id, "BOCHS ", 6) == 0 && memcmp(t->oem_table_id, "BXPC", 4) == 0;
}

enum { T_MADT, T_GTDT, T_SPCR, T_MCFG, T_FADT, T__N };

static int parse_arm(const struct plat_phys_reader *rd, uint64_t rsdp_phys, uint64_t boot_mpidr,
		     struct platform *out, struct plat_dtb_extra *extra, const char **why)
{
	static const char *const sigs[T__N] = { "APIC", "GTDT", "SPCR", "MCFG", "FACP" };
	uint64_t phys[T__N];
	struct plat_acpi_sdt t;
	struct madt_state st = { .boot_mpidr = boot_mpidr };
	bool qemu = false;
	int err = plat_acpi_find_tables(rd, rsdp_phys, sigs, T__N, phys, why);
	if (err)
		return err;
	if (phys[T_MADT] == 0)
		return plat_acpi_reject(PLAT_ACPI_NO_MADT, why, -E_NOENT);
	err = plat_acpi_sdt_map(rd, phys[T_MADT], "APIC", &t, why);
	if (err)
		return err;
	qemu = oem_is_qemu(&t);
	err = madt_arm_parse(out, extra, &st, &t, why);
	if (err)
		return err;
	if (phys[T_MCFG] != 0) {
		err = plat_acpi_sdt_map(rd, phys[T_MCFG], "MCFG", &t, why);
		if (!err)
			err = plat_acpi_mcfg_parse(out, &t, why);
		if (err)
			return err;
	}
	/* The rest only adds: trouble there is a warning, the machine still boots. */
	if (phys[T_GTDT] != 0 && plat_acpi_sdt_map(rd, phys[T_GTDT], "GTDT", &t, NULL) == 0)
		gtdt_parse(extra, &t);
	else
		plat_acpi_warn(PLAT_ACPI_GTDT_BAD);
	if (phys[T_SPCR] != 0 && plat_acpi_sdt_map(rd, phys[T_SPCR], "SPCR", &t, NULL) == 0)
		spcr_parse(out, &t);
	else
		plat_acpi_warn(PLAT_ACPI_SPCR_BAD);
	uint64_t dsdt = 0;
	if (phys[T_FADT] != 0 && plat_acpi_sdt_map(rd, phys[T_FADT], "FACP", &t, NULL) == 0)
		fadt_arm_parse(extra, &t, &dsdt);
	else
		plat_acpi_warn(PLAT_ACPI_PSCI_NONE);
	if (out->n_ecam > 0) {
		if (dsdt == 0 || plat_acpi_sdt_map(rd, dsdt, "DSDT", &t, NULL) != 0 || !dsdt_pci_windows(&t, extra))
			plat_acpi_warn(PLAT_ACPI_CRS_BAD);
	}
	/* QEMU's tables describe no RTC; its virt machine always has its PL031 there. */
	if (qemu)
		extra->rtc_base = PLAT_ACPI_QEMU_VIRT_RTC;
	return 0;
}

int plat_acpi_parse_arm(const struct plat_phys_reader *rd, uint64_t rsdp_phys, uint64_t boot_mpidr,
			struct platform *out, struct plat_dtb_extra *extra, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	plat_arm_fields_clear(out, extra);
	int err = parse_arm(rd, rsdp_phys, boot_mpidr, out, extra, why);
	if (err)
		plat_arm_fields_clear(out, extra);
	return err;
}

/* ---- the canonical line --------------------------------------------------------------- */

struct line {
	char *buf;
	size_t len, at;
};

static void put(struct line *l, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	if (l->at >= l->len)
		return;
	va_start(ap, fmt);
	int n = fmt_vsnprintf(l->buf + l->at, l->len - l->at, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->at += (size_t)n < l->len - l->at ? (size_t)n : l->len - l->at - 1;
}

static const char *psci_name(enum plat_dtb_psci m)
{
	return m == PLAT_DTB_PSCI_HVC ? "hvc" : m == PLAT_DTB_PSCI_SMC ? "smc" : "none";
}

size_t plat_arm_describe(const struct platform *p, const struct plat_dtb_extra *x, char *buf, size_t len)
{
	struct line l = { buf, len, 0 };
	if (len == 0)
		return 0;
	buf[0] = '\0';
	put(&l, "cpus=%u", (unsigned)p->n_cpus);
	for (uint32_t i = 0; i < p->n_cpus && i < PLAT_MAX_CPUS; i++)
		put(&l, "%s%u:0x%x:%s%s", i ? "," : "/", (unsigned)p->cpus[i].acpi_uid, (unsigned)p->cpus[i].apic_id,
		    p->cpus[i].enabled ? "on" : "off", p->cpus[i].boot_cpu ? ":boot" : "");
	put(&l, " gic=v%u gicd=0x%lx gicr=0x%lx gicc=0x%lx its=0x%lx v2m=0x%lx", (unsigned)p->gic_version,
	    (unsigned long)p->gicd_addr, (unsigned long)p->gicr_addr, (unsigned long)p->gicc_addr,
	    (unsigned long)x->gits_base, (unsigned long)x->gicv2m_base);
	put(&l, " ecam=%u", (unsigned)p->n_ecam);
	for (uint32_t i = 0; i < p->n_ecam && i < PLAT_MAX_ECAM; i++)
		put(&l, "%s%u:0x%lx:%u-%u", i ? "," : "/", (unsigned)p->ecam[i].segment, (unsigned long)p->ecam[i].base,
		    (unsigned)p->ecam[i].bus_start, (unsigned)p->ecam[i].bus_end);
	put(&l, " pci32=0x%lx:0x%lx:0x%lx pci64=0x%lx:0x%lx:0x%lx", (unsigned long)x->pci_mem32.cpu_base,
	    (unsigned long)x->pci_mem32.pci_base, (unsigned long)x->pci_mem32.len, (unsigned long)x->pci_mem64.cpu_base,
	    (unsigned long)x->pci_mem64.pci_base, (unsigned long)x->pci_mem64.len);
	put(&l, " uart=0x%lx rtc=0x%lx psci=%s", (unsigned long)p->uart_base, (unsigned long)x->rtc_base,
	    psci_name(x->psci));
	if (x->has_timer)
		put(&l, " timer=virt:%u,phys:%u", (unsigned)x->timer_virt_ppi, (unsigned)x->timer_phys_ppi);
	else
		put(&l, " timer=none");
	return l.at;
}
