/* SPDX-License-Identifier: MIT
 *
 * Panic and assertions for bugs (never for hostile input). kpanic() writes its message
 * straight to the log sink (no level, no rate limit, no allocation), then calls the
 * platform's stop function, which exits QEMU (test builds) or waits and resets
 * (production). Callers must not put addresses in panic messages of production code
 * paths; ASSERT prints the expression and file:line only.
 *
 * Contract: callable from any context, including exception handlers; a nested panic (a
 * fault while panicking) skips the message and stops at once.
 */
#ifndef KERNEL_PANIC_H
#define KERNEL_PANIC_H

#include "lib/compiler.h"

struct panic_ops {
	/* linked: stop the machine with a platform exit code; must not return, but
	 * kpanic() halts in a loop if it does (tests longjmp out of it instead). */
	void (*stop)(int code);
};

/* Exit codes passed to stop() for the generic cases; arch code may use others. */
enum {
	PANIC_CODE_GENERIC = 0x20,
	PANIC_CODE_ASSERT = 0x21,
};

void panic_init(const struct panic_ops *ops /* borrowed, copied */);
NORETURN void kpanic(int code, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* For tests: forget that a panic happened (nested-panic detection). */
void panic_reset_for_test(void);

#define PANIC(...) kpanic(PANIC_CODE_GENERIC, __VA_ARGS__)
#define ASSERT(c)                                                                       \
	do {                                                                            \
		if (UNLIKELY(!(c)))                                                     \
			kpanic(PANIC_CODE_ASSERT, "assertion failed: %s (%s:%d)", #c, \
			       __FILE__, __LINE__);                                     \
	} while (0)

#endif
