/* SPDX-License-Identifier: MIT
 * Unit tests for plat/dtb: a tiny flattened-device-tree writer builds trees shaped like
 * QEMU's `-M virt` (GICv3 + ITS, or GICv2 + v2m; 4 cpus, 2 memory ranges, ECAM, two PL011s
 * with stdout-path through /aliases, PL031, PSCI, timer, bootargs, reserved memory), then
 * one change per malformed case: header fields, block offsets, unterminated strings,
 * property lengths, name offsets, depth, a missing FDT_END, misaligned tokens, bad reg.
 * Every rejection must name its site and leave the device-tree fields zero; every prefix
 * and every single-byte corruption of the good blob must be survived (ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "plat/dtb.h"

/* ---- a minimal FDT writer ------------------------------------------------------------ */

#define ST_MAX (512u * 1024u)
#define STR_MAX 4096u
#define HDR_LEN 40u

static uint8_t st[ST_MAX];
static size_t st_len;
static char strs[STR_MAX];
static size_t strs_len;
static uint64_t rsv[PLAT_DTB_MAX_RSVMAP + 2][2];
static unsigned n_rsv;
static uint8_t blob[ST_MAX + STR_MAX + 256] __attribute__((aligned(8)));
static size_t blob_len;

static void w_reset(void)
{
	st_len = strs_len = 0;
	n_rsv = 0;
}

static void w32(uint32_t v)
{
	assert_true(st_len + 4 <= ST_MAX);
	st_be32(st + st_len, v);
	st_len += 4;
}

/* Raw bytes, zero-padded to 4. */
static void w_bytes(const void *p, size_t n)
{
	assert_true(st_len + n + 4 <= ST_MAX);
	if (n)
		memcpy(st + st_len, p, n);
	st_len += n;
	while (st_len & 3)
		st[st_len++] = 0;
}

static uint32_t w_str(const char *name)
{
	size_t n = strlen(name) + 1;
	for (size_t o = 0; o < strs_len; o += strlen(strs + o) + 1)
		if (strcmp(strs + o, name) == 0)
			return (uint32_t)o;
	assert_true(strs_len + n <= STR_MAX);
	memcpy(strs + strs_len, name, n);
	strs_len += n;
	return (uint32_t)(strs_len - n);
}

static void w_begin(const char *name)
{
	w32(1);
	w_bytes(name, strlen(name) + 1);
}

static void w_end(void) { w32(2); }

static void w_prop(const char *name, const void *v, size_t n)
{
	w32(3);
	w32((uint32_t)n);
	w32(w_str(name));
	w_bytes(v, n);
}

static void w_sprop(const char *name, const char *s) { w_prop(name, s, strlen(s) + 1); }
/* A string list given as a literal with embedded NULs: "a\0b". */
#define W_LIST(name, lit) w_prop(name, lit, sizeof(lit))

static void w_cells(const char *name, unsigned n, ...)
{
	uint8_t b[96];
	va_list ap;
	assert_true(n <= 24);
	va_start(ap, n);
	for (unsigned i = 0; i < n; i++)
		st_be32(b + 4 * i, va_arg(ap, uint32_t));
	va_end(ap);
	w_prop(name, b, 4 * n);
}

static void w_u32(const char *name, uint32_t v) { w_cells(name, 1, v); }

/* Header, reserve map, structure block (FDT_END appended when asked), strings. */
static size_t w_finish_ver(bool add_end, uint32_t version)
{
	size_t o = HDR_LEN, off_rsv, off_st, off_str;
	if (add_end)
		w32(9);
	memset(blob, 0, sizeof blob);
	off_rsv = o;
	for (unsigned i = 0; i < n_rsv; i++, o += 16) {
		st_be64(blob + o, rsv[i][0]);
		st_be64(blob + o + 8, rsv[i][1]);
	}
	o += 16; /* terminator */
	off_st = o;
	memcpy(blob + o, st, st_len);
	o += st_len;
	off_str = o;
	memcpy(blob + o, strs, strs_len);
	o += strs_len;
	st_be32(blob + 0, 0xd00dfeedu);
	st_be32(blob + 4, (uint32_t)o);
	st_be32(blob + 8, (uint32_t)off_st);
	st_be32(blob + 12, (uint32_t)off_str);
	st_be32(blob + 16, (uint32_t)off_rsv);
	st_be32(blob + 20, version);
	st_be32(blob + 24, 16);
	st_be32(blob + 28, 0);
	st_be32(blob + 32, (uint32_t)strs_len);
	if (version >= 17)
		st_be32(blob + 36, (uint32_t)st_len);
	blob_len = o;
	return o;
}

static size_t w_finish(void) { return w_finish_ver(true, 17); }

/* Header field accessors (offsets of the v17 header). */
enum { H_MAGIC = 0, H_TOTAL = 4, H_OFF_ST = 8, H_OFF_STR = 12, H_OFF_RSV = 16, H_VERSION = 20,
       H_LAST_COMP = 24, H_SIZE_STR = 32, H_SIZE_ST = 36 };
static uint32_t hdr(unsigned off) { return ld_be32(blob + off); }
static void set_hdr(unsigned off, uint32_t v) { st_be32(blob + off, v); }

/* ---- the virt-like tree -------------------------------------------------------------- */

struct tree {
	unsigned gic;             /* 3, 2 (cortex-a15-gic), 400 (gic-400), 0 none */
	unsigned n_cpus;          /* 0: 4 */
	bool no_cpus;
	unsigned cpu_ac;          /* /cpus #address-cells (0: 1) */
	uint32_t cpu_hi;          /* Aff3 cell with cpu_ac 2 */
	bool no_memory;
	const char *stdout_path;  /* NULL: no stdout-path */
	bool bootargs;
	bool psci_smc;
	bool timer_spi;           /* the virtual timer entry is an SPI */
	unsigned n_rsv;           /* /memreserve/ entries (0: 1) */
	bool rsv_size0;           /* ... of size 0 (skipped, but they still end no map) */
	void (*in_root)(void);    /* more nodes or tokens at the end of the root */
	void (*in_memory)(void);  /* replaces the memory node's reg */
	void (*in_cpu0)(void);    /* more properties of cpu@0 */
	void (*cpu0_reg)(void);   /* replaces cpu@0's reg */
	void (*in_pcie)(void);    /* replaces bus-range and linux,pci-domain */
	void (*in_chosen)(void);  /* more properties of /chosen */
};

static const struct tree virt3 = { .gic = 3, .n_cpus = 4, .cpu_ac = 1,
				   .stdout_path = "serial0:115200n8", .bootargs = true };
static const struct tree virt2 = { .gic = 2, .n_cpus = 4, .cpu_ac = 1,
				   .stdout_path = "/pl011@9000000:115200n8", .psci_smc = true };

