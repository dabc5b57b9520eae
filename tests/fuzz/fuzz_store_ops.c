/* SPDX-License-Identifier: MIT
 * Fuzz target: store/ops — the storage protocol's record decoder and the reassembly of
 * records cut into parts. The input is a sequence of messages [kind u8][len u8][bytes];
 * each goes through store_asm_feed (kinds REC, HEAD, MORE and others) and every completed
 * record through store_rec_decode. Oracles: nothing reads outside its buffer (ASan); a
 * decoded record re-encodes to exactly the bytes it came from; the reassembly never
 * reports more bytes than its buffer holds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "store/ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t abuf[1024], enc[1024];
	struct store_asm a = { abuf, sizeof abuf, 0, 0 };
	size_t i = 0;
	while (i + 2 <= size) {
		uint16_t kind = (uint16_t)(STORE_K_REC + data[i] % 4u);
		size_t len = data[i + 1];
		i += 2;
		if (len > size - i)
			len = size - i;
		const uint8_t *rec;
		uint32_t rec_len;
		int err = store_asm_feed(&a, kind, data + i, (uint32_t)len, STORE_K_REC, &rec, &rec_len);
		i += len;
		if (err)
			continue;
		if (rec_len > sizeof abuf && rec != data + i - len)
			abort();
		struct store_rec r;
		if (store_rec_decode(rec, rec_len, &r) != 0)
			continue;
		if (store_rec_size(&r) != rec_len || store_rec_encode(&r, enc, sizeof enc) != 0 ||
		    memcmp(enc, rec, rec_len) != 0)
			abort();
	}
	return 0;
}
