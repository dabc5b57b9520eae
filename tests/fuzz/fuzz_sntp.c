/* SPDX-License-Identifier: MIT
 * Fuzz target: SNTP replies and the vote (ops/sntp). The input is a 48-byte header, then
 * chunks. Header: nonce (8), t1 (8), t4 - t1 (4; flags bit 5 puts t4 before t1),
 * max_delay_ns (4), max_root_distance_ns (4), flags (1: bit 0 first_sync, bits 1-4
 * min_agree), agree in 10 ms units - 1 (1), max_step in ms (4), local wall ns (8), now -
 * t4 in ns (4), 2 spare. Chunk: a byte k; k < 0x80: a reply of k bytes given to
 * ops_sntp_parse (a sample when accepted; t4 moves 1 ms per chunk); k >= 0x80: a sample
 * built from the next 16 bytes (mono, wall). At most 8 samples are voted on.
 * Checks every result against the contract: a refusal names one reason and fills
 * nothing else, an accepted sample respects the limits, bytes after 48 change nothing, our
 * own request is never taken for a reply, and a decision's agreeing set is the largest
 * (brute force), a strict majority of at least min_agree, its time one of its samples
 * between their least and greatest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "ops/sntp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR 48

#define CHECK(c)                 \
	do {                     \
		if (!(c))        \
			abort(); \
	} while (0)

static bool project(const struct ops_sntp_sample *s, uint64_t now, uint64_t *at)
{
	if (!s->wall_ns)
		return false;
	if (now >= s->mono_ns)
		return !__builtin_add_overflow(s->wall_ns, now - s->mono_ns, at);
	uint64_t d = s->mono_ns - now;
	if (d >= s->wall_ns)
		return false;
	*at = s->wall_ns - d;
	return true;
}

static void check_parse(const uint8_t *p, size_t len, uint64_t nonce, uint64_t t1, uint64_t t4,
			const struct ops_sntp_limits *lim, struct ops_sntp_sample *s, int rc)
{
	if (rc == 0) {
		CHECK(s->reject == OPS_SNTP_R_OK && len >= OPS_SNTP_PKT_LEN);
		CHECK(s->stratum >= 1 && s->stratum <= 15);
		CHECK(s->mono_ns == t4 && t4 >= t1 && s->wall_ns != 0);
		CHECK(s->delay_ns <= lim->max_delay_ns && s->delay_ns <= t4 - t1);
		CHECK(s->root_dist_ns <= lim->max_root_distance_ns);
		CHECK(ld_be64(p + 24) == nonce && (p[0] & 7) == 4);
		CHECK(s->kiss[0] == '\0' && !s->kiss_stop);
	} else {
		CHECK(rc < 0 && s->reject > OPS_SNTP_R_OK && s->reject < OPS_SNTP_R__COUNT);
		CHECK(s->mono_ns == 0 && s->wall_ns == 0 && s->delay_ns == 0 && s->stratum == 0);
		if (s->reject == OPS_SNTP_R_KISS) {
			CHECK(strlen(s->kiss) == 4 && p[1] == 0);
			for (size_t i = 0; i < 4; i++)
				CHECK(s->kiss[i] >= 0x20 && s->kiss[i] < 0x7f);
		} else {
			CHECK(s->kiss[0] == '\0' && !s->kiss_stop);
		}
		CHECK(strcmp(ops_sntp_reject_name(s->reject), "unknown") != 0);
	}
	if (len > OPS_SNTP_PKT_LEN) {
		struct ops_sntp_sample h;
		int rh = ops_sntp_parse(p, OPS_SNTP_PKT_LEN, nonce, t1, t4, lim, &h);
		CHECK(rh == rc && memcmp(&h, s, sizeof h) == 0);
	}
}

static void check_vote(const struct ops_sntp_sample *s, size_t n, uint64_t now, uint64_t local,
		       const struct ops_sntp_vote_cfg *cfg)
{
	struct ops_sntp_decision d;
	CHECK(ops_sntp_vote(s, n, now, local, cfg, &d) == 0);
	CHECK(strcmp(ops_sntp_outcome_name(d.outcome), "unknown") != 0);
	uint64_t v[OPS_SNTP_MAX_SAMPLES];
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (project(&s[i], now, &v[m]))
			m++;
	/* The largest agreeing set by brute force. */
	size_t best = 0;
	for (size_t i = 0; i < m; i++) {
		size_t k = 0;
		for (size_t j = 0; j < m; j++)
			k += v[j] >= v[i] && v[j] - v[i] <= cfg->agree_ns;
		best = k > best ? k : best;
	}
	CHECK(d.n_agree == best);
	if (best)
		CHECK(d.lo_ns <= d.hi_ns && d.hi_ns - d.lo_ns <= cfg->agree_ns);
	if (d.outcome == OPS_SNTP_NO_QUORUM) {
		CHECK(d.wall_ns == 0 && d.offset_ns == 0);
		CHECK(best == 0 || best < (cfg->min_agree ? cfg->min_agree : 1u) || 2 * best <= n);
		return;
	}
	CHECK(best >= (cfg->min_agree ? cfg->min_agree : 1u) && 2 * best > n);
	CHECK(d.lo_ns <= d.wall_ns && d.wall_ns <= d.hi_ns);
	bool found = false;
	size_t in_set = 0;
	for (size_t i = 0; i < m; i++) {
		found |= v[i] == d.wall_ns;
		in_set += v[i] >= d.lo_ns && v[i] <= d.hi_ns;
	}
	CHECK(found && in_set == best);
	uint64_t mag = 0;
	if (local) {
		mag = d.wall_ns >= local ? d.wall_ns - local : local - d.wall_ns;
		CHECK((d.offset_ns >= 0) == (d.wall_ns >= local));
		CHECK(mag > INT64_MAX ? (d.offset_ns == INT64_MAX || d.offset_ns == -INT64_MAX)
				      : (uint64_t)(d.offset_ns < 0 ? -d.offset_ns : d.offset_ns) == mag);
	} else {
		CHECK(d.offset_ns == 0);
	}
	switch (d.outcome) {
	case OPS_SNTP_STEP_FIRST: CHECK(!local || cfg->first_sync); break;
	case OPS_SNTP_ACCEPT: CHECK(local && !cfg->first_sync && mag <= cfg->max_step_ns); break;
	case OPS_SNTP_REFUSE_TOO_FAR: CHECK(local && !cfg->first_sync && mag > cfg->max_step_ns); break;
	default: abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR)
		return 0;
	uint64_t nonce = ld_be64(data);
	uint64_t t1 = ld_be64(data + 8);
	uint32_t dt = ld_be32(data + 16);
	struct ops_sntp_limits lim = { ld_be32(data + 20), ld_be32(data + 24) };
	uint8_t flags = data[28];
	struct ops_sntp_vote_cfg cfg = { ((uint64_t)data[29] + 1) * 10000000u, (uint64_t)ld_be32(data + 30) * 1000000u,
					 (uint32_t)(flags >> 1 & 15u), (flags & 1) != 0 };
	uint64_t local = ld_be64(data + 34);
	uint64_t t4 = (flags & 0x20) ? t1 - dt : t1 + dt;

	/* Our own request is never accepted as a reply. */
	uint8_t req[OPS_SNTP_PKT_LEN];
	struct ops_sntp_sample s[OPS_SNTP_MAX_SAMPLES + 1];
	ops_sntp_request(req, nonce);
	CHECK(ops_sntp_parse(req, sizeof req, nonce, t1, t4, &lim, &s[0]) < 0 && s[0].reject == OPS_SNTP_R_MODE);

	size_t n = 0, pos = HDR;
	while (pos < size) {
		uint8_t k = data[pos++];
		if (k >= 0x80) {
			if (size - pos < 16)
				break;
			if (n < OPS_SNTP_MAX_SAMPLES) {
				s[n] = (struct ops_sntp_sample){ .mono_ns = ld_be64(data + pos),
								 .wall_ns = ld_be64(data + pos + 8), .stratum = 1 };
				n++;
			}
			pos += 16;
			continue;
		}
		size_t len = k < size - pos ? k : size - pos;
		/* A copy exactly len long, so ASan sees any read past it. */
		uint8_t *p = malloc(len ? len : 1);
		if (!p)
			return 0;
		memcpy(p, data + pos, len);
		pos += len;
		struct ops_sntp_sample *o = &s[n < OPS_SNTP_MAX_SAMPLES ? n : OPS_SNTP_MAX_SAMPLES];
		int rc = ops_sntp_parse(p, len, nonce, t1, t4, &lim, o);
		check_parse(p, len, nonce, t1, t4, &lim, o, rc);
		free(p);
		if (rc == 0 && n < OPS_SNTP_MAX_SAMPLES)
			n++;
		t4 += 1000000u;
	}
	uint64_t now = t4 + ld_be32(data + 42);
	check_vote(s, n, now, local, &cfg);
	if (n)
		check_vote(s + 1, n - 1, now, local, &cfg); /* one server fewer */
	return 0;
}
