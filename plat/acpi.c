/* SPDX-License-Identifier: MIT
 *
 * ACPI table parser (plat/acpi.h): RSDP -> XSDT/RSDT -> MADT, MCFG, FADT (PM1 control,
 * PM timer) -> DSDT (\_S5).
 * Owns only its rejection counters. Reads firmware memory through the caller's phys
 * reader, every byte through a cursor over a mapping whose length it checked; never
 * follows a pointer more than the fixed chain above (so a table pointing at itself or at
 * its parent cannot loop), never recurses, never asserts on table contents.
 *
 * Layouts are those of the ACPI specification (6.5): RSDP 5.2.5, SDT header 5.2.6,
 * XSDT/RSDT 5.2.7-8, FADT 5.2.9, MADT 5.2.12, and the PCI Firmware spec for MCFG;
 * the \_S5 package encoding is AML (19.6: NameOp, PackageOp, PkgLength, data objects).
 */
#include "plat/acpi.h"
#include "plat/acpi_int.h"
#include "lib/bytes.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"

#define SDT_HDR_LEN PLAT_ACPI_SDT_HDR_LEN
#define RSDP_V1_LEN 20u
#define RSDP_V2_LEN 36u
#define MADT_FIXED_LEN 8u  /* local APIC address + flags after the header */
#define MCFG_FIXED_LEN 8u  /* reserved after the header */
#define MCFG_ENTRY_LEN 16u
#define FADT_MIN_LEN 116u  /* ACPI 1.0 FADT */
#define FADT_PM_TMR_BLK 76u
#define FADT_PM_TMR_LEN 91u
#define FADT_FLAGS 112u
#define FADT_X_PM_TMR_BLK 208u /* a Generic Address Structure, ACPI 2.0+ */
#define FADT_TMR_VAL_EXT (1u << 8)
#define FADT_HW_REDUCED (1u << 20)
#define ECAM_BUS_SHIFT 20

static struct plat_acpi_stats g_stats;

static const char *const site_why[PLAT_ACPI__SITES] = {
	[PLAT_ACPI_RSDP_MAP] = "ACPI: RSDP not readable",
	[PLAT_ACPI_RSDP_SIG] = "ACPI: RSDP signature wrong",
	[PLAT_ACPI_RSDP_CSUM] = "ACPI: RSDP checksum wrong",
	[PLAT_ACPI_RSDP_LEN] = "ACPI: RSDP v2 length invalid",
	[PLAT_ACPI_RSDP_XCSUM] = "ACPI: RSDP extended checksum wrong",
	[PLAT_ACPI_RSDP_NO_ROOT] = "ACPI: RSDP names neither XSDT nor RSDT",
	[PLAT_ACPI_SDT_MAP] = "ACPI: table not readable",
	[PLAT_ACPI_SDT_LEN] = "ACPI: table length invalid",
	[PLAT_ACPI_SDT_SIG] = "ACPI: table signature unexpected",
	[PLAT_ACPI_SDT_CSUM] = "ACPI: table checksum wrong",
	[PLAT_ACPI_SDT_CHANGED] = "ACPI: table length changed while mapping",
	[PLAT_ACPI_ROOT_ENTRIES] = "ACPI: XSDT/RSDT not a whole number of entries",
	[PLAT_ACPI_ROOT_TOO_MANY] = "ACPI: too many XSDT/RSDT entries (extra ignored)",
	[PLAT_ACPI_ROOT_BAD_ENTRY] = "ACPI: XSDT/RSDT entry unreadable (skipped)",
	[PLAT_ACPI_DUP_TABLE] = "ACPI: duplicate MADT/MCFG/FADT (ignored)",
	[PLAT_ACPI_NO_MADT] = "ACPI: no MADT (APIC) table",
	[PLAT_ACPI_MADT_SHORT] = "ACPI: MADT too short",
	[PLAT_ACPI_MADT_ENTRY_LEN] = "ACPI: MADT entry length invalid",
	[PLAT_ACPI_MADT_BAD_ID] = "ACPI: MADT entry with invalid or duplicate id (ignored)",
	[PLAT_ACPI_MADT_TOO_MANY] = "ACPI: more MADT CPUs/IOAPICs/overrides than supported (extra ignored)",
	[PLAT_ACPI_MADT_NO_CPU] = "ACPI: MADT lists no enabled CPU",
	[PLAT_ACPI_MCFG_SHORT] = "ACPI: MCFG too short",
	[PLAT_ACPI_MCFG_ENTRIES] = "ACPI: MCFG not a whole number of entries",
	[PLAT_ACPI_MCFG_BAD_ENTRY] = "ACPI: MCFG entry invalid (ignored)",
	[PLAT_ACPI_MCFG_TOO_MANY] = "ACPI: more MCFG entries than supported (extra ignored)",
	[PLAT_ACPI_FADT_SHORT] = "ACPI: FADT too short",
	[PLAT_ACPI_FADT_BAD_PORT] = "ACPI: FADT PM1 control block is not an I/O port (ignored)",
	[PLAT_ACPI_FADT_BAD_PMTMR] = "ACPI: FADT PM timer is not a 4-byte I/O port (ignored)",
	[PLAT_ACPI_DSDT_BAD] = "ACPI: DSDT unreadable or corrupt: no S5 power-off",
	[PLAT_ACPI_S5_MISSING] = "ACPI: no \\_S5 package in the DSDT: no S5 power-off",
	[PLAT_ACPI_S5_BAD] = "ACPI: malformed _S5_ candidate in the DSDT (skipped)",
	[PLAT_ACPI_GICC_BAD] = "ACPI: MADT GICC entry with a duplicate or unusable MPIDR (ignored)",
	[PLAT_ACPI_GIC_DUP] = "ACPI: second GICD, GICR, ITS or MSI frame in the MADT (ignored)",
	[PLAT_ACPI_GIC_NONE] = "ACPI: MADT names no usable GIC distributor",
	[PLAT_ACPI_GTDT_BAD] = "ACPI: GTDT missing or short: no timer interrupts",
	[PLAT_ACPI_SPCR_BAD] = "ACPI: SPCR missing or not a PL011 in memory space",
	[PLAT_ACPI_PSCI_NONE] = "ACPI: FADT missing or not PSCI-compliant: no PSCI",
	[PLAT_ACPI_CRS_BAD] = "ACPI: no usable PCI host bridge _CRS in the DSDT",
};

