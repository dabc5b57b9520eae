/* SPDX-License-Identifier: MIT
 *
 * The diagnostics mode on x86_64 (urmqtt.mode=diag): what the portable run
 * (kernel/diag/diag.h) needs from this machine — the CPU by CPUID (vendor, brand string,
 * the features the broker's code paths use), memory from the boot map and the page
 * allocator, the scanned PCI bus (devices.c), the COM1 console for the operator's WIPE
 * answer (serial.c's polled receive behind kernel/console_in), the TSC clock — then the
 * end of the run: ACPI S5 power-off; when the machine has no S5 or ignores it, the boot
 * core halts with interrupts off after saying so. Boot core only, before the other cores
 * start; never returns.
 */
#include "arch/x86_64/x86.h"
#include "kernel/console_in.h"
#include "kernel/diag/diag.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/node/node.h"
#include "lib/mem.h"

static int dp_getc(void *ctx)
{
	(void)ctx;
	return x86_serial_getc();
}

static void dp_write(void *ctx, const char *s, size_t len)
{
	(void)ctx;
	x86_serial_write(s, len);
}

static uint64_t dp_now_ms(void *ctx)
{
	(void)ctx;
	return x86_now_ns() / 1000000u;
}

static void dp_relax(void *ctx)
{
	(void)ctx;
	x86_pause();
}

static const struct console_in_ops dp_console = { dp_getc, dp_write, dp_now_ms, dp_relax, NULL };

static void dp_cpu(struct diag_cpu *c, uint32_t n_cpus)
{
	uint32_t r[4];
	c->arch = "x86_64";
	x86_cpuid(0, 0, r);
	uint32_t max_leaf = r[0];
	memcpy(c->vendor, &r[1], 4);
	memcpy(c->vendor + 4, &r[3], 4);
	memcpy(c->vendor + 8, &r[2], 4);
	c->vendor[12] = 0;
	x86_cpuid(0x80000000u, 0, r);
	if (r[0] >= 0x80000004u) {
		for (uint32_t i = 0; i < 3; i++) {
			x86_cpuid(0x80000002u + i, 0, r);
			memcpy(c->model + 16u * i, r, 16);
		}
		c->model[48] = 0;
	} else {
		memcpy(c->model, "(no brand string)", 18);
	}
	/* The brand string is CPU-supplied: the JSON writer escapes it; trim its padding. */
	size_t s = 0;
	while (c->model[s] == ' ')
		s++;
	if (s)
		memmove(c->model, c->model + s, sizeof c->model - s);
	uint32_t f1c = 0, f1d = 0, f7b = 0;
	if (max_leaf >= 1) {
		x86_cpuid(1, 0, r);
		f1c = r[2];
		f1d = r[3];
	}
	if (max_leaf >= 7) {
		x86_cpuid(7, 0, r);
		f7b = r[1];
	}
	diag_cpu_feature(c, f1d & (1u << 26), "sse2");
	diag_cpu_feature(c, f1c & (1u << 20), "sse4.2");
	diag_cpu_feature(c, f1c & (1u << 25), "aes");
	diag_cpu_feature(c, f1c & (1u << 1), "pclmulqdq");
	diag_cpu_feature(c, f7b & (1u << 29), "sha");
	diag_cpu_feature(c, f1c & (1u << 30), "rdrand");
	diag_cpu_feature(c, f7b & (1u << 18), "rdseed");
	diag_cpu_feature(c, f7b & (1u << 19), "adx");
	diag_cpu_feature(c, f7b & (1u << 8), "bmi2");
	diag_cpu_feature(c, f1c & (1u << 28), "avx");
	diag_cpu_feature(c, f7b & (1u << 5), "avx2");
	diag_cpu_feature(c, f7b & (1u << 16), "avx512f");
	diag_cpu_feature(c, f1c & (1u << 31), "hypervisor");
	c->count = n_cpus ? n_cpus : 1;
	c->clock_hz = x86_tsc_hz();
}

/* Development builds: diag_wipe_s=N (1..600) shortens the WIPE prompt for tests; 0 (the
 * default prompt) otherwise, and always in production (node_knob_u32 reads nothing there). */
static uint32_t dp_wipe_s(const char *cmdline, size_t len)
{
	uint32_t s = 0;
	(void)node_knob_u32(cmdline, len, "diag_wipe_s", 1u, 600u, &s);
	return s;
}

NORETURN void x86_diag_main(const char *cmdline, size_t cmdline_len, uint64_t mem_total, uint32_t n_cpus)
{
	static struct diag_platform p;
	struct pages_stats ps;
	x86_wall_clock_init(cmdline, cmdline_len); /* certificate validity in the TLS self-test */
	kheap_pages_stats(&ps);
	dp_cpu(&p.cpu, n_cpus);
	p.mem_total = mem_total;
	p.mem_free = ps.n_free * HEAP_PAGE_SIZE;
	p.bus = x86_dev_bus(&p.pci_how);
	p.console = &dp_console;
	p.now_ns = x86_now_ns;
	p.wipe_prompt_s = dp_wipe_s(cmdline, cmdline_len);
	(void)diag_run(&p);
	/* Power off: the run is one-shot, a reset would boot the menu's default entry and
	 * serve; an operator (or a test) sees a stopped machine. */
	x86_acpi_poweroff();
	log_rawf("diagnostics done; this machine has no usable ACPI S5: halted, switch it off\n");
	for (;;)
		__asm__ volatile("cli; hlt");
}
