/* SPDX-License-Identifier: MIT
 *
 * Kernel log (kernel/log.h): formatting, levels and per-site rate limiting. Portable:
 * compiled for the host and tested there with a capture sink. Never allocates, never
 * blocks, never calls back into anything but the configured sink and clock.
 *
 * Design note (rate limiting):
 *  1. A site opens a window at its first line; up to `burst` lines are written in it.
 *  2. Further lines in the same window only count n_suppressed.
 *  3. The first line of a later window opens a new window and, if lines were suppressed,
 *     is followed by one "(N suppressed)" note, after which n_suppressed restarts at 0.
 *  Two cores racing on one site may write a line or two more than `burst`: accepted, the
 *  limit exists to bound floods, not to count exactly.
 */
#include "kernel/log.h"
#include "lib/fmt.h"
#include "lib/mem.h"

static struct log_config log_cfg;
static bool log_ready;
/* The level in force (log_set_level may change it while every core logs). Relaxed: a line
 * judged against the old level a moment longer is harmless, and nothing else is published
 * through it. */
static _Atomic int log_level_now;
/* Statistics only: relaxed is enough, nothing is ordered against them. */
static _Atomic uint64_t log_n_written, log_n_suppressed;

void log_init(const struct log_config *cfg)
{
	log_cfg = *cfg;
	log_ready = cfg->write != NULL;
	atomic_store_explicit(&log_level_now, (int)cfg->level, memory_order_relaxed);
}

void log_set_level(enum log_level lvl)
{
	atomic_store_explicit(&log_level_now, (int)lvl, memory_order_relaxed);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&log_level_now, memory_order_relaxed);
}

void log_set_tap(log_tap_fn tap)
{
	log_cfg.tap = tap;
}

static const char log_level_char[] = { 'E', 'W', 'I', 'D' };

/* log_format_line, and where the text begins (after the prefix) in *text_off. */
static size_t log_format(char *buf, size_t len, uint64_t now_ns, enum log_level lvl, const char *mod,
			 const char *fmt, va_list ap, size_t *text_off)
{
	*text_off = 0;
	if (len < 2)
		return 0;
	uint64_t sec = now_ns / 1000000000u;
	uint32_t usec = (uint32_t)((now_ns % 1000000000u) / 1000u);
	char c = (unsigned)lvl < sizeof log_level_char ? log_level_char[lvl] : '?';
	int n = fmt_snprintf(buf, len, "[%5llu.%06u] %c %s: ", (unsigned long long)sec, usec, c,
			     mod ? mod : "-");
	size_t pos = n < 0 ? 0 : MIN((size_t)n, len - 1);
	*text_off = pos;
	if (pos < len - 1) {
		int m = fmt_vsnprintf(buf + pos, len - pos, fmt, ap);
		pos += m < 0 ? 0 : (size_t)m;
	}
	if (pos > len - 2) { /* truncated: keep room for "~\n" */
		buf[len - 3] = '~';
		pos = len - 2;
		*text_off = MIN(*text_off, pos);
	}
	buf[pos++] = '\n';
	buf[pos] = '\0';
	return pos;
}

size_t log_format_line(char *buf, size_t len, uint64_t now_ns, enum log_level lvl, const char *mod,
		       const char *fmt, va_list ap)
{
	size_t text_off;
	return log_format(buf, len, now_ns, lvl, mod, fmt, ap, &text_off);
}

/* Rate-limit decision for one line; returns the number of lines suppressed before it
 * (to report) via *note, or false if this line must be dropped. */
static bool log_site_admit(struct log_site *site, uint64_t now, uint32_t *note)
{
	*note = 0;
	if (log_cfg.burst == 0)
		return true;
	/* Relaxed throughout: the site state is a heuristic (design note, last paragraph);
	 * no other memory is published through it. */
	uint64_t start = atomic_load_explicit(&site->window_start_ns, memory_order_relaxed);
	uint32_t n = atomic_load_explicit(&site->n_in_window, memory_order_relaxed);
	if (n == 0 || now - start >= log_cfg.window_ns) {
		atomic_store_explicit(&site->window_start_ns, now, memory_order_relaxed);
		atomic_store_explicit(&site->n_in_window, 1, memory_order_relaxed);
		*note = atomic_exchange_explicit(&site->n_suppressed, 0, memory_order_relaxed);
		return true;
	}
	if (n < log_cfg.burst) {
		atomic_fetch_add_explicit(&site->n_in_window, 1, memory_order_relaxed);
		return true;
	}
	atomic_fetch_add_explicit(&site->n_suppressed, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&log_n_suppressed, 1, memory_order_relaxed);
	return false;
}

static void log_vemit_fields(struct log_site *site, enum log_level lvl, const char *mod,
			     const struct log_fields *f, const char *fmt, va_list ap)
{
	if (!log_ready || (int)lvl > atomic_load_explicit(&log_level_now, memory_order_relaxed))
		return;
	uint64_t now = log_cfg.now_ns ? log_cfg.now_ns() : 0;
	uint32_t suppressed = 0;
	if (site && !log_site_admit(site, now, &suppressed))
		return;
	char line[LOG_LINE_MAX];
	size_t text_off;
	size_t n = log_format(line, sizeof line, now, lvl, mod, fmt, ap, &text_off);
	log_cfg.write(line, n);
	atomic_fetch_add_explicit(&log_n_written, 1, memory_order_relaxed);
	if (log_cfg.tap && n > text_off)
		log_cfg.tap(lvl, mod, f, line + text_off, n - 1 - text_off); /* without the newline */
	if (suppressed) {
		int m = fmt_snprintf(line, sizeof line, "    (%u similar lines suppressed)\n",
				     (unsigned)suppressed);
		if (m > 0)
			log_cfg.write(line, MIN((size_t)m, sizeof line - 1));
	}
}

void log_vemit(struct log_site *site, enum log_level lvl, const char *mod, const char *fmt,
	       va_list ap)
{
	log_vemit_fields(site, lvl, mod, NULL, fmt, ap);
}

void log_emit(struct log_site *site, enum log_level lvl, const char *mod, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vemit_fields(site, lvl, mod, NULL, fmt, ap);
	va_end(ap);
}

void log_emit_fields(struct log_site *site, enum log_level lvl, const char *mod,
		     const struct log_fields *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vemit_fields(site, lvl, mod, f, fmt, ap);
	va_end(ap);
}

void log_raw(const char *s, size_t len)
{
	if (log_ready)
		log_cfg.write(s, len);
}

void log_rawf(const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = fmt_vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n > 0)
		log_raw(line, MIN((size_t)n, sizeof line - 1));
}

uint64_t log_count_written(void)
{
	return atomic_load_explicit(&log_n_written, memory_order_relaxed);
}

uint64_t log_count_suppressed(void)
{
	return atomic_load_explicit(&log_n_suppressed, memory_order_relaxed);
}
