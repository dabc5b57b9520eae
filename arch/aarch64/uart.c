/* SPDX-License-Identifier: MIT
 *
 * The PL011 console: polled transmit (the log's sink) and polled receive (a64_uart_getc:
 * one byte if the receive FIFO holds one, never a wait; the diagnostics' operator prompt
 * through kernel/console_in). The base is QEMU virt's until
 * the device tree names the stdout UART. Writes never block forever: a transmit FIFO that
 * stays full for A64_UART_SPINS polls drops the rest of the write (a console must never
 * stop the kernel). A write runs with this core's IRQs masked, so the watchdog's tick
 * cannot cut a line in two, and, once the MMU is on, under a lock whose wait is bounded
 * too (as x86_64's serial.c), so lines of several cores are not interleaved: a core that
 * faults while holding it costs the others a bounded delay, never a deadlock, and a fault
 * report on the holding core writes at once instead of waiting for itself. With the MMU
 * off (the boot, one core) there is no lock: exclusives on Device memory are unpredictable.
 */
#include <stdatomic.h>

#include "arch/aarch64/a64.h"

#define PL011_DR 0x00u
#define PL011_FR 0x18u
#define PL011_FR_TXFF (1u << 5)
#define PL011_FR_RXFE (1u << 4) /* receive FIFO empty */
#define PL011_DR_ERR 0xf00u     /* overrun, break, parity, framing: the byte is not trusted */
#define A64_UART_SPINS 1000000u
#define A64_UART_LOCK_SPINS 2000000u
#define A64_MPIDR_AFF_MASK 0xff00ffffffull /* Aff3, Aff2, Aff1, Aff0 */

/* 0 free, else 1 + the holder's affinity (MPIDR: unique per core, readable before the
 * core's own state exists). Acquire/release order the UART accesses of successive
 * holders; if the bounded wait runs out the writer goes ahead unlocked (output may
 * interleave). The one datum cores share outside the rings: a console is one device. */
static atomic_ullong uart_lock;

static volatile uint32_t *uart_regs = (volatile uint32_t *)(uintptr_t)0x09000000u;

void a64_uart_init(uint64_t base)
{
	if (base)
		uart_regs = (volatile uint32_t *)(uintptr_t)base;
}

static bool uart_putc(char c)
{
	for (uint32_t i = 0; i < A64_UART_SPINS; i++) {
		if (!(uart_regs[PL011_FR / 4] & PL011_FR_TXFF)) {
			uart_regs[PL011_DR / 4] = (uint8_t)c;
			return true;
		}
	}
	return false;
}

/* Take the line lock, bounded; whether it was taken (released by uart_unlock). */
static bool uart_lock_take(void)
{
	if (!(A64_SYSREG_READ(sctlr_el1) & 1u))
		return false; /* MMU off: the boot core alone, and no exclusives on Device memory */
	unsigned long long me = (A64_SYSREG_READ(mpidr_el1) & A64_MPIDR_AFF_MASK) + 1u;
	/* Relaxed: only this core ever stores `me`, so seeing it means this core holds the
	 * lock in the context this exception stopped; it cannot be released meanwhile. */
	if (atomic_load_explicit(&uart_lock, memory_order_relaxed) == me)
		return false;
	for (uint32_t i = 0; i < A64_UART_LOCK_SPINS; i++) {
		unsigned long long expect = 0;
		if (atomic_compare_exchange_weak_explicit(&uart_lock, &expect, me, memory_order_acquire,
							  memory_order_relaxed))
			return true;
		__asm__ volatile("yield");
	}
	return false;
}

void a64_uart_write(const char *s, size_t len)
{
	uint64_t daif;
	__asm__ volatile("mrs %0, daif\n\tmsr daifset, #2" : "=r"(daif)::"memory");
	bool locked = uart_lock_take();
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\n' && !uart_putc('\r'))
			break;
		if (!uart_putc(s[i]))
			break;
	}
	if (locked)
		atomic_store_explicit(&uart_lock, 0, memory_order_release);
	__asm__ volatile("msr daif, %0" ::"r"(daif) : "memory");
}

int a64_uart_getc(void)
{
	if (uart_regs[PL011_FR / 4] & PL011_FR_RXFE)
		return -1;
	uint32_t dr = uart_regs[PL011_DR / 4];
	if (dr & PL011_DR_ERR)
		return -1; /* a damaged byte is dropped, as if never received */
	return (int)(dr & 0xffu);
}
