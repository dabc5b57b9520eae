/* SPDX-License-Identifier: MIT
 *
 * SNTP (RFC 4330) request, reply checks and the vote; contract and invariants in
 * ops/sntp.h. Reply bytes are read through the bounds-checked cursor only, every check
 * that refuses names its reason, and all arithmetic is on unsigned 64-bit values whose
 * bounds are stated where they are added or multiplied.
 */
#include "ops/sntp.h"
#include "lib/cursor.h"
#include "lib/err.h"

#define NS_PER_S 1000000000ull
/* Seconds from 1900-01-01 to 1970-01-01. */
#define NTP_UNIX_DELTA_S 2208988800ull
#define NTP_ERA_S 4294967296ull /* 2^32 s: one NTP era */

#define SNTP_MODE_CLIENT 3u
#define SNTP_MODE_SERVER 4u
#define SNTP_VERSION 4u
#define SNTP_LI_ALARM 3u
#define SNTP_STRATUM_MAX 15u

static const char *const reject_names[OPS_SNTP_R__COUNT] = {
	[OPS_SNTP_R_OK] = "ok",
	[OPS_SNTP_R_SHORT] = "short reply",
	[OPS_SNTP_R_MODE] = "not a server reply",
	[OPS_SNTP_R_VERSION] = "unsupported version",
	[OPS_SNTP_R_ORIGIN] = "origin mismatch",
	[OPS_SNTP_R_KISS] = "kiss-o'-death",
	[OPS_SNTP_R_UNSYNC] = "server unsynchronised",
	[OPS_SNTP_R_STRATUM] = "stratum above 15",
	[OPS_SNTP_R_ZERO_TIME] = "zero timestamp",
	[OPS_SNTP_R_BEFORE_EPOCH] = "timestamp before 1970",
	[OPS_SNTP_R_PROC_NEGATIVE] = "server transmit before receive",
	[OPS_SNTP_R_DELAY_NEGATIVE] = "negative delay",
	[OPS_SNTP_R_DELAY_HIGH] = "delay too high",
	[OPS_SNTP_R_ROOT_DISTANCE] = "root distance too high",
};

const char *ops_sntp_reject_name(uint32_t reject)
{
	return reject < OPS_SNTP_R__COUNT ? reject_names[reject] : "unknown";
}

const char *ops_sntp_outcome_name(uint32_t outcome)
{
	switch (outcome) {
	case OPS_SNTP_NO_QUORUM: return "no quorum";
	case OPS_SNTP_STEP_FIRST: return "step (first sync)";
	case OPS_SNTP_ACCEPT: return "accept";
	case OPS_SNTP_REFUSE_TOO_FAR: return "refuse (too far)";
	default: return "unknown";
	}
}

void ops_sntp_request(uint8_t pkt[OPS_SNTP_PKT_LEN], uint64_t nonce)
{
	struct wcur w = wcur_make(pkt, OPS_SNTP_PKT_LEN);
	wcur_u8(&w, (uint8_t)(0u << 6 | SNTP_VERSION << 3 | SNTP_MODE_CLIENT));
	wcur_zero(&w, 39); /* stratum .. Receive Timestamp: nothing about us */
	wcur_be64(&w, nonce);
}

uint64_t ops_sntp_ts_to_unix_ns(uint64_t ntp_ts)
{
	uint64_t s = ntp_ts >> 32;
	uint64_t frac = ntp_ts & 0xffffffffu;
	if (s & 0x80000000u) {
		if (s < NTP_UNIX_DELTA_S)
			return 0; /* 1968-1970 */
		s -= NTP_UNIX_DELTA_S;
	} else {
		s += NTP_ERA_S - NTP_UNIX_DELTA_S;
	}
	/* s < 2^32 + 2^31 and frac * 1e9 < 2^62: both terms and the sum fit in 64 bits. */
	return s * NS_PER_S + (frac * NS_PER_S >> 32);
}

/* NTP short format (16.16 seconds) to ns: v * 1e9 < 2^62. */
static uint64_t sntp_short_ns(uint32_t v)
{
	return (uint64_t)v * NS_PER_S >> 16;
}

