/* SPDX-License-Identifier: MIT
 *
 * Where the diagnostics may write on a disk: the largest run of blocks inside a valid GPT's
 * usable range that no partition entry covers. Only the primary GPT is trusted, and only
 * after store/gpt's checks (signature, CRCs, every entry inside the usable range, no
 * overlaps); anything else (no GPT, a damaged one, a backup-only one) gives no free run,
 * so nothing is ever written there. Disk bytes are hostile: decoded only through
 * store/gpt's bounds-checked decoders, every offset checked against the length given.
 * Portable, no allocation (tests/unit/kernel/test_diag_gpt.c).
 */
#ifndef KERNEL_DIAG_GPT_FREE_H
#define KERNEL_DIAG_GPT_FREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/compiler.h"

struct diag_gpt_free {
	uint32_t n_parts;          /* used entries */
	uint64_t first_lba, n_blocks; /* the largest uncovered run (n_blocks 0: none) */
};

/* hdr: the block read at LBA 1 (hdr_len bytes); ents: the bytes read at the header's
 * entry array LBA (ents_len bytes; the caller reads diag_gpt_entries_len(hdr...) bytes).
 * bs: the logical block size, disk_blocks the capacity. 0 with *out filled, -E_CORRUPT (no
 * valid primary GPT: *why a static reason) or -E_INVAL. Both buffers borrowed. */
MUST_CHECK int diag_gpt_free_find(const uint8_t *hdr, size_t hdr_len, const uint8_t *ents, size_t ents_len,
				  uint32_t bs, uint64_t disk_blocks, struct diag_gpt_free *out /* out */,
				  const char **why /* out */);
/* The primary header's entry array: its LBA and its length in bytes (0 when the header
 * does not decode; then the disk has no GPT the diagnostics trust). */
MUST_CHECK int diag_gpt_entries_at(const uint8_t *hdr, size_t hdr_len, uint32_t bs, uint64_t disk_blocks,
				   uint64_t *lba /* out */, size_t *len /* out */, const char **why /* out */);

#endif
