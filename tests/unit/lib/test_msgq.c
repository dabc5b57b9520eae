/* SPDX-License-Identifier: MIT
 * lib/msgq: order, wrap-around of headers and bodies, the room rule, two-piece puts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/err.h"
#include "lib/msgq.h"

static void t_order_and_wrap(void **state)
{
	(void)state;
	uint8_t buf[100];
	struct msgq q;
	msgq_init(&q, buf, sizeof buf);
	uint8_t out[64];
	uint32_t len;
	uint16_t kind;
	assert_int_equal(msgq_front(&q, &kind, out, sizeof out, &len), -E_AGAIN);
	/* 300 messages of 1..30 bytes through a 100-byte ring: every wrap position */
	uint32_t next_in = 0, next_out = 0;
	for (int round = 0; round < 300; round++) {
		uint8_t m[30];
		uint32_t n = (uint32_t)(round % 30) + 1u;
		memset(m, (int)next_in, n);
		while (q.used + msgq_entry_size(n) > q.cap) { /* drain until it fits */
			assert_int_equal(msgq_front(&q, &kind, out, sizeof out, &len), 0);
			assert_int_equal(kind, (uint16_t)next_out);
			for (uint32_t i = 0; i < len; i++)
				assert_int_equal(out[i], (uint8_t)next_out);
			msgq_pop(&q);
			next_out++;
		}
		assert_int_equal(msgq_put(&q, (uint16_t)next_in, m, n / 2, m + n / 2, n - n / 2), 0);
		next_in++;
		assert_int_equal(msgq_check(&q), 0);
	}
	while (!msgq_empty(&q)) {
		assert_int_equal(msgq_front(&q, &kind, out, sizeof out, &len), 0);
		assert_int_equal(kind, (uint16_t)next_out++);
		msgq_pop(&q);
	}
	assert_int_equal(next_out, next_in);
	assert_int_equal(q.used, 0);
	assert_int_equal(q.head, 0);
}

static void t_room_and_small_output(void **state)
{
	(void)state;
	uint8_t buf[32];
	struct msgq q;
	msgq_init(&q, buf, sizeof buf);
	uint8_t m[40] = { 0 };
	assert_int_equal(msgq_put(&q, 1, m, 25, NULL, 0), -E_NOMEM); /* 33 > 32 */
	assert_int_equal(msgq_put(&q, 1, m, 24, NULL, 0), 0);
	assert_int_equal(msgq_put(&q, 2, NULL, 0, NULL, 0), -E_NOMEM);
	uint8_t out[8];
	uint32_t len;
	uint16_t kind;
	assert_int_equal(msgq_front(&q, &kind, out, sizeof out, &len), -E_OVERFLOW);
	assert_int_equal(len, 24);
	assert_int_equal(q.n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_order_and_wrap),
		cmocka_unit_test(t_room_and_small_output),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