static void build(const struct tree *t)
{
	unsigned n_cpus = t->no_cpus ? 0 : t->n_cpus ? t->n_cpus : 4;
	unsigned cpu_ac = t->cpu_ac ? t->cpu_ac : 1;
	w_reset();
	for (unsigned i = 0; i < (t->n_rsv ? t->n_rsv : 1); i++) {
		rsv[n_rsv][0] = 0x48000000u + i * 0x10000u;
		rsv[n_rsv][1] = t->rsv_size0 ? 0 : 0x10000u;
		n_rsv++;
	}
	w_begin("");
	w_u32("interrupt-parent", 0x8005);
	w_sprop("model", "linux,dummy-virt");
	w_u32("#size-cells", 2);
	w_u32("#address-cells", 2);
	w_sprop("compatible", "linux,dummy-virt");

	w_begin("psci");
	w_u32("migrate", 0xc4000005u);
	w_sprop("method", t->psci_smc ? "smc" : "hvc");
	W_LIST("compatible", "arm,psci-1.0\0arm,psci-0.2\0arm,psci");
	w_end();

	if (!t->no_memory) {
		w_begin("memory@40000000");
		if (t->in_memory)
			t->in_memory();
		else
			w_cells("reg", 8, 0, 0x40000000u, 0, 0x20000000u, 1, 0, 0, 0x10000000u);
		w_sprop("device_type", "memory");
		w_end();
	}

	/* A PL011 before the console one: stdout-path must win over node order. */
	w_begin("pl011@9100000");
	w_cells("reg", 4, 0, 0x9100000u, 0, 0x1000);
	W_LIST("compatible", "arm,pl011\0arm,primecell");
	w_end();

	w_begin("pcie@10000000");
	w_cells("reg", 4, 0x40, 0x10000000u, 0, 0x10000000u);
	if (t->in_pcie) {
		t->in_pcie();
	} else {
		w_cells("bus-range", 2, 0, 0xff);
		w_u32("linux,pci-domain", 0);
	}
	w_u32("#size-cells", 2);
	w_u32("#address-cells", 3);
	w_sprop("device_type", "pci");
	w_sprop("compatible", "pci-host-ecam-generic");
	/* QEMU virt's: I/O, 32-bit memory, 64-bit memory (7 cells each). */
	w_cells("ranges", 21, 0x01000000u, 0, 0, 0, 0x3eff0000u, 0, 0x10000u,
		0x02000000u, 0, 0x10000000u, 0, 0x10000000u, 0, 0x2eff0000u,
		0x03000000u, 0x80u, 0, 0x80u, 0, 0x80u, 0);
	w_end();

	w_begin("pl031@9010000");
	w_cells("interrupts", 3, 0, 2, 4);
	w_cells("reg", 4, 0, 0x9010000u, 0, 0x1000);
	W_LIST("compatible", "arm,pl031\0arm,primecell");
	w_end();

	w_begin("pl011@9000000");
	w_cells("interrupts", 3, 0, 1, 4);
	w_cells("reg", 4, 0, 0x9000000u, 0, 0x1000);
	W_LIST("compatible", "arm,pl011\0arm,primecell");
	w_end();

	if (t->gic == 3) {
		w_begin("intc@8000000");
		w_u32("phandle", 0x8005);
		w_cells("reg", 8, 0, 0x8000000u, 0, 0x10000, 0, 0x80a0000u, 0, 0xf60000u);
		w_u32("#redistributor-regions", 1);
		w_sprop("compatible", "arm,gic-v3");
		w_prop("ranges", NULL, 0);
		w_u32("#size-cells", 2);
		w_u32("#address-cells", 2);
		w_prop("interrupt-controller", NULL, 0);
		w_u32("#interrupt-cells", 3);
		w_begin("its@8080000");
		w_cells("reg", 4, 0, 0x8080000u, 0, 0x20000);
		w_prop("msi-controller", NULL, 0);
		w_sprop("compatible", "arm,gic-v3-its");
		w_end();
		w_end();
	} else if (t->gic == 2 || t->gic == 400) {
		w_begin("intc@8000000");
		w_cells("reg", 8, 0, 0x8000000u, 0, 0x10000, 0, 0x8010000u, 0, 0x10000);
		w_sprop("compatible", t->gic == 2 ? "arm,cortex-a15-gic" : "arm,gic-400");
		w_prop("ranges", NULL, 0);
		w_u32("#size-cells", 2);
		w_u32("#address-cells", 2);
		w_u32("#interrupt-cells", 3);
		w_begin("v2m@8020000");
		w_cells("reg", 4, 0, 0x8020000u, 0, 0x1000);
		w_sprop("compatible", "arm,gic-v2m-frame");
		w_end();
		w_end();
	}

	w_begin("cpus");
	w_u32("#size-cells", 0);
	w_u32("#address-cells", cpu_ac);
	w_begin("cpu-map");
	w_begin("socket0");
	w_begin("cluster0");
	w_begin("core0");
	w_u32("cpu", 0x8004);
	w_end();
	w_end();
	w_end();
	w_end();
	for (unsigned i = 0; i < n_cpus; i++) {
		char name[32];
		snprintf(name, sizeof name, "cpu@%x", i);
		w_begin(name);
		if (i == 0 && t->cpu0_reg)
			t->cpu0_reg();
		else if (cpu_ac == 2)
			w_cells("reg", 2, t->cpu_hi, i);
		else
			w_u32("reg", i);
		w_sprop("enable-method", "psci");
		w_sprop("compatible", "arm,cortex-a57");
		w_sprop("device_type", "cpu");
		if (i == 0 && t->in_cpu0)
			t->in_cpu0();
		w_end();
	}
	w_end();

	w_begin("timer");
	if (t->timer_spi)
		w_cells("interrupts", 12, 1, 13, 4, 1, 14, 4, 0, 11, 4, 1, 10, 4);
	else if (t->gic == 3)
		w_cells("interrupts", 12, 1, 13, 4, 1, 14, 4, 1, 11, 4, 1, 10, 4);
	else
		w_cells("interrupts", 12, 1, 13, 0xf04, 1, 14, 0xf04, 1, 11, 0xf04, 1, 10, 0xf04);
	w_prop("always-on", NULL, 0);
	W_LIST("compatible", "arm,armv8-timer\0arm,armv7-timer");
	w_end();

	w_begin("aliases");
	w_sprop("serial0", "/pl011@9000000");
	w_sprop("serial1", "/pl011@9100000");
	w_end();

	w_begin("reserved-memory");
	w_u32("#address-cells", 2);
	w_u32("#size-cells", 2);
	w_prop("ranges", NULL, 0);
	w_begin("fw@5f000000");
	w_cells("reg", 4, 0, 0x5f000000u, 0, 0x100000u);
	w_prop("no-map", NULL, 0);
	w_end();
	w_begin("pool"); /* dynamic: nothing reserved yet */
	w_cells("size", 2, 0, 0x100000u);
	w_end();
	w_begin("off@5e000000");
	w_cells("reg", 4, 0, 0x5e000000u, 0, 0x1000u);
	w_sprop("status", "disabled");
	w_end();
	w_end();

	w_begin("chosen");
	if (t->bootargs)
		w_sprop("bootargs", "console=ttyAMA0 mqtt.port=1883");
	if (t->stdout_path)
		w_sprop("stdout-path", t->stdout_path);
	w_cells("kaslr-seed", 2, 0x12345678u, 0x9abcdef0u);
	if (t->in_chosen)
		t->in_chosen();
	w_end();

	if (t->in_root)
		t->in_root();
	w_end();
	w_finish();
}

