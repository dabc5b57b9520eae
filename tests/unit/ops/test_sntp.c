/* SPDX-License-Identifier: MIT
 * Unit tests for ops/sntp: the request's bytes, a table of replies (one accepted, one
 * refused for every reason, the Kiss-o'-Death codes), NTP timestamps of both eras and
 * the fraction to the nanosecond, the delay with asymmetric numbers, the vote (liars
 * outvoted, no strict majority, min_agree, first sync and later steps, the median, the
 * window's edges) and the private address check. Pure functions: nothing to leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "ops/sntp.h"

#define S 1000000000ull
#define MS 1000000ull
#define NTP_UNIX_DELTA 2208988800ull
#define NONCE 0x0123456789abcdefull
/* 2023-11-14T22:13:20Z in both clocks. */
#define T_UNIX 1700000000ull
#define T_NTP (T_UNIX + NTP_UNIX_DELTA)
#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

struct reply {
	uint8_t li, vn, mode, stratum;
	uint32_t root_delay, root_disp; /* 16.16 */
	char refid[4];
	uint64_t org, rx, tx;
};

/* A good reply: server received 10 ms after we sent (our mono 1000 s), answered 1 ms
 * later, we received 30 ms after sending. */
static struct reply good(void)
{
	struct reply r = { 0, 4, 4, 2, 0x00000100, 0x00000200, { 'G', 'P', 'S', 0 }, NONCE,
			   T_NTP << 32, T_NTP << 32 | 0x00418937u /* 1 ms */ };
	return r;
}

static void build(uint8_t p[48], const struct reply *r)
{
	memset(p, 0, 48);
	p[0] = (uint8_t)(r->li << 6 | r->vn << 3 | r->mode);
	p[1] = r->stratum;
	p[2] = 6;
	p[3] = 0xec;
	st_be32(p + 4, r->root_delay);
	st_be32(p + 8, r->root_disp);
	memcpy(p + 12, r->refid, 4);
	st_be64(p + 16, (T_NTP - 60) << 32);
	st_be64(p + 24, r->org);
	st_be64(p + 32, r->rx);
	st_be64(p + 40, r->tx);
}

static const struct ops_sntp_limits lim = { 100 * MS, 1 * S };
static const uint64_t T1 = 1000 * S, T4 = 1000 * S + 30 * MS;

static int parse(const struct reply *r, struct ops_sntp_sample *s)
{
	uint8_t p[48];
	build(p, r);
	return ops_sntp_parse(p, sizeof p, NONCE, T1, T4, &lim, s);
}

static void test_request(void **state)
{
	(void)state;
	uint8_t p[48];
	memset(p, 0xa5, sizeof p);
	ops_sntp_request(p, NONCE);
	assert_int_equal(p[0], 0x23); /* LI 0, VN 4, mode 3 */
	for (size_t i = 1; i < 40; i++)
		assert_int_equal(p[i], 0);
	assert_true(ld_be64(p + 40) == NONCE);
}

static void test_good_reply(void **state)
{
	(void)state;
	struct ops_sntp_sample s;
	struct reply r = good();
	assert_int_equal(parse(&r, &s), 0);
	assert_int_equal(s.reject, OPS_SNTP_R_OK);
	assert_int_equal(s.stratum, 2);
	assert_true(s.mono_ns == T4);
	/* 0x418937 / 2^32 s = 999999.9... ns: rounded down. */
	uint64_t t3 = T_UNIX * S + 999999;
	assert_true(s.delay_ns == 30 * MS - 999999);
	assert_true(s.wall_ns == t3 + (30 * MS - 999999) / 2);
	/* root delay 0x100 / 2^16 s = 3906250 ns, dispersion 0x200 = 7812500 ns. */
	assert_true(s.root_dist_ns == 3906250 / 2 + 7812500);
	assert_string_equal(s.kiss, "");
	assert_false(s.kiss_stop);

	/* Version 3 too; extension fields and a MAC after 48 bytes are ignored. */
	r.vn = 3;
	uint8_t p[48 + 24];
	build(p, &r);
	memset(p + 48, 0xff, 24);
	assert_int_equal(ops_sntp_parse(p, sizeof p, NONCE, T1, T4, &lim, &s), 0);
	/* Leap second warnings (LI 1, 2) are synchronised servers. */
	r.li = 2;
	assert_int_equal(parse(&r, &s), 0);
	r.stratum = 15;
	assert_int_equal(parse(&r, &s), 0);
	r.stratum = 1;
	assert_int_equal(parse(&r, &s), 0);
}