static bool sntp_kiss_stop(const uint8_t code[4])
{
	static const char stop[][4] = { { 'R', 'A', 'T', 'E' }, { 'D', 'E', 'N', 'Y' }, { 'R', 'S', 'T', 'R' } };
	for (size_t i = 0; i < ARRAY_LEN(stop); i++)
		if (code[0] == (uint8_t)stop[i][0] && code[1] == (uint8_t)stop[i][1] &&
		    code[2] == (uint8_t)stop[i][2] && code[3] == (uint8_t)stop[i][3])
			return true;
	return false;
}

static int sntp_refuse(struct ops_sntp_sample *out, enum ops_sntp_reject why, int err)
{
	out->reject = (uint8_t)why;
	return -err;
}

int ops_sntp_parse(const uint8_t *pkt, size_t len, uint64_t nonce, uint64_t t1_mono_ns, uint64_t t4_mono_ns,
		   const struct ops_sntp_limits *lim, struct ops_sntp_sample *out)
{
	*out = (struct ops_sntp_sample){ 0 };
	if (len < OPS_SNTP_PKT_LEN)
		return sntp_refuse(out, OPS_SNTP_R_SHORT, E_INVAL);
	struct cur c = cur_make(pkt, OPS_SNTP_PKT_LEN);
	uint8_t lvm = cur_u8(&c);
	uint8_t stratum = cur_u8(&c);
	cur_skip(&c, 2); /* poll, precision */
	uint32_t root_delay = cur_be32(&c);
	uint32_t root_disp = cur_be32(&c);
	uint8_t refid[4];
	cur_bytes(&c, refid, sizeof refid);
	cur_skip(&c, 8); /* Reference Timestamp: when the server's clock was last set */
	uint64_t org = cur_be64(&c);
	uint64_t rx = cur_be64(&c);
	uint64_t tx = cur_be64(&c);
	if (!cur_done(&c))
		return sntp_refuse(out, OPS_SNTP_R_SHORT, E_INVAL); /* unreachable: 48 bytes read */

	uint32_t li = (uint32_t)lvm >> 6, vn = (uint32_t)lvm >> 3 & 7u, mode = lvm & 7u;
	if (mode != SNTP_MODE_SERVER)
		return sntp_refuse(out, OPS_SNTP_R_MODE, E_PROTO);
	if (vn != 3 && vn != 4)
		return sntp_refuse(out, OPS_SNTP_R_VERSION, E_PROTO);
	/* Invariant 2: not ours, nothing else in it is read. */
	if (org == 0 || org != nonce)
		return sntp_refuse(out, OPS_SNTP_R_ORIGIN, E_PROTO);
	/* Before the leap indicator: a kiss usually carries LI 3 as well (RFC 5905 7.4). */
	if (stratum == 0) {
		for (size_t i = 0; i < 4; i++)
			out->kiss[i] = refid[i] >= 0x20 && refid[i] < 0x7f ? (char)refid[i] : '?';
		out->kiss[4] = '\0';
		out->kiss_stop = sntp_kiss_stop(refid);
		return sntp_refuse(out, OPS_SNTP_R_KISS, E_PERM);
	}
	if (li == SNTP_LI_ALARM)
		return sntp_refuse(out, OPS_SNTP_R_UNSYNC, E_PROTO);
	if (stratum > SNTP_STRATUM_MAX)
		return sntp_refuse(out, OPS_SNTP_R_STRATUM, E_PROTO);
	if (rx == 0 || tx == 0)
		return sntp_refuse(out, OPS_SNTP_R_ZERO_TIME, E_PROTO);
	/* Converted before comparing, so an exchange across the 2036 era change compares. */
	uint64_t t2 = ops_sntp_ts_to_unix_ns(rx), t3 = ops_sntp_ts_to_unix_ns(tx);
	if (t2 == 0 || t3 == 0)
		return sntp_refuse(out, OPS_SNTP_R_BEFORE_EPOCH, E_RANGE);
	if (t3 < t2)
		return sntp_refuse(out, OPS_SNTP_R_PROC_NEGATIVE, E_PROTO);
	uint64_t proc = t3 - t2;
	if (t4_mono_ns < t1_mono_ns || t4_mono_ns - t1_mono_ns < proc)
		return sntp_refuse(out, OPS_SNTP_R_DELAY_NEGATIVE, E_PROTO);
	uint64_t delay = t4_mono_ns - t1_mono_ns - proc;
	if (delay > lim->max_delay_ns)
		return sntp_refuse(out, OPS_SNTP_R_DELAY_HIGH, E_RANGE);
	/* Each term < 2^62: the sum fits. */
	uint64_t dist = sntp_short_ns(root_delay) / 2 + sntp_short_ns(root_disp);
	if (dist > lim->max_root_distance_ns)
		return sntp_refuse(out, OPS_SNTP_R_ROOT_DISTANCE, E_RANGE);

	/* t3 < 2^62 (year 2104) and delay / 2 < 2^63: no wrap. */
	out->mono_ns = t4_mono_ns;
	out->wall_ns = t3 + delay / 2;
	out->delay_ns = delay;
	out->root_dist_ns = dist;
	out->stratum = stratum;
	out->reject = OPS_SNTP_R_OK;
	return 0;
}

