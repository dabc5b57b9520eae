/* SPDX-License-Identifier: MIT
 * Names of error codes for logs and counters. Pure table, no state. */
#include "lib/err.h"
#include "lib/compiler.h"

static const char *const err_names[E__COUNT] = {
	[E_OK] = "ok",           [E_INVAL] = "inval",     [E_NOMEM] = "nomem",
	[E_AGAIN] = "again",     [E_NEED_MORE] = "need-more", [E_RANGE] = "range",
	[E_PROTO] = "proto",     [E_NOENT] = "noent",     [E_EXIST] = "exist",
	[E_IO] = "io",           [E_PERM] = "perm",       [E_CORRUPT] = "corrupt",
	[E_CLOSED] = "closed",   [E_NOSYS] = "nosys",     [E_TIMEOUT] = "timeout",
	[E_OVERFLOW] = "overflow",
};

const char *err_name(int err)
{
	unsigned e = err < 0 ? (unsigned)-(long)err : (unsigned)err;
	if (e >= E__COUNT || !err_names[e])
		return "unknown";
	return err_names[e];
}
