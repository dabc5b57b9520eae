/* SPDX-License-Identifier: MIT
 * store/ops: every record kind round-trips; every rule of store_rec_decode rejects the
 * record that breaks it; records cut into parts reassemble, and a part that does not fit
 * is refused without reading or writing past anything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/err.h"
#include "store/ops.h"

static const uint8_t ID[] = "dev-1", TOPIC[] = "devices/dev-1/cmd/a", PAY[] = "payload";

/* A valid record of each kind. */
static struct store_rec valid(uint8_t kind)
{
	struct store_rec r = { .kind = kind, .skey = 11, .mkey = 22, .seq = 33, .pid = 7, .qos = 1 };
	switch (kind) {
	case STORE_REC_SESS_PUT:
	case STORE_REC_SEEN:
	case STORE_REC_REVOKED:
	case STORE_REC_REV_PUT:
	case STORE_REC_REV_DEL:
	case STORE_REC_ALLOW_PUT:
	case STORE_REC_ALLOW_DEL:
	case STORE_REC_ALLOWED:
		r.id = ID;
		r.id_len = 5;
		break;
	case STORE_REC_SUB_PUT:
	case STORE_REC_SUB_DEL:
	case STORE_REC_RET_DEL:
		r.topic = TOPIC;
		r.topic_len = sizeof TOPIC - 1;
		break;
	case STORE_REC_TLOG:
		r.id = ID;
		r.id_len = 5;
		r.topic = TOPIC;
		r.topic_len = sizeof TOPIC - 1;
		r.payload = PAY;
		r.payload_len = sizeof PAY - 1;
		break;
	case STORE_REC_MSG_PUT:
	case STORE_REC_RET_PUT:
	case STORE_REC_DLV_PUT:
		r.topic = TOPIC;
		r.topic_len = sizeof TOPIC - 1;
		r.payload = PAY;
		r.payload_len = sizeof PAY - 1;
		break;
	default:
		break;
	}
	return r;
}

static void t_roundtrip_every_kind(void **state)
{
	(void)state;
	for (uint8_t k = STORE_REC_SESS_PUT; k < STORE_REC__END; k++) {
		struct store_rec r = valid(k), d;
		uint8_t buf[256];
		assert_int_equal(store_rec_encode(&r, buf, sizeof buf), 0);
		size_t n = store_rec_size(&r);
		assert_int_equal(store_rec_decode(buf, n, &d), 0);
		assert_int_equal(d.kind, k);
		assert_int_equal(d.skey, r.skey);
		assert_int_equal(d.mkey, r.mkey);
		assert_int_equal(d.seq, r.seq);
		assert_int_equal(d.pid, r.pid);
		assert_int_equal(d.id_len, r.id_len);
		assert_int_equal(d.topic_len, r.topic_len);
		assert_int_equal(d.payload_len, r.payload_len);
		if (r.topic_len)
			assert_memory_equal(d.topic, TOPIC, r.topic_len);
		/* one byte short, one byte long: refused */
		assert_int_equal(store_rec_decode(buf, n - 1, &d), -E_INVAL);
		buf[n] = 0;
		assert_int_equal(store_rec_decode(buf, n + 1, &d), -E_INVAL);
		assert_int_equal(store_rec_encode(&r, buf, n - 1), -E_OVERFLOW);
	}
}

