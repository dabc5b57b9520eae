/* SPDX-License-Identifier: MIT
 * Unit tests for tls/accel/sha256_process.c: mbedTLS's SHA-256 (MBEDTLS_SHA256_PROCESS_ALT), whose
 * block function is OpenSSL's perlasm, against the system's OpenSSL libcrypto SHA256() as
 * the reference, on every code path the CPU offers (accel_cpu_use_optional: x86_64 SHA-NI
 * and the integer code; aarch64 the SHA-256 instructions and the integer code):
 *  - FIPS 180-2's examples ("abc", the 448-bit message, a million 'a') and the empty message;
 *  - every length 0..1024 and SHA256_TEST_N random lengths up to 64 KiB (default 3,000),
 *    one-shot through mbedtls_sha256(), at a random misalignment of the input;
 *  - the same messages fed in random pieces (empty ones included) through
 *    starts/update/finish, on each path and with the path switched between pieces (the
 *    paths share one state layout, so a hash may move from one to the other).
 * A path is named only after accel_cpu_describe() said it is the one running. One PASS line
 * per figure with its counts; SHA256_TEST_SEED sets the seed (printed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/sha256.h>
#include <openssl/sha.h>

#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"
#include "tests/support/splitmix.h"

#define MAX_LEN (64u * 1024u)
#define MISALIGN 16u /* inputs start at buf + 0..15 */

/* ---- the paths to run ---- */

struct path {
	bool optional; /* accel_cpu_use_optional(optional) selects it */
	char name[64]; /* the SHA-256 part of accel_cpu_describe(), e.g. "x86_64 SHA-NI" */
};
static struct path paths[2];
static size_t n_paths;

static const char *sha_name(void)
{
	const char *d = accel_cpu_describe();
	const char *s = strstr(d, "SHA-256 ");
	assert_non_null(s);
	return s + strlen("SHA-256 ");
}

/* Selects p's code and checks it is the one that will run. */
static void path_use(const struct path *p)
{
	accel_cpu_use_optional(p->optional);
	assert_string_equal(sha_name(), p->name);
}

static void paths_find(void)
{
	accel_cpu_init();
	n_paths = 0;
	for (int on = 1; on >= 0; on--) {
		accel_cpu_use_optional(on);
		const char *name = sha_name();
		if (n_paths && strcmp(paths[0].name, name) == 0)
			continue;
		paths[n_paths].optional = on;
		snprintf(paths[n_paths].name, sizeof paths[n_paths].name, "%s", name);
		n_paths++;
	}
	accel_cpu_use_optional(true);
	for (size_t i = 0; i < n_paths; i++)
		print_message("[ sha256   ] path %zu: SHA-256 %s\n", i, paths[i].name);
	if (n_paths == 1)
		print_message("[ sha256   ] this CPU has no SHA-256 instructions: one path only\n");
	/* The fallback is named without an instruction-set suffix: the integer code. */
	assert_true(strcmp(paths[n_paths - 1].name, "x86_64") == 0 ||
		    strcmp(paths[n_paths - 1].name, "Armv8") == 0);
}

/* ---- deterministic randomness (splitmix64), seed from SHA256_TEST_SEED ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	return splitmix64(&rng_state);
}

static size_t rng_below(size_t n)
{
	return (size_t)(rng_next() % n);
}

static void rng_bytes(uint8_t *out, size_t len)
{
	splitmix64_bytes(&rng_state, out, len);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *e = getenv(name);
	return e && *e ? strtoull(e, NULL, 0) : dflt;
}

static uint8_t *buf; /* MAX_LEN + MISALIGN random bytes */

static int group_setup(void **state)
{
	(void)state;
	paths_find();
	rng_state = env_u64("SHA256_TEST_SEED", 0x5eed256ull);
	print_message("[ sha256   ] SHA256_TEST_SEED=%#llx\n", (unsigned long long)rng_state);
	buf = malloc(MAX_LEN + MISALIGN);
	assert_non_null(buf);
	rng_bytes(buf, MAX_LEN + MISALIGN);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	free(buf);
	accel_cpu_use_optional(true);
	return 0;
}

