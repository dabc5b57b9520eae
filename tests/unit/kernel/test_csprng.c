/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/csprng: the ChaCha20 block function and encryption against the
 * test vectors of RFC 8439 (sections 2.3.2, 2.4.2 and appendix A.1), then the DRBG:
 * refusal without entropy, determinism for a given seed, output independent of how it
 * is split into calls, wiping of consumed bytes, reseeding (explicit and automatic, with
 * a failing source), and the per-core kernel instances. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kernel/csprng.h"
#include "lib/err.h"

static void unhex(const char *s, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned v;
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static const char key_seq[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/* RFC 8439 2.3.2: block function, counter 1. */
static void test_block_rfc_2_3_2(void **state)
{
	(void)state;
	uint8_t key[32], nonce[12], want[64], got[64];
	unhex(key_seq, key, 32);
	unhex("000000090000004a00000000", nonce, 12);
	unhex("10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
	      "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e",
	      want, 64);
	csprng_chacha20_block(key, 1, nonce, got);
	assert_memory_equal(got, want, 64);
}

/* RFC 8439 2.4.2: encryption of the sunscreen text, counter 1 (114 bytes: two blocks). */
static void test_encrypt_rfc_2_4_2(void **state)
{
	(void)state;
	static const char pt[] = "Ladies and Gentlemen of the class of '99: If I could offer you only one "
				 "tip for the future, sunscreen would be it.";
	uint8_t key[32], nonce[12], want[114], buf[114];
	assert_int_equal(sizeof pt - 1, 114);
	unhex(key_seq, key, 32);
	unhex("000000000000004a00000000", nonce, 12);
	unhex("6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
	      "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
	      "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
	      "5af90bbf74a35be6b40b8eedf2785e42874d",
	      want, 114);
	memcpy(buf, pt, 114);
	csprng_chacha20_xor(key, 1, nonce, buf, 114);
	assert_memory_equal(buf, want, 114);
	csprng_chacha20_xor(key, 1, nonce, buf, 114); /* and back */
	assert_memory_equal(buf, pt, 114);
}

/* RFC 8439 A.1 test vector #1: all-zero key and nonce, counter 0. */
static void test_block_rfc_a1_1(void **state)
{
	(void)state;
	uint8_t key[32] = { 0 }, nonce[12] = { 0 }, want[64], got[64];
	unhex("76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
	      "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586",
	      want, 64);
	csprng_chacha20_block(key, 0, nonce, got);
	assert_memory_equal(got, want, 64);
}

/* A fake entropy source: a counter pattern, or failure. */
struct fake_src {
	uint8_t next;
	bool fail;
	unsigned n_calls;
};
static int fake_get(void *ctx, uint8_t *buf, size_t len)
{
	struct fake_src *s = ctx;
	s->n_calls++;
	if (s->fail)
		return -E_NOENT;
	for (size_t i = 0; i < len; i++)
		buf[i] = s->next++;
	return 0;
}

static struct csprng_config cfg_for(struct fake_src *s, uint64_t reseed_bytes)
{
	struct csprng_config c = { { s, fake_get, "fake" }, reseed_bytes };
	return c;
}

static void test_no_entropy_refuses(void **state)
{
	(void)state;
	struct csprng r;
	struct fake_src s = { .fail = true };
	struct csprng_config c = cfg_for(&s, 0);
	assert_int_equal(csprng_init(&r, &c), -E_NOENT);
	uint8_t out[16];
	memset(out, 0xff, sizeof out);
	assert_int_equal(csprng_generate(&r, out, sizeof out), -E_CLOSED);
	for (size_t i = 0; i < sizeof out; i++)
		assert_int_equal(out[i], 0);
	struct csprng_config none = { { NULL, NULL, NULL }, 0 };
	assert_int_equal(csprng_init(&r, &none), -E_NOENT);
	/* A short seed does not make it seeded; a full one does. */
	uint8_t seed[CSPRNG_SEED_LEN] = { 1, 2, 3 };
	assert_int_equal(csprng_reseed(&r, seed, 16), 0);
	assert_int_equal(csprng_generate(&r, out, sizeof out), -E_CLOSED);
	assert_int_equal(csprng_reseed(&r, seed, sizeof seed), 0);
	assert_int_equal(csprng_generate(&r, out, sizeof out), 0);
	assert_int_equal(csprng_reseed(&r, NULL, 4), -E_INVAL);
	assert_int_equal(csprng_reseed(&r, NULL, 0), 0);
}

static void test_deterministic_and_split(void **state)
{
	(void)state;
	static uint8_t a[1000], b[1000], c3[1000];
	struct csprng r1, r2, r3;
	struct fake_src s1 = { 0 }, s2 = { 0 }, s3 = { .next = 1 };
	struct csprng_config c1 = cfg_for(&s1, 0), c2 = cfg_for(&s2, 0), c3c = cfg_for(&s3, 0);
	assert_int_equal(csprng_init(&r1, &c1), 0);
	assert_int_equal(csprng_init(&r2, &c2), 0);
	assert_int_equal(csprng_init(&r3, &c3c), 0);
	assert_int_equal(csprng_generate(&r1, a, sizeof a), 0);
	/* Same seed, other split: 1, 7, 100, 300, 592 bytes. */
	static const size_t parts[] = { 1, 7, 100, 300, 592 };
	size_t off = 0;
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(csprng_generate(&r2, b + off, parts[i]), 0);
		off += parts[i];
	}
	assert_int_equal(off, sizeof b);
	assert_memory_equal(a, b, sizeof a);
	assert_int_equal(csprng_generate(&r3, c3, sizeof c3), 0);
	assert_memory_not_equal(a, c3, sizeof a);
	/* Invariant 2: consumed bytes are wiped. */
	for (uint32_t i = 0; i < r1.pos; i++)
		assert_int_equal(r1.buf[i], 0);
	struct csprng_stats st;
	csprng_stats_get(&r1, &st);
	assert_true(st.n_bytes == 1000 && st.n_reseeds == 1 && st.n_refills >= 1000 / (CSPRNG_BUF_LEN - 32));
	/* Nothing repeats across refills (a stuck key would repeat a buffer). */
	assert_memory_not_equal(a, a + (CSPRNG_BUF_LEN - 32), CSPRNG_BUF_LEN - 32);
	csprng_wipe(&r1);
	assert_int_equal(csprng_generate(&r1, a, 8), -E_CLOSED);
}

static void test_reseed_changes_stream(void **state)
{
	(void)state;
	uint8_t a[64], b[64];
	struct csprng r1, r2;
	struct fake_src s1 = { 0 }, s2 = { 0 };
	struct csprng_config c1 = cfg_for(&s1, 0), c2 = cfg_for(&s2, 0);
	assert_int_equal(csprng_init(&r1, &c1), 0);
	assert_int_equal(csprng_init(&r2, &c2), 0);
	assert_int_equal(csprng_generate(&r1, a, 10), 0);
	assert_int_equal(csprng_generate(&r2, b, 10), 0);
	static const uint8_t extra[5] = { 9, 9, 9, 9, 9 };
	assert_int_equal(csprng_reseed(&r2, extra, sizeof extra), 0);
	assert_int_equal(csprng_generate(&r1, a, sizeof a), 0);
	assert_int_equal(csprng_generate(&r2, b, sizeof b), 0);
	assert_memory_not_equal(a, b, sizeof a);
	/* Seeds differing only by length (trailing zero) give different keys. */
	static const uint8_t z1[1] = { 0 }, z2[2] = { 0, 0 };
	assert_int_equal(csprng_init(&r1, &c1), 0);
	s2.next = s1.next - CSPRNG_SEED_LEN;
	assert_int_equal(csprng_init(&r2, &c2), 0);
	assert_int_equal(csprng_reseed(&r1, z1, 1), 0);
	assert_int_equal(csprng_reseed(&r2, z2, 2), 0);
	assert_int_equal(csprng_generate(&r1, a, sizeof a), 0);
	assert_int_equal(csprng_generate(&r2, b, sizeof b), 0);
	assert_memory_not_equal(a, b, sizeof a);
}

static void test_auto_reseed(void **state)
{
	(void)state;
	uint8_t out[50];
	struct csprng r;
	struct fake_src s = { 0 };
	struct csprng_config c = cfg_for(&s, 100);
	assert_int_equal(csprng_init(&r, &c), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(csprng_generate(&r, out, sizeof out), 0);
	struct csprng_stats st;
	csprng_stats_get(&r, &st);
	assert_true(st.n_reseeds == 1 + 4 && st.n_reseed_fail == 0);
	s.fail = true;
	for (int i = 0; i < 4; i++)
		assert_int_equal(csprng_generate(&r, out, sizeof out), 0); /* keeps working */
	csprng_stats_get(&r, &st);
	assert_true(st.n_reseed_fail == 2 && st.n_bytes == 700);
}

static void test_bit_balance(void **state)
{
	(void)state;
	static uint8_t buf[65536];
	struct csprng r;
	struct fake_src s = { 0 };
	struct csprng_config c = cfg_for(&s, 0);
	assert_int_equal(csprng_init(&r, &c), 0);
	assert_int_equal(csprng_generate(&r, buf, sizeof buf), 0);
	uint64_t ones = 0;
	for (size_t i = 0; i < sizeof buf; i++)
		ones += (uint64_t)__builtin_popcount(buf[i]);
	/* 524288 bits: mean 262144, sd 362; 10 sd either side. */
	assert_true(ones > 262144 - 3620 && ones < 262144 + 3620);
}

static uint32_t cur_core;
static uint32_t core_index(void)
{
	return cur_core;
}

static void test_kernel_instances(void **state)
{
	(void)state;
	uint8_t a[32], b[32];
	struct fake_src s = { .fail = true };
	struct csprng_config c = cfg_for(&s, 0);
	assert_int_equal(csprng_kernel_init(&c, 4, core_index), -E_NOENT);
	assert_null(csprng_kernel_source());
	assert_int_equal(csprng_kernel_bytes(a, sizeof a), -E_CLOSED);
	assert_int_equal(csprng_kernel_reseed(a, sizeof a), -E_CLOSED);
	assert_int_equal(csprng_kernel_init(&c, 0, core_index), -E_INVAL);
	assert_int_equal(csprng_kernel_init(&c, CSPRNG_MAX_CORES + 1, core_index), -E_INVAL);
	s.fail = false;
	s.n_calls = 0;
	assert_int_equal(csprng_kernel_init(&c, 4, core_index), 0);
	assert_string_equal(csprng_kernel_source(), "fake");
	assert_int_equal(s.n_calls, 4); /* one seed per core */
	cur_core = 0;
	assert_int_equal(csprng_kernel_bytes(a, sizeof a), 0);
	cur_core = 3;
	assert_int_equal(csprng_kernel_bytes(b, sizeof b), 0);
	assert_memory_not_equal(a, b, sizeof a);
	assert_int_equal(csprng_kernel_reseed(a, sizeof a), 0);
	cur_core = 4; /* out of range: refused, not a wild access */
	assert_int_equal(csprng_kernel_bytes(a, sizeof a), -E_CLOSED);
	cur_core = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_rfc_2_3_2),
		cmocka_unit_test(test_encrypt_rfc_2_4_2),
		cmocka_unit_test(test_block_rfc_a1_1),
		cmocka_unit_test(test_no_entropy_refuses),
		cmocka_unit_test(test_deterministic_and_split),
		cmocka_unit_test(test_reseed_changes_stream),
		cmocka_unit_test(test_auto_reseed),
		cmocka_unit_test(test_bit_balance),
		cmocka_unit_test(test_kernel_instances),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
