/* SPDX-License-Identifier: MIT
 *
 * Syslog messages in the RFC 5424 format, for UDP transport (RFC 5426, one message per
 * datagram; sending is the caller's). Portable and stateless: no allocation, no globals,
 * the caller owns every buffer. Whatever the input, the output is one well-formed
 * SYSLOG-MSG of printable ASCII: header fields are forced to PRINTUSASCII within their
 * RFC lengths, structured-data values are escaped (RFC 5424 6.3.3), and untrusted bytes
 * (a peer's certificate identity, parts of the text) can never end a field or the frame.
 */
#ifndef OPS_SYSLOG_H
#define OPS_SYSLOG_H

#include "lib/compiler.h"

/* RFC 5424 6: field lengths. */
#define OPS_SYSLOG_HOSTNAME_MAX 255
#define OPS_SYSLOG_APP_MAX 48
#define OPS_SYSLOG_PROCID_MAX 128
#define OPS_SYSLOG_MSGID_MAX 32
/* Our bound on each structured-data value, in characters before escaping (a longer value
 * keeps its first MAX - 1 bytes and ends in '~'), so HEADER + STRUCTURED-DATA never
 * exceed OPS_SYSLOG_HEAD_MAX bytes (checked at compile time in ops/syslog.c). */
#define OPS_SYSLOG_SD_VALUE_MAX 128
#define OPS_SYSLOG_HEAD_MAX 1280
/* RFC 5426 3.2: every receiver takes 480 bytes, and should take 2048. */
#define OPS_SYSLOG_UDP_MIN 480

struct ops_syslog_msg {
	uint8_t facility;        /* 0..23; larger is clamped to 23 */
	uint8_t severity;        /* 0..7; larger is clamped to 7 */
	uint64_t unix_ns;        /* wall clock; 0: unknown, TIMESTAMP is "-" */
	const char *hostname;    /* borrowed; NULL or "": "-" */
	const char *app;         /* borrowed; NULL or "": "-" */
	uint32_t procid;         /* the core number, printed in decimal */
	const char *msgid;       /* borrowed; the log line's module; NULL or "": "-" */
	const char *sd_identity; /* borrowed, untrusted; NULL: no identity parameter */
	const char *sd_reason;   /* borrowed; NULL: no reason parameter */
	const char *sd_peer;     /* borrowed; the peer's address; NULL: no peer parameter */
	const char *text;        /* borrowed, untrusted; text_len bytes, no NUL needed */
	size_t text_len;
};

/* Format m into buf[0..cap) (borrowed): no NUL terminator, no trailing newline. Returns
 * the bytes written (<= cap), or 0 when cap cannot hold HEADER and STRUCTURED-DATA.
 * A body that does not fit is cut so the message fills cap exactly and ends in '~'; a
 * body without room for even " ~" is left out. Body bytes outside 32..126 become '?'.
 * Any context; writes nothing outside buf[0..cap). */
size_t ops_syslog_format(char *buf, size_t cap, const struct ops_syslog_msg *m);

/* Kernel log level (ERR 0, WARN 1, INFO 2, DEBUG 3) to a syslog severity (3, 4, 6, 7);
 * below 0 is treated as ERR, above 3 as DEBUG. */
uint8_t ops_syslog_severity(int log_level);

/* Configuration check for HOSTNAME (max OPS_SYSLOG_HOSTNAME_MAX) and APP-NAME
 * (OPS_SYSLOG_APP_MAX): true when s (borrowed) has 1..max bytes, all of 33..126. */
bool ops_syslog_name_ok(const char *s, size_t max);

#endif
