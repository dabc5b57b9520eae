/* SPDX-License-Identifier: MIT
 *
 * Kernel command line lookup: "key=value key2 key3=v" separated by spaces. The line
 * comes from the boot loader (outside the image), so it is treated as external input:
 * bounded by its length, never trusted to be well formed. Development builds use it
 * for whitelisted overrides and test scenarios; production builds must not consult it.
 */
#ifndef KERNEL_CMDLINE_H
#define KERNEL_CMDLINE_H

#include "lib/compiler.h"

/* Find the first `key` (exact match) in line[0..len) (borrowed). On success copies its
 * value (empty for a bare key) NUL-terminated into val[0..val_len) and returns 0.
 * -E_NOENT: absent; -E_OVERFLOW: value does not fit (val is then ""); -E_INVAL: bad args. */
MUST_CHECK int cmdline_get(const char *line, size_t len, const char *key, char *val /* out */,
			   size_t val_len);

/* Parse s (NUL-terminated, borrowed) as "a.b.c.d": four decimal octets of 1..3 digits,
 * each 0..255, and nothing else. 0 with *ip in host order, or -E_INVAL. */
MUST_CHECK int cmdline_parse_ipv4(const char *s, uint32_t *ip /* out */);
/* Parse "a.b.c.d/len", len 0..32 in 1..2 digits, nothing else: 0 with *ip and *mask (host
 * order; len 0 gives mask 0), or -E_INVAL. */
MUST_CHECK int cmdline_parse_ipv4_prefix(const char *s, uint32_t *ip /* out */, uint32_t *mask /* out */);

#endif
