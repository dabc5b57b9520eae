/* SPDX-License-Identifier: MIT
 * Unit tests for plat/acpi: a fake physical memory (1 MiB byte array) holding synthetic
 * tables shaped like QEMU's (RSDP in the BIOS area, RSDT or XSDT, MADT, MCFG, FADT, DSDT),
 * then one mutation per malformed case: bad checksums, lengths beyond the mapping,
 * truncated or zero-length MADT entries, pointer loops, excess entries. Every rejection
 * must name its site and leave the ACPI fields zero. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "plat/acpi.h"

#define MEM_SIZE 0x100000u
#define A_RSDP 0xf0000u
#define A_RSDT 0x10000u
#define A_XSDT 0x10400u
#define A_MADT 0x11000u
#define A_MADT2 0x11800u
#define A_MCFG 0x12000u
#define A_FADT 0x13000u
#define A_DSDT 0x14000u

static uint8_t mem[MEM_SIZE];

static const void *fake_map(void *ctx, uint64_t phys, size_t len)
{
	size_t size = *(size_t *)ctx;
	if (phys >= size || len > size - phys)
		return NULL;
	return mem + phys;
}

static size_t mem_limit = MEM_SIZE;
static const struct plat_phys_reader rd = { &mem_limit, fake_map };

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

/* Recompute the checksum of the SDT at phys from its own length field. */
static void fix_sdt(uint32_t phys)
{
	uint32_t len = ld_le32(mem + phys + 4);
	mem[phys + 9] = 0;
	mem[phys + 9] = (uint8_t)(0 - sum(mem + phys, len));
}

static uint32_t put_sdt(uint32_t phys, const char *sig, uint8_t rev, const void *body, uint32_t blen)
{
	uint8_t *h = mem + phys;
	memset(h, 0, 36);
	memcpy(h, sig, 4);
	st_le32(h + 4, 36 + blen);
	h[8] = rev;
	memcpy(h + 10, "URTEST", 6);
	memcpy(h + 16, "URMQTTTB", 8);
	memcpy(h + 36, body, blen);
	fix_sdt(phys);
	return 36 + blen;
}

static void fix_rsdp(uint32_t phys)
{
	uint8_t *p = mem + phys;
	p[8] = 0;
	p[8] = (uint8_t)(0 - sum(p, 20));
	if (p[15] >= 2) {
		p[32] = 0;
		p[32] = (uint8_t)(0 - sum(p, ld_le32(p + 20)));
	}
}

static void put_rsdp(uint32_t phys, uint8_t rev, uint32_t rsdt, uint64_t xsdt)
{
	uint8_t *p = mem + phys;
	memset(p, 0, 36);
	memcpy(p, "RSD PTR ", 8);
	memcpy(p + 9, "BOCHS ", 6);
	p[15] = rev;
	st_le32(p + 16, rsdt);
	if (rev >= 2) {
		st_le32(p + 20, 36);
		st_le64(p + 24, xsdt);
	}
	fix_rsdp(phys);
}

/* MADT body as QEMU -smp n builds it (plus an x2APIC and NMI entry when asked). */
static uint32_t madt_body(uint8_t *b, unsigned n_cpus, bool x2)
{
	uint32_t o = 0;
	st_le32(b + o, 0xfee00000u); o += 4;
	st_le32(b + o, 1); o += 4;
	for (unsigned i = 0; i < n_cpus; i++) {
		b[o] = 0; b[o + 1] = 8; b[o + 2] = (uint8_t)i; b[o + 3] = (uint8_t)i;
		st_le32(b + o + 4, 1);
		o += 8;
	}
	b[o] = 1; b[o + 1] = 12; b[o + 2] = 0; b[o + 3] = 0;
	st_le32(b + o + 4, 0xfec00000u); st_le32(b + o + 8, 0); o += 12;
	static const uint8_t isos[][4] = { { 0, 2, 0, 0 }, { 5, 5, 0x0d, 0 }, { 9, 9, 0x0d, 0 },
					   { 10, 10, 0x0d, 0 }, { 11, 11, 0x0d, 0 } };
	for (unsigned i = 0; i < 5; i++) {
		b[o] = 2; b[o + 1] = 10; b[o + 2] = 0; b[o + 3] = isos[i][0];
		st_le32(b + o + 4, isos[i][1]); st_le16(b + o + 8, isos[i][2]);
		o += 10;
	}
	b[o] = 4; b[o + 1] = 6; b[o + 2] = 0xff; b[o + 3] = 0; b[o + 4] = 0; b[o + 5] = 1; o += 6;
	if (x2) {
		b[o] = 9; b[o + 1] = 16; b[o + 2] = 0; b[o + 3] = 0;
		st_le32(b + o + 4, 300); st_le32(b + o + 8, 1); st_le32(b + o + 12, 77);
		o += 16;
	}
	return o;
}

