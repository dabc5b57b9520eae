/* SPDX-License-Identifier: MIT
 *
 * 16550 UART console on COM1 (I/O port 0x3f8), polled, 115200 8N1. Owns the port; the
 * log and panic paths write through it. Never blocks forever: a missing or wedged UART
 * costs a bounded spin per character and output is dropped. Lines from several cores
 * are kept whole by a lock whose wait is bounded too: a core that faults while holding it
 * can only cost others a short delay, never a deadlock. A line is written with this
 * core's interrupts masked, so the watchdog's tick cannot cut it in two (it logs once the
 * line is out; a tick line in the middle of another once broke a test's log match); an
 * exception that logs on the core holding the lock writes at once instead of waiting for
 * itself (under emulation that wait alone outlasted the watchdog's hard limit).
 * Receive is polled too (x86_serial_getc, for the diagnostics' operator prompt through
 * kernel/console_in): one byte if the UART holds one, never a wait.
 */
#include <stdatomic.h>
#include "arch/x86_64/x86.h"

#define COM1 0x3f8
#define UART_THR 0
#define UART_IER 1
#define UART_FCR 2
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_DLL 0
#define UART_DLM 1
#define LSR_THRE 0x20
#define LSR_DR 0x01 /* a received byte is waiting */
#define UART_RBR 0
#define SPIN_MAX 100000
#define LOCK_SPIN_MAX 2000000u

/* 0 free, else 1 + the holder's core index. Acquire/release order the UART accesses of
 * successive holders; if the bounded wait runs out the writer goes ahead unlocked
 * (output may interleave). */
static atomic_uint serial_lock;

/* 1 + the calling core's index: until the boot core is bound (x86_cores[0].self set,
 * before any other core starts) only the boot core runs, and every core binds itself
 * before it logs. */
static unsigned serial_me(void)
{
	return x86_cores[0].self ? x86_core_self()->index + 1u : 1u;
}

void x86_serial_init(void)
{
	x86_outb(COM1 + UART_IER, 0x00);
	x86_outb(COM1 + UART_LCR, 0x80); /* DLAB */
	x86_outb(COM1 + UART_DLL, 0x01); /* 115200 */
	x86_outb(COM1 + UART_DLM, 0x00);
	x86_outb(COM1 + UART_LCR, 0x03); /* 8N1 */
	x86_outb(COM1 + UART_FCR, 0xc7); /* FIFO on, cleared, 14-byte trigger */
	x86_outb(COM1 + UART_MCR, 0x03); /* DTR | RTS, interrupts off */
}

static void x86_serial_putc(char c)
{
	for (uint32_t i = 0; i < SPIN_MAX; i++) {
		if (x86_inb(COM1 + UART_LSR) & LSR_THRE)
			break;
		x86_pause();
	}
	x86_outb(COM1 + UART_THR, (uint8_t)c);
}

void x86_serial_write(const char *s, size_t len)
{
	uint64_t rflags;
	__asm__ volatile("pushfq; popq %0; cli" : "=r"(rflags)::"memory");
	bool locked = false;
	unsigned me = serial_me();
	/* Relaxed: only this core ever stores `me`, so seeing it means this core holds the
	 * lock in the context this interrupt stopped; it cannot be released meanwhile. */
	uint32_t spins = atomic_load_explicit(&serial_lock, memory_order_relaxed) == me ? 0 : LOCK_SPIN_MAX;
	for (uint32_t i = 0; i < spins; i++) {
		unsigned expect = 0;
		if (atomic_compare_exchange_weak_explicit(&serial_lock, &expect, me, memory_order_acquire,
							  memory_order_relaxed)) {
			locked = true;
			break;
		}
		x86_pause();
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
			x86_serial_putc('\r');
		x86_serial_putc(s[i]);
	}
	if (locked)
		atomic_store_explicit(&serial_lock, 0, memory_order_release);
	if (rflags & (1u << 9)) /* IF: interrupts were on */
		__asm__ volatile("sti" ::: "memory");
}

int x86_serial_getc(void)
{
	if (!(x86_inb(COM1 + UART_LSR) & LSR_DR))
		return -1;
	return x86_inb(COM1 + UART_RBR);
}