/* Each broken rule, encoded by hand (encode refuses them too). */
static void t_rules(void **state)
{
	(void)state;
	struct {
		uint8_t kind;
		size_t off; /* header byte to set */
		uint8_t val;
	} cases[] = {
		{ STORE_REC_SESS_PUT, 0, 0 },        /* kind 0 */
		{ STORE_REC_SESS_PUT, 0, STORE_REC__END },
		{ STORE_REC_SESS_PUT, 1, 2 },        /* id_kind */
		{ STORE_REC_SUB_PUT, 2, 3 },         /* qos */
		{ STORE_REC_DLV_PUT, 3, 2 },         /* retain */
		{ STORE_REC_DLV_PUT, 4, 3 },         /* state */
		{ STORE_REC_MSG_PUT, 5, 3 },         /* msg_qos */
		{ STORE_REC_SESS_PUT, 8, 0 },        /* skey 0 (low byte; the rest 0 too) */
		{ STORE_REC_MSG_PUT, 16, 0 },        /* mkey 0 */
		{ STORE_REC_DLV_SENT, 6, 0 },        /* pid 0 */
		{ STORE_REC_DLV_PUT, 2, 0 },         /* delivery QoS 0 */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct store_rec r = valid(cases[i].kind), d;
		uint8_t buf[256];
		assert_int_equal(store_rec_encode(&r, buf, sizeof buf), 0);
		buf[cases[i].off] = cases[i].val;
		if (cases[i].off == 6)
			buf[7] = 0;
		assert_int_equal(store_rec_decode(buf, store_rec_size(&r), &d), -E_INVAL);
	}
	/* missing strings */
	struct store_rec r = valid(STORE_REC_SESS_PUT);
	r.id_len = 0;
	uint8_t buf[256];
	assert_int_equal(store_rec_encode(&r, buf, sizeof buf), -E_INVAL);
	r = valid(STORE_REC_RET_PUT);
	r.payload_len = 0; /* a retained message is never empty (that is a RET_DEL) */
	assert_int_equal(store_rec_encode(&r, buf, sizeof buf), -E_INVAL);
	r = valid(STORE_REC_DLV_PUT);
	r.state = STORE_DLV_RELEASED; /* released needs QoS 2 */
	assert_int_equal(store_rec_encode(&r, buf, sizeof buf), -E_INVAL);
	r.qos = 2;
	assert_int_equal(store_rec_encode(&r, buf, sizeof buf), 0);
	r.id_len = 256;
	r.id = buf;
	assert_int_equal(store_rec_encode(&r, buf, sizeof buf), -E_INVAL);
}

static void t_parts(void **state)
{
	(void)state;
	uint8_t abuf[300];
	struct store_asm a = { abuf, sizeof abuf, 0, 0 };
	uint8_t rec[200];
	for (size_t i = 0; i < sizeof rec; i++)
		rec[i] = (uint8_t)i;
	uint8_t head[4 + 50];
	head[0] = 200; head[1] = 0; head[2] = 0; head[3] = 0;
	memcpy(head + 4, rec, 50);
	const uint8_t *out;
	uint32_t out_len;
	uint16_t W = STORE_K_REC;
	assert_int_equal(store_asm_feed(&a, W + 1, head, sizeof head, W, &out, &out_len), -E_NEED_MORE);
	assert_int_equal(store_asm_feed(&a, W + 2, rec + 50, 100, W, &out, &out_len), -E_NEED_MORE);
	assert_int_equal(store_asm_feed(&a, W + 2, rec + 150, 50, W, &out, &out_len), 0);
	assert_int_equal(out_len, 200);
	assert_memory_equal(out, rec, 200);
	/* a MORE without a HEAD, a HEAD too big, a MORE that overshoots */
	assert_int_equal(store_asm_feed(&a, W + 2, rec, 10, W, &out, &out_len), -E_INVAL);
	head[1] = 2; /* 712 > 300 */
	assert_int_equal(store_asm_feed(&a, W + 1, head, sizeof head, W, &out, &out_len), -E_INVAL);
	head[1] = 0;
	assert_int_equal(store_asm_feed(&a, W + 1, head, sizeof head, W, &out, &out_len), -E_NEED_MORE);
	assert_int_equal(store_asm_feed(&a, W + 2, rec, 151, W, &out, &out_len), -E_INVAL);
	assert_int_equal(store_asm_feed(&a, W + 2, rec, 1, W, &out, &out_len), -E_INVAL); /* dropped */
	/* whole */
	assert_int_equal(store_asm_feed(&a, W, rec, 60, W, &out, &out_len), 0);
	assert_ptr_equal(out, rec);
	assert_int_equal(store_asm_feed(&a, 0x0399, rec, 1, W, &out, &out_len), -E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_roundtrip_every_kind),
		cmocka_unit_test(t_rules),
		cmocka_unit_test(t_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
