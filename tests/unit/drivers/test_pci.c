/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/pci: enumeration through bridges and functions, BAR sizing, and
 * rejection of hostile configuration space (capability loops, bogus and overlapping BARs,
 * bridge loops, MSI-X tables in bad BARs), each counted at its site. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "drivers/pci.h"
#include "fake_dev.h"
#include "lib/bytes.h"
#include "lib/err.h"

static struct pci_dev devs[8];
static struct pci_bus bus;
static const struct pci_range forbidden[] = { { 0x0, 0x80000000ull }, { 0x100000000ull, 0x40000000ull } };

static int setup(void **state)
{
	(void)state;
	fake_reset();
	memset(devs, 0, sizeof devs);
	return 0;
}

static int scan(uint32_t max_devs)
{
	struct pci_config cfg = { .bus_start = 0, .bus_end = 7, .devs = devs, .max_devs = max_devs,
				  .forbidden = forbidden, .n_forbidden = 2 };
	assert_int_equal(pci_bus_init(&bus, fake_port(), &cfg), 0);
	return pci_bus_scan(&bus);
}

static uint32_t total_rejects(void)
{
	uint32_t t = 0;
	for (unsigned i = 0; i < PCI_REJ__COUNT; i++)
		t += bus.stats.rejected[i];
	return t;
}

static struct fake_fn *bridge(uint8_t b, uint8_t d, uint8_t secondary)
{
	struct fake_fn *f = fake_add_fn(b, d, 0, 0x8086, 0x1234);
	f->cfg[0x0e] = 1;
	f->cfg[0x18] = b;
	f->cfg[0x19] = secondary;
	f->cfg[0x1a] = secondary;
	return f;
}

static void test_enumerates_bridges_functions_and_bars(void **state)
{
	(void)state;
	struct fake_fn *a = fake_add_fn(0, 0, 0, 0x8086, 0x29c0);
	struct fake_fn *m0 = fake_add_fn(0, 2, 0, 0x1b36, 0x0001);
	struct fake_fn *m3 = fake_add_fn(0, 2, 3, 0x1b36, 0x0003);
	struct fake_fn *behind;
	m0->cfg[0x0e] = 0x80; /* multi-function */
	(void)m3;
	fake_set_bar(a, 0, 0xfebf0000u, 0x1000, false);
	fake_set_bar(a, 2, 0xfe800000ull, 0x100000, true);
	bridge(0, 3, 1);
	behind = fake_add_fn(1, 0, 0, 0x1af4, 0x1041);
	fake_set_bar(behind, 1, 0xfd000000u, 0x2000, false);
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.n_devs, 5);
	assert_int_equal(total_rejects(), 0);
	assert_int_equal(devs[0].bars[0].len, 0x1000);
	assert_true(devs[0].bars[0].flags & PCI_BAR_OK);
	assert_true(devs[0].bars[2].phys == 0xfe800000ull);
	assert_int_equal(devs[0].bars[2].len, 0x100000);
	assert_true(devs[0].bars[2].flags & PCI_BAR_64);
	assert_true(devs[0].bars[3].flags & PCI_BAR_UPPER);
	assert_int_equal(devs[2].fn, 3);
	assert_true(devs[3].flags & PCI_DEV_BRIDGE);
	assert_int_equal(devs[4].bus, 1);
	assert_int_equal(devs[4].bars[1].len, 0x2000);
	/* sizing restored the BAR registers */
	assert_int_equal(ld_le32(&a->cfg[0x10]), 0xfebf0000u);
	assert_int_equal(ld_le32(&a->cfg[0x1c]), 0);
}

static void chain_caps(struct fake_fn *f, const uint8_t *offs, unsigned n, uint8_t last_next)
{
	f->cfg[0x06] |= 0x10;
	f->cfg[0x34] = offs[0];
	for (unsigned i = 0; i < n; i++) {
		f->cfg[offs[i]] = 0x05;
		f->cfg[offs[i] + 1] = i + 1 < n ? offs[i + 1] : last_next;
	}
}

