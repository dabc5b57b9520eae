/* SPDX-License-Identifier: MIT
 *
 * The diagnostics mode on aarch64 (urmqtt.mode=diag): what the portable run
 * (kernel/diag/diag.h) needs from this machine — the CPU by MIDR_EL1 and
 * ID_AA64ISAR0_EL1 (AES, PMULL, SHA-1/SHA-256/SHA-512/SHA-3, CRC32, atomics, RNDR), the
 * count the firmware lists, the generic timer's frequency; memory from the firmware's map
 * and the page allocator; the scanned PCI bus (devices.c); the PL011 console for the
 * operator's WIPE answer (uart.c's polled receive behind kernel/console_in) — then PSCI
 * SYSTEM_OFF. Boot core only, before the other cores start; never returns.
 */
#include "arch/aarch64/a64.h"
#include "kernel/console_in.h"
#include "kernel/diag/diag.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/node/node.h"
#include "lib/fmt.h"

static int dp_getc(void *ctx)
{
	(void)ctx;
	return a64_uart_getc();
}

static void dp_write(void *ctx, const char *s, size_t len)
{
	(void)ctx;
	a64_uart_write(s, len);
}

static uint64_t dp_now_ms(void *ctx)
{
	(void)ctx;
	return a64_now_ns() / 1000000u;
}

static void dp_relax(void *ctx)
{
	(void)ctx;
	__asm__ volatile("yield");
}

static const struct console_in_ops dp_console = { dp_getc, dp_write, dp_now_ms, dp_relax, NULL };

static const char *dp_implementer(uint32_t imp)
{
	switch (imp) {
	case 0x41: return "Arm";
	case 0x42: return "Broadcom";
	case 0x43: return "Cavium";
	case 0x46: return "Fujitsu";
	case 0x48: return "HiSilicon";
	case 0x4e: return "NVIDIA";
	case 0x50: return "Ampere (APM)";
	case 0x51: return "Qualcomm";
	case 0x61: return "Apple";
	case 0xc0: return "Ampere";
	case 0x00: return "software (0x00)";
	default: return "unknown";
	}
}

static void dp_cpu(struct diag_cpu *c, uint32_t n_cpus)
{
	uint64_t midr = A64_SYSREG_READ(midr_el1);
	uint64_t isar0 = A64_SYSREG_READ(id_aa64isar0_el1);
	c->arch = "aarch64";
	const char *imp = dp_implementer((uint32_t)(midr >> 24) & 0xffu);
	(void)fmt_snprintf(c->vendor, sizeof c->vendor, "%s", imp);
	(void)fmt_snprintf(c->model, sizeof c->model, "MIDR 0x%08x (part 0x%03x, variant %u, revision %u)",
			   (unsigned)midr, (unsigned)((midr >> 4) & 0xfffu), (unsigned)((midr >> 20) & 0xfu),
			   (unsigned)(midr & 0xfu));
	uint32_t aes = (uint32_t)(isar0 >> 4) & 0xfu, sha1 = (uint32_t)(isar0 >> 8) & 0xfu;
	uint32_t sha2 = (uint32_t)(isar0 >> 12) & 0xfu, crc = (uint32_t)(isar0 >> 16) & 0xfu;
	uint32_t atom = (uint32_t)(isar0 >> 20) & 0xfu, sha3 = (uint32_t)(isar0 >> 32) & 0xfu;
	uint32_t rndr = (uint32_t)(isar0 >> 60) & 0xfu;
	diag_cpu_feature(c, aes >= 1, "aes");
	diag_cpu_feature(c, aes >= 2, "pmull");
	diag_cpu_feature(c, sha1 >= 1, "sha1");
	diag_cpu_feature(c, sha2 >= 1, "sha256");
	diag_cpu_feature(c, sha2 >= 2, "sha512");
	diag_cpu_feature(c, sha3 >= 1, "sha3");
	diag_cpu_feature(c, crc >= 1, "crc32");
	diag_cpu_feature(c, atom >= 2, "lse");
	diag_cpu_feature(c, rndr >= 1, "rndr");
	c->count = n_cpus ? n_cpus : 1;
	c->clock_hz = A64_SYSREG_READ(cntfrq_el0) & 0xffffffffu;
}

/* Development builds: diag_wipe_s=N (1..600) shortens the WIPE prompt for tests; 0 (the
 * default prompt) otherwise, and always in production (node_knob_u32 reads nothing there). */
static uint32_t dp_wipe_s(const char *cmdline, size_t len)
{
	uint32_t s = 0;
	(void)node_knob_u32(cmdline, len, "diag_wipe_s", 1u, 600u, &s);
	return s;
}

NORETURN void a64_diag_main(uint64_t rtc_base, const char *cmdline, size_t cmdline_len, uint64_t mem_total,
			    uint32_t n_cpus)
{
	static struct diag_platform p;
	struct pages_stats ps;
	a64_wall_clock_init(rtc_base); /* certificate validity in the TLS self-test */
	kheap_pages_stats(&ps);
	dp_cpu(&p.cpu, n_cpus);
	p.mem_total = mem_total;
	p.mem_free = ps.n_free * HEAP_PAGE_SIZE;
	p.bus = a64_dev_bus(&p.pci_how);
	p.console = &dp_console;
	p.now_ns = a64_now_ns;
	p.wipe_prompt_s = dp_wipe_s(cmdline, cmdline_len);
	(void)diag_run(&p);
	/* Power off: the run is one-shot (a reset would boot the menu's default entry). */
	log_rawf("diagnostics done: powering off (PSCI SYSTEM_OFF)\n");
	a64_psci_off();
}
