/* SPDX-License-Identifier: MIT
 * kernel/xcore: configuration validation (table), delivery and rejection of bad sends,
 * credits and -E_AGAIN per destination, batched credit return, the control reserve that
 * data can never take, fair bounded polling, long runs over the free-running indices,
 * and a multi-threaded all-to-all stress (one thread per core, every message checked for
 * order per source and content). Also built under TSan by tests/smoke/kernel-xcore-tsan.sh.
 * Bounded: fixed message counts and a wall-clock deadline in the stress.
 * XCORE_STRESS_MSGS=n overrides the per-pair count of the stress (for measurements). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel/xcore.h"
#include "lib/err.h"

static const struct xcore_config base_cfg = {
	.n_cores = 3,
	.slots_per_ring = 8,
	.slot_size = 64,
	.ctrl_slots = 2,
	.credit_batch = 1,
	.poll_max = 64,
	.poll_per_source = 64,
};

static void *mesh_mem;

static struct xcore_mesh *mesh_new(const struct xcore_config *cfg)
{
	size_t len;
	assert_int_equal(xcore_mesh_size(cfg, &len), 0);
	mesh_mem = aligned_alloc(XCORE_MEM_ALIGN, (len + XCORE_MEM_ALIGN - 1) & ~(size_t)(XCORE_MEM_ALIGN - 1));
	assert_non_null(mesh_mem);
	memset(mesh_mem, 0xa5, len); /* init must not rely on zeroed memory */
	struct xcore_mesh *m = NULL;
	assert_int_equal(xcore_mesh_init(&m, mesh_mem, len, cfg), 0);
	assert_ptr_equal(m, mesh_mem);
	return m;
}

static int teardown(void **state)
{
	(void)state;
	free(mesh_mem);
	mesh_mem = NULL;
	return 0;
}

static void check_all(struct xcore_mesh *m)
{
	for (uint32_t c = 0; c < xcore_n_cores(m); c++)
		assert_int_equal(xcore_check_invariants(m, c), 0);
}

/* ---- configuration ---- */
struct cfg_case {
	const char *what;
	size_t off;
	uint32_t value;
	int want;
};
#define CFG_FIELD(f) offsetof(struct xcore_config, f)
static const struct cfg_case cfg_cases[] = {
	{ "n_cores 0", CFG_FIELD(n_cores), 0, -E_INVAL },
	{ "n_cores 1", CFG_FIELD(n_cores), 1, 0 },
	{ "n_cores max", CFG_FIELD(n_cores), XCORE_MAX_CORES, 0 },
	{ "n_cores max+1", CFG_FIELD(n_cores), XCORE_MAX_CORES + 1, -E_INVAL },
	{ "slots 0", CFG_FIELD(slots_per_ring), 0, -E_INVAL },
	{ "slots 1", CFG_FIELD(slots_per_ring), 1, -E_INVAL },
	{ "slots 12", CFG_FIELD(slots_per_ring), 12, -E_INVAL },
	{ "slots 2^17", CFG_FIELD(slots_per_ring), 1u << 17, -E_INVAL },
	{ "slots 2^16", CFG_FIELD(slots_per_ring), 1u << 16, 0 },
	{ "slot_size 8", CFG_FIELD(slot_size), 8, -E_INVAL },
	{ "slot_size 16", CFG_FIELD(slot_size), 16, 0 },
	{ "slot_size 60", CFG_FIELD(slot_size), 60, -E_INVAL },
	{ "slot_size 2^16+8", CFG_FIELD(slot_size), (1u << 16) + 8, -E_INVAL },
	{ "ctrl 0", CFG_FIELD(ctrl_slots), 0, -E_INVAL },
	{ "ctrl = slots", CFG_FIELD(ctrl_slots), 8, -E_INVAL },
	{ "ctrl = slots-1", CFG_FIELD(ctrl_slots), 7, 0 },
	{ "batch 0", CFG_FIELD(credit_batch), 0, -E_INVAL },
	{ "batch = credit", CFG_FIELD(credit_batch), 6, 0 },
	{ "batch > credit", CFG_FIELD(credit_batch), 7, -E_INVAL },
	{ "bulk reserve = credit - batch", CFG_FIELD(bulk_reserve), 5, 0 },
	{ "bulk reserve > credit - batch", CFG_FIELD(bulk_reserve), 6, -E_INVAL },
	{ "poll_max 0", CFG_FIELD(poll_max), 0, -E_INVAL },
	{ "per_source 0", CFG_FIELD(poll_per_source), 0, -E_INVAL },
};

