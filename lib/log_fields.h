/* SPDX-License-Identifier: MIT
 *
 * Structured fields a log line may carry beside its text. The console prints only the
 * text; syslog (ops/syslog) sends the fields as structured data, so a collector can
 * select refusals by reason or by identity without parsing prose. Every pointer may be
 * NULL; the strings are NUL-terminated and borrowed for the call. `identity` holds bytes
 * a client's certificate carried: consumers escape it, never trust it.
 */
#ifndef LIB_LOG_FIELDS_H
#define LIB_LOG_FIELDS_H

struct log_fields {
	const char *reason;   /* one word naming why something was refused ("acl", "revoked", ...) */
	const char *identity; /* the peer's identity from its certificate */
	const char *peer;     /* the peer's address, dotted quad */
};

#endif
