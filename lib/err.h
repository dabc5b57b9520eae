/* SPDX-License-Identifier: MIT
 *
 * Error codes for the whole system. Functions return 0 on success or one of these
 * negated (-E_NOMEM). Parsers additionally use E_NEED_MORE for "not yet enough bytes".
 * Values are stable: they appear in logs and counters.
 */
#ifndef LIB_ERR_H
#define LIB_ERR_H

enum {
	E_OK = 0,
	E_INVAL = 1,     /* hostile or malformed input */
	E_NOMEM = 2,     /* exhaustion of a pool, heap or configured limit */
	E_AGAIN = 3,     /* transient: try later (queue full, no credit) */
	E_NEED_MORE = 4, /* parser: input truncated, wait for more bytes */
	E_RANGE = 5,     /* value outside its configured or encodable range */
	E_PROTO = 6,     /* protocol violation by the peer */
	E_NOENT = 7,     /* no such object */
	E_EXIST = 8,     /* object already exists */
	E_IO = 9,        /* device or storage error */
	E_PERM = 10,     /* denied by policy (ACL, admission) */
	E_CORRUPT = 11,  /* on-disk or in-memory integrity check failed */
	E_CLOSED = 12,   /* peer or engine closed / failed earlier */
	E_NOSYS = 13,    /* not supported by this build or device */
	E_TIMEOUT = 14,
	E_OVERFLOW = 15, /* output buffer too small */
	E__COUNT
};

/* Short stable name for an error code (positive or negative); never NULL. */
const char *err_name(int err);

#endif