static struct platform plat;
static struct plat_dtb_extra extra;

static int parse_first(const char **why)
{
	return plat_dtb_parse(blob, blob_len, PLAT_DTB_BOOT_FIRST, &plat, &extra, why);
}

static void assert_cleared(void)
{
	static const struct plat_dtb_extra zero;
	assert_int_equal(plat.n_cpus, 0);
	assert_int_equal(plat.n_mem, 0);
	assert_int_equal(plat.n_ecam, 0);
	assert_int_equal(plat.gic_version, 0);
	assert_true(plat.gicd_addr == 0 && plat.gicr_addr == 0 && plat.gicc_addr == 0);
	assert_true(plat.uart_base == 0);
	assert_memory_equal(&extra, &zero, sizeof zero);
}

static void check_common(void)
{
	assert_int_equal(plat.n_cpus, 4);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(plat.cpus[i].apic_id, i);
		assert_int_equal(plat.cpus[i].acpi_uid, i);
		assert_true(plat.cpus[i].enabled);
		assert_int_equal(plat.cpus[i].boot_cpu, i == 0);
	}
	assert_int_equal(plat.n_mem, 2);
	assert_true(plat.mem[0].base == 0x40000000u && plat.mem[0].len == 0x20000000u);
	assert_true(plat.mem[1].base == 0x100000000ull && plat.mem[1].len == 0x10000000u);
	assert_int_equal(plat.n_ecam, 1);
	assert_true(extra.pci_mem32.cpu_base == 0x10000000u && extra.pci_mem32.pci_base == 0x10000000u &&
		    extra.pci_mem32.len == 0x2eff0000u);
	assert_true(extra.pci_mem64.cpu_base == 0x8000000000ull && extra.pci_mem64.pci_base == 0x8000000000ull &&
		    extra.pci_mem64.len == 0x8000000000ull);
	assert_true(plat.ecam[0].base == 0x4010000000ull);
	assert_int_equal(plat.ecam[0].segment, 0);
	assert_int_equal(plat.ecam[0].bus_start, 0);
	assert_int_equal(plat.ecam[0].bus_end, 255);
	assert_true(plat.uart_base == 0x9000000u);
	assert_true(extra.rtc_base == 0x9010000u);
	assert_true(extra.has_timer);
	assert_int_equal(extra.timer_phys_ppi, 14);
	assert_int_equal(extra.timer_virt_ppi, 11);
	/* /memreserve/ first, then /reserved-memory (the dynamic and disabled ones add nothing). */
	assert_int_equal(extra.n_reserved, 2);
	assert_true(extra.reserved[0].base == 0x48000000u && extra.reserved[0].len == 0x10000u);
	assert_true(extra.reserved[1].base == 0x5f000000u && extra.reserved[1].len == 0x100000u);
}

/* ---- good trees ---------------------------------------------------------------------- */

static void test_virt_gicv3(void **state)
{
	(void)state;
	const char *why = "x";
	build(&virt3);
	plat.lapic_addr = 0xfee00000u;
	plat.n_ioapics = 1;
	plat.has_s5 = true;
	assert_int_equal(parse_first(&why), 0);
	assert_null(why);
	assert_null(plat_dtb_stats()->warning);
	check_common();
	assert_int_equal(plat.gic_version, 3);
	assert_true(plat.gicd_addr == 0x8000000u);
	assert_true(plat.gicr_addr == 0x80a0000u);
	assert_true(plat.gicc_addr == 0);
	assert_true(extra.gits_base == 0x8080000u);
	assert_true(extra.gicv2m_base == 0);
	assert_int_equal(extra.psci, PLAT_DTB_PSCI_HVC);
	assert_non_null(extra.bootargs);
	assert_int_equal(extra.bootargs_len, strlen("console=ttyAMA0 mqtt.port=1883"));
	assert_string_equal(extra.bootargs, "console=ttyAMA0 mqtt.port=1883");
	/* bootargs points into the blob. */
	assert_true((const uint8_t *)extra.bootargs > blob && (const uint8_t *)extra.bootargs < blob + blob_len);
	/* Fields outside the device tree are left alone. */
	assert_true(plat.lapic_addr == 0xfee00000u);
	assert_int_equal(plat.n_ioapics, 1);
	assert_true(plat.has_s5);
	memset(&plat, 0, sizeof plat);

	/* extra and why may be NULL. */
	assert_int_equal(plat_dtb_parse(blob, blob_len, PLAT_DTB_BOOT_FIRST, &plat, NULL, NULL), 0);
	assert_int_equal(plat.gic_version, 3);
	/* len may exceed totalsize. */
	assert_int_equal(plat_dtb_parse(blob, sizeof blob, 0x80000000u, &plat, &extra, &why), 0);
	assert_int_equal(plat.n_cpus, 4);
}

static void test_virt_gicv2(void **state)
{
	(void)state;
	const char *why = "x";
	struct tree t = virt2;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_null(why);
	check_common();
	assert_int_equal(plat.gic_version, 2);
	assert_true(plat.gicd_addr == 0x8000000u);
	assert_true(plat.gicc_addr == 0x8010000u);
	assert_true(plat.gicr_addr == 0);
	assert_true(extra.gicv2m_base == 0x8020000u);
	assert_true(extra.gits_base == 0);
	assert_int_equal(extra.psci, PLAT_DTB_PSCI_SMC);
	assert_null(extra.bootargs);

	t.gic = 400;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_int_equal(plat.gic_version, 2);
	assert_true(plat.gicc_addr == 0x8010000u);
}

static void test_v16_header(void **state)
{
	(void)state;
	const char *why;
	/* The same tree with a version 16 header (no size_dt_struct: up to totalsize). */
	build(&virt3);
	st_len -= 4; /* w_finish appended FDT_END: finish again as version 16 */
	w_finish_ver(true, 16);
	assert_int_equal(parse_first(&why), 0);
	check_common();
}

static void test_uart_choice(void **state)
{
	(void)state;
	const char *why;
	struct tree t = virt3;

	/* Without stdout-path: the first PL011 in node order. */
	t.stdout_path = NULL;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_true(plat.uart_base == 0x9100000u);
	assert_null(plat_dtb_stats()->warning);

	/* A full path, and one without the unit address. */
	t.stdout_path = "/pl011@9000000";
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_true(plat.uart_base == 0x9000000u);
	t.stdout_path = "/pl031:x";
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_true(plat.uart_base == 0x9100000u); /* the node is an RTC: fallback */
	assert_non_null(plat_dtb_stats()->warning);

	/* The second alias. */
	t.stdout_path = "serial1";
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_true(plat.uart_base == 0x9100000u);

	/* Unknown alias, empty path, a path to nowhere: fallback with a warning. */
	static const char *const bad[] = { "serial7:115200", ":115200", "/nowhere@0", "/", "//x" };
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		uint32_t before = plat_dtb_stats()->rejects[PLAT_DTB_UART_STDOUT];
		t.stdout_path = bad[i];
		build(&t);
		assert_int_equal(parse_first(&why), 0);
		assert_true(plat.uart_base == 0x9100000u);
		assert_true(plat_dtb_stats()->rejects[PLAT_DTB_UART_STDOUT] > before);
	}
}