static const char *const site_names[PLAT_ACPI__SITES] = {
	[PLAT_ACPI_RSDP_MAP] = "rsdp_map",
	[PLAT_ACPI_RSDP_SIG] = "rsdp_sig",
	[PLAT_ACPI_RSDP_CSUM] = "rsdp_csum",
	[PLAT_ACPI_RSDP_LEN] = "rsdp_len",
	[PLAT_ACPI_RSDP_XCSUM] = "rsdp_xcsum",
	[PLAT_ACPI_RSDP_NO_ROOT] = "rsdp_no_root",
	[PLAT_ACPI_SDT_MAP] = "sdt_map",
	[PLAT_ACPI_SDT_LEN] = "sdt_len",
	[PLAT_ACPI_SDT_SIG] = "sdt_sig",
	[PLAT_ACPI_SDT_CSUM] = "sdt_csum",
	[PLAT_ACPI_SDT_CHANGED] = "sdt_changed",
	[PLAT_ACPI_ROOT_ENTRIES] = "root_entries",
	[PLAT_ACPI_ROOT_TOO_MANY] = "root_too_many",
	[PLAT_ACPI_ROOT_BAD_ENTRY] = "root_bad_entry",
	[PLAT_ACPI_DUP_TABLE] = "dup_table",
	[PLAT_ACPI_NO_MADT] = "no_madt",
	[PLAT_ACPI_MADT_SHORT] = "madt_short",
	[PLAT_ACPI_MADT_ENTRY_LEN] = "madt_entry_len",
	[PLAT_ACPI_MADT_BAD_ID] = "madt_bad_id",
	[PLAT_ACPI_MADT_TOO_MANY] = "madt_too_many",
	[PLAT_ACPI_MADT_NO_CPU] = "madt_no_cpu",
	[PLAT_ACPI_MCFG_SHORT] = "mcfg_short",
	[PLAT_ACPI_MCFG_ENTRIES] = "mcfg_entries",
	[PLAT_ACPI_MCFG_BAD_ENTRY] = "mcfg_bad_entry",
	[PLAT_ACPI_MCFG_TOO_MANY] = "mcfg_too_many",
	[PLAT_ACPI_FADT_SHORT] = "fadt_short",
	[PLAT_ACPI_FADT_BAD_PORT] = "fadt_bad_port",
	[PLAT_ACPI_FADT_BAD_PMTMR] = "fadt_bad_pmtmr",
	[PLAT_ACPI_DSDT_BAD] = "dsdt_bad",
	[PLAT_ACPI_S5_MISSING] = "s5_missing",
	[PLAT_ACPI_S5_BAD] = "s5_bad",
	[PLAT_ACPI_GICC_BAD] = "gicc_bad",
	[PLAT_ACPI_GIC_DUP] = "gic_dup",
	[PLAT_ACPI_GIC_NONE] = "gic_none",
	[PLAT_ACPI_GTDT_BAD] = "gtdt_bad",
	[PLAT_ACPI_SPCR_BAD] = "spcr_bad",
	[PLAT_ACPI_PSCI_NONE] = "psci_none",
	[PLAT_ACPI_CRS_BAD] = "crs_bad",
};