static void test_config_validation(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cfg_cases / sizeof cfg_cases[0]; i++) {
		struct xcore_config c = base_cfg;
		memcpy((uint8_t *)&c + cfg_cases[i].off, &cfg_cases[i].value, sizeof(uint32_t));
		size_t len = 0;
		int rc = xcore_mesh_size(&c, &len);
		if (rc != cfg_cases[i].want)
			fail_msg("case '%s': size returned %d, want %d", cfg_cases[i].what, rc, cfg_cases[i].want);
		if (rc == 0 && len > (64u << 20))
			continue; /* valid but too big to try here */
		struct xcore_mesh *m = NULL;
		void *mem = aligned_alloc(XCORE_MEM_ALIGN, rc == 0 ? (len + 63) & ~(size_t)63 : 4096);
		assert_non_null(mem);
		rc = xcore_mesh_init(&m, mem, rc == 0 ? len : 4096, &c);
		if (rc != cfg_cases[i].want)
			fail_msg("case '%s': init returned %d, want %d", cfg_cases[i].what, rc, cfg_cases[i].want);
		if (rc == 0)
			check_all(m);
		free(mem);
	}
	size_t len;
	assert_int_equal(xcore_mesh_size(NULL, &len), -E_INVAL);
	assert_int_equal(xcore_mesh_size(&base_cfg, NULL), -E_INVAL);
	assert_int_equal(xcore_mesh_size(&base_cfg, &len), 0);
	uint8_t *mem = aligned_alloc(XCORE_MEM_ALIGN, len + 128);
	struct xcore_mesh *m;
	assert_int_equal(xcore_mesh_init(&m, mem, len - 1, &base_cfg), -E_INVAL); /* short */
	assert_int_equal(xcore_mesh_init(&m, mem + 8, len, &base_cfg), -E_INVAL); /* misaligned */
	assert_int_equal(xcore_mesh_init(&m, NULL, len, &base_cfg), -E_INVAL);
	assert_int_equal(xcore_mesh_init(NULL, mem, len, &base_cfg), -E_INVAL);
	assert_int_equal(xcore_mesh_init(&m, mem, len, &base_cfg), 0);
	free(mem);
}

/* ---- delivery ---- */
struct rec {
	uint32_t n;
	uint32_t src[256];
	uint16_t kind[256];
	uint8_t cls[256];
	uint32_t len[256];
	uint8_t first[256];
	uint8_t last[256];
};

static void rec_fn(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct rec *r = ctx;
	assert_true(r->n < 256);
	r->src[r->n] = src;
	r->kind[r->n] = msg->kind;
	r->cls[r->n] = msg->cls;
	r->len[r->n] = msg->len;
	r->first[r->n] = msg->len ? msg->data[0] : 0;
	r->last[r->n] = msg->len ? msg->data[msg->len - 1] : 0;
	r->n++;
}