static void test_boot_cpu(void **state)
{
	(void)state;
	const char *why;
	struct tree t = virt3;
	build(&t);
	/* MPIDR_EL1 of cpu 2 (bit 31 RES1, MT/U clear). */
	assert_int_equal(plat_dtb_parse(blob, blob_len, 0x80000002u, &plat, &extra, &why), 0);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(plat.cpus[i].boot_cpu, i == 2);
	/* A boot MPIDR the tree does not list. */
	assert_int_equal(plat_dtb_parse(blob, blob_len, 0x80000009u, &plat, &extra, &why), -E_NOENT);
	assert_non_null(why);
	assert_cleared();

	/* Two-cell affinity with Aff3. */
	t.cpu_ac = 2;
	t.cpu_hi = 0x5;
	build(&t);
	assert_int_equal(plat_dtb_parse(blob, blob_len, 0x0500000003ull | 0x80000000u, &plat, &extra,
					&why), 0);
	assert_int_equal(plat.cpus[3].apic_id, 0x05000003u);
	assert_true(plat.cpus[3].boot_cpu);
	assert_int_equal(plat_dtb_mpidr_aff(0xff00ffffffull | 0xc0000000u), 0xffffffffu);
}

static void cpu0_disabled(void) { w_sprop("status", "disabled"); }

static void test_cpu_status(void **state)
{
	(void)state;
	const char *why;
	struct tree t = virt3;
	t.in_cpu0 = cpu0_disabled;
	build(&t);
	/* First enabled cpu becomes the boot cpu. */
	assert_int_equal(parse_first(&why), 0);
	assert_false(plat.cpus[0].enabled);
	assert_false(plat.cpus[0].boot_cpu);
	assert_true(plat.cpus[1].boot_cpu);
	/* Running on a cpu marked disabled: it is enabled, with a warning. */
	uint32_t before = plat_dtb_stats()->rejects[PLAT_DTB_CPU_BOOT_DISABLED];
	assert_int_equal(plat_dtb_parse(blob, blob_len, 0x80000000u, &plat, &extra, &why), 0);
	assert_true(plat.cpus[0].enabled);
	assert_true(plat.cpus[0].boot_cpu);
	assert_int_equal(plat_dtb_stats()->rejects[PLAT_DTB_CPU_BOOT_DISABLED], before + 1);
}

static void test_too_many_cpus(void **state)
{
	(void)state;
	const char *why;
	struct tree t = virt3;
	uint32_t before = plat_dtb_stats()->rejects[PLAT_DTB_CPU_TOO_MANY];
	t.n_cpus = 70;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_int_equal(plat.n_cpus, PLAT_MAX_CPUS);
	assert_int_equal(plat_dtb_stats()->rejects[PLAT_DTB_CPU_TOO_MANY] - before, 6);
	assert_int_equal(plat.cpus[63].apic_id, 63);
	assert_true(plat.cpus[0].boot_cpu);

	/* The boot cpu beyond the cap keeps a slot (the last one). */
	assert_int_equal(plat_dtb_parse(blob, blob_len, 0x80000045u, &plat, &extra, &why), 0);
	assert_int_equal(plat.n_cpus, PLAT_MAX_CPUS);
	assert_int_equal(plat.cpus[63].apic_id, 0x45);
	assert_int_equal(plat.cpus[63].acpi_uid, 0x45);
	assert_true(plat.cpus[63].boot_cpu);
	for (unsigned i = 0; i < 63; i++)
		assert_false(plat.cpus[i].boot_cpu);
}

/* A UART and an RTC behind a simple-bus whose ranges move them (1 address cell). */
static void soc_bus(void)
{
	w_begin("soc");
	W_LIST("compatible", "simple-bus");
	w_u32("#address-cells", 1);
	w_u32("#size-cells", 1);
	w_cells("ranges", 8, 0x0, 0, 0x1c000000u, 0x100000u, 0x100000u, 0x1, 0, 0x10000u);
	w_begin("serial@2000");
	w_cells("reg", 2, 0x2000, 0x1000);
	W_LIST("compatible", "arm,pl011\0arm,primecell");
	w_end();
	w_begin("rtc@100000");
	w_cells("reg", 2, 0x100000u, 0x1000);
	W_LIST("compatible", "arm,pl031");
	w_end();
	w_begin("serial@900000"); /* no range covers it: ignored */
	w_cells("reg", 2, 0x900000u, 0x1000);
	W_LIST("compatible", "arm,pl011");
	w_end();
	w_end();
}

static void test_ranges_translation(void **state)
{
	(void)state;
	const char *why;
	struct tree t = virt3;
	t.stdout_path = "/soc/serial@2000";
	t.in_root = soc_bus;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_true(plat.uart_base == 0x1c002000u);
	assert_true(extra.rtc_base == 0x9010000u); /* the first pl031 in node order */

	uint32_t before = plat_dtb_stats()->rejects[PLAT_DTB_UART_BAD];
	t.stdout_path = "/soc/serial@900000";
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_true(plat.uart_base == 0x9100000u);
	assert_int_equal(plat_dtb_stats()->rejects[PLAT_DTB_UART_BAD], before + 1);
}

static void pcie_bus16(void)
{
	w_cells("bus-range", 2, 16, 31);
	w_u32("linux,pci-domain", 1);
}

static void test_ecam_bus_range(void **state)
{
	(void)state;
	const char *why;
	struct tree t = virt3;
	t.in_pcie = pcie_bus16;
	build(&t);
	/* reg (0x4010000000, 256 MiB) starts at bus 16: bus 0 would be 16 MiB lower. */
	assert_int_equal(parse_first(&why), 0);
	assert_int_equal(plat.n_ecam, 1);
	assert_true(plat.ecam[0].base == 0x4010000000ull - (16ull << 20));
	assert_int_equal(plat.ecam[0].segment, 1);
	assert_int_equal(plat.ecam[0].bus_start, 16);
	assert_int_equal(plat.ecam[0].bus_end, 31);
}

static void many_gic_ecam(void)
{
	for (unsigned i = 0; i < 6; i++) {
		char name[32];
		snprintf(name, sizeof name, "pcie@%x", i);
		w_begin(name);
		w_cells("reg", 4, 0x50 + i, 0, 0, 0x100000u);
		w_cells("bus-range", 2, 0, 0);
		w_u32("linux,pci-domain", i + 1);
		w_sprop("compatible", "pci-host-ecam-generic");
		w_end();
	}
	w_begin("intc@1000");
	w_cells("reg", 8, 0, 0x1000, 0, 0x1000, 0, 0x2000, 0, 0x1000);
	w_sprop("compatible", "arm,gic-400");
	w_end();
}