const struct plat_acpi_stats *plat_acpi_stats(void)
{
	return &g_stats;
}

const char *plat_acpi_site_name(enum plat_acpi_site site)
{
	if ((unsigned)site >= PLAT_ACPI__SITES)
		return "?";
	return site_names[site];
}

/* A fatal rejection: count it, say why, return err. */
static int reject(enum plat_acpi_site site, const char **why, int err)
{
	g_stats.rejects[site]++;
	if (why)
		*why = site_why[site];
	return err;
}

/* A fatal rejection of one table: the reason names the table's expected signature. */
static char g_why_buf[96];
static int reject_sdt(enum plat_acpi_site site, const char *sig, const char **why, int err)
{
	g_stats.rejects[site]++;
	if (why) {
		/* site_why[] strings start with "ACPI: "; put the table name after it. */
		(void)fmt_snprintf(g_why_buf, sizeof g_why_buf, "ACPI %.4s: %s", sig, site_why[site] + 6);
		*why = g_why_buf;
	}
	return err;
}

/* A non-fatal problem: count it and remember it as the last warning. */
static void warn(enum plat_acpi_site site)
{
	g_stats.rejects[site]++;
	g_stats.warning = site_why[site];
}

int plat_acpi_reject(enum plat_acpi_site site, const char **why, int err)
{
	return reject(site, why, err);
}

void plat_acpi_warn(enum plat_acpi_site site)
{
	warn(site);
}

void plat_acpi_count(enum plat_acpi_site site)
{
	g_stats.rejects[site]++;
}

/* Map [phys, phys+len) through the reader, refusing ranges that wrap. */
static const uint8_t *map_range(const struct plat_phys_reader *rd, uint64_t phys, size_t len)
{
	if (len == 0 || phys > UINT64_MAX - (uint64_t)len)
		return NULL;
	return rd->map(rd->ctx, phys, len);
}

/* ACPI checksum: all bytes sum to 0 modulo 256. */
static bool csum_ok(const uint8_t *p, size_t len)
{
	uint8_t s = 0;
	for (size_t i = 0; i < len; i++)
		s = (uint8_t)(s + p[i]);
	return s == 0;
}


/* Read only the 36-byte header at phys: signature and claimed length. */
static int sdt_peek(const struct plat_phys_reader *rd, uint64_t phys, uint8_t sig[4] /* out */,
		    uint32_t *len /* out */)
{
	const uint8_t *h = map_range(rd, phys, SDT_HDR_LEN);
	struct cur c;
	if (!h)
		return -E_INVAL;
	c = cur_make(h, SDT_HDR_LEN);
	cur_bytes(&c, sig, 4);
	*len = cur_le32(&c);
	return cur_ok(&c) ? 0 : -E_INVAL;
}

static int sdt_map(const struct plat_phys_reader *rd, uint64_t phys, const char *want_sig,
		   struct plat_acpi_sdt *t /* out */, const char **why)
{
	uint8_t sig[4];
	uint32_t len;
	const uint8_t *p;
	struct cur c;

	if (phys == 0 || sdt_peek(rd, phys, sig, &len) != 0)
		return reject_sdt(PLAT_ACPI_SDT_MAP, want_sig, why, -E_INVAL);
	if (memcmp(sig, want_sig, 4) != 0)
		return reject_sdt(PLAT_ACPI_SDT_SIG, want_sig, why, -E_INVAL);
	if (len < SDT_HDR_LEN || len > PLAT_ACPI_MAX_TABLE_LEN)
		return reject_sdt(PLAT_ACPI_SDT_LEN, want_sig, why, -E_INVAL);
	p = map_range(rd, phys, len);
	if (!p)
		return reject_sdt(PLAT_ACPI_SDT_MAP, want_sig, why, -E_INVAL);
	c = cur_make(p, len);
	/* The header was read through a separate mapping: read the length again from the
	 * bytes we are about to checksum and parse, so both agree. */
	cur_skip(&c, 4);
	if (cur_le32(&c) != len)
		return reject_sdt(PLAT_ACPI_SDT_CHANGED, want_sig, why, -E_INVAL);
	if (!csum_ok(p, len))
		return reject_sdt(PLAT_ACPI_SDT_CSUM, want_sig, why, -E_CORRUPT);
	t->revision = cur_u8(&c);
	cur_skip(&c, 1); /* checksum */
	cur_bytes(&c, t->oem_id, sizeof t->oem_id);
	cur_bytes(&c, t->oem_table_id, sizeof t->oem_table_id);
	cur_skip(&c, SDT_HDR_LEN - 24);
	if (!cur_ok(&c))
		return reject_sdt(PLAT_ACPI_SDT_LEN, want_sig, why, -E_INVAL);
	t->c = c;
	t->len = len;
	return 0;
}

/* ---- RSDP ------------------------------------------------------------------------ */

