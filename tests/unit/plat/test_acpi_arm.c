/* SPDX-License-Identifier: MIT
 * Unit tests for plat/acpi_arm: QEMU's own tables (virt, GICv3, 2 cpus, 512 MiB, dumped
 * from the firmware by its shell: tests/fuzz/corpus/acpi_arm/qemu_virt_gicv3_smp2, the
 * 64 KiB ACPI area at 0x5c430000, RSDP at +0x18; and GICv2 at EL2 with 4 cpus) parsed into exactly what the device tree
 * of the same machine gives, then one mutation per rejection or degraded case: a bad
 * checksum, no GICD, no boot cpu, a broken GTDT/SPCR/FADT, a truncated window. Every
 * rejection must name its site and leave the fields zero. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "plat/acpi_arm.h"

#define WIN 0x5c430000ull
#define WIN_SIZE 0x10000u
#define RSDP (WIN + 0x18)
#define O_MADT 0xfc18u
#define O_GTDT 0xd898u
#define O_SPCR 0xe818u
#define O_FADT 0xfa98u
#define CORPUS "tests/fuzz/corpus/acpi_arm/qemu_virt_gicv3_smp2"
#define CORPUS_V2 "tests/fuzz/corpus/acpi_arm/qemu_virt_gicv2_smp4_el2"

static uint8_t pristine[WIN_SIZE], mem[WIN_SIZE];
static size_t mem_limit = WIN_SIZE;

static const void *fake_map(void *ctx, uint64_t phys, size_t len)
{
	size_t size = *(size_t *)ctx;
	if (phys < WIN || phys - WIN >= size || len > size - (phys - WIN))
		return NULL;
	return mem + (phys - WIN);
}

static const struct plat_phys_reader rd = { &mem_limit, fake_map };
static struct platform plat;
static struct plat_dtb_extra extra;

static int setup(void **state)
{
	(void)state;
	static bool loaded;
	if (!loaded) {
		FILE *f = fopen(CORPUS, "rb"); /* run from the repository's root, as make test does */
		if (!f)
			fail_msg("%s cannot be read (run from the repository's root)", CORPUS);
		size_t n = fread(pristine, 1, sizeof pristine, f);
		fclose(f);
		if (n != sizeof pristine)
			fail_msg("%s: %zu bytes, want %zu", CORPUS, n, sizeof pristine);
		loaded = true;
	}
	memcpy(mem, pristine, sizeof mem);
	mem_limit = WIN_SIZE;
	memset(&plat, 0, sizeof plat);
	memset(&extra, 0, sizeof extra);
	return 0;
}

static void fix_sdt(uint32_t off)
{
	uint32_t len = ld_le32(mem + off + 4);
	uint8_t s = 0;
	mem[off + 9] = 0;
	for (uint32_t i = 0; i < len; i++)
		s = (uint8_t)(s + mem[off + i]);
	mem[off + 9] = (uint8_t)(0 - s);
}

static uint32_t site(enum plat_acpi_site s)
{
	return plat_acpi_stats()->rejects[s];
}

static void assert_cleared(void)
{
	assert_int_equal(plat.n_cpus, 0);
	assert_int_equal(plat.gic_version, 0);
	assert_int_equal(plat.gicd_addr, 0);
	assert_int_equal(plat.n_ecam, 0);
	assert_int_equal(extra.gits_base, 0);
	assert_false(extra.has_timer);
}

/* The device tree of the same machine (tests/smoke/aarch64-acpi.sh compares the two in
 * QEMU) says exactly this. */
static const char qemu_line[] =
	"cpus=2/0:0x0:on:boot,1:0x1:on gic=v3 gicd=0x8000000 gicr=0x80a0000 gicc=0x0 its=0x8080000 v2m=0x0 "
	"ecam=1/0:0x4010000000:0-255 pci32=0x10000000:0x10000000:0x2eff0000 "
	"pci64=0x8000000000:0x8000000000:0x8000000000 uart=0x9000000 rtc=0x9010000 psci=hvc "
	"timer=virt:11,phys:14";

