/* SPDX-License-Identifier: MIT
 * Fuzz target: drives the cursor reader with an op stream taken from the input itself
 * (first bytes choose operations, the rest is the buffer). Checks invariant 1 of
 * lib/cursor.h after every step: pos never exceeds len, failures never move pos. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cursor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n_ops = size ? data[0] % 32 : 0;
	uint8_t out[16];
	if (size < 1 + n_ops)
		return 0;
	const uint8_t *ops = data + 1;
	struct cur c = cur_make(data + 1 + n_ops, size - 1 - n_ops);
	for (size_t i = 0; i < n_ops; i++) {
		size_t before = c.pos;
		bool was_ok = cur_ok(&c);
		switch (ops[i] % 12) {
		case 0: (void)cur_u8(&c); break;
		case 1: (void)cur_be16(&c); break;
		case 2: (void)cur_be24(&c); break;
		case 3: (void)cur_be32(&c); break;
		case 4: (void)cur_be64(&c); break;
		case 5: (void)cur_le32(&c); break;
		case 6: cur_bytes(&c, out, ops[i] % sizeof out); break;
		case 7: {
			size_t n = ops[i] >> 4;
			const uint8_t *p = cur_ptr(&c, n);
			if (p && n)
				out[0] ^= p[n - 1]; /* the last borrowed byte must be readable */
			break;
		}
		case 8: cur_skip(&c, (size_t)ops[i] << 20); break;
		case 9: {
			struct cur s = cur_sub(&c, ops[i] >> 3);
			while (cur_ok(&s) && cur_left(&s))
				(void)cur_u8(&s);
			break;
		}
		case 10: (void)cur_peek_u8(&c); break;
		default: (void)cur_le64(&c); break;
		}
		if (c.pos > c.len)
			abort();
		if (!cur_ok(&c) && c.pos != before)
			abort();
		if (!was_ok && cur_ok(&c))
			abort();
	}
	return 0;
}