static const uint8_t dsdt_aml[] = {
	0x10, 0x0b, '\\', '_', 'S', 'B', '_',                 /* Scope(\_SB) header bytes  */
	0x70, '_', 'S', '5', '_', 0x60,                        /* a reference, not a Name   */
	0x08, '_', 'S', '4', '_', 0x12, 0x06, 0x04, 0, 0, 0, 0, /* Name(_S4_, Package(4){})  */
	0x08, '_', 'S', '5', '_', 0x12, 0x08, 0x04, 0x0a, 0x05, 0x0a, 0x05, 0, 0, /* _S5_ */
	0xa3,
};

/* The good image: RSDP v0 -> RSDT, or v2 -> XSDT (RSDT then names another MADT). */
static void build(bool v2)
{
	uint8_t b[2048];
	uint32_t n;
	memset(mem, 0, sizeof mem);
	mem_limit = MEM_SIZE;

	n = madt_body(b, 4, true);
	put_sdt(A_MADT, "APIC", 3, b, n);
	n = madt_body(b, 1, false);
	put_sdt(A_MADT2, "APIC", 3, b, n);

	memset(b, 0, 24);
	st_le64(b + 8, 0xb0000000u);
	b[18] = 0; b[19] = 0xff;
	put_sdt(A_MCFG, "MCFG", 1, b, 24);

	memset(b, 0, 244 - 36);
	st_le32(b + 40 - 36, A_DSDT);
	st_le32(b + 56 - 36, 0x600);
	st_le32(b + 64 - 36, 0x604);
	b[172 - 36] = 1; b[173 - 36] = 16; b[175 - 36] = 2;
	st_le64(b + 176 - 36, 0x604);
	/* PM timer: legacy block 0x608 (4 bytes), 32 bits (TMR_VAL_EXT), and the same port
	 * in X_PM_TMR_BLK. */
	st_le32(b + 76 - 36, 0x608);
	b[91 - 36] = 4;
	st_le32(b + 112 - 36, 1u << 8);
	b[208 - 36] = 1; b[209 - 36] = 32; b[211 - 36] = 3;
	st_le64(b + 212 - 36, 0x608);
	put_sdt(A_FADT, "FACP", 3, b, 244 - 36);

	put_sdt(A_DSDT, "DSDT", 1, dsdt_aml, sizeof dsdt_aml);

	/* RSDT: FADT, MADT2 or MADT, MCFG (and a table we do not parse). */
	memset(b, 0, 16);
	st_le32(b + 0, A_FADT);
	st_le32(b + 4, v2 ? A_MADT2 : A_MADT);
	st_le32(b + 8, A_MCFG);
	st_le32(b + 12, A_DSDT);
	put_sdt(A_RSDT, "RSDT", 1, b, 16);
	memset(b, 0, 32);
	st_le64(b + 0, A_FADT);
	st_le64(b + 8, A_MADT);
	st_le64(b + 16, A_MCFG);
	st_le64(b + 24, A_DSDT);
	put_sdt(A_XSDT, "XSDT", 1, b, 32);
	put_rsdp(A_RSDP, v2 ? 2 : 0, A_RSDT, v2 ? A_XSDT : 0);
}