static void test_qemu_virt(void **state)
{
	(void)state;
	const char *why = "unset";
	char line[512];
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0x80000000ull, &plat, &extra, &why), 0);
	assert_null(why);
	assert_int_equal(plat.n_cpus, 2);
	assert_true(plat.cpus[0].boot_cpu);
	assert_false(plat.cpus[1].boot_cpu);
	assert_int_equal(plat.gic_version, 3);
	assert_int_equal(extra.psci, PLAT_DTB_PSCI_HVC);
	assert_int_equal(extra.rtc_base, PLAT_ACPI_QEMU_VIRT_RTC);
	assert_int_equal(plat.n_mem, 0);
	assert_null(extra.bootargs);
	plat_arm_describe(&plat, &extra, line, sizeof line);
	assert_string_equal(line, qemu_line);
}

/* QEMU's tables of -M virt,gic-version=2,virtualization=on -smp 4 (firmware at EL2). */
static void test_qemu_virt_gicv2_el2(void **state)
{
	(void)state;
	const char *why = "unset";
	char line[512];
	FILE *f = fopen(CORPUS_V2, "rb");
	assert_non_null(f);
	assert_int_equal(fread(mem, 1, sizeof mem, f), sizeof mem);
	fclose(f);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), 0);
	plat_arm_describe(&plat, &extra, line, sizeof line);
	assert_string_equal(line,
			    "cpus=4/0:0x0:on:boot,1:0x1:on,2:0x2:on,3:0x3:on gic=v2 gicd=0x8000000 gicr=0x0 "
			    "gicc=0x8010000 its=0x0 v2m=0x8020000 ecam=1/0:0x4010000000:0-255 "
			    "pci32=0x10000000:0x10000000:0x2eff0000 pci64=0x8000000000:0x8000000000:0x8000000000 "
			    "uart=0x9000000 rtc=0x9010000 psci=smc timer=virt:11,phys:14");
}

static void test_boot_cpu(void **state)
{
	(void)state;
	const char *why;
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 1, &plat, &extra, &why), 0);
	assert_false(plat.cpus[0].boot_cpu);
	assert_true(plat.cpus[1].boot_cpu);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, PLAT_DTB_BOOT_FIRST, &plat, &extra, &why), 0);
	assert_true(plat.cpus[0].boot_cpu);
	uint32_t before = site(PLAT_ACPI_MADT_NO_CPU);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 7, &plat, &extra, &why), -E_NOENT);
	assert_non_null(why);
	assert_int_equal(site(PLAT_ACPI_MADT_NO_CPU), before + 1);
	assert_cleared();
}

static void test_bad_checksum(void **state)
{
	(void)state;
	const char *why = NULL;
	uint32_t before = site(PLAT_ACPI_SDT_CSUM);
	mem[O_MADT + 50] ^= 1;
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), -E_CORRUPT);
	assert_non_null(why);
	assert_int_equal(site(PLAT_ACPI_SDT_CSUM), before + 1);
	assert_cleared();
}

/* Find the first MADT entry of `type` (offset in mem) or 0. */
static uint32_t madt_entry(uint8_t type)
{
	uint32_t len = ld_le32(mem + O_MADT + 4);
	for (uint32_t o = O_MADT + 44; o + 2 <= O_MADT + len && mem[o + 1] >= 2; o += mem[o + 1])
		if (mem[o] == type)
			return o;
	return 0;
}

static void test_no_gicd(void **state)
{
	(void)state;
	const char *why = NULL;
	uint32_t e = madt_entry(0x0c);
	assert_true(e != 0);
	mem[e] = 0x7f; /* an entry type nobody knows */
	fix_sdt(O_MADT);
	uint32_t before = site(PLAT_ACPI_GIC_NONE);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), -E_NOENT);
	assert_int_equal(site(PLAT_ACPI_GIC_NONE), before + 1);
	assert_cleared();
}

static void test_gicc_entry_short(void **state)
{
	(void)state;
	const char *why = NULL;
	uint32_t e = madt_entry(0x0b);
	assert_true(e != 0);
	/* A GICC shorter than ACPI 5.1's 76 bytes: the entry after it is misread, so the
	 * MADT as a whole is refused. */
	mem[e + 1] = 40;
	fix_sdt(O_MADT);
	uint32_t before = site(PLAT_ACPI_MADT_ENTRY_LEN);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), -E_INVAL);
	assert_int_equal(site(PLAT_ACPI_MADT_ENTRY_LEN), before + 1);
	assert_cleared();
}