struct bad_case {
	const char *what;
	struct reply r;
	size_t len;
	uint64_t t4;
	int err;
	uint8_t reject;
};

static void test_rejections(void **state)
{
	(void)state;
	struct bad_case c[24];
	size_t n = 0;
	struct reply g = good();
#define CASE(w, field, value, e, why)                                                           \
	do {                                                                                    \
		c[n] = (struct bad_case){ w, g, 48, T4, -(e), why };                           \
		c[n].r.field = value;                                                          \
		n++;                                                                           \
	} while (0)
	c[n++] = (struct bad_case){ "short", g, 47, T4, -E_INVAL, OPS_SNTP_R_SHORT };
	c[n++] = (struct bad_case){ "empty", g, 0, T4, -E_INVAL, OPS_SNTP_R_SHORT };
	CASE("client mode", mode, 3, E_PROTO, OPS_SNTP_R_MODE);
	CASE("broadcast mode", mode, 5, E_PROTO, OPS_SNTP_R_MODE);
	CASE("version 2", vn, 2, E_PROTO, OPS_SNTP_R_VERSION);
	CASE("version 5", vn, 5, E_PROTO, OPS_SNTP_R_VERSION);
	CASE("other origin", org, NONCE + 1, E_PROTO, OPS_SNTP_R_ORIGIN);
	CASE("zero origin", org, 0, E_PROTO, OPS_SNTP_R_ORIGIN);
	CASE("kiss", stratum, 0, E_PERM, OPS_SNTP_R_KISS);
	CASE("alarm", li, 3, E_PROTO, OPS_SNTP_R_UNSYNC);
	CASE("stratum 16", stratum, 16, E_PROTO, OPS_SNTP_R_STRATUM);
	CASE("stratum 255", stratum, 255, E_PROTO, OPS_SNTP_R_STRATUM);
	CASE("zero receive", rx, 0, E_PROTO, OPS_SNTP_R_ZERO_TIME);
	CASE("zero transmit", tx, 0, E_PROTO, OPS_SNTP_R_ZERO_TIME);
	CASE("1969", tx, (NTP_UNIX_DELTA - 1) << 32, E_RANGE, OPS_SNTP_R_BEFORE_EPOCH);
	CASE("transmit before receive", rx, (T_NTP << 32) + 0x00500000u, E_PROTO, OPS_SNTP_R_PROC_NEGATIVE);
	CASE("processing longer than the round trip", tx, (T_NTP + 1) << 32, E_PROTO, OPS_SNTP_R_DELAY_NEGATIVE);
	c[n++] = (struct bad_case){ "received before sent", g, 48, T1 - 1, -E_PROTO, OPS_SNTP_R_DELAY_NEGATIVE };
	c[n++] = (struct bad_case){ "slow", g, 48, T1 + 102 * MS, -E_RANGE, OPS_SNTP_R_DELAY_HIGH };
	CASE("far from the root", root_disp, 0x00010001, E_RANGE, OPS_SNTP_R_ROOT_DISTANCE);
#undef CASE
	assert_true(n <= ARRAY_LEN(c));
	bool seen[OPS_SNTP_R__COUNT] = { false };
	for (size_t i = 0; i < n; i++) {
		uint8_t p[48];
		struct ops_sntp_sample s;
		build(p, &c[i].r);
		int rc = ops_sntp_parse(p, c[i].len, NONCE, T1, c[i].t4, &lim, &s);
		if (rc != c[i].err || s.reject != c[i].reject)
			fail_msg("%s: rc %d reject %s, want %d %s", c[i].what, rc, ops_sntp_reject_name(s.reject),
				 c[i].err, ops_sntp_reject_name(c[i].reject));
		assert_true(s.wall_ns == 0 && s.mono_ns == 0 && s.delay_ns == 0);
		seen[s.reject] = true;
	}
	/* Every reason has a case and a name of its own. */
	for (uint32_t r = 1; r < OPS_SNTP_R__COUNT; r++) {
		assert_true(seen[r]);
		assert_string_not_equal(ops_sntp_reject_name(r), "unknown");
		for (uint32_t q = 0; q < r; q++)
			assert_string_not_equal(ops_sntp_reject_name(r), ops_sntp_reject_name(q));
	}
	assert_string_equal(ops_sntp_reject_name(OPS_SNTP_R__COUNT), "unknown");
}