static void hex(char *out, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* mbedTLS's one-shot digest of msg equals OpenSSL's. */
static void check_oneshot(const uint8_t *msg, size_t len)
{
	uint8_t got[32], want[32];
	assert_int_equal(mbedtls_sha256(msg, len, got, 0), 0);
	assert_non_null(SHA256(msg, len, want));
	if (memcmp(got, want, 32) != 0) {
		char g[65], w[65];
		hex(g, got, 32);
		hex(w, want, 32);
		fail_msg("length %zu at offset %zu: mbedTLS %s, OpenSSL %s", len,
			 (size_t)(msg - buf), g, w);
	}
}

/* ---- FIPS 180-2 examples ---- */

static void kat(const char *what, const uint8_t *msg, size_t len, const char *want_hex, bool pieces)
{
	uint8_t got[32];
	char g[65];
	if (!pieces) {
		assert_int_equal(mbedtls_sha256(msg, len, got, 0), 0);
	} else { /* a million 'a' as 1,000 updates of 1,000 */
		mbedtls_sha256_context c;
		mbedtls_sha256_init(&c);
		assert_int_equal(mbedtls_sha256_starts(&c, 0), 0);
		for (size_t i = 0; i < 1000; i++)
			assert_int_equal(mbedtls_sha256_update(&c, msg, len), 0);
		assert_int_equal(mbedtls_sha256_finish(&c, got), 0);
		mbedtls_sha256_free(&c);
	}
	hex(g, got, 32);
	if (strcmp(g, want_hex) != 0)
		fail_msg("%s: got %s, want %s", what, g, want_hex);
}

static void test_known_answers(void **state)
{
	(void)state;
	static const char m448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	uint8_t a1000[1000];
	memset(a1000, 'a', sizeof a1000);
	for (size_t p = 0; p < n_paths; p++) {
		path_use(&paths[p]);
		kat("empty", (const uint8_t *)"", 0,
		    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", false);
		kat("\"abc\"", (const uint8_t *)"abc", 3,
		    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", false);
		kat("448-bit message", (const uint8_t *)m448, strlen(m448),
		    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", false);
		kat("a million 'a'", a1000, sizeof a1000,
		    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", true);
		print_message("[ sha256   ] PASS SHA-256 %s: 4 FIPS 180-2 answers (empty, \"abc\", 448 bits, "
			      "10^6 'a')\n", paths[p].name);
	}
	accel_cpu_use_optional(true);
}

/* ---- one-shot, every short length and random long ones ---- */

static void test_lengths(void **state)
{
	(void)state;
	size_t n_random = (size_t)env_u64("SHA256_TEST_N", 3000);
	for (size_t p = 0; p < n_paths; p++) {
		path_use(&paths[p]);
		uint64_t bytes = 0;
		for (size_t len = 0; len <= 1024; len++) {
			check_oneshot(buf + rng_below(MISALIGN), len);
			bytes += len;
		}
		for (size_t i = 0; i < n_random; i++) {
			size_t len = rng_below(MAX_LEN + 1);
			check_oneshot(buf + rng_below(MISALIGN), len);
			bytes += len;
		}
		print_message("[ sha256   ] PASS SHA-256 %s: one-shot equals OpenSSL for all 1,025 lengths "
			      "0..1024 and %zu random lengths up to %u (%llu bytes)\n",
			      paths[p].name, n_random, MAX_LEN, (unsigned long long)bytes);
	}
	accel_cpu_use_optional(true);
}

/* ---- incremental updates split at random points ---- */

/* Hashes msg in random pieces (some empty); switch_paths selects a random path before each
 * piece. Returns the number of update calls. */
static size_t check_pieces(const uint8_t *msg, size_t len, const struct path *p, bool switch_paths)
{
	uint8_t got[32], want[32];
	mbedtls_sha256_context c;
	size_t n_updates = 0, at = 0;
	path_use(p);
	mbedtls_sha256_init(&c);
	assert_int_equal(mbedtls_sha256_starts(&c, 0), 0);
	while (at < len || n_updates == 0) {
		/* Mostly short pieces around block boundaries, sometimes long ones. */
		size_t left = len - at;
		size_t piece = rng_below(4) == 0 ? rng_below(left + 1) : rng_below(left < 200 ? left + 1 : 200);
		if (switch_paths)
			path_use(&paths[rng_below(n_paths)]);
		assert_int_equal(mbedtls_sha256_update(&c, msg + at, piece), 0);
		at += piece;
		n_updates++;
	}
	if (switch_paths)
		path_use(&paths[rng_below(n_paths)]);
	assert_int_equal(mbedtls_sha256_finish(&c, got), 0);
	mbedtls_sha256_free(&c);
	assert_non_null(SHA256(msg, len, want));
	if (memcmp(got, want, 32) != 0)
		fail_msg("%zu bytes in %zu pieces on %s%s: digest differs from OpenSSL's", len, n_updates,
			 p->name, switch_paths ? " (paths switched between pieces)" : "");
	return n_updates;
}

static void run_pieces(const char *what, const struct path *p, bool switch_paths, size_t n)
{
	size_t n_updates = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = rng_below(4) == 0 ? rng_below(MAX_LEN + 1) : rng_below(2049);
		n_updates += check_pieces(buf + rng_below(MISALIGN), len, p, switch_paths);
	}
	print_message("[ sha256   ] PASS SHA-256 %s: %zu messages up to %u bytes in %zu random "
		      "pieces equal OpenSSL\n", what, n, MAX_LEN, n_updates);
}

static void test_split_updates(void **state)
{
	(void)state;
	size_t n = (size_t)env_u64("SHA256_TEST_N", 3000);
	for (size_t p = 0; p < n_paths; p++)
		run_pieces(paths[p].name, &paths[p], false, n);
	if (n_paths > 1)
		run_pieces("paths switched between pieces", &paths[0], true, n);
	accel_cpu_use_optional(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_split_updates),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