static void test_caps(void **state)
{
	(void)state;
	const char *why;
	struct tree t = virt3;
	uint32_t b_ecam = plat_dtb_stats()->rejects[PLAT_DTB_ECAM_TOO_MANY];
	uint32_t b_gic = plat_dtb_stats()->rejects[PLAT_DTB_GIC_DUP];
	t.in_root = many_gic_ecam;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_int_equal(plat.n_ecam, PLAT_MAX_ECAM);
	assert_int_equal(plat.ecam[3].segment, 3);
	assert_int_equal(plat.ecam[3].bus_end, 0);
	assert_int_equal(plat_dtb_stats()->rejects[PLAT_DTB_ECAM_TOO_MANY] - b_ecam, 3);
	assert_int_equal(plat_dtb_stats()->rejects[PLAT_DTB_GIC_DUP] - b_gic, 1);
	assert_int_equal(plat.gic_version, 3); /* the first wins */
}

/* ---- malformed blobs ----------------------------------------------------------------- */

struct bad_case {
	const char *name;
	struct tree tree;
	void (*mutate)(void); /* on the finished blob */
	int err;              /* 0: parse succeeds (degraded) */
	enum plat_dtb_site site;
};

static void m_magic(void) { blob[0] ^= 1; }
static void m_short(void) { blob_len = 20; }
static void m_short_v17(void) { blob_len = 38; }
static void m_total_over_len(void) { blob_len -= 1; }
static void m_total_small(void) { set_hdr(H_TOTAL, 39); }
static void m_total_huge(void) { set_hdr(H_TOTAL, 0xfffffff0u); }
static void m_version_old(void) { set_hdr(H_VERSION, 15); }
static void m_last_comp_new(void) { set_hdr(H_LAST_COMP, 18); }
static void m_off_st_out(void) { set_hdr(H_OFF_ST, hdr(H_TOTAL) + 4); }
static void m_off_st_in_hdr(void) { set_hdr(H_OFF_ST, 8); }
static void m_size_st_out(void) { set_hdr(H_SIZE_ST, hdr(H_TOTAL)); }
static void m_size_st_wrap(void) { set_hdr(H_SIZE_ST, 0xfffffffcu); }
static void m_off_str_out(void) { set_hdr(H_OFF_STR, 0x80000000u); }
static void m_size_str_out(void) { set_hdr(H_SIZE_STR, hdr(H_TOTAL) - hdr(H_OFF_STR) + 1); }
static void m_off_rsv_out(void) { set_hdr(H_OFF_RSV, hdr(H_TOTAL)); }
static void m_off_st_misaligned(void) { set_hdr(H_OFF_ST, hdr(H_OFF_ST) + 2); }
static void m_off_rsv_misaligned(void) { set_hdr(H_OFF_RSV, 44); }
/* The reserve map starts 8..15 bytes before the end: no room for its terminator. */
static void m_rsv_unterminated(void) { set_hdr(H_OFF_RSV, (hdr(H_TOTAL) - 8) & ~7u); }
static void m_rsv_wrap(void) { st_be64(blob + HDR_LEN + 8, 0xfffffffffff00000ull); st_be64(blob + HDR_LEN, 0x200000u); }
static void m_no_end(void) { st_be32(blob + hdr(H_OFF_ST) + hdr(H_SIZE_ST) - 4, 4 /* NOP */); }
static void m_struct_cut(void) { set_hdr(H_SIZE_ST, hdr(H_SIZE_ST) / 2); }
static void m_struct_cut_odd(void) { set_hdr(H_SIZE_ST, 4 * 5 + 2); }
static void m_strings_unterminated(void)
{
	/* Drop the strings block's last NUL: the last property name runs off the block. */
	set_hdr(H_SIZE_STR, hdr(H_SIZE_STR) - 1);
}
static void m_first_token(void) { st_be32(blob + hdr(H_OFF_ST), 7); }
static void m_root_prop_len(void)
{
	/* The first property of the root: FDT_PROP at +8 (after BEGIN_NODE and the name). */
	st_be32(blob + hdr(H_OFF_ST) + 8 + 4, 0x7ffffff0u);
}
static void m_root_prop_nameoff(void) { st_be32(blob + hdr(H_OFF_ST) + 8 + 8, hdr(H_SIZE_STR)); }
static void m_root_prop_nameoff_huge(void) { st_be32(blob + hdr(H_OFF_ST) + 8 + 8, 0xfffffffcu); }

/* Raw token sequences appended inside the root. */
static void r_prop_after_child(void)
{
	w_begin("a");
	w_end();
	w_u32("late", 1);
}
static void r_unknown_token(void) { w32(0x12345678u); }
static void r_extra_end_node(void)
{
	w_end();
	w_end();
	w_begin("second-root");
}
static void r_second_root(void)
{
	w_end(); /* closes the root early; the builder's w_end then closes... nothing */
	w_begin("");
}
static void r_deep(void)
{
	for (unsigned i = 0; i < PLAT_DTB_MAX_DEPTH; i++)
		w_begin("d");
	for (unsigned i = 0; i < PLAT_DTB_MAX_DEPTH; i++)
		w_end();
}
static void r_depth_ok(void)
{
	for (unsigned i = 0; i < PLAT_DTB_MAX_DEPTH - 1; i++)
		w_begin("d");
	for (unsigned i = 0; i < PLAT_DTB_MAX_DEPTH - 1; i++)
		w_end();
}
static size_t mark; /* a structure block offset a raw writer remembers */
static void r_unterminated_name(void)
{
	w32(1);
	memcpy(st + st_len, "abcdefgh", 8);
	st_len += 8;
	mark = st_len;
}
/* The structure block ends inside that name: no NUL before its end. */
static void m_cut_at_mark(void) { set_hdr(H_SIZE_ST, (uint32_t)mark); }
static void r_unpadded_prop(void)
{
	/* A 5-byte value without its padding: the parser skips the padding into the next
	 * token, which it then reads 3 bytes late (0x02000000). */
	w_begin("u");
	w32(3);
	w32(5);
	w32(w_str("odd"));
	memcpy(st + st_len, "abcde", 5);
	st_len += 5;
	w32(2); /* misaligned FDT_END_NODE */
}
static void r_too_many_nodes(void)
{
	for (unsigned i = 0; i < PLAT_DTB_MAX_NODES; i++) {
		w_begin("n");
		w_end();
	}
}
static void r_too_many_props(void)
{
	w_begin("many");
	for (unsigned i = 0; i < PLAT_DTB_MAX_PROPS; i++)
		w_prop("p", NULL, 0);
	w_end();
}
static void mem_reg_12(void) { w_cells("reg", 3, 0, 0x40000000u, 0); }
static void mem_reg_none(void) { }
static void mem_reg_zero(void) { w_cells("reg", 8, 0, 0x40000000u, 0, 0, 0, 0x50000000u, 0, 0x1000); }
static void mem_reg_many(void)
{
	uint8_t b[40 * 16];
	for (unsigned i = 0; i < 40; i++) {
		st_be64(b + 16 * i, 0x40000000ull + i * 0x100000ull);
		st_be64(b + 16 * i + 8, 0x100000u);
	}
	w_prop("reg", b, sizeof b);
}
/* A memory node under a bus of 3 address cells whose high cell is set: over 64 bits. */
static void r_mem_3cells(void)
{
	w_begin("bus3");
	w_u32("#address-cells", 3);
	w_u32("#size-cells", 1);
	w_begin("memory@0");
	w_sprop("device_type", "memory");
	w_cells("reg", 4, 1, 0, 0, 0x1000);
	w_end();
	w_end();
}
/* A bus whose ranges would move an address past 2^64, and one whose cells are unusable. */
static void r_ranges_overflow(void)
{
	w_begin("bus");
	w_u32("#address-cells", 1);
	w_u32("#size-cells", 1);
	w_cells("ranges", 4, 0, 0xffffffffu, 0xfffff000u, 0x100000u);
	w_begin("memory@2000");
	w_sprop("device_type", "memory");
	w_cells("reg", 2, 0x2000, 0x1000);
	w_end();
	w_end();
	w_begin("bus5");
	w_u32("#address-cells", 5);
	w_cells("ranges", 2, 0, 0);
	w_begin("bus1");
	w_u32("#address-cells", 1);
	w_u32("#size-cells", 1);
	w_cells("ranges", 1, 0);
	w_begin("memory@0");
	w_sprop("device_type", "memory");
	w_cells("reg", 2, 0, 0x1000);
	w_end();
	w_end();
	w_end();
}
static void r_second_psci(void)
{
	w_begin("psci2");
	w_sprop("compatible", "arm,psci");
	w_sprop("method", "smc");
	w_end();
}
static void mem_reg_wrap(void) { w_cells("reg", 4, 0xffffffffu, 0xfffff000u, 0, 0x2000); }
static void cpu0_reg_len(void) { w_prop("reg", "\0\0", 2); }
static void r_gic_one_reg(void)
{
	/* Only a GICv3 node of one reg entry (the tree is built without a GIC). */
	w_begin("intc@8000000");
	w_cells("reg", 4, 0, 0x8000000u, 0, 0x10000);
	w_sprop("compatible", "arm,gic-v3");
	w_end();
}
static void r_gic_bad_cells(void)
{
	w_begin("bus");
	w_u32("#address-cells", 5);
	w_begin("intc@8000000");
	w_cells("reg", 4, 0, 0x8000000u, 0, 0x10000);
	w_sprop("compatible", "arm,gic-v3");
	w_end();
	w_end();
}
static void r_mem_reserved_bad(void)
{
	w_begin("reserved-memory");
	w_u32("#address-cells", 2);
	w_u32("#size-cells", 2);
	w_begin("bad");
	w_cells("reg", 3, 0, 1, 2);
	w_end();
	w_end();
}
static void r_mem_reserved_many(void)
{
	w_begin("reserved-memory");
	w_u32("#address-cells", 2);
	w_u32("#size-cells", 2);
	for (unsigned i = 0; i < PLAT_DTB_MAX_RESERVED; i++) {
		w_begin("r");
		w_cells("reg", 4, 0, 0x60000000u + i * 0x1000u, 0, 0x1000);
		w_end();
	}
	w_end();
}
static void pcie_bad_range(void) { w_cells("bus-range", 2, 5, 4); }
static void pcie_big_range(void) { w_cells("bus-range", 2, 0, 256); }
static void pcie_bad_domain(void) { w_u32("linux,pci-domain", 0x10000); }
static void chosen_bootargs_unterminated(void) { w_prop("bootargs", "abc", 3); }

