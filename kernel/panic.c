/* SPDX-License-Identifier: MIT
 *
 * kpanic (kernel/panic.h). Portable: the platform supplies the stop function. Owns the
 * "already panicking" flag; never allocates, never takes a lock, never returns.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include "kernel/panic.h"
#include "kernel/log.h"
#include "lib/fmt.h"

static struct panic_ops panic_ops;
/* Set by the first panic on any core. Relaxed is enough: it only decides whether this
 * core prints; the stop path does not read data published by another core. */
static atomic_bool panic_active;

void panic_init(const struct panic_ops *ops)
{
	panic_ops = *ops;
}

void panic_reset_for_test(void)
{
	atomic_store_explicit(&panic_active, false, memory_order_relaxed);
}

NORETURN void kpanic(int code, const char *fmt, ...)
{
	if (!atomic_exchange_explicit(&panic_active, true, memory_order_relaxed)) {
		char line[LOG_LINE_MAX];
		va_list ap;
		va_start(ap, fmt);
		int n = fmt_vsnprintf(line, sizeof line, fmt, ap);
		va_end(ap);
		log_raw("\n*** PANIC: ", 12);
		if (n > 0)
			log_raw(line, MIN((size_t)n, sizeof line - 1));
		log_raw("\n", 1);
	} else {
		log_raw("\n*** nested panic\n", 18);
	}
	if (panic_ops.stop)
		panic_ops.stop(code);
	for (;;)
		__asm__ volatile("" ::: "memory");
}