static void test_delivery_and_rejection(void **state)
{
	(void)state;
	struct xcore_mesh *m = mesh_new(&base_cfg);
	uint8_t buf[64];
	memset(buf, 0x77, sizeof buf);
	buf[0] = 0x11;
	uint32_t max = xcore_payload_max(m);
	assert_int_equal(max, 64 - XCORE_HDR_SIZE);
	buf[max - 1] = 0x22;
	/* Rejections: nothing is sent, nothing counted as a stall. */
	assert_int_equal(xcore_send(m, 1, 1, 1, buf, 4), -E_INVAL);
	assert_int_equal(xcore_send(m, 3, 0, 1, buf, 4), -E_INVAL);
	assert_int_equal(xcore_send(m, 0, 3, 1, buf, 4), -E_INVAL);
	assert_int_equal(xcore_send(m, 0, 1, 1, buf, max + 1), -E_INVAL);
	assert_int_equal(xcore_send(m, 0, 1, 1, NULL, 4), -E_INVAL);
	assert_int_equal(xcore_send_ctrl(m, 2, 2, 1, buf, 4), -E_INVAL);
	/* Valid: full-size, empty and control messages, from two sources. */
	assert_int_equal(xcore_send(m, 0, 1, 7, buf, max), 0);
	assert_int_equal(xcore_send(m, 0, 1, 8, NULL, 0), 0);
	assert_int_equal(xcore_send_ctrl(m, 2, 1, 9, buf, 1), 0);
	struct rec r = { 0 };
	assert_int_equal(xcore_poll(m, 0, rec_fn, &r), 0); /* nothing for core 0 */
	assert_int_equal(xcore_poll(m, 1, rec_fn, &r), 3);
	assert_int_equal(r.n, 3);
	/* Core 1's sources in round-robin order: 0 then 2 on the first call. */
	assert_int_equal(r.src[0], 0);
	assert_int_equal(r.kind[0], 7);
	assert_int_equal(r.cls[0], XCORE_DATA);
	assert_int_equal(r.len[0], max);
	assert_int_equal(r.first[0], 0x11);
	assert_int_equal(r.last[0], 0x22);
	assert_int_equal(r.src[1], 0);
	assert_int_equal(r.kind[1], 8);
	assert_int_equal(r.len[1], 0);
	assert_int_equal(r.src[2], 2);
	assert_int_equal(r.cls[2], XCORE_CTRL);
	assert_int_equal(r.kind[2], 9);
	struct xcore_pair_stats st;
	xcore_stats(m, 0, 1, &st);
	assert_int_equal(st.n_sent, 2);
	assert_int_equal(st.n_recv, 2);
	assert_int_equal(st.n_stall, 0);
	xcore_stats(m, 2, 1, &st);
	assert_int_equal(st.n_ctrl_sent, 1);
	assert_int_equal(st.n_recv, 1);
	xcore_stats(m, 1, 1, &st); /* no such pair: zeros */
	assert_int_equal(st.n_sent + st.n_recv, 0);
	assert_int_equal(xcore_poll(m, 3, rec_fn, &r), 0);
	check_all(m);
}

/* ---- credits ---- */
static uint32_t drain_n(struct xcore_mesh *m, uint32_t self, uint32_t want)
{
	struct rec r = { 0 };
	uint32_t got = 0;
	while (got < want) {
		uint32_t k = xcore_poll(m, self, rec_fn, &r);
		if (k == 0)
			break;
		got += k;
	}
	return got;
}

static void test_credits_and_again(void **state)
{
	(void)state;
	struct xcore_config c = base_cfg;
	c.poll_max = 1; /* consume one message per call */
	struct xcore_mesh *m = mesh_new(&c);
	uint32_t credit = c.slots_per_ring - c.ctrl_slots;
	assert_int_equal(xcore_credits(m, 0, 1), credit);
	for (uint32_t i = 0; i < credit; i++) {
		assert_int_equal(xcore_send(m, 0, 1, 1, &i, sizeof i), 0);
		check_all(m);
	}
	assert_int_equal(xcore_send(m, 0, 1, 1, "x", 1), -E_AGAIN);
	assert_int_equal(xcore_send(m, 0, 1, 1, "x", 1), -E_AGAIN);
	struct xcore_pair_stats st;
	xcore_stats(m, 0, 1, &st);
	assert_int_equal(st.n_sent, credit);
	assert_int_equal(st.n_stall, 2);
	/* Per destination: 0 -> 2 and 2 -> 1 still have full credit. */
	assert_int_equal(xcore_send(m, 0, 2, 1, "y", 1), 0);
	assert_int_equal(xcore_send(m, 2, 1, 1, "z", 1), 0);
	xcore_stats(m, 0, 2, &st);
	assert_int_equal(st.n_stall, 0);
	/* Consuming one message returns one credit (batch 1). */
	assert_int_equal(xcore_poll(m, 1, rec_fn, &(struct rec){ 0 }), 1);
	assert_int_equal(xcore_send(m, 0, 1, 1, "x", 1), 0);
	assert_int_equal(xcore_send(m, 0, 1, 1, "x", 1), -E_AGAIN);
	check_all(m);
	/* Draining everything gives back all the credit. */
	drain_n(m, 1, 100);
	assert_int_equal(xcore_credits(m, 0, 1), credit);
	check_all(m);
}

