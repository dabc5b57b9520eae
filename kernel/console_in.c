/* SPDX-License-Identifier: MIT
 *
 * The console line reader (kernel/console_in.h). A small state machine over polled bytes:
 * reading (kept < cap - 1), overlong (a character was refused; the line will be refused
 * when it ends, backspace no longer helps), ended. Invariants: kept <= cap - 1 at every
 * step; buf[0..kept) holds only printable ASCII; the result is written only on return.
 */
#include "kernel/console_in.h"

#include "lib/err.h"

#define CIN_BS 0x08
#define CIN_DEL 0x7f

static void cin_echo(const struct console_in_ops *ops, const char *s, size_t len)
{
	if (ops->write)
		ops->write(ops->ctx, s, len);
}

int console_in_line(const struct console_in_ops *ops, char *buf, size_t cap, uint64_t timeout_ms, size_t *len)
{
	if (!ops || !ops->getc || !ops->now_ms || !buf || cap == 0 || !len)
		return -E_INVAL;
	*len = 0;
	buf[0] = 0;
	size_t kept = 0;
	bool overlong = false;
	uint64_t t0 = ops->now_ms(ops->ctx);
	for (;;) {
		/* Checked before every byte: a flood of input cannot hold the reader past it. */
		if (ops->now_ms(ops->ctx) - t0 >= timeout_ms) {
			buf[0] = 0;
			return -E_TIMEOUT;
		}
		int c = ops->getc(ops->ctx);
		if (c < 0) {
			if (ops->relax)
				ops->relax(ops->ctx);
			continue;
		}
		if (c == '\r' || c == '\n') {
			cin_echo(ops, "\r\n", 2);
			if (overlong) {
				buf[0] = 0;
				return -E_RANGE;
			}
			buf[kept] = 0;
			*len = kept;
			return 0;
		}
		if (c == CIN_BS || c == CIN_DEL) {
			if (!overlong && kept > 0) {
				kept--;
				cin_echo(ops, "\b \b", 3);
			}
			continue;
		}
		if (c < 0x20 || c > 0x7e)
			continue; /* control bytes, escape sequences' ESC, anything non-ASCII */
		if (kept + 1 >= cap) {
			overlong = true; /* refused: not stored, not echoed */
			continue;
		}
		buf[kept++] = (char)c;
		char e = (char)c;
		cin_echo(ops, &e, 1);
	}
}