/* wall + (now - mono) when it stays in [1, 2^64); false when it does not. */
static bool sntp_project(const struct ops_sntp_sample *s, uint64_t now, uint64_t *at)
{
	if (s->wall_ns == 0)
		return false;
	if (now >= s->mono_ns) {
		uint64_t d = now - s->mono_ns;
		if (d > UINT64_MAX - s->wall_ns)
			return false;
		*at = s->wall_ns + d;
	} else {
		uint64_t d = s->mono_ns - now;
		if (d >= s->wall_ns)
			return false;
		*at = s->wall_ns - d;
	}
	return true;
}

int ops_sntp_vote(const struct ops_sntp_sample *s, size_t n, uint64_t now_mono_ns, uint64_t local_wall_ns_at_now,
		  const struct ops_sntp_vote_cfg *cfg, struct ops_sntp_decision *out)
{
	*out = (struct ops_sntp_decision){ .outcome = OPS_SNTP_NO_QUORUM };
	if (n > OPS_SNTP_MAX_SAMPLES)
		return -E_RANGE;

	uint64_t v[OPS_SNTP_MAX_SAMPLES];
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t at;
		if (!sntp_project(&s[i], now_mono_ns, &at))
			continue;
		/* Insertion sort: at most 8 values. */
		size_t j = m++;
		for (; j > 0 && v[j - 1] > at; j--)
			v[j] = v[j - 1];
		v[j] = at;
	}

	/* Sliding window over the sorted projections: for each start, the furthest end within
	 * agree_ns; keep the largest, then the narrowest, then the earliest. */
	size_t best_i = 0, best_k = 0;
	uint64_t best_w = 0;
	for (size_t i = 0, j = 0; i < m; i++) {
		if (j < i)
			j = i;
		while (j + 1 < m && v[j + 1] - v[i] <= cfg->agree_ns)
			j++;
		size_t k = j - i + 1;
		uint64_t w = v[j] - v[i];
		if (k > best_k || (k == best_k && w < best_w)) {
			best_i = i;
			best_k = k;
			best_w = w;
		}
	}
	out->n_agree = (uint32_t)best_k;
	if (best_k == 0)
		return 0;
	out->lo_ns = v[best_i];
	out->hi_ns = v[best_i + best_k - 1];
	uint32_t need = cfg->min_agree ? cfg->min_agree : 1;
	if (best_k < need || 2 * best_k <= n)
		return 0;

	uint64_t t = v[best_i + (best_k - 1) / 2]; /* median; lower middle for an even size */
	out->wall_ns = t;
	uint64_t mag = 0;
	if (local_wall_ns_at_now) {
		bool ahead = t >= local_wall_ns_at_now; /* the voted time is ahead of ours */
		mag = ahead ? t - local_wall_ns_at_now : local_wall_ns_at_now - t;
		int64_t sat = mag > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)mag;
		out->offset_ns = ahead ? sat : -sat;
	}
	if (!local_wall_ns_at_now || cfg->first_sync)
		out->outcome = OPS_SNTP_STEP_FIRST;
	else if (mag > cfg->max_step_ns)
		out->outcome = OPS_SNTP_REFUSE_TOO_FAR;
	else
		out->outcome = OPS_SNTP_ACCEPT;
	return 0;
}