static void test_capability_walk_rejects_loops_and_bad_pointers(void **state)
{
	(void)state;
	static const struct {
		uint8_t offs[4];
		unsigned n;
		uint8_t last_next;
		enum pci_reject site;
	} cases[] = {
		{ { 0x40, 0x50 }, 2, 0x40, PCI_REJ_CAP_LOOP },  /* A -> B -> A */
		{ { 0x40 }, 1, 0x40, PCI_REJ_CAP_LOOP },        /* self loop */
		{ { 0x40, 0x60 }, 2, 0x62, PCI_REJ_CAP_LOOP },  /* low bits masked: 0x60 again */
		{ { 0x40 }, 1, 0x10, PCI_REJ_CAP_PTR },         /* into the header */
		{ { 0x20 }, 1, 0x00, PCI_REJ_CAP_PTR },
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fake_fn *f;
		setup(NULL);
		f = fake_add_fn(0, 4, 0, 0x1af4, 0x1042);
		chain_caps(f, cases[i].offs, cases[i].n, cases[i].last_next);
		assert_int_equal(scan(8), 0);
		assert_int_equal(bus.stats.rejected[cases[i].site], 1);
		assert_true(devs[0].flags & PCI_DEV_BAD);
		assert_int_equal(devs[0].n_caps, 0);
		assert_true(fake_log_lines > 0);
	}
}

static void test_capability_count_is_bounded(void **state)
{
	(void)state;
	uint8_t offs[48];
	struct fake_fn *f = fake_add_fn(0, 4, 0, 0x1af4, 0x1042);
	for (unsigned i = 0; i < 48; i++)
		offs[i] = (uint8_t)(0x40 + 4 * i);
	chain_caps(f, offs, 48, 0);
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_CAP_COUNT], 1);
	assert_true(devs[0].flags & PCI_DEV_BAD);
}

static void test_good_caps_are_found(void **state)
{
	(void)state;
	static const uint8_t offs[] = { 0x40, 0x48, 0x80 };
	struct fake_fn *f = fake_add_fn(0, 4, 0, 0x1af4, 0x1042);
	uint32_t it = 0;
	chain_caps(f, offs, 3, 0);
	f->cfg[0x48] = PCI_CAP_MSIX;
	assert_int_equal(scan(8), 0);
	assert_int_equal(devs[0].n_caps, 3);
	assert_int_equal(pci_dev_find_cap(&devs[0], 0x05, &it), 0x40);
	assert_int_equal(pci_dev_find_cap(&devs[0], 0x05, &it), 0x80);
	assert_int_equal(pci_dev_find_cap(&devs[0], 0x05, &it), 0);
	it = 0;
	assert_int_equal(pci_dev_find_cap(&devs[0], PCI_CAP_MSIX, &it), 0x48);
}