struct rsdp {
	uint8_t revision;
	uint32_t rsdt;
	uint64_t xsdt;
};

static int rsdp_read(const struct plat_phys_reader *rd, uint64_t phys, struct rsdp *r /* out */,
		     const char **why)
{
	const uint8_t *p = map_range(rd, phys, RSDP_V1_LEN);
	struct cur c;
	uint32_t len;

	if (!p)
		return reject(PLAT_ACPI_RSDP_MAP, why, -E_INVAL);
	c = cur_make(p, RSDP_V1_LEN);
	if (memcmp(cur_ptr(&c, 8), "RSD PTR ", 8) != 0)
		return reject(PLAT_ACPI_RSDP_SIG, why, -E_INVAL);
	if (!csum_ok(p, RSDP_V1_LEN))
		return reject(PLAT_ACPI_RSDP_CSUM, why, -E_CORRUPT);
	cur_skip(&c, 1 + 6); /* checksum, OEM id */
	r->revision = cur_u8(&c);
	r->rsdt = cur_le32(&c);
	r->xsdt = 0;
	if (r->revision < 2)
		return 0;
	p = map_range(rd, phys, RSDP_V2_LEN);
	if (!p)
		return reject(PLAT_ACPI_RSDP_MAP, why, -E_INVAL);
	c = cur_make(p, RSDP_V2_LEN);
	cur_skip(&c, RSDP_V1_LEN);
	len = cur_le32(&c);
	if (len < RSDP_V2_LEN || len > PLAT_ACPI_MAX_RSDP_LEN)
		return reject(PLAT_ACPI_RSDP_LEN, why, -E_INVAL);
	p = map_range(rd, phys, len);
	if (!p)
		return reject(PLAT_ACPI_RSDP_MAP, why, -E_INVAL);
	/* Read the fields again from the mapping whose checksum we verify. */
	c = cur_make(p, len);
	cur_skip(&c, RSDP_V1_LEN);
	if (cur_le32(&c) != len)
		return reject(PLAT_ACPI_RSDP_LEN, why, -E_INVAL);
	r->xsdt = cur_le64(&c);
	if (!cur_ok(&c) || !csum_ok(p, len))
		return reject(PLAT_ACPI_RSDP_XCSUM, why, -E_CORRUPT);
	return 0;
}

/* Each 16-byte slot is mapped on its own, so a window only partly backed by memory
 * (small guests, tests) is still scanned where it is readable. */
static bool rsdp_scan(const struct plat_phys_reader *rd, uint64_t base, size_t len, uint64_t *found)
{
	struct rsdp r;
	for (size_t off = 0; off + RSDP_V1_LEN <= len; off += 16) {
		const uint8_t *p = map_range(rd, base + off, 8);
		if (!p || memcmp(p, "RSD PTR ", 8) != 0)
			continue;
		/* Full validation through the reader (v2 may extend past this slot). */
		if (rsdp_read(rd, base + off, &r, NULL) == 0) {
			*found = base + off;
			return true;
		}
	}
	return false;
}

int plat_acpi_find_rsdp(const struct plat_phys_reader *rd, uint64_t *rsdp_phys)
{
	const uint8_t *bda = map_range(rd, 0x40e, 2);
	if (bda) {
		uint64_t ebda = (uint64_t)ld_le16(bda) << 4;
		/* The EBDA lives just below 640 KiB; anything else is not trusted. */
		if (ebda >= 0x80000 && ebda + 1024 <= 0xa0000 && rsdp_scan(rd, ebda, 1024, rsdp_phys))
			return 0;
	}
	if (rsdp_scan(rd, 0xe0000, 0x20000, rsdp_phys))
		return 0;
	return -E_NOENT;
}

/* ---- MADT -------------------------------------------------------------------------- */

static void madt_add_cpu(struct platform *out, uint32_t apic_id, uint32_t uid, uint32_t flags,
			 bool x2apic)
{
	bool enabled = (flags & 1u) != 0;
	bool online_capable = (flags & 2u) != 0;
	if (!enabled && !online_capable)
		return; /* not usable: firmware says so */
	if (apic_id == (x2apic ? 0xffffffffu : 0xffu)) {
		g_stats.rejects[PLAT_ACPI_MADT_BAD_ID]++;
		return;
	}
	for (uint32_t i = 0; i < out->n_cpus; i++) {
		if (out->cpus[i].apic_id == apic_id) {
			g_stats.rejects[PLAT_ACPI_MADT_BAD_ID]++;
			return;
		}
	}
	if (out->n_cpus >= PLAT_MAX_CPUS) {
		g_stats.rejects[PLAT_ACPI_MADT_TOO_MANY]++;
		return;
	}
	struct plat_cpu *cpu = &out->cpus[out->n_cpus];
	cpu->apic_id = apic_id;
	cpu->acpi_uid = uid;
	cpu->enabled = enabled;
	cpu->boot_cpu = false;
	if (enabled) {
		bool have_boot = false;
		for (uint32_t i = 0; i < out->n_cpus; i++)
			have_boot |= out->cpus[i].boot_cpu;
		cpu->boot_cpu = !have_boot;
	}
	out->n_cpus++;
}