static const struct tree no_gic = { .gic = 0, .n_cpus = 4, .cpu_ac = 1 };
static const struct tree no_gic_one = { .gic = 0, .n_cpus = 4, .cpu_ac = 1, .in_root = r_gic_one_reg };
static const struct tree no_gic_cells = { .gic = 0, .n_cpus = 4, .cpu_ac = 1, .in_root = r_gic_bad_cells };

#define T3(...) { .gic = 3, .stdout_path = "serial0", __VA_ARGS__ }

static const struct bad_case bad_cases[] = {
	{ "bad magic", T3(), m_magic, -E_INVAL, PLAT_DTB_HDR_MAGIC },
	{ "truncated header", T3(), m_short, -E_INVAL, PLAT_DTB_HDR_SHORT },
	{ "v17 header cut", T3(), m_short_v17, -E_INVAL, PLAT_DTB_HDR_SHORT },
	{ "totalsize > len", T3(), m_total_over_len, -E_RANGE, PLAT_DTB_HDR_SIZE },
	{ "totalsize < header", T3(), m_total_small, -E_RANGE, PLAT_DTB_HDR_SIZE },
	{ "totalsize huge", T3(), m_total_huge, -E_RANGE, PLAT_DTB_HDR_SIZE },
	{ "version 15", T3(), m_version_old, -E_NOSYS, PLAT_DTB_HDR_VERSION },
	{ "last_comp_version 18", T3(), m_last_comp_new, -E_NOSYS, PLAT_DTB_HDR_VERSION },
	{ "off_dt_struct past end", T3(), m_off_st_out, -E_RANGE, PLAT_DTB_HDR_BLOCK },
	{ "off_dt_struct in header", T3(), m_off_st_in_hdr, -E_RANGE, PLAT_DTB_HDR_BLOCK },
	{ "size_dt_struct past end", T3(), m_size_st_out, -E_RANGE, PLAT_DTB_HDR_BLOCK },
	{ "size_dt_struct wraps", T3(), m_size_st_wrap, -E_RANGE, PLAT_DTB_HDR_BLOCK },
	{ "off_dt_strings past end", T3(), m_off_str_out, -E_RANGE, PLAT_DTB_HDR_BLOCK },
	{ "size_dt_strings past end", T3(), m_size_str_out, -E_RANGE, PLAT_DTB_HDR_BLOCK },
	{ "off_mem_rsvmap past end", T3(), m_off_rsv_out, -E_RANGE, PLAT_DTB_HDR_BLOCK },
	{ "misaligned structure block", T3(), m_off_st_misaligned, -E_INVAL, PLAT_DTB_HDR_ALIGN },
	{ "misaligned reserve map", T3(), m_off_rsv_misaligned, -E_INVAL, PLAT_DTB_HDR_ALIGN },
	{ "reserve map unterminated", T3(), m_rsv_unterminated, -E_CORRUPT, PLAT_DTB_RSVMAP },
	{ "reserve entry wraps", T3(), m_rsv_wrap, -E_CORRUPT, PLAT_DTB_RSVMAP },
	{ "FDT_END missing", T3(), m_no_end, -E_CORRUPT, PLAT_DTB_STRUCT_NO_END },
	{ "structure block cut", T3(), m_struct_cut, -E_CORRUPT, PLAT_DTB__SITES },
	{ "structure block odd size", T3(), m_struct_cut_odd, -E_CORRUPT, PLAT_DTB__SITES },
	{ "unterminated property name", T3(), m_strings_unterminated, -E_CORRUPT,
	  PLAT_DTB_STRUCT_PROP_NAME },
	{ "unknown first token", T3(), m_first_token, -E_CORRUPT, PLAT_DTB_STRUCT_TOKEN },
	{ "property length past end", T3(), m_root_prop_len, -E_CORRUPT, PLAT_DTB_STRUCT_TRUNC },
	{ "name offset = strings size", T3(), m_root_prop_nameoff, -E_CORRUPT,
	  PLAT_DTB_STRUCT_PROP_NAME },
	{ "name offset huge", T3(), m_root_prop_nameoff_huge, -E_CORRUPT, PLAT_DTB_STRUCT_PROP_NAME },
	{ "property after child", T3(.in_root = r_prop_after_child), NULL, -E_CORRUPT,
	  PLAT_DTB_STRUCT_PROP_ORDER },
	{ "unknown token", T3(.in_root = r_unknown_token), NULL, -E_CORRUPT, PLAT_DTB_STRUCT_TOKEN },
	{ "END_NODE at depth 0", T3(.in_root = r_extra_end_node), NULL, -E_CORRUPT,
	  PLAT_DTB_STRUCT_TOKEN },
	{ "second root", T3(.in_root = r_second_root), NULL, -E_CORRUPT, PLAT_DTB_STRUCT_TOKEN },
	{ "depth over limit", T3(.in_root = r_deep), NULL, -E_RANGE, PLAT_DTB_STRUCT_DEPTH },
	{ "unterminated node name", T3(.in_root = r_unterminated_name), m_cut_at_mark, -E_CORRUPT,
	  PLAT_DTB_STRUCT_NAME },
	{ "misaligned token", T3(.in_root = r_unpadded_prop), NULL, -E_CORRUPT, PLAT_DTB_STRUCT_TOKEN },
	{ "too many nodes", T3(.in_root = r_too_many_nodes), NULL, -E_RANGE, PLAT_DTB_STRUCT_TOO_MANY },
	{ "too many properties", T3(.in_root = r_too_many_props), NULL, -E_RANGE,
	  PLAT_DTB_STRUCT_TOO_MANY },
	{ "memory reg wrong length", T3(.in_memory = mem_reg_12), NULL, -E_INVAL, PLAT_DTB_MEM_REG },
	{ "memory without reg", T3(.in_memory = mem_reg_none), NULL, -E_NOENT, PLAT_DTB_MEM_NONE },
	{ "no memory", T3(.no_memory = true), NULL, -E_NOENT, PLAT_DTB_MEM_NONE },
	{ "memory range wraps", T3(.in_memory = mem_reg_wrap), NULL, -E_NOENT, PLAT_DTB_MEM_BAD },
	{ "cpu reg wrong length", T3(.cpu0_reg = cpu0_reg_len), NULL, -E_INVAL, PLAT_DTB_CPU_REG },
	{ "cpu reg not affinity", T3(.cpu_ac = 2, .cpu_hi = 0x100), NULL, -E_INVAL, PLAT_DTB_CPU_REG },
	{ "cpus #address-cells 3", T3(.cpu_ac = 3), NULL, -E_INVAL, PLAT_DTB_CPU_REG },
	{ "no cpus", T3(.no_cpus = true), NULL, -E_NOENT, PLAT_DTB_CPU_NONE },
	{ "no GIC", no_gic, NULL, -E_NOENT, PLAT_DTB_GIC_NONE },
	{ "GIC reg one entry", no_gic_one, NULL, -E_INVAL, PLAT_DTB_GIC_REG },
	{ "GIC parent cells 5", no_gic_cells, NULL, -E_INVAL, PLAT_DTB_GIC_REG },
	{ "reserved reg wrong length", T3(.in_root = r_mem_reserved_bad), NULL, -E_RANGE,
	  PLAT_DTB_RESERVED },
	{ "too many reserved ranges", T3(.in_root = r_mem_reserved_many), NULL, -E_RANGE,
	  PLAT_DTB_RESERVED },
	{ "reserve map too long", T3(.n_rsv = PLAT_DTB_MAX_RSVMAP + 1, .rsv_size0 = true), NULL, -E_CORRUPT,
	  PLAT_DTB_RSVMAP },
	{ "reserve map over the reported cap", T3(.n_rsv = PLAT_DTB_MAX_RESERVED), NULL, -E_RANGE,
	  PLAT_DTB_RESERVED },
	/* Degraded but successful parses. */
	{ "depth at the limit", T3(.in_root = r_depth_ok), NULL, 0, PLAT_DTB__SITES },
	{ "reserve map at the reported cap", T3(.n_rsv = PLAT_DTB_MAX_RESERVED - 1), NULL, 0,
	  PLAT_DTB__SITES },
	{ "too many memory ranges", T3(.in_memory = mem_reg_many), NULL, 0, PLAT_DTB_MEM_TOO_MANY },
	{ "memory address over 64 bits", T3(.in_root = r_mem_3cells), NULL, 0, PLAT_DTB_MEM_BAD },
	{ "ranges overflow / bad cells", T3(.in_root = r_ranges_overflow), NULL, 0, PLAT_DTB_MEM_BAD },
	{ "second psci ignored", T3(.in_root = r_second_psci), NULL, 0, PLAT_DTB__SITES },
	{ "memory range of size 0", T3(.in_memory = mem_reg_zero), NULL, 0, PLAT_DTB_MEM_BAD },
	{ "ECAM bus-range reversed", T3(.in_pcie = pcie_bad_range), NULL, 0, PLAT_DTB_ECAM_BAD },
	{ "ECAM bus-range > 255", T3(.in_pcie = pcie_big_range), NULL, 0, PLAT_DTB_ECAM_BAD },
	{ "ECAM domain > 0xffff", T3(.in_pcie = pcie_bad_domain), NULL, 0, PLAT_DTB_ECAM_BAD },
	{ "bootargs unterminated", T3(.in_chosen = chosen_bootargs_unterminated, .bootargs = false),
	  NULL, 0, PLAT_DTB_BOOTARGS_BAD },
	{ "timer interrupt not a PPI", T3(.timer_spi = true), NULL, 0, PLAT_DTB_EXTRA_BAD },
};