static void test_bogus_bars_are_rejected(void **state)
{
	(void)state;
	struct fake_fn *f;
	/* size mask with a hole: not a power of two */
	f = fake_add_fn(0, 5, 0, 0x1af4, 0x1041);
	fake_set_bar(f, 0, 0xfe000000u, 0x1000, false);
	f->bar_wmask[0] = 0xfff0f000u;
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BAR_SIZE], 1);
	assert_true(devs[0].flags & PCI_DEV_BAD);
	assert_false(devs[0].bars[0].flags & PCI_BAR_OK);

	/* base not aligned to size: the stuck low address bits also spoil the size mask, so
	 * either check may fire first; exactly one rejection, device refused */
	setup(NULL);
	f = fake_add_fn(0, 5, 0, 0x1af4, 0x1041);
	fake_set_bar(f, 0, 0xfe000000u, 0x10000, false);
	st_le32(&f->cfg[0x10], 0xfe001000u);
	assert_int_equal(scan(8), 0);
	assert_int_equal(total_rejects(), 1);
	assert_true(devs[0].flags & PCI_DEV_BAD);

	/* 64-bit base that wraps the address space */
	setup(NULL);
	f = fake_add_fn(0, 5, 0, 0x1af4, 0x1041);
	fake_set_bar(f, 0, 0xfffffffffff00000ull, 0x100000, true);
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BAR_ALIGN], 1); /* its end is not representable */

	/* reserved memory type */
	setup(NULL);
	f = fake_add_fn(0, 5, 0, 0x1af4, 0x1041);
	fake_set_bar(f, 0, 0xfe000000u, 0x1000, false);
	f->cfg[0x10] |= 0x6;
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BAR_SIZE], 1);

	/* 64-bit BAR in the last slot */
	setup(NULL);
	f = fake_add_fn(0, 5, 0, 0x1af4, 0x1041);
	st_le32(&f->cfg[0x24], 0xfe000004u);
	f->bar_wmask[5] = 0xfffff000u;
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BAR_64_LAST], 1);

	/* over RAM / the kernel image (forbidden range) */
	setup(NULL);
	f = fake_add_fn(0, 5, 0, 0x1af4, 0x1041);
	fake_set_bar(f, 2, 0x100200000ull, 0x1000, true);
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BAR_FORBID], 1);
	assert_true(devs[0].flags & PCI_DEV_BAD);

	/* unassigned: counted, not an attack, not usable */
	setup(NULL);
	f = fake_add_fn(0, 5, 0, 0x1af4, 0x1041);
	fake_set_bar(f, 0, 0, 0x1000, false);
	assert_int_equal(scan(8), 0);
	assert_int_equal(total_rejects(), 0);
	assert_int_equal(bus.stats.n_unassigned_bars, 1);
	assert_false(devs[0].bars[0].flags & PCI_BAR_OK);
	assert_false(devs[0].flags & PCI_DEV_BAD);
}

static void test_overlapping_bars_are_rejected(void **state)
{
	(void)state;
	struct fake_fn *a = fake_add_fn(0, 1, 0, 0x1af4, 0x1041);
	struct fake_fn *b = fake_add_fn(0, 2, 0, 0x1af4, 0x1042);
	fake_set_bar(a, 0, 0xfe000000u, 0x4000, false);
	fake_set_bar(b, 0, 0xfe002000u, 0x1000, false);
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BAR_OVERLAP], 1);
	assert_false(devs[0].flags & PCI_DEV_BAD);
	assert_true(devs[1].flags & PCI_DEV_BAD);

	/* two BARs of one device */
	setup(NULL);
	a = fake_add_fn(0, 1, 0, 0x1af4, 0x1041);
	fake_set_bar(a, 0, 0xfe000000u, 0x4000, false);
	fake_set_bar(a, 1, 0xfe000000u, 0x1000, false);
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BAR_OVERLAP], 1);
}

static void test_bridge_loops_and_ranges_are_rejected(void **state)
{
	(void)state;
	bridge(0, 1, 1);
	bridge(1, 0, 0); /* back to the root bus */
	bridge(1, 1, 1); /* to itself */
	bridge(1, 2, 200); /* outside the window */
	assert_int_equal(scan(8), 0);
	assert_int_equal(bus.n_devs, 4);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BUS_RANGE], 3);
}

static void test_device_array_overflow(void **state)
{
	(void)state;
	for (uint8_t d = 0; d < 5; d++)
		fake_add_fn(0, d, 0, 0x1af4, 0x1041);
	assert_int_equal(scan(3), -E_NOMEM);
	assert_int_equal(bus.n_devs, 3);
	assert_int_equal(bus.stats.rejected[PCI_REJ_DEV_FULL], 1);
}

static struct fake_fn *msix_dev(uint32_t table, uint32_t pba, uint16_t n)
{
	struct fake_fn *f = fake_add_fn(0, 6, 0, 0x1af4, 0x1041);
	uint8_t m[10];
	fake_set_bar(f, 0, 0xfebf0000u, 0x4000, false);
	st_le16(&m[0], (uint16_t)(n - 1));
	st_le32(&m[2], table);
	st_le32(&m[6], pba);
	fake_add_cap(f, 0x40, PCI_CAP_MSIX, m, sizeof m);
	return f;
}