static int madt_parse(struct platform *out, struct plat_acpi_sdt *t, const char **why)
{
	struct cur *c = &t->c;
	uint32_t lapic = cur_le32(c);
	(void)cur_le32(c); /* flags: PCAT_COMPAT only, not needed */
	if (!cur_ok(c))
		return reject(PLAT_ACPI_MADT_SHORT, why, -E_INVAL);
	out->lapic_addr = lapic;

	/* Each turn consumes at least 2 bytes (entry length >= 2 is checked), so the loop
	 * ends after at most len/2 turns. */
	while (cur_left(c) > 0) {
		uint8_t type, elen;
		struct cur e;
		if (cur_left(c) < 2)
			return reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
		type = cur_u8(c);
		elen = cur_u8(c);
		if (elen < 2 || (size_t)(elen - 2) > cur_left(c))
			return reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
		e = cur_sub(c, (size_t)elen - 2);
		switch (type) {
		case 0: { /* processor local APIC */
			if (elen < 8)
				return reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			uint8_t uid = cur_u8(&e);
			uint8_t id = cur_u8(&e);
			uint32_t fl = cur_le32(&e);
			madt_add_cpu(out, id, uid, fl, false);
			break;
		}
		case 1: { /* I/O APIC */
			if (elen < 12)
				return reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			uint8_t id = cur_u8(&e);
			cur_skip(&e, 1);
			uint32_t addr = cur_le32(&e);
			uint32_t gsi = cur_le32(&e);
			if (addr == 0) {
				g_stats.rejects[PLAT_ACPI_MADT_BAD_ID]++;
			} else if (out->n_ioapics >= PLAT_MAX_IOAPICS) {
				g_stats.rejects[PLAT_ACPI_MADT_TOO_MANY]++;
			} else {
				struct plat_ioapic *io = &out->ioapics[out->n_ioapics++];
				io->id = id;
				io->addr = addr;
				io->gsi_base = gsi;
			}
			break;
		}
		case 2: { /* interrupt source override */
			if (elen < 10)
				return reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			cur_skip(&e, 1); /* bus: always ISA (0) */
			uint8_t src = cur_u8(&e);
			uint32_t gsi = cur_le32(&e);
			uint16_t fl = cur_le16(&e);
			if (out->n_isos >= PLAT_MAX_ISO) {
				g_stats.rejects[PLAT_ACPI_MADT_TOO_MANY]++;
			} else {
				struct plat_iso *iso = &out->isos[out->n_isos++];
				iso->bus_irq = src;
				iso->gsi = gsi;
				iso->flags = fl;
			}
			break;
		}
		case 5: { /* local APIC address override */
			if (elen < 12)
				return reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			cur_skip(&e, 2);
			out->lapic_addr = cur_le64(&e);
			break;
		}
		case 9: { /* processor local x2APIC */
			if (elen < 16)
				return reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
			cur_skip(&e, 2);
			uint32_t id = cur_le32(&e);
			uint32_t fl = cur_le32(&e);
			uint32_t uid = cur_le32(&e);
			madt_add_cpu(out, id, uid, fl, true);
			break;
		}
		default: /* NMI sources, GIC, ...: not used on x86 here */
			break;
		}
		/* Sub-cursor reads were checked against minimum lengths above; an error here
		 * would be a bug in this file, but stay safe: treat as malformed. */
		if (!cur_ok(&e))
			return reject(PLAT_ACPI_MADT_ENTRY_LEN, why, -E_INVAL);
	}
	bool have_boot = false;
	for (uint32_t i = 0; i < out->n_cpus; i++)
		have_boot |= out->cpus[i].boot_cpu;
	if (!have_boot)
		return reject(PLAT_ACPI_MADT_NO_CPU, why, -E_INVAL);
	return 0;
}

/* ---- MCFG -------------------------------------------------------------------------- */