static void test_credit_batch(void **state)
{
	(void)state;
	struct xcore_config c = base_cfg;
	c.slots_per_ring = 16;
	c.ctrl_slots = 4;
	c.credit_batch = 4;
	c.poll_max = 1;
	struct xcore_mesh *m = mesh_new(&c);
	for (uint32_t i = 0; i < 12; i++)
		assert_int_equal(xcore_send(m, 1, 0, 1, &i, sizeof i), 0);
	assert_int_equal(xcore_send(m, 1, 0, 1, "x", 1), -E_AGAIN);
	/* Three consumed: fewer than a batch, still refused. */
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(xcore_poll(m, 0, rec_fn, &(struct rec){ 0 }), 1);
		assert_int_equal(xcore_send(m, 1, 0, 1, "x", 1), -E_AGAIN);
	}
	assert_int_equal(xcore_poll(m, 0, rec_fn, &(struct rec){ 0 }), 1);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(xcore_send(m, 1, 0, 1, "x", 1), 0);
	assert_int_equal(xcore_send(m, 1, 0, 1, "x", 1), -E_AGAIN);
	struct xcore_pair_stats st;
	xcore_stats(m, 1, 0, &st);
	assert_int_equal(st.n_sent, 16);
	assert_int_equal(st.n_stall, 5);
	assert_int_equal(st.n_refill, 6); /* each stall re-read the index, plus one successful */
	check_all(m);
}

static void test_control_never_blocked_by_data(void **state)
{
	(void)state;
	struct xcore_mesh *m = mesh_new(&base_cfg);
	uint32_t credit = base_cfg.slots_per_ring - base_cfg.ctrl_slots;
	for (uint32_t round = 0; round < 3; round++) {
		/* Data up to the credit limit, then it is refused ... */
		uint32_t i = 0;
		while (xcore_send(m, 2, 0, 1, &i, sizeof i) == 0)
			i++;
		assert_int_equal(i, credit);
		/* ... while ctrl_slots control messages still go through ... */
		for (uint32_t k = 0; k < base_cfg.ctrl_slots; k++)
			assert_int_equal(xcore_send_ctrl(m, 2, 0, 2, &k, sizeof k), 0);
		/* ... and only one more than the reserve is refused. */
		assert_int_equal(xcore_send_ctrl(m, 2, 0, 2, "c", 1), -E_AGAIN);
		check_all(m);
		/* One FIFO per pair: the data first, then the control messages. */
		struct rec r = { 0 };
		assert_int_equal(xcore_poll(m, 0, rec_fn, &r), base_cfg.slots_per_ring);
		for (uint32_t k = 0; k < r.n; k++)
			assert_int_equal(r.cls[k], k < credit ? XCORE_DATA : XCORE_CTRL);
	}
	/* Control messages in flight take data credit; data never takes the reserve. */
	assert_int_equal(xcore_send_ctrl(m, 2, 0, 2, "c", 1), 0);
	uint32_t i = 0;
	while (xcore_send(m, 2, 0, 1, &i, sizeof i) == 0)
		i++;
	assert_int_equal(i, credit - 1);
	assert_int_equal(xcore_send_ctrl(m, 2, 0, 2, "c", 1), 0);
	assert_int_equal(xcore_send_ctrl(m, 2, 0, 2, "c", 1), 0);
	assert_int_equal(xcore_send_ctrl(m, 2, 0, 2, "c", 1), -E_AGAIN);
	struct xcore_pair_stats st;
	xcore_stats(m, 2, 0, &st);
	assert_int_equal(st.n_ctrl_stall, 4);
	assert_int_equal(st.n_ctrl_sent, 3 * base_cfg.ctrl_slots + 3);
	check_all(m);
}

/* Bulk messages stop at bulk_reserve credits; data still takes those; once the consumer
 * frees room, bulk goes on; one FIFO with the other classes. */
static void test_bulk_leaves_reserve_to_data(void **state)
{
	(void)state;
	struct xcore_config c = base_cfg;
	c.slots_per_ring = 16;
	c.ctrl_slots = 2;
	c.credit_batch = 2;
	c.bulk_reserve = 4;
	struct xcore_mesh *m = mesh_new(&c);
	uint32_t credit = c.slots_per_ring - c.ctrl_slots;
	for (uint32_t round = 0; round < 3; round++) {
		uint32_t i = 0;
		while (xcore_send_bulk(m, 1, 0, 3, &i, sizeof i) == 0)
			i++;
		assert_int_equal(i, credit - c.bulk_reserve);
		/* the reserve is data's */
		for (uint32_t k = 0; k < c.bulk_reserve; k++)
			assert_int_equal(xcore_send(m, 1, 0, 1, &k, sizeof k), 0);
		assert_int_equal(xcore_send(m, 1, 0, 1, "d", 1), -E_AGAIN);
		assert_int_equal(xcore_send_bulk(m, 1, 0, 3, "b", 1), -E_AGAIN);
		check_all(m);
		struct rec r = { 0 };
		assert_int_equal(xcore_poll(m, 0, rec_fn, &r), credit);
		for (uint32_t k = 0; k < r.n; k++)
			assert_int_equal(r.cls[k], k < credit - c.bulk_reserve ? XCORE_BULK : XCORE_DATA);
	}
	/* each round: the refusal that ended the loop and the one after the data */
	struct xcore_pair_stats st;
	xcore_stats(m, 1, 0, &st);
	assert_int_equal(st.n_bulk_stall, 6);
	assert_int_equal(st.n_sent, 3 * credit);
	check_all(m);
}

