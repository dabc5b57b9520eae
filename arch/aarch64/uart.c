/* SPDX-License-Identifier: MIT
 *
 * The PL011 console: polled transmit (the log's sink) and polled receive (a64_uart_getc:
 * one byte if the receive FIFO holds one, never a wait; the diagnostics' operator prompt
 * through kernel/console_in). The base is QEMU virt's until
 * the device tree names the stdout UART. Writes never block forever: a transmit FIFO that
 * stays full for A64_UART_SPINS polls drops the rest of the write (a console must never
 * stop the kernel). A write runs with this core's IRQs masked, so the watchdog's tick
 * cannot cut a line in two.
 */
#include "arch/aarch64/a64.h"

#define PL011_DR 0x00u
#define PL011_FR 0x18u
#define PL011_FR_TXFF (1u << 5)
#define PL011_FR_RXFE (1u << 4) /* receive FIFO empty */
#define PL011_DR_ERR 0xf00u     /* overrun, break, parity, framing: the byte is not trusted */
#define A64_UART_SPINS 1000000u

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

void a64_uart_write(const char *s, size_t len)
{
	uint64_t daif;
	__asm__ volatile("mrs %0, daif\n\tmsr daifset, #2" : "=r"(daif)::"memory");
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\n' && !uart_putc('\r'))
			break;
		if (!uart_putc(s[i]))
			break;
	}
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
