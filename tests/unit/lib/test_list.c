/* SPDX-License-Identifier: MIT
 * lib/list and lib/bytes: intrusive list order, unlink idempotence, safe iteration;
 * byte-order helpers at odd addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/list.h"

struct item {
	int v;
	struct list link;
};

static void test_list_order_and_unlink(void **state)
{
	(void)state;
	struct list head, *it, *tmp;
	struct item items[5];
	int sum = 0, n = 0;
	list_init(&head);
	assert_true(list_empty(&head));
	for (int i = 0; i < 5; i++) {
		items[i].v = i;
		list_init(&items[i].link);
		list_push_back(&head, &items[i].link);
	}
	list_unlink(&items[2].link);
	list_unlink(&items[2].link); /* idempotent */
	assert_false(list_linked(&items[2].link));
	LIST_FOR_EACH_SAFE(it, tmp, &head) {
		struct item *x = LIST_ENTRY(it, struct item, link);
		sum = sum * 10 + x->v;
		if (x->v == 3)
			list_unlink(it);
		n++;
	}
	assert_int_equal(sum, 134);
	assert_int_equal(n, 4);
	assert_ptr_equal(list_pop_front(&head), &items[0].link);
	list_unlink(&items[4].link); /* move to front: unlink, then insert */
	list_push_front(&head, &items[4].link);
	assert_ptr_equal(LIST_ENTRY(head.next, struct item, link), &items[4]);
	assert_ptr_equal(LIST_ENTRY(head.prev, struct item, link), &items[1]);
}

static void test_bytes_any_alignment(void **state)
{
	(void)state;
	uint8_t b[16] = { 0 };
	st_be32(b + 1, 0x01020304);
	assert_int_equal(b[1], 1);
	assert_int_equal(ld_be32(b + 1), 0x01020304);
	assert_int_equal(ld_le32(b + 1), 0x04030201);
	st_le64(b + 3, 0x1122334455667788ull);
	assert_true(ld_le64(b + 3) == 0x1122334455667788ull);
	assert_true(ld_be64(b + 3) == 0x8877665544332211ull);
	st_be16(b + 7, 0xabcd);
	assert_int_equal(ld_le16(b + 7), 0xcdab);
}

static void test_err_names(void **state)
{
	(void)state;
	assert_string_equal(err_name(-E_NOMEM), "nomem");
	assert_string_equal(err_name(E_INVAL), "inval");
	assert_string_equal(err_name(-9999), "unknown");
	assert_string_equal(err_name(0), "ok");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_order_and_unlink),
		cmocka_unit_test(test_bytes_any_alignment),
		cmocka_unit_test(test_err_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