/* ---- fairness and bounds ---- */
struct fair {
	uint32_t per_src[8];
	uint32_t n;
};

static void fair_fn(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct fair *f = ctx;
	(void)msg;
	f->per_src[src]++;
	f->n++;
}

static void test_poll_fair_and_bounded(void **state)
{
	(void)state;
	struct xcore_config c = base_cfg;
	c.n_cores = 4;
	c.slots_per_ring = 64;
	c.ctrl_slots = 4;
	c.poll_max = 4;
	c.poll_per_source = 3;
	struct xcore_mesh *m = mesh_new(&c);
	/* Every other core floods core 0. */
	for (uint32_t s = 1; s < 4; s++)
		for (uint32_t i = 0; i < 60; i++)
			assert_int_equal(xcore_send(m, s, 0, 1, &i, sizeof i), 0);
	struct fair f = { { 0 }, 0 };
	for (uint32_t call = 0; call < 30; call++) {
		struct fair one = { { 0 }, 0 };
		assert_int_equal(xcore_poll(m, 0, fair_fn, &one), 4); /* poll_max */
		for (uint32_t s = 1; s < 4; s++) {
			assert_true(one.per_src[s] <= 3); /* poll_per_source */
			f.per_src[s] += one.per_src[s];
		}
		f.n += one.n;
		/* Round-robin start: no source is more than one call's share ahead. */
		uint32_t lo = UINT32_MAX, hi = 0;
		for (uint32_t s = 1; s < 4; s++) {
			lo = f.per_src[s] < lo ? f.per_src[s] : lo;
			hi = f.per_src[s] > hi ? f.per_src[s] : hi;
		}
		assert_true(hi - lo <= 3);
	}
	assert_int_equal(f.n, 120);
	assert_int_equal(f.per_src[1] + f.per_src[2] + f.per_src[3], 120);
	for (uint32_t s = 1; s < 4; s++)
		assert_int_equal(f.per_src[s], 40);
	/* A quiet source does not stall the others, and an empty mesh returns 0. */
	for (uint32_t call = 0; call < 40; call++)
		(void)xcore_poll(m, 0, fair_fn, &f);
	assert_int_equal(f.n, 180);
	assert_int_equal(xcore_poll(m, 0, fair_fn, &f), 0);
	check_all(m);
}

/* Many rounds through a small ring: indices and credit stay consistent. */
static void test_long_run(void **state)
{
	(void)state;
	struct xcore_config c = base_cfg;
	c.slots_per_ring = 4;
	c.ctrl_slots = 1;
	c.credit_batch = 2;
	struct xcore_mesh *m = mesh_new(&c);
	uint32_t next_send = 0;
	struct rec r;
	for (uint32_t round = 0; round < 20000; round++) {
		uint32_t k = 0;
		while (xcore_send(m, 0, 1, (uint16_t)next_send, &next_send, sizeof next_send) == 0) {
			next_send++;
			k++;
		}
		assert_true(k >= 2 && k <= 3);
		if (round % 7 == 0)
			assert_int_equal(xcore_send_ctrl(m, 0, 1, 0xffff, NULL, 0), 0);
		memset(&r, 0, sizeof r);
		(void)xcore_poll(m, 1, rec_fn, &r);
		assert_int_equal(xcore_check_invariants(m, 0), 0);
	}
	struct xcore_pair_stats st;
	xcore_stats(m, 0, 1, &st);
	assert_int_equal(st.n_sent, next_send);
	assert_int_equal(st.n_recv, next_send + st.n_ctrl_sent);
	assert_int_equal(st.n_bad, 0);
}

/* ---- all-to-all stress: one thread per core ---- */
#define ST_MAX_CORES 8
#define ST_KIND_DATA 1
#define ST_KIND_CTRL 2
#define ST_DEADLINE_S 120

