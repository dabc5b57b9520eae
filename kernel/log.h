/* SPDX-License-Identifier: MIT
 *
 * Kernel log: levelled lines with a timestamp, written to one sink (the serial console
 * in the image, a capture buffer in tests), with rate limiting per call site so a storm
 * of the same message cannot drown the console or stall a core.
 *
 * Contract: log_init() once at boot before any other core runs; LOG_*() may be called
 * from any core and from exception context (no allocation, bounded stack: one line
 * buffer of LOG_LINE_MAX). Lines longer than LOG_LINE_MAX are truncated, marked '~'.
 * The sink is not serialised here: with several cores the sink must be (later work).
 */
#ifndef KERNEL_LOG_H
#define KERNEL_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include "lib/compiler.h"
#include "lib/log_fields.h"

#define LOG_LINE_MAX 192

enum log_level {
	LOG_LEVEL_ERR = 0,
	LOG_LEVEL_WARN = 1,
	LOG_LEVEL_INFO = 2,
	LOG_LEVEL_DEBUG = 3,
};

/* A tap sees every line the sink was given (after the level and the rate limit): its
 * level, module, structured fields (NULL when none) and text without the console's
 * "[time] L mod: " prefix and newline (borrowed for the call). Called on the logging
 * core, possibly from exception context: it must not block, allocate or log. */
typedef void (*log_tap_fn)(enum log_level lvl, const char *mod, const struct log_fields *f,
			   const char *text, size_t len);

struct log_config {
	void (*write)(const char *s, size_t len); /* linked: the sink */
	uint64_t (*now_ns)(void);                 /* linked: monotonic clock, may be NULL */
	enum log_level level;                     /* lines above this level are dropped */
	uint32_t burst;                           /* lines per site per window (0: unlimited) */
	uint64_t window_ns;                       /* rate-limit window */
	log_tap_fn tap;                           /* may be NULL (see log_set_tap) */
};

/* One per call site (static, made by the LOG macros). All fields start at zero. */
struct log_site {
	_Atomic uint64_t window_start_ns;
	_Atomic uint32_t n_in_window;
	_Atomic uint32_t n_suppressed;
};

/* Copy the configuration (cfg is borrowed). Before log_init the log is silent. */
void log_init(const struct log_config *cfg);
/* The level lines are judged against from now on, on every core (the console's loglevel). */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* Install (or remove, NULL) the tap after log_init. Only while one core runs: the cores
 * started later read it without synchronisation (their start publishes it). */
void log_set_tap(log_tap_fn tap);

/* Format and write one line if the level and the site's budget allow it. */
void log_emit(struct log_site *site, enum log_level lvl, const char *mod, const char *fmt, ...)
	PRINTF_LIKE(4, 5);
void log_vemit(struct log_site *site, enum log_level lvl, const char *mod, const char *fmt,
	       va_list ap);
/* The same with structured fields for the tap (f borrowed, may be NULL). */
void log_emit_fields(struct log_site *site, enum log_level lvl, const char *mod,
		     const struct log_fields *f, const char *fmt, ...) PRINTF_LIKE(5, 6);

/* Write bytes straight to the sink: no level, no limit (panic and exception reports). */
void log_raw(const char *s, size_t len);
/* Formatted log_raw, bounded by LOG_LINE_MAX. */
void log_rawf(const char *fmt, ...) PRINTF_LIKE(1, 2);

/* Format one line "[sssss.uuuuuu] L mod: text\n" into buf (len >= 2); returns its length
 * (never more than len - 1; truncated lines end in "~\n"). Pure: exposed for tests. */
size_t log_format_line(char *buf, size_t len, uint64_t now_ns, enum log_level lvl, const char *mod,
		       const char *fmt, va_list ap);

/* Lines written and lines suppressed by rate limiting since boot (all sites). */
uint64_t log_count_written(void);
uint64_t log_count_suppressed(void);

#define LOG_AT(lvl, mod, ...)                                   \
	do {                                                    \
		static struct log_site log_site_;               \
		log_emit(&log_site_, (lvl), (mod), __VA_ARGS__); \
	} while (0)
#define LOG_FIELDS(lvl, mod, f, ...)                                   \
	do {                                                           \
		static struct log_site log_site_;                      \
		log_emit_fields(&log_site_, (lvl), (mod), (f), __VA_ARGS__); \
	} while (0)
#define LOG_ERR(mod, ...) LOG_AT(LOG_LEVEL_ERR, mod, __VA_ARGS__)
#define LOG_WARN(mod, ...) LOG_AT(LOG_LEVEL_WARN, mod, __VA_ARGS__)
#define LOG_INFO(mod, ...) LOG_AT(LOG_LEVEL_INFO, mod, __VA_ARGS__)
#define LOG_DEBUG(mod, ...) LOG_AT(LOG_LEVEL_DEBUG, mod, __VA_ARGS__)

#endif