static void test_malformed(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad_cases); i++) {
		const struct bad_case *bc = &bad_cases[i];
		const char *why = NULL;
		uint32_t before = 0;
		build(&bc->tree);
		if (bc->mutate)
			bc->mutate();
		if (bc->site < PLAT_DTB__SITES)
			before = plat_dtb_stats()->rejects[bc->site];
		memset(&plat, 0xa5, sizeof plat);
		memset(&extra, 0xa5, sizeof extra);
		int err = parse_first(&why);
		print_message("  case %-32s -> %-8s %s\n", bc->name, err_name(err), why ? why : "");
		assert_int_equal(err, bc->err);
		if (bc->site < PLAT_DTB__SITES)
			assert_true(plat_dtb_stats()->rejects[bc->site] > before);
		if (err) {
			assert_non_null(why);
			assert_cleared();
		} else {
			assert_null(why);
			assert_int_equal(plat.n_cpus, 4);
			assert_int_equal(plat.gic_version, 3);
		}
	}
}

/* Degraded results: what is kept and what is dropped. */
static void cpu0_dup(void)
{
	w_end(); /* close cpu@0, then a second node with the same affinity */
	w_begin("cpu@0x0");
	w_u32("reg", 0);
	w_sprop("device_type", "cpu");
}

static void test_degraded(void **state)
{
	(void)state;
	const char *why;
	struct tree t = virt3;

	t.in_memory = mem_reg_zero;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_int_equal(plat.n_mem, 1);
	assert_true(plat.mem[0].base == 0x50000000u);

	t = virt3;
	t.in_pcie = pcie_bad_range;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_int_equal(plat.n_ecam, 0);
	assert_non_null(plat_dtb_stats()->warning);

	t = virt3;
	t.in_cpu0 = cpu0_dup;
	uint32_t before = plat_dtb_stats()->rejects[PLAT_DTB_CPU_DUP];
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_int_equal(plat.n_cpus, 4);
	assert_int_equal(plat.cpus[1].acpi_uid, 2); /* the duplicate took uid 1 */
	assert_int_equal(plat_dtb_stats()->rejects[PLAT_DTB_CPU_DUP], before + 1);

	t = virt3;
	t.bootargs = false;
	t.in_chosen = chosen_bootargs_unterminated;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_null(extra.bootargs);
	assert_int_equal(extra.bootargs_len, 0);

	/* A timer whose virtual entry is an SPI: no timer, nothing else lost. */
	t = virt3;
	t.timer_spi = true;
	build(&t);
	assert_int_equal(parse_first(&why), 0);
	assert_false(extra.has_timer);
	assert_int_equal(plat.n_cpus, 4);
}