struct st_payload {
	uint32_t src, dst;
	uint64_t seq;
	uint64_t check;
};

struct st_core {
	uint32_t id;
	uint64_t next_seq[ST_MAX_CORES];   /* to send, per destination */
	uint64_t expect_seq[ST_MAX_CORES]; /* to receive, per source */
	uint64_t n_recv, n_errors, n_again, n_idle;
	uint64_t n_credit_wakes, n_credit_back; /* the credit wake-up, both sides (under TSan) */
	int timed_out;
};

static struct xcore_mesh *st_mesh;
static uint32_t st_n;
static uint64_t st_msgs;
static struct st_core st_cores[ST_MAX_CORES];

static uint64_t st_check(uint32_t src, uint32_t dst, uint64_t seq)
{
	return (seq + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)src << 40) ^ ((uint64_t)dst << 48);
}

static uint32_t st_len(uint64_t seq)
{
	return (uint32_t)sizeof(struct st_payload) + (uint32_t)(seq % 25u); /* 24..48 B */
}

static double st_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void st_recv(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct st_core *c = ctx;
	struct st_payload p;
	uint64_t want = c->expect_seq[src];
	if (msg->len != st_len(want) || msg->len < sizeof p) {
		c->n_errors++;
		return;
	}
	memcpy(&p, msg->data, sizeof p);
	int ok = p.src == src && p.dst == c->id && p.seq == want && p.check == st_check(src, c->id, want) &&
		 msg->kind == (want % 7 == 3 ? ST_KIND_CTRL : ST_KIND_DATA) &&
		 msg->cls == (want % 7 == 3 ? XCORE_CTRL : XCORE_DATA);
	for (uint32_t i = sizeof p; i < msg->len; i++)
		ok = ok && msg->data[i] == (uint8_t)(want + i);
	if (!ok)
		c->n_errors++;
	c->expect_seq[src] = want + 1;
	c->n_recv++;
}

static void *st_thread(void *arg)
{
	struct st_core *c = arg;
	uint64_t want_recv = (uint64_t)(st_n - 1) * st_msgs;
	double deadline = st_now() + ST_DEADLINE_S;
	uint8_t buf[64];
	uint32_t spins = 0;
	for (;;) {
		int work = 0, sending = 0;
		for (uint32_t d = 0; d < st_n; d++) {
			if (d == c->id)
				continue;
			/* A few per destination per pass, like a loop handler with a budget. */
			for (uint32_t k = 0; k < 8 && c->next_seq[d] < st_msgs; k++) {
				uint64_t seq = c->next_seq[d];
				struct st_payload p = { c->id, d, seq, st_check(c->id, d, seq) };
				uint32_t len = st_len(seq);
				memcpy(buf, &p, sizeof p);
				for (uint32_t i = sizeof p; i < len; i++)
					buf[i] = (uint8_t)(seq + i);
				int rc = seq % 7 == 3 ? xcore_send_ctrl(st_mesh, c->id, d, ST_KIND_CTRL, buf, len)
						      : xcore_send(st_mesh, c->id, d, ST_KIND_DATA, buf, len);
				if (rc == -E_AGAIN) {
					c->n_again++;
					break;
				}
				if (rc != 0) {
					c->n_errors++;
					break;
				}
				c->next_seq[d]++;
				work = 1;
			}
			sending |= c->next_seq[d] < st_msgs;
		}
		if (xcore_poll(st_mesh, c->id, st_recv, c))
			work = 1;
		c->n_credit_wakes += (uint64_t)__builtin_popcountll(xcore_credit_waiters(st_mesh, c->id));
		if (!sending && c->n_recv >= want_recv)
			break;
		if (!work) {
			c->n_credit_back += xcore_credit_back(st_mesh, c->id); /* the idle check */
			c->n_idle++;
			sched_yield(); /* 2 shared CPUs: let the peers run */
		}
		if (++spins % 1024 == 0 && st_now() > deadline) {
			c->timed_out = 1;
			break;
		}
	}
	return NULL;
}