static void test_limits_edges(void **state)
{
	(void)state;
	struct ops_sntp_sample s;
	struct reply r = good();
	uint8_t p[48];
	build(p, &r);
	/* Delay exactly at the limit passes. */
	uint64_t t4 = T1 + 100 * MS + 999999;
	assert_int_equal(ops_sntp_parse(p, 48, NONCE, T1, t4, &lim, &s), 0);
	assert_true(s.delay_ns == 100 * MS);
	assert_int_equal(ops_sntp_parse(p, 48, NONCE, T1, t4 + 1, &lim, &s), -E_RANGE);
	/* Zero processing and zero delay are valid. */
	r.tx = r.rx;
	build(p, &r);
	assert_int_equal(ops_sntp_parse(p, 48, NONCE, T1, T1, &lim, &s), 0);
	assert_true(s.delay_ns == 0 && s.wall_ns == T_UNIX * S);
	/* Root distance exactly 1 s: root delay 1 s (half counts), dispersion 0.5 s. */
	r = good();
	r.root_delay = 0x00010000;
	r.root_disp = 0x00008000;
	assert_int_equal(parse(&r, &s), 0);
	assert_true(s.root_dist_ns == S);
	r.root_disp = 0x00008001;
	assert_int_equal(parse(&r, &s), -E_RANGE);
	assert_int_equal(s.reject, OPS_SNTP_R_ROOT_DISTANCE);
	/* A "negative" RFC 4330 root delay is huge unsigned: refused. */
	r = good();
	r.root_delay = 0xffff0000u;
	assert_int_equal(parse(&r, &s), -E_RANGE);
}

static void test_kiss(void **state)
{
	(void)state;
	static const struct {
		char code[4];
		const char *shown;
		bool stop;
	} k[] = {
		{ { 'R', 'A', 'T', 'E' }, "RATE", true }, { { 'D', 'E', 'N', 'Y' }, "DENY", true },
		{ { 'R', 'S', 'T', 'R' }, "RSTR", true }, { { 'I', 'N', 'I', 'T' }, "INIT", false },
		{ { 'r', 'a', 't', 'e' }, "rate", false }, { { 1, 'A', '\x7f', 0 }, "?A??", false },
	};
	for (size_t i = 0; i < ARRAY_LEN(k); i++) {
		struct reply r = good();
		r.stratum = 0;
		r.li = 3; /* as servers send it: the kiss is still reported */
		memcpy(r.refid, k[i].code, 4);
		struct ops_sntp_sample s;
		assert_int_equal(parse(&r, &s), -E_PERM);
		assert_int_equal(s.reject, OPS_SNTP_R_KISS);
		assert_string_equal(s.kiss, k[i].shown);
		assert_int_equal(s.kiss_stop, k[i].stop);
		/* Not ours: not believed (invariant 2). */
		r.org = NONCE ^ 1;
		assert_int_equal(parse(&r, &s), -E_PROTO);
		assert_int_equal(s.reject, OPS_SNTP_R_ORIGIN);
		assert_false(s.kiss_stop);
		assert_string_equal(s.kiss, "");
	}
}

