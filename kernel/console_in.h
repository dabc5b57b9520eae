/* SPDX-License-Identifier: MIT
 *
 * Console input: one line read from the operator's serial console by polling, into the
 * caller's bounded buffer, with echo and backspace. Everything typed is external input:
 * only printable ASCII (0x20..0x7e) is kept and echoed; backspace (0x08) and DEL (0x7f)
 * remove the last kept character; CR or LF ends the line; any other byte is ignored. A
 * line longer than the buffer is refused as a whole (nothing of it is returned). The wait
 * is bounded by a timeout on the caller's clock. Portable, no allocation, no global state
 * (host-tested: tests/unit/kernel/test_console_in.c; fuzzed: tests/fuzz/fuzz_console_in.c).
 * Called from one core with nothing else reading the console.
 */
#ifndef KERNEL_CONSOLE_IN_H
#define KERNEL_CONSOLE_IN_H

#include <stddef.h>
#include <stdint.h>

#include "lib/compiler.h"

struct console_in_ops {
	/* One received byte (0..255), or -1 when none is waiting. Never blocks. */
	int (*getc)(void *ctx);
	/* Echo len bytes back to the console (may drop them; never blocks forever). */
	void (*write)(void *ctx, const char *s, size_t len);
	/* Monotonic milliseconds. */
	uint64_t (*now_ms)(void *ctx);
	/* Called between polls that found nothing (a pause instruction; may be NULL). */
	void (*relax)(void *ctx);
	void *ctx; /* linked */
};

/* Read one line into buf[0..cap) (borrowed; cap >= 1), NUL-terminated, its length in *len.
 * 0: a line ended by CR or LF (possibly empty); -E_TIMEOUT: timeout_ms passed before the
 * line ended (buf holds "" and *len 0; what was typed is discarded); -E_RANGE: the line
 * ended but held more than cap - 1 characters (buf "" and *len 0); -E_INVAL: bad
 * arguments. The echo of an accepted CR/LF is "\r\n". */
MUST_CHECK int console_in_line(const struct console_in_ops *ops, char *buf, size_t cap, uint64_t timeout_ms,
			       size_t *len /* out */);

#endif