static void test_duplicate_mpidr(void **state)
{
	(void)state;
	const char *why = NULL;
	uint32_t e = madt_entry(0x0b);
	uint32_t e2 = e + mem[e + 1];
	assert_int_equal(mem[e2], 0x0b);
	memcpy(mem + e2 + 68, mem + e + 68, 8); /* cpu 1 claims cpu 0's MPIDR */
	fix_sdt(O_MADT);
	uint32_t before = site(PLAT_ACPI_GICC_BAD);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), 0);
	assert_int_equal(plat.n_cpus, 1);
	assert_int_equal(site(PLAT_ACPI_GICC_BAD), before + 1);
}

static void test_degraded_tables(void **state)
{
	(void)state;
	const char *why = NULL;
	uint32_t g = site(PLAT_ACPI_GTDT_BAD), s = site(PLAT_ACPI_SPCR_BAD), p = site(PLAT_ACPI_PSCI_NONE);
	mem[O_GTDT + 64] = 3; /* virtual timer GSIV 3: not a PPI */
	fix_sdt(O_GTDT);
	mem[O_SPCR + 40] = 1; /* base address in I/O space */
	fix_sdt(O_SPCR);
	mem[O_FADT + 129] = 0; /* not PSCI-compliant */
	fix_sdt(O_FADT);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), 0);
	assert_false(extra.has_timer);
	assert_int_equal(plat.uart_base, 0);
	assert_int_equal(extra.psci, PLAT_DTB_PSCI_NONE);
	assert_int_equal(site(PLAT_ACPI_GTDT_BAD), g + 1);
	assert_int_equal(site(PLAT_ACPI_SPCR_BAD), s + 1);
	assert_int_equal(site(PLAT_ACPI_PSCI_NONE), p + 1);
	assert_non_null(plat_acpi_stats()->warning);
}

static void test_smc_and_gicv2(void **state)
{
	(void)state;
	const char *why = NULL;
	mem[O_FADT + 129] = 1; /* PSCI over SMC */
	fix_sdt(O_FADT);
	uint32_t d = madt_entry(0x0c);
	mem[d + 20] = 2; /* GICD says v2: the GICCs carry no base here, so refused */
	fix_sdt(O_MADT);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), -E_NOENT);
	uint32_t c = madt_entry(0x0b);
	st_le64(mem + c + 32, 0x08010000u);
	fix_sdt(O_MADT);
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), 0);
	assert_int_equal(plat.gic_version, 2);
	assert_int_equal(plat.gicc_addr, 0x08010000u);
	assert_int_equal(plat.gicr_addr, 0);
	assert_int_equal(extra.gits_base, 0);
	assert_int_equal(extra.psci, PLAT_DTB_PSCI_SMC);
}

static void test_truncated_window(void **state)
{
	(void)state;
	const char *why = NULL;
	/* Every cut of the window either parses or fails cleanly. */
	for (size_t cut = 0; cut < WIN_SIZE; cut += 0x80) {
		mem_limit = cut;
		int err = plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why);
		if (err) {
			assert_non_null(why);
			assert_cleared();
		}
	}
	mem_limit = WIN_SIZE;
}

static void test_describe_bounded(void **state)
{
	(void)state;
	const char *why;
	char small[16];
	assert_int_equal(plat_acpi_parse_arm(&rd, RSDP, 0, &plat, &extra, &why), 0);
	size_t n = plat_arm_describe(&plat, &extra, small, sizeof small);
	assert_true(n < sizeof small);
	assert_int_equal(strlen(small), n);
	assert_int_equal(plat_arm_describe(&plat, &extra, small, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_qemu_virt, setup),
		cmocka_unit_test_setup(test_qemu_virt_gicv2_el2, setup),
		cmocka_unit_test_setup(test_boot_cpu, setup),
		cmocka_unit_test_setup(test_bad_checksum, setup),
		cmocka_unit_test_setup(test_no_gicd, setup),
		cmocka_unit_test_setup(test_gicc_entry_short, setup),
		cmocka_unit_test_setup(test_duplicate_mpidr, setup),
		cmocka_unit_test_setup(test_degraded_tables, setup),
		cmocka_unit_test_setup(test_smc_and_gicv2, setup),
		cmocka_unit_test_setup(test_truncated_window, setup),
		cmocka_unit_test_setup(test_describe_bounded, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