static void test_eras(void **state)
{
	(void)state;
	/* Era 0 (MSB set, from 1900). */
	assert_true(ops_sntp_ts_to_unix_ns(T_NTP << 32) == T_UNIX * S);
	assert_true(ops_sntp_ts_to_unix_ns((NTP_UNIX_DELTA + 1) << 32) == S);
	assert_true(ops_sntp_ts_to_unix_ns(0xffffffffull << 32) == 2085978495ull * S);
	/* 1968-01-20 .. 1970: before Unix time, and the epoch itself (0 = unknown). */
	assert_true(ops_sntp_ts_to_unix_ns(0x80000000ull << 32) == 0);
	assert_true(ops_sntp_ts_to_unix_ns((NTP_UNIX_DELTA - 1) << 32 | 0xffffffffu) == 0);
	assert_true(ops_sntp_ts_to_unix_ns(NTP_UNIX_DELTA << 32) == 0);
	assert_true(ops_sntp_ts_to_unix_ns(NTP_UNIX_DELTA << 32 | 0x80000000u) == S / 2);
	/* Era 1 (MSB clear, from 2036-02-07T06:28:16Z = Unix 2085978496). */
	assert_true(ops_sntp_ts_to_unix_ns(0) == 2085978496ull * S);
	assert_true(ops_sntp_ts_to_unix_ns(1ull << 32) == 2085978497ull * S);
	assert_true(ops_sntp_ts_to_unix_ns(0x7fffffffull << 32) == 4233462143ull * S); /* 2104-02-26 */
	/* The fraction: * 1e9 >> 32, rounded down. */
	assert_true(ops_sntp_ts_to_unix_ns(T_NTP << 32 | 1u) == T_UNIX * S);          /* 0.23 ns */
	assert_true(ops_sntp_ts_to_unix_ns(T_NTP << 32 | 5u) == T_UNIX * S + 1);      /* 1.16 ns */
	assert_true(ops_sntp_ts_to_unix_ns(T_NTP << 32 | 0x10000000u) == T_UNIX * S + 62500000);
	assert_true(ops_sntp_ts_to_unix_ns(T_NTP << 32 | 0xffffffffu) == T_UNIX * S + 999999999);
	assert_true(ops_sntp_ts_to_unix_ns(T_NTP << 32 | 0x418937u) == T_UNIX * S + 999999);
	assert_true(ops_sntp_ts_to_unix_ns(T_NTP << 32 | 0x418938u) == T_UNIX * S + 1000000);

	/* A reply in era 1, and one whose exchange straddles the era change. */
	struct ops_sntp_sample s;
	struct reply r = good();
	r.rx = 5ull << 32 | 0x80000000u;
	r.tx = r.rx;
	assert_int_equal(parse(&r, &s), 0);
	assert_true(s.wall_ns == 2085978501ull * S + S / 2 + 15 * MS);
	r.rx = 0xffffffffull << 32 | 0xfff00000u; /* 2036-02-07T06:28:15.9998 */
	r.tx = 0x00000000ull << 32 | 0x00100000u; /* 2036-02-07T06:28:16.0002 */
	assert_int_equal(parse(&r, &s), 0);
	uint64_t t2 = 2085978495ull * S + (0xfff00000ull * S >> 32);
	uint64_t t3 = 2085978496ull * S + (0x00100000ull * S >> 32);
	assert_true(s.delay_ns == 30 * MS - (t3 - t2));
	assert_true(s.wall_ns == t3 + s.delay_ns / 2);
}

static void test_delay_asymmetric(void **state)
{
	(void)state;
	/* Out 250 ms round trip by our clock; the server held it 70 ms, and its clock is an
	 * hour off ours (irrelevant: each side measures only its own interval). */
	struct reply r = good();
	r.rx = (T_NTP + 3600) << 32 | 0x1999999au; /* +0.1 s */
	r.tx = (T_NTP + 3600) << 32 | 0x2b851eb9u; /* +0.17 s */
	uint8_t p[48];
	build(p, &r);
	struct ops_sntp_limits l = { 300 * MS, S };
	struct ops_sntp_sample s;
	uint64_t t1 = 77 * S + 123, t4 = t1 + 250 * MS;
	assert_int_equal(ops_sntp_parse(p, 48, NONCE, t1, t4, &l, &s), 0);
	uint64_t t2 = (T_UNIX + 3600) * S + (0x1999999aull * S >> 32);
	uint64_t t3 = (T_UNIX + 3600) * S + (0x2b851eb9ull * S >> 32);
	assert_true(t2 == (T_UNIX + 3600) * S + 100000000);
	assert_true(t3 == (T_UNIX + 3600) * S + 170000000);
	assert_true(s.delay_ns == 180 * MS);
	assert_true(s.wall_ns == t3 + 90 * MS);
	assert_true(s.mono_ns == t4);
	/* An odd delay: half rounds down. */
	assert_int_equal(ops_sntp_parse(p, 48, NONCE, t1, t4 + 1, &l, &s), 0);
	assert_true(s.delay_ns == 180 * MS + 1 && s.wall_ns == t3 + 90 * MS);
}