static void check_good(const struct platform *p)
{
	assert_int_equal(p->n_cpus, 5);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(p->cpus[i].apic_id, i);
		assert_int_equal(p->cpus[i].acpi_uid, i);
		assert_true(p->cpus[i].enabled);
		assert_int_equal(p->cpus[i].boot_cpu, i == 0);
	}
	assert_int_equal(p->cpus[4].apic_id, 300);
	assert_int_equal(p->cpus[4].acpi_uid, 77);
	assert_int_equal(p->n_ioapics, 1);
	assert_int_equal(p->ioapics[0].addr, 0xfec00000u);
	assert_int_equal(p->ioapics[0].gsi_base, 0);
	assert_int_equal(p->n_isos, 5);
	assert_int_equal(p->isos[0].bus_irq, 0);
	assert_int_equal(p->isos[0].gsi, 2);
	assert_int_equal(p->isos[1].flags, 0x0d);
	assert_true(p->lapic_addr == 0xfee00000u);
	assert_int_equal(p->n_ecam, 1);
	assert_true(p->ecam[0].base == 0xb0000000u);
	assert_int_equal(p->ecam[0].bus_start, 0);
	assert_int_equal(p->ecam[0].bus_end, 255);
	assert_int_equal(p->pm1a_cnt, 0x604);
	assert_int_equal(p->pm1b_cnt, 0);
	assert_true(p->has_s5);
	assert_int_equal(p->slp_typa, 5);
	assert_int_equal(p->slp_typb, 5);
	assert_int_equal(p->pm_tmr_port, 0x608);
	assert_true(p->pm_tmr_32);
}

static void assert_cleared(const struct platform *p)
{
	assert_int_equal(p->n_cpus, 0);
	assert_int_equal(p->n_ioapics, 0);
	assert_int_equal(p->n_isos, 0);
	assert_int_equal(p->n_ecam, 0);
	assert_false(p->has_s5);
	assert_true(p->lapic_addr == 0);
	assert_int_equal(p->pm_tmr_port, 0);
}

static struct platform plat;

static void test_good_rsdt(void **state)
{
	(void)state;
	const char *why = "x";
	build(false);
	plat.uart_base = 0x3f8;
	plat.n_mem = 1;
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_null(why);
	check_good(&plat);
	assert_null(plat_acpi_stats()->warning);
	/* Fields outside ACPI are left alone. */
	assert_true(plat.uart_base == 0x3f8);
	assert_int_equal(plat.n_mem, 1);
}

static void test_good_xsdt_preferred(void **state)
{
	(void)state;
	const char *why;
	build(true);
	/* The RSDT names a one-CPU MADT; the XSDT must win. */
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	check_good(&plat);
}

static void test_find_rsdp(void **state)
{
	(void)state;
	uint64_t at = 0;
	build(true);
	assert_int_equal(plat_acpi_find_rsdp(&rd, &at), 0);
	assert_true(at == A_RSDP);

	/* A candidate with a bad checksum earlier in the area is skipped. */
	memcpy(mem + 0xe0010, "RSD PTR ", 8);
	assert_int_equal(plat_acpi_find_rsdp(&rd, &at), 0);
	assert_true(at == A_RSDP);

	/* The EBDA is searched first. */
	st_le16(mem + 0x40e, 0x9fc0);
	memmove(mem + 0x9fc00 + 0x40, mem + A_RSDP, 36);
	assert_int_equal(plat_acpi_find_rsdp(&rd, &at), 0);
	assert_true(at == 0x9fc40);

	/* An EBDA pointer outside 0x80000..0x9ffff is not trusted. */
	memmove(mem + 0x1000, mem + 0x9fc40, 36);
	memset(mem + 0x9fc40, 0, 36);
	st_le16(mem + 0x40e, 0x100);
	memset(mem + A_RSDP, 0, 36);
	assert_int_equal(plat_acpi_find_rsdp(&rd, &at), -E_NOENT);

	/* Unaligned signatures are not looked at. */
	put_rsdp(0xe0008, 0, A_RSDT, 0);
	assert_int_equal(plat_acpi_find_rsdp(&rd, &at), -E_NOENT);

	/* Memory too small for the BIOS area: not found, no crash. */
	mem_limit = 0x1000;
	assert_int_equal(plat_acpi_find_rsdp(&rd, &at), -E_NOENT);
	mem_limit = MEM_SIZE;
}