static int mcfg_parse(struct platform *out, struct plat_acpi_sdt *t, const char **why)
{
	struct cur *c = &t->c;
	cur_skip(c, MCFG_FIXED_LEN);
	if (!cur_ok(c))
		return reject(PLAT_ACPI_MCFG_SHORT, why, -E_INVAL);
	if (cur_left(c) % MCFG_ENTRY_LEN != 0)
		return reject(PLAT_ACPI_MCFG_ENTRIES, why, -E_INVAL);
	while (cur_left(c) >= MCFG_ENTRY_LEN) {
		uint64_t base = cur_le64(c);
		uint16_t seg = cur_le16(c);
		uint8_t start = cur_u8(c);
		uint8_t end = cur_u8(c);
		cur_skip(c, 4);
		uint64_t span = ((uint64_t)end + 1) << ECAM_BUS_SHIFT;
		if (base == 0 || (base & 0xfff) != 0 || end < start || base > UINT64_MAX - span) {
			g_stats.rejects[PLAT_ACPI_MCFG_BAD_ENTRY]++;
			continue;
		}
		if (out->n_ecam >= PLAT_MAX_ECAM) {
			g_stats.rejects[PLAT_ACPI_MCFG_TOO_MANY]++;
			continue;
		}
		struct plat_ecam *ec = &out->ecam[out->n_ecam++];
		ec->base = base;
		ec->segment = seg;
		ec->bus_start = start;
		ec->bus_end = end;
	}
	return cur_ok(c) ? 0 : reject(PLAT_ACPI_MCFG_ENTRIES, why, -E_INVAL);
}

/* ---- FADT and \_S5 -------------------------------------------------------------------- */

/* One AML integer data object (ZeroOp, OneOp, Byte/Word/DWordPrefix). */
static bool aml_int(struct cur *c, uint32_t *v)
{
	uint8_t op = cur_u8(c);
	switch (op) {
	case 0x00: *v = 0; break;
	case 0x01: *v = 1; break;
	case 0x0a: *v = cur_u8(c); break;
	case 0x0b: *v = cur_le16(c); break;
	case 0x0c: *v = cur_le32(c); break;
	default: return false;
	}
	return cur_ok(c);
}

/* After the name: PackageOp PkgLength NumElements elements... */
static bool s5_package(struct cur *c, uint16_t *a, uint16_t *b)
{
	uint8_t lead, nbytes, n;
	uint32_t plen, v0, v1;
	struct cur pkg;

	if (cur_u8(c) != 0x12)
		return false;
	lead = cur_u8(c);
	nbytes = (uint8_t)(lead >> 6);
	if (nbytes == 0) {
		plen = lead & 0x3fu;
	} else {
		plen = lead & 0x0fu;
		for (uint8_t k = 0; k < nbytes; k++)
			plen |= (uint32_t)cur_u8(c) << (4 + 8 * k);
	}
	/* PkgLength counts its own bytes; what remains must hold NumElements at least. */
	if (!cur_ok(c) || plen < 1u + nbytes + 1u || plen - 1u - nbytes > cur_left(c))
		return false;
	pkg = cur_sub(c, plen - 1u - nbytes);
	n = cur_u8(&pkg);
	if (n == 0 || !aml_int(&pkg, &v0))
		return false;
	if (n == 1) {
		/* One integer carrying both types: SLP_TYPa in bits 0-2, SLP_TYPb in 8-10. */
		if ((v0 & ~0x707u) != 0)
			return false;
		*a = (uint16_t)(v0 & 7u);
		*b = (uint16_t)((v0 >> 8) & 7u);
		return true;
	}
	if (!aml_int(&pkg, &v1) || v0 > 7 || v1 > 7)
		return false;
	*a = (uint16_t)v0;
	*b = (uint16_t)v1;
	return true;
}

/* Bounded scan of the AML body for Name(_S5_, Package(){a, b, ...}). O(len): each
 * candidate is checked in constant time by s5_package(). */
static bool s5_find(struct cur *body, uint16_t *a, uint16_t *b)
{
	size_t n = cur_left(body);
	const uint8_t *aml = cur_ptr(body, n);
	if (!aml || n < 4)
		return false;
	for (size_t i = 0; i + 4 <= n; i++) {
		if (aml[i] != '_' || memcmp(aml + i, "_S5_", 4) != 0)
			continue;
		bool named = (i >= 1 && aml[i - 1] == 0x08) ||
			     (i >= 2 && aml[i - 1] == '\\' && aml[i - 2] == 0x08);
		if (!named)
			continue; /* a reference to _S5_, not its definition */
		struct cur c = cur_make(aml + i + 4, n - i - 4);
		if (s5_package(&c, a, b))
			return true;
		g_stats.rejects[PLAT_ACPI_S5_BAD]++;
	}
	return false;
}

/* Generic Address Structure naming an I/O port; false if absent or another space. */
static bool gas_io_port(struct cur *c, uint64_t *port, bool *present)
{
	uint8_t space = cur_u8(c);
	cur_skip(c, 3); /* bit width, bit offset, access size */
	*port = cur_le64(c);
	*present = *port != 0;
	return space == 1;
}

static uint32_t pm1_pick(uint32_t legacy, bool x_valid, bool x_present, uint64_t x_port)
{
	if (x_present) {
		if (x_valid && x_port <= 0xffff)
			return (uint32_t)x_port;
		warn(PLAT_ACPI_FADT_BAD_PORT);
		return 0;
	}
	if (legacy > 0xffff) {
		warn(PLAT_ACPI_FADT_BAD_PORT);
		return 0;
	}
	return legacy;
}