static void test_msix_programming(void **state)
{
	(void)state;
	struct pci_msix m;
	struct fake_fn *f = msix_dev(0x0000, 0x2000, 4);
	uint32_t ctrl;
	uint8_t *tbl;
	assert_int_equal(scan(8), 0);
	assert_int_equal(pci_dev_enable(&bus, &devs[0]), 0);
	assert_int_equal(pci_msix_init(&bus, &devs[0], &m), 0);
	assert_int_equal(m.n_entries, 4);
	tbl = (uint8_t *)m.table;
	ctrl = ld_le16(&f->cfg[0x42]);
	assert_true(ctrl & 0x8000);
	assert_true(ctrl & 0x4000);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(ld_le32(tbl + 16 * i + 12), 1);
	assert_int_equal(pci_msix_set(&bus, &m, 2, 0xfee01000ull, 0x41), 0);
	assert_int_equal(ld_le32(tbl + 32), 0xfee01000u);
	assert_int_equal(ld_le32(tbl + 36), 0);
	assert_int_equal(ld_le32(tbl + 40), 0x41);
	assert_int_equal(ld_le32(tbl + 44), 0);
	assert_int_equal(pci_msix_set(&bus, &m, 4, 0xfee00000ull, 1), -E_RANGE);
	assert_int_equal(bus.stats.rejected[PCI_REJ_MSIX_SIZE], 1);
	pci_msix_enable(&bus, &m);
	ctrl = ld_le16(&f->cfg[0x42]);
	assert_true(ctrl & 0x8000);
	assert_false(ctrl & 0x4000);
	assert_true(ld_le16(&f->cfg[0x04]) & 0x6);
}

static void test_msix_table_in_bad_bar(void **state)
{
	(void)state;
	static const struct {
		uint32_t table, pba;
		uint16_t n;
	} cases[] = {
		{ 0x0003, 0x2000, 4 },   /* BIR 3: not implemented */
		{ 0x0007, 0x2000, 4 },   /* BIR 7: reserved */
		{ 0x3ff0, 0x2000, 4 },   /* runs past the end of BAR 0 */
		{ 0x0000, 0x2000, 2048 },/* 32 KiB table in a 16 KiB BAR */
		{ 0x0000, 0x4000, 4 },   /* PBA outside */
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct pci_msix m;
		setup(NULL);
		msix_dev(cases[i].table, cases[i].pba, cases[i].n);
		assert_int_equal(scan(8), 0);
		assert_int_equal(pci_msix_init(&bus, &devs[0], &m), -E_INVAL);
		assert_int_equal(bus.stats.rejected[PCI_REJ_MSIX_BAR], 1);
	}
}

static void test_bad_device_is_never_enabled(void **state)
{
	(void)state;
	struct fake_fn *f = fake_add_fn(0, 4, 0, 0x1af4, 0x1042);
	uintptr_t va;
	static const uint8_t offs[] = { 0x40 };
	fake_set_bar(f, 0, 0xfe000000u, 0x1000, false);
	chain_caps(f, offs, 1, 0x40);
	assert_int_equal(scan(8), 0);
	assert_int_equal(pci_dev_enable(&bus, &devs[0]), -E_PERM);
	assert_int_equal(pci_bar_map(&bus, &devs[0], 0, &va), -E_INVAL);
	assert_int_equal(ld_le16(&f->cfg[0x04]) & 0x6, 0);
}

/* A machine without firmware: BARs at 0 get addresses from the host bridge's windows,
 * naturally aligned, 64-bit ones from the 64-bit window, written back to the device;
 * behind a bridge, or when no window has room, they stay unassigned (unusable). */
