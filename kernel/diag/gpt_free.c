/* SPDX-License-Identifier: MIT
 *
 * The free run of a GPT disk (kernel/diag/gpt_free.h). store/gpt validates the header and
 * the entry array (CRCs, ranges, overlaps); this file then reads only the used entries'
 * first and last LBAs of that validated array, each read checked against ents_len, and
 * finds the largest gap of [first_usable, last_usable] between them (at most 128 entries:
 * quadratic and bounded).
 */
#include "kernel/diag/gpt_free.h"

#include "lib/err.h"
#include "store/gpt.h"
#include "store/wire_disk.h"

static uint64_t dgf_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int dgf_header(const uint8_t *hdr, size_t hdr_len, uint32_t bs, uint64_t disk_blocks, struct store_gpt *g,
		      const char **why)
{
	enum store_gpt_rej rej = STORE_GPT_OK;
	*why = "";
	if (!hdr || bs < 512 || hdr_len < bs) {
		*why = "bad arguments";
		return -E_INVAL;
	}
	if (store_gpt_header_decode(hdr, hdr_len, bs, disk_blocks, 1, g, &rej) != 0) {
		*why = store_gpt_rej_name(rej);
		return -E_CORRUPT;
	}
	return 0;
}

int diag_gpt_entries_at(const uint8_t *hdr, size_t hdr_len, uint32_t bs, uint64_t disk_blocks, uint64_t *lba,
			size_t *len, const char **why)
{
	struct store_gpt g;
	*lba = 0;
	*len = 0;
	int err = dgf_header(hdr, hdr_len, bs, disk_blocks, &g, why);
	if (err)
		return err;
	*lba = g.entries_lba;
	*len = (size_t)g.n_entries * STORE_GPT_ENTRY_BYTES;
	return 0;
}

int diag_gpt_free_find(const uint8_t *hdr, size_t hdr_len, const uint8_t *ents, size_t ents_len, uint32_t bs,
		       uint64_t disk_blocks, struct diag_gpt_free *out, const char **why)
{
	struct store_gpt g;
	enum store_gpt_rej rej = STORE_GPT_OK;
	*out = (struct diag_gpt_free){ 0 };
	int err = dgf_header(hdr, hdr_len, bs, disk_blocks, &g, why);
	if (err)
		return err;
	size_t need = (size_t)g.n_entries * STORE_GPT_ENTRY_BYTES;
	if (!ents || ents_len < need) {
		*why = "entry array short";
		return -E_INVAL;
	}
	if (store_gpt_entries_decode(ents, ents_len, &g, &rej) != 0) {
		*why = store_gpt_rej_name(rej);
		return -E_CORRUPT;
	}
	/* Used entries (non-zero type), validated by the decode above: inside the usable
	 * range, first <= last, pairwise disjoint. */
	uint64_t first[128], last[128];
	uint32_t n = 0;
	for (uint32_t i = 0; i < g.n_entries && i < 128u; i++) {
		const uint8_t *e = ents + (size_t)i * STORE_GPT_ENTRY_BYTES;
		bool used = false;
		for (uint32_t k = 0; k < 16u; k++)
			used |= e[k] != 0;
		if (!used)
			continue;
		first[n] = dgf_le64(e + 32);
		last[n] = dgf_le64(e + 40);
		if (first[n] < g.first_usable || last[n] > g.last_usable || first[n] > last[n]) {
			*why = "partition outside the usable range"; /* the decode refuses these too */
			return -E_CORRUPT;
		}
		n++;
	}
	out->n_parts = n;
	/* Candidate starts: the usable range's first block and the block after each
	 * partition; a candidate inside a partition is no start. */
	for (uint32_t c = 0; c <= n; c++) {
		uint64_t s;
		if (c == n)
			s = g.first_usable;
		else if (last[c] == g.last_usable)
			continue;
		else
			s = last[c] + 1u;
		bool covered = false;
		uint64_t end = g.last_usable; /* inclusive */
		for (uint32_t p = 0; p < n; p++) {
			if (s >= first[p] && s <= last[p])
				covered = true;
			else if (first[p] > s && first[p] - 1u < end)
				end = first[p] - 1u;
		}
		if (covered)
			continue;
		uint64_t blocks = end - s + 1u;
		if (blocks > out->n_blocks) {
			out->first_lba = s;
			out->n_blocks = blocks;
		}
	}
	return 0;
}