/* The PM timer (FADT PM_TMR_BLK, X_PM_TMR_BLK, PM_TMR_LEN, flags TMR_VAL_EXT and
 * HW_REDUCED_ACPI; ACPI 6.5 5.2.9, 4.8.3.3): a non-zero X_PM_TMR_BLK wins and must be an
 * I/O port; the legacy block counts only with PM_TMR_LEN 4. The caller checked t->len >=
 * FADT_MIN_LEN. Anything else leaves the timer absent (pm_tmr_port 0). */
static void fadt_pm_timer(struct platform *out, const struct plat_acpi_sdt *t)
{
	struct cur c = t->c;
	cur_skip(&c, FADT_PM_TMR_BLK - SDT_HDR_LEN);
	uint32_t legacy = cur_le32(&c);
	cur_skip(&c, FADT_PM_TMR_LEN - FADT_PM_TMR_BLK - 4);
	uint8_t len = cur_u8(&c);
	cur_skip(&c, FADT_FLAGS - FADT_PM_TMR_LEN - 1);
	uint32_t flags = cur_le32(&c);
	uint64_t x = 0;
	bool x_io = false, x_present = false;
	if (!cur_ok(&c))
		return;
	if (t->len >= FADT_X_PM_TMR_BLK + 12) {
		c = t->c;
		cur_skip(&c, FADT_X_PM_TMR_BLK - SDT_HDR_LEN);
		x_io = gas_io_port(&c, &x, &x_present);
	}
	if (!cur_ok(&c) || (flags & FADT_HW_REDUCED))
		return;
	uint32_t port;
	if (x_present) {
		if (!x_io || x > 0xffff) {
			warn(PLAT_ACPI_FADT_BAD_PMTMR);
			return;
		}
		port = (uint32_t)x;
	} else if (legacy == 0) {
		return; /* no PM timer */
	} else if (len != 4 || legacy > 0xffff) {
		warn(PLAT_ACPI_FADT_BAD_PMTMR);
		return;
	} else {
		port = legacy;
	}
	out->pm_tmr_port = port;
	out->pm_tmr_32 = (flags & FADT_TMR_VAL_EXT) != 0;
}

static int fadt_parse(struct platform *out, const struct plat_phys_reader *rd, struct plat_acpi_sdt *t,
		      const char **why)
{
	struct cur c = t->c; /* at offset 36 */
	uint32_t dsdt32, pm1a, pm1b;
	uint64_t dsdt = 0, xa = 0, xb = 0;
	bool xa_ok = false, xb_ok = false, xa_present = false, xb_present = false;
	struct plat_acpi_sdt d;
	const char *dwhy = NULL;

	if (t->len < FADT_MIN_LEN)
		return reject(PLAT_ACPI_FADT_SHORT, why, -E_INVAL);
	cur_skip(&c, 4); /* FIRMWARE_CTRL */
	dsdt32 = cur_le32(&c);
	cur_skip(&c, 64 - 44);
	pm1a = cur_le32(&c);
	pm1b = cur_le32(&c);
	if (t->len >= 148) {
		c = t->c;
		cur_skip(&c, 140 - SDT_HDR_LEN);
		dsdt = cur_le64(&c); /* X_DSDT */
	}
	if (t->len >= 196) {
		c = t->c;
		cur_skip(&c, 172 - SDT_HDR_LEN);
		xa_ok = gas_io_port(&c, &xa, &xa_present);
		xb_ok = gas_io_port(&c, &xb, &xb_present);
	}
	if (!cur_ok(&c))
		return reject(PLAT_ACPI_FADT_SHORT, why, -E_INVAL);
	if (dsdt == 0)
		dsdt = dsdt32;
	out->pm1a_cnt = pm1_pick(pm1a, xa_ok, xa_present, xa);
	out->pm1b_cnt = pm1_pick(pm1b, xb_ok, xb_present, xb);
	fadt_pm_timer(out, t);

	/* The DSDT only matters for power-off: trouble there is a warning, not a stop. */
	if (sdt_map(rd, dsdt, "DSDT", &d, &dwhy) != 0) {
		warn(PLAT_ACPI_DSDT_BAD);
		return 0;
	}
	if (out->pm1a_cnt != 0 && s5_find(&d.c, &out->slp_typa, &out->slp_typb)) {
		out->has_s5 = true;
	} else {
		out->slp_typa = out->slp_typb = 0;
		warn(PLAT_ACPI_S5_MISSING);
	}
	return 0;
}

/* ---- root -------------------------------------------------------------------------- */