static void st_run(uint32_t n_cores, uint64_t msgs)
{
	struct xcore_config c = {
		.n_cores = n_cores,
		.slots_per_ring = 64,
		.slot_size = 64,
		.ctrl_slots = 4,
		.credit_batch = 8,
		.poll_max = 64,
		.poll_per_source = 16,
	};
	st_mesh = mesh_new(&c);
	st_n = n_cores;
	st_msgs = msgs;
	memset(st_cores, 0, sizeof st_cores);
	pthread_t t[ST_MAX_CORES];
	double t0 = st_now();
	for (uint32_t i = 0; i < n_cores; i++) {
		st_cores[i].id = i;
		assert_int_equal(pthread_create(&t[i], NULL, st_thread, &st_cores[i]), 0);
	}
	for (uint32_t i = 0; i < n_cores; i++)
		pthread_join(t[i], NULL);
	double secs = st_now() - t0;
	uint64_t errors = 0, again = 0, stalls = 0, ctrl_stalls = 0, wakes = 0, back = 0;
	for (uint32_t i = 0; i < n_cores; i++) {
		assert_false(st_cores[i].timed_out);
		wakes += st_cores[i].n_credit_wakes;
		back += st_cores[i].n_credit_back;
		errors += st_cores[i].n_errors;
		again += st_cores[i].n_again;
		assert_int_equal(st_cores[i].n_recv, (uint64_t)(n_cores - 1) * msgs);
		for (uint32_t s = 0; s < n_cores; s++) {
			if (s == i)
				continue;
			assert_int_equal(st_cores[i].expect_seq[s], msgs);
			struct xcore_pair_stats st;
			xcore_stats(st_mesh, s, i, &st);
			assert_int_equal(st.n_sent + st.n_ctrl_sent, msgs);
			assert_int_equal(st.n_recv, msgs);
			assert_int_equal(st.n_bad, 0);
			stalls += st.n_stall;
			ctrl_stalls += st.n_ctrl_stall;
		}
		assert_int_equal(xcore_check_invariants(st_mesh, i), 0);
	}
	assert_int_equal(errors, 0);
	assert_int_equal(again, stalls + ctrl_stalls);
	uint32_t pairs = n_cores * (n_cores - 1);
	printf("xcore stress: %u threads, %u rings, %llu msgs per pair, %llu credit stalls (%llu control), "
	       "0 errors, %.3f s: %.0f msgs/s per pair, %.0f msgs/s in all; credit wake-ups %llu, seen idle %llu\n",
	       n_cores, pairs, (unsigned long long)msgs, (unsigned long long)stalls,
	       (unsigned long long)ctrl_stalls, secs, (double)msgs / secs, (double)msgs * pairs / secs,
	       (unsigned long long)wakes, (unsigned long long)back);
	free(mesh_mem);
	mesh_mem = NULL;
}

static uint64_t st_default_msgs(void)
{
	const char *e = getenv("XCORE_STRESS_MSGS");
	if (e && atoll(e) > 0)
		return (uint64_t)atoll(e);
#if defined(__SANITIZE_THREAD__)
	return 50000;
#else
	return 200000;
#endif
}

/* ---- xcore_pending, and a handler may write its message in place ---- */
static void scribble_fn(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	(void)src;
	uint32_t *n = ctx;
	for (uint32_t i = 0; i < msg->len; i++)
		msg->data[i] ^= 0xffu; /* the slot is the receiver's until it returns */
	assert_int_equal(msg->data[0], 0xee);
	(*n)++;
}

static void test_pending_and_writable(void **state)
{
	(void)state;
	struct xcore_mesh *m = mesh_new(&base_cfg);
	uint8_t buf[8] = { 0x11, 0x22 };
	for (uint32_t c = 0; c < 3; c++)
		assert_false(xcore_pending(m, c));
	assert_false(xcore_pending(m, 3)); /* out of range */
	assert_int_equal(xcore_send(m, 2, 1, 5, buf, sizeof buf), 0);
	assert_true(xcore_pending(m, 1));
	assert_false(xcore_pending(m, 0));
	assert_false(xcore_pending(m, 2));
	assert_true(xcore_pending(m, 1)); /* asking consumes nothing */
	uint32_t n = 0;
	assert_int_equal(xcore_poll(m, 1, scribble_fn, &n), 1);
	assert_int_equal(n, 1);
	assert_false(xcore_pending(m, 1));
	check_all(m);
}

/* ---- the credit wake-up (invariant 7 of xcore.c) ---- */
/* A sender refused for credit is named by the consumer's xcore_credit_waiters once the
 * ring has the room the refused send needs, not before, and only once; its own idle check
 * (xcore_credit_back) sees the same room and then forgets the wish; a send that refills
 * clears it. Bulk needs its reserve on top. */