/* ---- malformed tables, one mutation each ------------------------------------------- */

struct bad_case {
	const char *name;
	bool v2;
	void (*mutate)(void);
	int err;                  /* 0: parse succeeds (degraded) */
	enum plat_acpi_site site; /* counter that must move */
};

static void m_rsdp_csum(void) { mem[A_RSDP + 8] ^= 1; }
static void m_rsdp_sig(void) { mem[A_RSDP] = 'X'; fix_rsdp(A_RSDP); }
static void m_rsdp_xcsum(void) { mem[A_RSDP + 32] ^= 1; }
static void m_rsdp_len(void) { st_le32(mem + A_RSDP + 20, 20); fix_rsdp(A_RSDP); }
static void m_rsdp_len_huge(void) { st_le32(mem + A_RSDP + 20, 0x80000000u); mem[A_RSDP + 8] = 0; mem[A_RSDP + 8] = (uint8_t)(0 - sum(mem + A_RSDP, 20)); }
static void m_rsdp_no_root(void) { st_le32(mem + A_RSDP + 16, 0); fix_rsdp(A_RSDP); }
static void m_rsdt_csum(void) { mem[A_RSDT + 40] ^= 0x10; }
static void m_rsdt_sig(void) { st_le32(mem + A_RSDP + 16, A_MADT); fix_rsdp(A_RSDP); }
static void m_xsdt_partial(void) { st_le32(mem + A_XSDT + 4, 36 + 8 * 4 - 3); fix_sdt(A_XSDT); }
static void m_madt_csum(void) { mem[A_MADT + 50] ^= 1; }
static void m_madt_beyond_map(void) { st_le32(mem + A_MADT + 4, MEM_SIZE); }
static void m_madt_beyond_limit(void) { st_le32(mem + A_MADT + 4, 0xfffffff0u); }
static void m_madt_too_short(void) { st_le32(mem + A_MADT + 4, 20); }
static void m_madt_no_fixed(void) { st_le32(mem + A_MADT + 4, 40); fix_sdt(A_MADT); }
static void m_madt_zero_len(void) { mem[A_MADT + 44 + 1] = 0; fix_sdt(A_MADT); }
static void m_madt_one_len(void) { mem[A_MADT + 44 + 1] = 1; fix_sdt(A_MADT); }
static void m_madt_len_past_end(void) { mem[A_MADT + 44 + 8 * 4 + 1] = 0xff; fix_sdt(A_MADT); }
static void m_madt_truncated_entry(void)
{
	uint32_t len = ld_le32(mem + A_MADT + 4);
	st_le32(mem + A_MADT + 4, len - 3); /* the last (x2APIC) entry is cut */
	fix_sdt(A_MADT);
}
static void m_madt_short_lapic(void) { mem[A_MADT + 44 + 1] = 4; fix_sdt(A_MADT); }
static void m_madt_no_cpu(void)
{
	for (unsigned i = 0; i < 4; i++)
		st_le32(mem + A_MADT + 44 + 8 * i + 4, 0);
	uint32_t len = ld_le32(mem + A_MADT + 4);
	st_le32(mem + A_MADT + len - 8, 0); /* x2APIC flags */
	fix_sdt(A_MADT);
}
static void m_no_madt(void) { st_le32(mem + A_RSDT + 36 + 4, A_DSDT); fix_sdt(A_RSDT); }
static void m_entry_unreadable(void) { st_le32(mem + A_RSDT + 36 + 12, MEM_SIZE - 4); fix_sdt(A_RSDT); }
static void m_xsdt_self_loop(void) { st_le64(mem + A_XSDT + 36 + 24, A_XSDT); fix_sdt(A_XSDT); }
static void m_dup_madt(void) { st_le64(mem + A_XSDT + 36 + 24, A_MADT2); fix_sdt(A_XSDT); }
static void m_dsdt_is_fadt(void) { st_le32(mem + A_FADT + 40, A_FADT); fix_sdt(A_FADT); }
static void m_dsdt_csum(void) { mem[A_DSDT + 40] ^= 1; }
static void m_fadt_short(void) { st_le32(mem + A_FADT + 4, 100); fix_sdt(A_FADT); }
static void m_fadt_csum(void) { mem[A_FADT + 64] ^= 1; }
static void m_fadt_mmio_pm1(void) { mem[A_FADT + 172] = 0; fix_sdt(A_FADT); }
static void m_fadt_mmio_pmtmr(void) { mem[A_FADT + 208] = 0; fix_sdt(A_FADT); }
static void m_fadt_pmtmr_len(void)
{
	memset(mem + A_FADT + 208, 0, 12); /* no X_PM_TMR_BLK: the legacy block counts */
	mem[A_FADT + 91] = 2;
	fix_sdt(A_FADT);
}
static void m_mcfg_partial(void) { st_le32(mem + A_MCFG + 4, 36 + 8 + 10); fix_sdt(A_MCFG); }
static void m_mcfg_short(void) { st_le32(mem + A_MCFG + 4, 40); fix_sdt(A_MCFG); }
static void m_mcfg_bad_bus(void) { mem[A_MCFG + 36 + 8 + 10] = 5; mem[A_MCFG + 36 + 8 + 11] = 4; fix_sdt(A_MCFG); }
static void m_mcfg_wrap(void) { st_le64(mem + A_MCFG + 36 + 8, 0xfffffffffff00000ull); fix_sdt(A_MCFG); }
static void m_s5_pkglen_beyond(void) { mem[A_DSDT + 36 + 31] = 0x3f; fix_sdt(A_DSDT); }
static void m_s5_value_too_big(void) { mem[A_DSDT + 36 + 34] = 9; fix_sdt(A_DSDT); }
static void m_s5_bad_op(void) { mem[A_DSDT + 36 + 33] = 0x0e; fix_sdt(A_DSDT); }
static void m_s5_at_end(void)
{
	/* "_S5_" is the very last bytes of the table: no room for a package. */
	static const uint8_t aml[] = { 0x08, '_', 'S', '5', '_' };
	put_sdt(A_DSDT, "DSDT", 1, aml, sizeof aml);
}
static void m_root_beyond_wrap(void)
{
	put_rsdp(A_RSDP, 2, 0, 0xffffffffffffffe0ull);
}