/* ---- the vote ---- */

#define W0 (1800000000ull * S) /* the true time at NOW */
#define NOW (5000 * S)

/* A sample taken `ago_ns` before NOW whose projection to NOW is W0 + err_ns. */
static struct ops_sntp_sample smp(uint64_t ago_ns, int64_t err_ns)
{
	struct ops_sntp_sample s = { 0 };
	s.mono_ns = NOW - ago_ns;
	s.wall_ns = W0 - ago_ns + (uint64_t)err_ns;
	s.stratum = 2;
	return s;
}

static const struct ops_sntp_vote_cfg vcfg = { S, 60 * S, 2, false };

static void test_vote_liar_outvoted(void **state)
{
	(void)state;
	struct ops_sntp_sample s[4] = { smp(3 * S, 0), smp(2 * S, 200 * (int64_t)MS),
					smp(1 * S, 400 * (int64_t)MS), smp(0, 3600 * (int64_t)S) };
	struct ops_sntp_decision d;
	assert_int_equal(ops_sntp_vote(s, 4, NOW, W0 + 100 * MS, &vcfg, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_ACCEPT);
	assert_int_equal(d.n_agree, 3);
	assert_true(d.wall_ns == W0 + 200 * MS);
	assert_true(d.offset_ns == 100 * (int64_t)MS);
	assert_true(d.lo_ns == W0 && d.hi_ns == W0 + 400 * MS);
	/* The liar first in the array changes nothing. */
	struct ops_sntp_sample t[4] = { s[3], s[1], s[0], s[2] };
	assert_int_equal(ops_sntp_vote(t, 4, NOW, W0 + 100 * MS, &vcfg, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_ACCEPT);
	assert_true(d.wall_ns == W0 + 200 * MS);
}

static void test_vote_no_majority(void **state)
{
	(void)state;
	struct ops_sntp_sample s[4] = { smp(0, 0), smp(0, 100 * (int64_t)MS), smp(0, 100 * (int64_t)S),
					smp(0, 100 * (int64_t)S + 500 * (int64_t)MS) };
	struct ops_sntp_decision d;
	assert_int_equal(ops_sntp_vote(s, 4, NOW, W0, &vcfg, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_NO_QUORUM);
	assert_int_equal(d.n_agree, 2);
	assert_true(d.wall_ns == 0 && d.offset_ns == 0);
	/* An unusable sample (no time) still counts against the majority. */
	struct ops_sntp_sample u[3] = { smp(0, 0), smp(0, 0), { 0 } };
	assert_int_equal(ops_sntp_vote(u, 3, NOW, W0, &vcfg, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_ACCEPT);
	struct ops_sntp_vote_cfg one = vcfg;
	one.min_agree = 1;
	assert_int_equal(ops_sntp_vote(u + 1, 2, NOW, W0, &one, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_NO_QUORUM);
	assert_int_equal(d.n_agree, 1);
	/* Nothing at all. */
	assert_int_equal(ops_sntp_vote(NULL, 0, NOW, W0, &one, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_NO_QUORUM);
	assert_int_equal(d.n_agree, 0);
	/* More than the vote takes. */
	struct ops_sntp_sample many[OPS_SNTP_MAX_SAMPLES + 1];
	for (size_t i = 0; i < ARRAY_LEN(many); i++)
		many[i] = smp(0, 0);
	assert_int_equal(ops_sntp_vote(many, ARRAY_LEN(many), NOW, W0, &one, &d), -E_RANGE);
	assert_int_equal(d.outcome, OPS_SNTP_NO_QUORUM);
	assert_int_equal(ops_sntp_vote(many, OPS_SNTP_MAX_SAMPLES, NOW, W0, &one, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_ACCEPT);
	assert_int_equal(d.n_agree, OPS_SNTP_MAX_SAMPLES);
}

static void test_vote_min_agree(void **state)
{
	(void)state;
	struct ops_sntp_sample s[1] = { smp(2 * S, 0) };
	struct ops_sntp_vote_cfg c = vcfg;
	struct ops_sntp_decision d;
	c.min_agree = 1;
	assert_int_equal(ops_sntp_vote(s, 1, NOW, 0, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_STEP_FIRST); /* local unknown */
	assert_true(d.wall_ns == W0 && d.offset_ns == 0);
	c.min_agree = 0; /* counts as 1 */
	assert_int_equal(ops_sntp_vote(s, 1, NOW, W0 - 5 * S, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_ACCEPT);
	assert_true(d.offset_ns == 5 * (int64_t)S);
	c.min_agree = 2;
	assert_int_equal(ops_sntp_vote(s, 1, NOW, 0, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_NO_QUORUM);
	assert_int_equal(d.n_agree, 1);
	/* Three agreeing of three, min_agree 4: not enough however unanimous. */
	struct ops_sntp_sample t[3] = { smp(0, 0), smp(0, 1), smp(0, 2) };
	c.min_agree = 4;
	assert_int_equal(ops_sntp_vote(t, 3, NOW, 0, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_NO_QUORUM);
}

static void test_vote_steps(void **state)
{
	(void)state;
	struct ops_sntp_sample s[3] = { smp(S, 0), smp(S, 10 * (int64_t)MS), smp(S, 20 * (int64_t)MS) };
	struct ops_sntp_vote_cfg c = vcfg;
	struct ops_sntp_decision d;
	/* First sync: a day away (the RTC was wrong) is stepped. */
	c.first_sync = true;
	assert_int_equal(ops_sntp_vote(s, 3, NOW, W0 - 86400 * S, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_STEP_FIRST);
	assert_true(d.wall_ns == W0 + 10 * MS);
	assert_true(d.offset_ns == (int64_t)(86400 * S + 10 * MS));
	/* Later: the same distance is refused, the offset still reported. */
	c.first_sync = false;
	assert_int_equal(ops_sntp_vote(s, 3, NOW, W0 - 86400 * S, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_REFUSE_TOO_FAR);
	assert_true(d.offset_ns == (int64_t)(86400 * S + 10 * MS));
	assert_true(d.wall_ns == W0 + 10 * MS);
	/* Behind as well as ahead; exactly max_step is accepted, one ns more is not. */
	assert_int_equal(ops_sntp_vote(s, 3, NOW, W0 + 10 * MS + 60 * S, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_ACCEPT);
	assert_true(d.offset_ns == -60 * (int64_t)S);
	assert_int_equal(ops_sntp_vote(s, 3, NOW, W0 + 10 * MS + 60 * S + 1, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_REFUSE_TOO_FAR);
	assert_true(d.offset_ns == -60 * (int64_t)S - 1);
	/* Local time unknown after a sync (cannot happen with a set clock, but is safe). */
	assert_int_equal(ops_sntp_vote(s, 3, NOW, 0, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_STEP_FIRST);
	/* A local clock beyond int64 ns: the offset saturates. */
	assert_int_equal(ops_sntp_vote(s, 3, NOW, UINT64_MAX, &c, &d), 0);
	assert_int_equal(d.outcome, OPS_SNTP_REFUSE_TOO_FAR);
	assert_true(d.offset_ns == -INT64_MAX);
}

static void test_vote_median_and_window(void **state)
{
	(void)state;
	struct ops_sntp_decision d;
	struct ops_sntp_vote_cfg c = vcfg;
	c.min_agree = 1;
	/* Even count: the lower middle. */
	struct ops_sntp_sample e[4] = { smp(0, 300 * (int64_t)MS), smp(0, 0), smp(0, 200 * (int64_t)MS),
					smp(0, 100 * (int64_t)MS) };
	assert_int_equal(ops_sntp_vote(e, 4, NOW, W0, &c, &d), 0);
	assert_int_equal(d.n_agree, 4);
	assert_true(d.wall_ns == W0 + 100 * MS);
	/* Odd count: the middle one, not the mean (0 + 0.1 + 0.9) / 3. */
	struct ops_sntp_sample o[3] = { smp(0, 900 * (int64_t)MS), smp(0, 0), smp(0, 100 * (int64_t)MS) };
	assert_int_equal(ops_sntp_vote(o, 3, NOW, W0, &c, &d), 0);
	assert_true(d.wall_ns == W0 + 100 * MS);
	/* Projection: samples from different instants meet at NOW (no rate correction). */
	struct ops_sntp_sample p[3] = { smp(64 * S, 0), smp(1, 0), smp(1000 * S, 0) };
	assert_int_equal(ops_sntp_vote(p, 3, NOW, W0, &c, &d), 0);
	assert_int_equal(d.n_agree, 3);
	assert_true(d.wall_ns == W0 && d.lo_ns == W0 && d.hi_ns == W0 && d.offset_ns == 0);
	/* A sample from after NOW is projected back. */
	struct ops_sntp_sample f = { NOW + 5 * S, W0 + 5 * S, 0, 0, 2, 0, "", false };
	assert_int_equal(ops_sntp_vote(&f, 1, NOW, W0, &c, &d), 0);
	assert_true(d.wall_ns == W0);
	/* Exactly agree_ns apart agree, one ns more does not. */
	struct ops_sntp_sample a[2] = { smp(0, 0), smp(0, (int64_t)S) };
	assert_int_equal(ops_sntp_vote(a, 2, NOW, W0, &c, &d), 0);
	assert_int_equal(d.n_agree, 2);
	assert_int_equal(d.outcome, OPS_SNTP_ACCEPT);
	a[1] = smp(0, (int64_t)S + 1);
	assert_int_equal(ops_sntp_vote(a, 2, NOW, W0, &c, &d), 0);
	assert_int_equal(d.n_agree, 1);
	assert_int_equal(d.outcome, OPS_SNTP_NO_QUORUM);
	/* Two overlapping windows of equal size: the narrower wins, then the earlier. */
	struct ops_sntp_sample w[3] = { smp(0, 0), smp(0, 700 * (int64_t)MS), smp(0, 1200 * (int64_t)MS) };
	assert_int_equal(ops_sntp_vote(w, 3, NOW, W0, &c, &d), 0);
	assert_int_equal(d.n_agree, 2);
	assert_true(d.lo_ns == W0 + 700 * MS && d.hi_ns == W0 + 1200 * MS && d.wall_ns == W0 + 700 * MS);
	w[1] = smp(0, 600 * (int64_t)MS);
	w[2] = smp(0, 1200 * (int64_t)MS);
	assert_int_equal(ops_sntp_vote(w, 3, NOW, W0, &c, &d), 0);
	assert_true(d.lo_ns == W0 && d.hi_ns == W0 + 600 * MS && d.wall_ns == W0);
	/* Projections that leave 64 bits are unusable, not wrapped. */
	struct ops_sntp_sample x[2] = { { 0, UINT64_MAX, 0, 0, 2, 0, "", false },
					{ NOW + 10, 5, 0, 0, 2, 0, "", false } };
	assert_int_equal(ops_sntp_vote(x, 2, NOW, W0, &c, &d), 0);
	assert_int_equal(d.n_agree, 0);
	assert_int_equal(d.outcome, OPS_SNTP_NO_QUORUM);
}

static void test_outcome_names(void **state)
{
	(void)state;
	assert_string_equal(ops_sntp_outcome_name(OPS_SNTP_NO_QUORUM), "no quorum");
	assert_string_equal(ops_sntp_outcome_name(OPS_SNTP_STEP_FIRST), "step (first sync)");
	assert_string_equal(ops_sntp_outcome_name(OPS_SNTP_ACCEPT), "accept");
	assert_string_equal(ops_sntp_outcome_name(OPS_SNTP_REFUSE_TOO_FAR), "refuse (too far)");
	assert_string_equal(ops_sntp_outcome_name(99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_good_reply),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_limits_edges),
		cmocka_unit_test(test_kiss),
		cmocka_unit_test(test_eras),
		cmocka_unit_test(test_delay_asymmetric),
		cmocka_unit_test(test_vote_liar_outvoted),
		cmocka_unit_test(test_vote_no_majority),
		cmocka_unit_test(test_vote_min_agree),
		cmocka_unit_test(test_vote_steps),
		cmocka_unit_test(test_vote_median_and_window),
		cmocka_unit_test(test_outcome_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
