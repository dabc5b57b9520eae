/* SPDX-License-Identifier: MIT
 *
 * statsd line protocol over UDP: fills one datagram at a time with lines
 * "name:value|g" (gauge) and "name:value|c" (counter) separated by '\n'. Portable, no
 * allocation, no globals: the caller owns the datagram buffer and sends it.
 * Invariants: len <= cap always (no datagram exceeds the caller's budget); buf[0..len)
 * holds whole lines only, no trailing '\n', no NUL; a name holds only [A-Za-z0-9_.-].
 */
#ifndef OPS_STATSD_H
#define OPS_STATSD_H

#include "lib/compiler.h"

/* One datagram being filled, owned by one core. Read len/lines/n_dropped; write nothing. */
struct ops_statsd {
	char *buf;          /* linked: the datagram, cap bytes */
	size_t cap;         /* budget: path MTU minus IPv4 and UDP headers */
	size_t len;         /* bytes used, <= cap */
	uint32_t lines;     /* lines in buf */
	uint32_t n_dropped; /* lines never sendable, since begin: sum before begin */
	const char *prefix; /* linked: e.g. "urmqtt.broker1", may be "" or NULL */
};

/* Start an empty datagram in buf (linked, cap bytes) with the name prefix (linked). */
void ops_statsd_begin(struct ops_statsd *b, char *buf, size_t cap, const char *prefix);

/* Append the line "prefix.name:value|g" (no '.' when the prefix or name is empty; name
 * borrowed, bytes outside [A-Za-z0-9_.-] in prefix and name become '_'). Returns false
 * when the line does not fit this datagram but would fit an empty one: the caller sends
 * buf[0..len), begins again and retries. A line longer than cap, or one without any name,
 * can never be sent: it is dropped and counted in n_dropped, and the result is true
 * (retrying would not help). */
bool ops_statsd_gauge(struct ops_statsd *b, const char *name, uint64_t value);
/* The same for a counter line "prefix.name:delta|c". */
bool ops_statsd_count(struct ops_statsd *b, const char *name, uint64_t delta);
/* A counter line from a monotonically growing total: delta = total - *last, or 0 when
 * total < *last (the counter restarted). *last (borrowed, in and out) becomes total only
 * when the line was appended, so a delta refused for lack of room is sent on the retry. */
bool ops_statsd_count_total(struct ops_statsd *b, const char *name, uint64_t total,
			    uint64_t *last);

#endif