static const struct bad_case bad_cases[] = {
	{ "rsdp checksum", false, m_rsdp_csum, -E_CORRUPT, PLAT_ACPI_RSDP_CSUM },
	{ "rsdp signature", false, m_rsdp_sig, -E_INVAL, PLAT_ACPI_RSDP_SIG },
	{ "rsdp extended checksum", true, m_rsdp_xcsum, -E_CORRUPT, PLAT_ACPI_RSDP_XCSUM },
	{ "rsdp v2 length short", true, m_rsdp_len, -E_INVAL, PLAT_ACPI_RSDP_LEN },
	{ "rsdp v2 length huge", true, m_rsdp_len_huge, -E_INVAL, PLAT_ACPI_RSDP_LEN },
	{ "rsdp without root", false, m_rsdp_no_root, -E_INVAL, PLAT_ACPI_RSDP_NO_ROOT },
	{ "xsdt at wrapping address", true, m_root_beyond_wrap, -E_INVAL, PLAT_ACPI_SDT_MAP },
	{ "rsdt checksum", false, m_rsdt_csum, -E_CORRUPT, PLAT_ACPI_SDT_CSUM },
	{ "rsdt pointing at a MADT", false, m_rsdt_sig, -E_INVAL, PLAT_ACPI_SDT_SIG },
	{ "xsdt partial entry", true, m_xsdt_partial, -E_INVAL, PLAT_ACPI_ROOT_ENTRIES },
	{ "madt checksum", false, m_madt_csum, -E_CORRUPT, PLAT_ACPI_SDT_CSUM },
	{ "madt length beyond mapping", false, m_madt_beyond_map, -E_INVAL, PLAT_ACPI_SDT_MAP },
	{ "madt length beyond limit", false, m_madt_beyond_limit, -E_INVAL, PLAT_ACPI_SDT_LEN },
	{ "madt length below header", false, m_madt_too_short, -E_INVAL, PLAT_ACPI_SDT_LEN },
	{ "madt without fixed part", false, m_madt_no_fixed, -E_INVAL, PLAT_ACPI_MADT_SHORT },
	{ "madt zero-length entry", false, m_madt_zero_len, -E_INVAL, PLAT_ACPI_MADT_ENTRY_LEN },
	{ "madt one-length entry", false, m_madt_one_len, -E_INVAL, PLAT_ACPI_MADT_ENTRY_LEN },
	{ "madt entry past end", false, m_madt_len_past_end, -E_INVAL, PLAT_ACPI_MADT_ENTRY_LEN },
	{ "madt truncated entry", false, m_madt_truncated_entry, -E_INVAL, PLAT_ACPI_MADT_ENTRY_LEN },
	{ "madt lapic entry too short", false, m_madt_short_lapic, -E_INVAL, PLAT_ACPI_MADT_ENTRY_LEN },
	{ "madt no enabled cpu", false, m_madt_no_cpu, -E_INVAL, PLAT_ACPI_MADT_NO_CPU },
	{ "no madt", false, m_no_madt, -E_NOENT, PLAT_ACPI_NO_MADT },
	{ "fadt too short", false, m_fadt_short, -E_INVAL, PLAT_ACPI_FADT_SHORT },
	{ "fadt checksum", false, m_fadt_csum, -E_CORRUPT, PLAT_ACPI_SDT_CSUM },
	{ "mcfg partial entry", false, m_mcfg_partial, -E_INVAL, PLAT_ACPI_MCFG_ENTRIES },
	{ "mcfg too short", false, m_mcfg_short, -E_INVAL, PLAT_ACPI_MCFG_SHORT },
	/* Degraded but successful parses. */
	{ "root entry unreadable", false, m_entry_unreadable, 0, PLAT_ACPI_ROOT_BAD_ENTRY },
	{ "xsdt entry loops to itself", true, m_xsdt_self_loop, 0, PLAT_ACPI__SITES },
	{ "duplicate madt", true, m_dup_madt, 0, PLAT_ACPI_DUP_TABLE },
	{ "dsdt pointer loops to fadt", false, m_dsdt_is_fadt, 0, PLAT_ACPI_DSDT_BAD },
	{ "dsdt checksum", false, m_dsdt_csum, 0, PLAT_ACPI_DSDT_BAD },
	{ "fadt pm1 not io", false, m_fadt_mmio_pm1, 0, PLAT_ACPI_FADT_BAD_PORT },
	{ "fadt pm timer not io", false, m_fadt_mmio_pmtmr, 0, PLAT_ACPI_FADT_BAD_PMTMR },
	{ "fadt pm timer length 2", false, m_fadt_pmtmr_len, 0, PLAT_ACPI_FADT_BAD_PMTMR },
	{ "mcfg end bus below start", false, m_mcfg_bad_bus, 0, PLAT_ACPI_MCFG_BAD_ENTRY },
	{ "mcfg address wraps", false, m_mcfg_wrap, 0, PLAT_ACPI_MCFG_BAD_ENTRY },
	{ "s5 package length beyond table", false, m_s5_pkglen_beyond, 0, PLAT_ACPI_S5_BAD },
	{ "s5 value too big", false, m_s5_value_too_big, 0, PLAT_ACPI_S5_BAD },
	{ "s5 unknown data op", false, m_s5_bad_op, 0, PLAT_ACPI_S5_BAD },
	{ "s5 name at table end", false, m_s5_at_end, 0, PLAT_ACPI_S5_BAD },
};

