/* SPDX-License-Identifier: MIT
 *
 * A bounded set of short byte strings (certificate identities, 1..max_len bytes, any byte
 * values) for one core: "is this identity allowed" on every TLS handshake, and a sorted
 * listing page by page for the operator. All memory is one caller-owned region sized by
 * nameset_mem_size(); nothing allocates after init, nothing is shared: each core builds its
 * own copy. Core-local, not interrupt-safe, no locking.
 *
 * Layout and invariants: lib/nameset.c's head.
 */
#ifndef LIB_NAMESET_H
#define LIB_NAMESET_H

#include "lib/compiler.h"

#define NAMESET_MAX_NAMES (1u << 22)
#define NAMESET_MAX_LEN 255u
#define NAMESET_PAGE_MAX 64u

struct nameset; /* opaque, lives at the start of the caller's region */

struct nameset_config {
	uint32_t max_names;  /* 1..NAMESET_MAX_NAMES */
	uint32_t name_bytes; /* arena bytes, one length byte per name included: a name of len
				bytes takes 1 + len; >= max_len + 1 */
	uint16_t max_len;    /* longest name, 1..NAMESET_MAX_LEN */
};

struct nameset_stats {
	uint32_t n_names;
	uint32_t n_slots;         /* hash index size (power of two) */
	uint32_t arena_used;      /* bytes in use, dead entries included */
	uint32_t arena_dead;      /* bytes of removed names not yet reclaimed */
	uint32_t arena_cap;       /* name_bytes */
	uint64_t n_compactions;   /* arena compactions done by nameset_add */
	uint64_t n_refused_range; /* adds refused: -E_RANGE (len 0, > max_len) */
	uint64_t n_refused_full;  /* adds refused: -E_NOMEM, max_names reached */
	uint64_t n_refused_bytes; /* adds refused: -E_NOMEM, arena full even after compaction */
};

/* Bytes of the region for cfg (borrowed), or 0 when cfg is rejected. */
size_t nameset_mem_size(const struct nameset_config *cfg);

/* Build an empty set in mem (linked: 8-byte aligned, len >= nameset_mem_size(cfg), need
 * not be zeroed; the set lives inside it). cfg and key (16 bytes of SipHash key, secret
 * per boot) are copied. *out (out) points into mem. 0 or -E_INVAL. */
MUST_CHECK int nameset_init(struct nameset **out /* out */, void *mem, size_t len,
			    const struct nameset_config *cfg, const uint8_t key[16]);

/* Add a copy of name (borrowed, len bytes). 0, -E_EXIST, -E_RANGE (len 0 or > max_len),
 * -E_INVAL (name NULL), -E_NOMEM (max_names reached, or the arena cannot hold it even after
 * compacting: nothing changed). May compact the arena, O(names), which invalidates names
 * lent by nameset_page. */
MUST_CHECK int nameset_add(struct nameset *s, const char *name, size_t len);

/* Remove name (borrowed). 0 or -E_NOENT. O(1) expected: marks its arena bytes dead. */
MUST_CHECK int nameset_remove(struct nameset *s, const char *name, size_t len);

/* Whether name (borrowed) is in the set. false for any out-of-range or NULL name. */
bool nameset_has(const struct nameset *s, const char *name, size_t len);

uint32_t nameset_count(const struct nameset *s);

/* In byte-lexicographic order (a prefix before its extensions), call fn for up to max
 * (clamped to 1..NAMESET_PAGE_MAX; 0 gives nothing) names strictly greater than after
 * (borrowed; after_len 0: from the first; need not be in the set, any length). One pass over
 * the arena. Returns how many fn was given. Names are lent to fn for its call only; fn must
 * not change s. ctx is passed through. */
uint32_t nameset_page(const struct nameset *s, const char *after, size_t after_len, uint32_t max,
		      void (*fn)(void *ctx, const char *name, size_t len), void *ctx);

void nameset_stats(const struct nameset *s, struct nameset_stats *out /* out */);

/* Walk everything and check the invariants of lib/nameset.c: 0 or -E_CORRUPT. O(names). */
MUST_CHECK int nameset_check(const struct nameset *s);

#endif