static void clear_acpi_fields(struct platform *out)
{
	out->n_cpus = 0;
	memset(out->cpus, 0, sizeof out->cpus);
	out->n_ioapics = 0;
	memset(out->ioapics, 0, sizeof out->ioapics);
	out->n_isos = 0;
	memset(out->isos, 0, sizeof out->isos);
	out->lapic_addr = 0;
	out->n_ecam = 0;
	memset(out->ecam, 0, sizeof out->ecam);
	out->pm1a_cnt = out->pm1b_cnt = 0;
	out->slp_typa = out->slp_typb = 0;
	out->has_s5 = false;
	out->pm_tmr_port = 0;
	out->pm_tmr_32 = false;
}

int plat_acpi_sdt_map(const struct plat_phys_reader *rd, uint64_t phys, const char *sig,
		      struct plat_acpi_sdt *t, const char **why)
{
	return sdt_map(rd, phys, sig, t, why);
}

int plat_acpi_mcfg_parse(struct platform *out, struct plat_acpi_sdt *t, const char **why)
{
	return mcfg_parse(out, t, why);
}

int plat_acpi_find_tables(const struct plat_phys_reader *rd, uint64_t rsdp_phys, const char *const *sigs,
			  size_t n_sigs, uint64_t *phys_out, const char **why)
{
	struct rsdp r;
	struct plat_acpi_sdt root;
	size_t esz, n;
	int err;

	for (size_t k = 0; k < n_sigs; k++)
		phys_out[k] = 0;
	err = rsdp_read(rd, rsdp_phys, &r, why);
	if (err)
		return err;
	if (r.revision >= 2 && r.xsdt != 0) {
		err = sdt_map(rd, r.xsdt, "XSDT", &root, why);
		esz = 8;
	} else if (r.rsdt != 0) {
		err = sdt_map(rd, r.rsdt, "RSDT", &root, why);
		esz = 4;
	} else {
		return reject(PLAT_ACPI_RSDP_NO_ROOT, why, -E_INVAL);
	}
	if (err)
		return err;
	if (cur_left(&root.c) % esz != 0)
		return reject(PLAT_ACPI_ROOT_ENTRIES, why, -E_INVAL);
	n = cur_left(&root.c) / esz;
	if (n > PLAT_ACPI_MAX_SDT_ENTRIES) {
		g_stats.rejects[PLAT_ACPI_ROOT_TOO_MANY]++;
		n = PLAT_ACPI_MAX_SDT_ENTRIES;
	}
	/* Only the headers here; the caller parses each table once: the tables followed are
	 * fixed by signature, so no chain of pointers can loop. */
	for (size_t i = 0; i < n; i++) {
		uint64_t phys = esz == 8 ? cur_le64(&root.c) : cur_le32(&root.c);
		uint8_t sig[4];
		uint32_t len;
		if (phys == 0 || sdt_peek(rd, phys, sig, &len) != 0) {
			g_stats.rejects[PLAT_ACPI_ROOT_BAD_ENTRY]++;
			continue;
		}
		for (size_t k = 0; k < n_sigs; k++) {
			if (memcmp(sig, sigs[k], 4) != 0)
				continue;
			if (phys_out[k] != 0)
				g_stats.rejects[PLAT_ACPI_DUP_TABLE]++;
			else
				phys_out[k] = phys;
			break;
		}
	}
	return 0;
}

static int parse_tables(struct platform *out, const struct plat_phys_reader *rd, uint64_t rsdp_phys,
			const char **why)
{
	static const char *const sigs[3] = { "APIC", "MCFG", "FACP" };
	uint64_t phys[3];
	struct plat_acpi_sdt t;
	int err;

	err = plat_acpi_find_tables(rd, rsdp_phys, sigs, 3, phys, why);
	if (err)
		return err;
	uint64_t madt = phys[0], mcfg = phys[1], fadt = phys[2];
	if (madt == 0)
		return reject(PLAT_ACPI_NO_MADT, why, -E_NOENT);
	err = sdt_map(rd, madt, "APIC", &t, why);
	if (!err)
		err = madt_parse(out, &t, why);
	if (!err && mcfg != 0) {
		err = sdt_map(rd, mcfg, "MCFG", &t, why);
		if (!err)
			err = mcfg_parse(out, &t, why);
	}
	if (!err && fadt != 0) {
		err = sdt_map(rd, fadt, "FACP", &t, why);
		if (!err)
			err = fadt_parse(out, rd, &t, why);
	}
	return err;
}

int plat_acpi_parse(struct platform *out, const struct plat_phys_reader *rd, uint64_t rsdp_phys,
		    const char **why)
{
	const char *dummy;
	int err;
	if (!why)
		why = &dummy;
	*why = NULL;
	g_stats.warning = NULL;
	clear_acpi_fields(out);
	err = parse_tables(out, rd, rsdp_phys, why);
	if (err)
		clear_acpi_fields(out);
	return err;
}
