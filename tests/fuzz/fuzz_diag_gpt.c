/* SPDX-License-Identifier: MIT
 * Fuzz target for kernel/diag/gpt_free (the diagnostics' writable run of a disk). Input:
 * byte 0 picks the disk size (in 512-byte blocks: 1024 .. 131072, by 1024) and whether the
 * header's and the entry array's CRCs are recomputed (so the entry walk is reached past
 * the checksums); the next 512 bytes are the block at LBA 1, the rest the entry array
 * (zero-padded to 16 KiB, exactly that long a heap block for ASan). After every call: 0 or
 * -E_CORRUPT; on 0 the free run lies inside the header's usable range and overlaps no used
 * entry; on an error it is empty. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/diag/gpt_free.h"
#include "lib/bytes.h"
#include "lib/crc32.h"
#include "lib/err.h"
#include "store/wire_disk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 + 512)
		return 0;
	uint64_t blocks = ((uint64_t)(data[0] >> 1) + 1u) * 1024u;
	bool fix = data[0] & 1u;
	uint8_t *hdr = malloc(512), *ents = calloc(1, STORE_GPT_ARRAY_BYTES);
	if (!hdr || !ents)
		abort();
	memcpy(hdr, data + 1, 512);
	size_t rest = size - 513;
	memcpy(ents, data + 513, rest < STORE_GPT_ARRAY_BYTES ? rest : STORE_GPT_ARRAY_BYTES);
	if (fix) {
		uint32_t n = ld_le32(hdr + STORE_GPT_OFF_N_ENTRIES);
		if (n <= 128)
			st_le32(hdr + STORE_GPT_OFF_ENTRIES_CRC, crc32_ieee(0, ents, (size_t)n * STORE_GPT_ENTRY_BYTES));
		uint32_t hs = ld_le32(hdr + STORE_GPT_OFF_HDR_SIZE);
		if (hs >= 92 && hs <= 512) {
			st_le32(hdr + STORE_GPT_OFF_HDR_CRC, 0);
			st_le32(hdr + STORE_GPT_OFF_HDR_CRC, crc32_ieee(0, hdr, hs));
		}
	}
	struct diag_gpt_free f;
	const char *why = NULL;
	int rc = diag_gpt_free_find(hdr, 512, ents, STORE_GPT_ARRAY_BYTES, 512, blocks, &f, &why);
	if (!why)
		abort();
	if (rc == 0) {
		uint64_t fu = ld_le64(hdr + STORE_GPT_OFF_FIRST_USABLE), lu = ld_le64(hdr + STORE_GPT_OFF_LAST_USABLE);
		uint32_t n = ld_le32(hdr + STORE_GPT_OFF_N_ENTRIES);
		if (f.n_blocks) {
			uint64_t a = f.first_lba, b = f.first_lba + f.n_blocks - 1u;
			if (a < fu || b > lu || b < a || b >= blocks)
				abort();
			for (uint32_t i = 0; i < n; i++) {
				const uint8_t *e = ents + (size_t)i * STORE_GPT_ENTRY_BYTES;
				bool used = false;
				for (int k = 0; k < 16; k++)
					used |= e[k] != 0;
				if (used && !(ld_le64(e + 40) < a || ld_le64(e + 32) > b))
					abort(); /* the run overlaps a partition */
			}
		}
	} else if (rc != -E_CORRUPT || f.n_blocks != 0) {
		abort();
	}
	free(hdr);
	free(ents);
	return 0;
}