static void test_credit_wakeup(void **state)
{
	(void)state;
	struct xcore_config c = base_cfg;
	c.slots_per_ring = 16;
	c.ctrl_slots = 2;
	c.credit_batch = 2;
	c.bulk_reserve = 4;
	c.poll_max = 1;
	c.poll_per_source = 1;
	struct xcore_mesh *m = mesh_new(&c);
	struct rec r = { 0 };
	uint32_t i = 0;
	assert_int_equal(xcore_credit_waiters(m, 0), 0); /* nothing consumed, no fence needed */
	while (xcore_send_bulk(m, 1, 0, 3, &i, sizeof i) == 0)
		i++;
	assert_int_equal(i, c.slots_per_ring - c.ctrl_slots - c.bulk_reserve); /* 10 used, 6 free */
	assert_false(xcore_credit_back(m, 1));
	/* bulk needs ctrl 2 + reserve 4 + batch 2 = 8 free: one message consumed is not enough */
	assert_int_equal(xcore_poll(m, 0, rec_fn, &r), 1);
	assert_int_equal(xcore_credit_waiters(m, 0), 0);
	assert_false(xcore_credit_back(m, 1));
	assert_int_equal(xcore_poll(m, 0, rec_fn, &r), 1);
	assert_int_equal(xcore_credit_waiters(m, 0), 1ull << 1); /* 8 free: wake core 1 */
	assert_int_equal(xcore_credit_waiters(m, 0), 0);         /* once per consumption */
	assert_int_equal(xcore_credit_waiters(m, 2), 0);         /* nothing for core 2 */
	assert_true(xcore_credit_back(m, 1));                    /* the idle check sees it ... */
	assert_false(xcore_credit_back(m, 1));                   /* ... once */
	assert_int_equal(xcore_poll(m, 0, rec_fn, &r), 1);
	assert_int_equal(xcore_credit_waiters(m, 0), 0);         /* forgotten: no wake-up */
	/* a refusal again, then a refill by a send clears the wish without any idle check */
	while (xcore_send_bulk(m, 1, 0, 3, &i, sizeof i) == 0)
		i++;
	for (int k = 0; k < 3; k++)
		assert_int_equal(xcore_poll(m, 0, rec_fn, &r), 1);
	assert_int_equal(xcore_send_bulk(m, 1, 0, 3, &i, sizeof i), 0); /* refilled */
	assert_int_equal(xcore_credit_waiters(m, 0), 0);
	assert_false(xcore_credit_back(m, 1));
	/* a data send's wish is smaller: ctrl 2 + batch 2 */
	while (xcore_send(m, 2, 0, 1, &i, sizeof i) == 0)
		i++;
	assert_false(xcore_credit_back(m, 2));
	uint64_t w = 0;
	for (int k = 0; k < 16 && !(w & (1ull << 2)); k++) {
		assert_true(xcore_poll(m, 0, rec_fn, &r) == 1);
		w = xcore_credit_waiters(m, 0);
	}
	assert_true(w & (1ull << 2));
	assert_true(xcore_credit_back(m, 2));
	struct xcore_pair_stats st;
	xcore_stats(m, 2, 0, &st);
	assert_true(st.n_stall >= 1);
	check_all(m);
}

static void test_stress_two_cores(void **state)
{
	(void)state;
	st_run(2, st_default_msgs() * 2);
}

static void test_stress_all_to_all(void **state)
{
	(void)state;
	st_run(4, st_default_msgs());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_config_validation, teardown),
		cmocka_unit_test_teardown(test_delivery_and_rejection, teardown),
		cmocka_unit_test_teardown(test_credits_and_again, teardown),
		cmocka_unit_test_teardown(test_credit_batch, teardown),
		cmocka_unit_test_teardown(test_control_never_blocked_by_data, teardown),
		cmocka_unit_test_teardown(test_bulk_leaves_reserve_to_data, teardown),
		cmocka_unit_test_teardown(test_poll_fair_and_bounded, teardown),
		cmocka_unit_test_teardown(test_long_run, teardown),
		cmocka_unit_test_teardown(test_pending_and_writable, teardown),
		cmocka_unit_test_teardown(test_credit_wakeup, teardown),
		cmocka_unit_test_teardown(test_stress_two_cores, teardown),
		cmocka_unit_test_teardown(test_stress_all_to_all, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