static void test_malformed_tables(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad_cases); i++) {
		const struct bad_case *bc = &bad_cases[i];
		const char *why = NULL;
		uint32_t before = 0;
		build(bc->v2);
		bc->mutate();
		if (bc->site < PLAT_ACPI__SITES)
			before = plat_acpi_stats()->rejects[bc->site];
		memset(&plat, 0xa5, sizeof plat);
		int err = plat_acpi_parse(&plat, &rd, A_RSDP, &why);
		print_message("  case %-34s -> %-8s %s\n", bc->name, err_name(err), why ? why : "");
		assert_int_equal(err, bc->err);
		if (bc->site < PLAT_ACPI__SITES)
			assert_true(plat_acpi_stats()->rejects[bc->site] > before);
		if (err) {
			assert_non_null(why);
			assert_cleared(&plat);
		} else {
			assert_null(why);
			assert_int_equal(plat.n_cpus, 5);
		}
	}
}

static void test_degraded_results(void **state)
{
	(void)state;
	const char *why;
	build(false);
	m_dsdt_csum();
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_false(plat.has_s5);
	assert_int_equal(plat.pm1a_cnt, 0x604);
	assert_non_null(plat_acpi_stats()->warning);

	build(false);
	m_mcfg_bad_bus();
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_int_equal(plat.n_ecam, 0);

	build(false);
	m_fadt_mmio_pm1();
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_int_equal(plat.pm1a_cnt, 0);
	assert_false(plat.has_s5);

	/* The PM timer: MMIO or a wrong length is ignored, the legacy block alone counts,
	 * 24 bits without TMR_VAL_EXT, none on a hardware-reduced machine. */
	build(false);
	m_fadt_mmio_pmtmr();
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_int_equal(plat.pm_tmr_port, 0);
	build(false);
	m_fadt_pmtmr_len();
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_int_equal(plat.pm_tmr_port, 0);
	build(false);
	memset(mem + A_FADT + 208, 0, 12);
	st_le32(mem + A_FADT + 76, 0xb008);
	st_le32(mem + A_FADT + 112, 0);
	fix_sdt(A_FADT);
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_int_equal(plat.pm_tmr_port, 0xb008);
	assert_false(plat.pm_tmr_32);
	build(false);
	st_le32(mem + A_FADT + 112, (1u << 8) | (1u << 20));
	fix_sdt(A_FADT);
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_int_equal(plat.pm_tmr_port, 0);
	assert_int_equal(plat.pm1a_cnt, 0x604);

	/* The duplicate MADT (one CPU) is ignored: the first one counts. */
	build(true);
	m_dup_madt();
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_int_equal(plat.n_cpus, 5);
}

