/* SPDX-License-Identifier: MIT
 *
 * A bounded FIFO of variable-size messages in one caller-owned byte ring: the backlog a
 * core keeps towards another core while the mesh has no credit (dp/shard, the storage
 * link, the storage core's answers). Each entry is [kind u16][0 u16][len u32][len bytes],
 * oldest first; the caller decides how full it may get (callers keep several limits on one
 * queue: data, control, a share for what may be declined). Nothing here allocates or
 * blocks. Single-threaded (the owning core).
 *
 * Invariants (msgq_check): 1. used <= cap and head < cap (0 when empty); 2. used == 0 iff
 * n == 0; 3. the entries from head, walked by their headers, cover exactly used bytes.
 */
#ifndef LIB_MSGQ_H
#define LIB_MSGQ_H

#include "lib/compiler.h"

#define MSGQ_HDR 8u

struct msgq {
	uint8_t *buf; /* linked: cap bytes */
	uint32_t cap, head, used, n;
};

void msgq_init(struct msgq *q, uint8_t *buf, uint32_t cap);
/* Bytes an entry of len bytes takes. */
static inline uint32_t msgq_entry_size(uint32_t len)
{
	return MSGQ_HDR + len;
}
static inline bool msgq_empty(const struct msgq *q)
{
	return q->n == 0;
}
/* Append one message made of two pieces (b may be NULL with bn 0); the caller checked
 * the room: used + msgq_entry_size(an + bn) <= cap (else -E_NOMEM, nothing appended). */
MUST_CHECK int msgq_put(struct msgq *q, uint16_t kind, const void *a, uint32_t an, const void *b,
			uint32_t bn);
/* The oldest message: its kind and length, and its bytes copied to out (out_len >= len,
 * else -E_OVERFLOW). -E_AGAIN when empty. Does not remove it. */
MUST_CHECK int msgq_front(const struct msgq *q, uint16_t *kind /* out */, void *out, uint32_t out_len,
			  uint32_t *len /* out */);
/* Remove the oldest message (after msgq_front succeeded). */
void msgq_pop(struct msgq *q);
MUST_CHECK int msgq_check(const struct msgq *q);

#endif