/* A timer or PSCI node that is unusable loses only that fact. */
static void test_extra_unusable(void **state)
{
	(void)state;
	const char *why;
	uint32_t before = plat_dtb_stats()->rejects[PLAT_DTB_EXTRA_BAD];
	/* Hand-built: GICv3 with #interrupt-cells 2, a timer, a psci with method "xyz". */
	w_reset();
	w_begin("");
	w_begin("psci");
	w_sprop("compatible", "arm,psci");
	w_sprop("method", "xyz");
	w_end();
	w_begin("memory@0");
	w_sprop("device_type", "memory");
	w_cells("reg", 3, 0, 0, 0x1000);
	w_end();
	w_begin("timer");
	w_sprop("compatible", "arm,armv8-timer");
	w_cells("interrupts", 12, 1, 13, 4, 1, 14, 4, 1, 11, 4, 1, 10, 4);
	w_end();
	w_begin("cpus");
	w_u32("#address-cells", 1);
	w_u32("#size-cells", 0);
	w_begin("cpu@0");
	w_sprop("device_type", "cpu");
	w_u32("reg", 0);
	w_end();
	w_end();
	w_begin("gic");
	w_sprop("compatible", "arm,gic-v3");
	w_u32("#interrupt-cells", 2);
	w_cells("reg", 6, 0, 0x8000000u, 0x10000, 0, 0x80a0000u, 0xf60000u);
	w_begin("its"); /* no reg */
	w_sprop("compatible", "arm,gic-v3-its");
	w_end();
	w_end();
	w_end();
	w_finish();
	assert_int_equal(parse_first(&why), 0);
	assert_int_equal(extra.psci, PLAT_DTB_PSCI_NONE);
	assert_false(extra.has_timer);
	assert_true(extra.gits_base == 0);
	assert_true(plat.uart_base == 0);
	assert_int_equal(plat.n_ecam, 0);
	assert_int_equal(plat_dtb_stats()->rejects[PLAT_DTB_EXTRA_BAD] - before, 3);
	/* Root defaults: #address-cells 2, #size-cells 1 (no properties on the root). */
	assert_int_equal(plat.n_mem, 1);
	assert_true(plat.mem[0].base == 0 && plat.mem[0].len == 0x1000);
	assert_true(plat.gicr_addr == 0x80a0000u);
}

/* ---- robustness ---------------------------------------------------------------------- */

/* Every shorter structure or strings block, and every length of the buffer. */
static void test_prefixes(void **state)
{
	(void)state;
	static uint8_t good[ST_MAX];
	size_t good_len;
	uint32_t size_st, size_str;
	const char *why;

	build(&virt3);
	good_len = blob_len;
	memcpy(good, blob, good_len);
	size_st = hdr(H_SIZE_ST);
	size_str = hdr(H_SIZE_STR);
	for (uint32_t n = 0; n < size_st; n++) {
		memcpy(blob, good, good_len);
		set_hdr(H_SIZE_ST, n);
		assert_int_not_equal(parse_first(&why), 0);
		assert_cleared();
	}
	for (uint32_t n = 0; n < size_str; n++) {
		memcpy(blob, good, good_len);
		set_hdr(H_SIZE_STR, n);
		assert_int_not_equal(parse_first(&why), 0);
	}
	memcpy(blob, good, good_len);
	for (size_t n = 0; n < good_len; n++)
		assert_int_not_equal(plat_dtb_parse(blob, n, PLAT_DTB_BOOT_FIRST, &plat, &extra, &why), 0);
	assert_int_equal(plat_dtb_parse(blob, good_len, PLAT_DTB_BOOT_FIRST, &plat, &extra, &why), 0);
}

/* Each byte of the good blob replaced by a few values: never a crash (ASan/UBSan), and
 * either success with sane counts or failure with cleared fields. */
static void test_byte_flips(void **state)
{
	(void)state;
	static uint8_t good[ST_MAX];
	static const uint8_t vals[] = { 0x00, 0xff, 0x01, 0x09, 0x80 };
	size_t good_len;
	build(&virt2);
	good_len = blob_len;
	memcpy(good, blob, good_len);
	for (size_t i = 0; i < good_len; i++) {
		for (size_t v = 0; v < ARRAY_LEN(vals); v++) {
			const char *why = NULL;
			memcpy(blob, good, good_len);
			blob[i] = vals[v];
			int err = parse_first(&why);
			if (err) {
				assert_non_null(why);
				assert_cleared();
			} else {
				assert_true(plat.n_cpus >= 1 && plat.n_cpus <= PLAT_MAX_CPUS);
				assert_true(plat.n_mem >= 1 && plat.n_mem <= PLAT_MAX_MEM_RANGES);
				assert_true(plat.n_ecam <= PLAT_MAX_ECAM);
				assert_true(plat.gic_version == 2 || plat.gic_version == 3);
				if (extra.bootargs)
					assert_int_equal(extra.bootargs[extra.bootargs_len], 0);
			}
		}
	}
}

static void test_site_names(void **state)
{
	(void)state;
	for (unsigned i = 0; i < PLAT_DTB__SITES; i++) {
		assert_non_null(plat_dtb_site_name((enum plat_dtb_site)i));
		assert_string_not_equal(plat_dtb_site_name((enum plat_dtb_site)i), "?");
	}
	assert_string_equal(plat_dtb_site_name(PLAT_DTB__SITES), "?");
	/* NULL blob. */
	const char *why;
	assert_int_equal(plat_dtb_parse(NULL, 100, 0, &plat, &extra, &why), -E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_virt_gicv3),
		cmocka_unit_test(test_virt_gicv2),
		cmocka_unit_test(test_v16_header),
		cmocka_unit_test(test_uart_choice),
		cmocka_unit_test(test_boot_cpu),
		cmocka_unit_test(test_cpu_status),
		cmocka_unit_test(test_too_many_cpus),
		cmocka_unit_test(test_ranges_translation),
		cmocka_unit_test(test_ecam_bus_range),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_degraded),
		cmocka_unit_test(test_extra_unusable),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_byte_flips),
		cmocka_unit_test(test_site_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