static void test_excess_entries_counted(void **state)
{
	(void)state;
	static uint8_t b[16384];
	const char *why;
	uint32_t o = 8, before_many, before_id;
	build(false);
	st_le32(b, 0xfee00000u);
	st_le32(b + 4, 1);
	for (unsigned i = 0; i < 100; i++, o += 8) {
		b[o] = 0; b[o + 1] = 8; b[o + 2] = (uint8_t)i; b[o + 3] = (uint8_t)i;
		st_le32(b + o + 4, 1);
	}
	/* Invalid id, duplicate id, disabled-not-capable, 12 IO APICs, 20 overrides. */
	b[o] = 0; b[o + 1] = 8; b[o + 3] = 0xff; st_le32(b + o + 4, 1); o += 8;
	b[o] = 0; b[o + 1] = 8; b[o + 3] = 3; st_le32(b + o + 4, 1); o += 8;
	for (unsigned i = 0; i < 12; i++, o += 12) {
		b[o] = 1; b[o + 1] = 12; b[o + 2] = (uint8_t)i; b[o + 3] = 0;
		st_le32(b + o + 4, 0xfec00000u + i * 0x1000); st_le32(b + o + 8, i * 24);
	}
	for (unsigned i = 0; i < 20; i++, o += 10) {
		b[o] = 2; b[o + 1] = 10; b[o + 2] = 0; b[o + 3] = (uint8_t)i;
		st_le32(b + o + 4, i); st_le16(b + o + 8, 0);
	}
	/* LAPIC address override and an unknown type with a long length. */
	b[o] = 5; b[o + 1] = 12; st_le64(b + o + 4, 0xfee10000u); o += 12;
	b[o] = 0x7f; b[o + 1] = 40; o += 40;
	put_sdt(A_MADT, "APIC", 3, b, o);
	before_many = plat_acpi_stats()->rejects[PLAT_ACPI_MADT_TOO_MANY];
	before_id = plat_acpi_stats()->rejects[PLAT_ACPI_MADT_BAD_ID];
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_int_equal(plat.n_cpus, PLAT_MAX_CPUS);
	assert_int_equal(plat.n_ioapics, PLAT_MAX_IOAPICS);
	assert_int_equal(plat.n_isos, PLAT_MAX_ISO);
	assert_true(plat.lapic_addr == 0xfee10000u);
	assert_int_equal(plat_acpi_stats()->rejects[PLAT_ACPI_MADT_TOO_MANY] - before_many,
			 (100 - 64) + (12 - 8) + (20 - 16));
	assert_int_equal(plat_acpi_stats()->rejects[PLAT_ACPI_MADT_BAD_ID] - before_id, 2);
}