static void test_unassigned_bars_get_window_addresses(void **state)
{
	(void)state;
	struct fake_fn *a = fake_add_fn(0, 1, 0, 0x1af4, 0x1041);
	struct fake_fn *c = fake_add_fn(0, 2, 0, 0x1af4, 0x1042);
	struct fake_fn *big = fake_add_fn(0, 3, 0, 0x1af4, 0x1043);
	fake_set_bar(a, 1, 0, 0x1000, false);
	fake_set_bar(a, 4, 0, 0x4000, true);
	fake_set_bar(c, 1, 0, 0x1000, false);
	fake_set_bar(c, 4, 0, 0x4000, true);
	fake_set_bar(big, 0, 0, 0x40000000, false); /* larger than the 32-bit window */
	bridge(0, 4, 1);
	struct fake_fn *behind = fake_add_fn(1, 0, 0, 0x1af4, 0x1044);
	fake_set_bar(behind, 1, 0, 0x1000, false);
	struct pci_config cfg = { .bus_start = 0, .bus_end = 7, .devs = devs, .max_devs = 8,
				  .forbidden = forbidden, .n_forbidden = 2,
				  .mem32 = { 0xc0000000ull, 0xc0000000ull, 0x10000000ull },
				  .mem64 = { 0x8000000000ull, 0x8000000000ull, 0x100000000ull } };
	assert_int_equal(pci_bus_init(&bus, fake_port(), &cfg), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(total_rejects(), 0);
	assert_int_equal(bus.stats.n_assigned_bars, 4);
	assert_int_equal(bus.stats.n_unassigned_bars, 2); /* big, and the one behind the bridge */
	assert_true(devs[0].bars[1].flags & PCI_BAR_OK);
	assert_true(devs[0].bars[1].phys == 0xc0000000ull);
	assert_true(devs[0].bars[4].phys == 0x8000000000ull);
	assert_true(devs[1].bars[1].phys == 0xc0001000ull);
	assert_true(devs[1].bars[4].phys == 0x8000004000ull);
	assert_false(devs[2].bars[0].flags & PCI_BAR_OK);
	assert_int_equal(ld_le32(&a->cfg[0x14]), 0xc0000000u);
	assert_int_equal(ld_le32(&c->cfg[0x20]) & ~0xfu, 0x00004000u);
	assert_int_equal(ld_le32(&c->cfg[0x24]), 0x80u);
	assert_int_equal(ld_le32(&behind->cfg[0x14]), 0);
}

/* A window overlapping a forbidden range: the assigned BAR is refused like any other. */
static void test_assigned_bar_is_still_validated(void **state)
{
	(void)state;
	struct fake_fn *a = fake_add_fn(0, 1, 0, 0x1af4, 0x1041);
	fake_set_bar(a, 1, 0, 0x1000, false);
	struct pci_config cfg = { .bus_start = 0, .bus_end = 7, .devs = devs, .max_devs = 8,
				  .forbidden = forbidden, .n_forbidden = 2,
				  .mem32 = { 0x10000000ull, 0x10000000ull, 0x10000000ull } };
	assert_int_equal(pci_bus_init(&bus, fake_port(), &cfg), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(bus.stats.rejected[PCI_REJ_BAR_FORBID], 1);
	assert_true(devs[0].flags & PCI_DEV_BAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_enumerates_bridges_functions_and_bars, setup),
		cmocka_unit_test_setup(test_capability_walk_rejects_loops_and_bad_pointers, setup),
		cmocka_unit_test_setup(test_capability_count_is_bounded, setup),
		cmocka_unit_test_setup(test_good_caps_are_found, setup),
		cmocka_unit_test_setup(test_bogus_bars_are_rejected, setup),
		cmocka_unit_test_setup(test_overlapping_bars_are_rejected, setup),
		cmocka_unit_test_setup(test_bridge_loops_and_ranges_are_rejected, setup),
		cmocka_unit_test_setup(test_device_array_overflow, setup),
		cmocka_unit_test_setup(test_msix_programming, setup),
		cmocka_unit_test_setup(test_msix_table_in_bad_bar, setup),
		cmocka_unit_test_setup(test_bad_device_is_never_enabled, setup),
		cmocka_unit_test_setup(test_unassigned_bars_get_window_addresses, setup),
		cmocka_unit_test_setup(test_assigned_bar_is_still_validated, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