static void test_s5_forms(void **state)
{
	(void)state;
	const char *why;
	/* One-element form and a multi-byte PkgLength. */
	static const uint8_t one[] = { 0x08, '\\', '_', 'S', '5', '_', 0x12, 0x05, 0x01, 0x0b, 0x07, 0x06 };
	static const uint8_t wide[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x48, 0x00, 0x04, 0x0a, 0x03,
					0x01, 0x00, 0x00 };
	build(false);
	put_sdt(A_DSDT, "DSDT", 1, one, sizeof one);
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_true(plat.has_s5);
	assert_int_equal(plat.slp_typa, 7);
	assert_int_equal(plat.slp_typb, 6);

	/* PkgLength 0x48 0x00 = 8 (two bytes), four elements. */
	build(false);
	put_sdt(A_DSDT, "DSDT", 1, wide, sizeof wide);
	assert_int_equal(plat_acpi_parse(&plat, &rd, A_RSDP, &why), 0);
	assert_true(plat.has_s5);
	assert_int_equal(plat.slp_typa, 3);
	assert_int_equal(plat.slp_typb, 1);
}

/* Every prefix of the good image's tables (lengths cut short in memory) must be handled:
 * shrink the readable memory so each table in turn ends beyond the mapping. */
static void test_truncated_memory(void **state)
{
	(void)state;
	static const uint32_t ends[] = { A_RSDT + 20, A_XSDT + 50, A_MADT + 30, A_MADT + 60,
					 A_MCFG + 40, A_FADT + 100, A_DSDT + 10, A_DSDT + 40 };
	for (size_t i = 0; i < ARRAY_LEN(ends); i++) {
		const char *why = NULL;
		build(true);
		/* Move the RSDP low so it stays readable. */
		memmove(mem + 0x1000, mem + A_RSDP, 36);
		mem_limit = ends[i];
		int err = plat_acpi_parse(&plat, &rd, 0x1000, &why);
		if (ends[i] < A_DSDT) {
			assert_int_not_equal(err, 0);
			assert_non_null(why);
		} else {
			assert_int_equal(err, 0);
			assert_false(plat.has_s5);
		}
		mem_limit = MEM_SIZE;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_rsdt),
		cmocka_unit_test(test_good_xsdt_preferred),
		cmocka_unit_test(test_find_rsdp),
		cmocka_unit_test(test_malformed_tables),
		cmocka_unit_test(test_degraded_results),
		cmocka_unit_test(test_excess_entries_counted),
		cmocka_unit_test(test_s5_forms),
		cmocka_unit_test(test_truncated_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
