/* SPDX-License-Identifier: MIT
 *
 * SNTP client (RFC 4330) codec and vote: builds the 48-byte request, checks a reply and
 * turns it into one sample (the server's time at our receive instant), and decides from
 * up to OPS_SNTP_MAX_SAMPLES samples of different servers whether, and to what, the wall
 * clock may be set. Pure functions over caller-owned memory: no allocation, no globals,
 * no clock reads (the caller passes its monotonic and wall times in), no I/O. The UDP
 * exchange, the per-server schedule and feeding kernel/wallclock's discipline belong to
 * the caller.
 *
 * Invariants:
 *  1. We never reveal our clock: a request is all zero but for the first byte and the
 *     Transmit Timestamp, which carries a random nonce that the reply must echo.
 *  2. Nothing in a reply whose Originate Timestamp is not our nonce is believed, not
 *     even a Kiss-o'-Death (an off-path sender must not be able to silence a server).
 *  3. A decision's time is the time of one agreeing sample, so it lies between the least
 *     and the greatest projected time of the agreeing set.
 *  4. After the first SNTP sync, a decision never moves the wall clock by more than
 *     cfg.max_step_ns: REFUSE_TOO_FAR instead.
 */
#ifndef OPS_SNTP_H
#define OPS_SNTP_H

#include "lib/compiler.h"

#define OPS_SNTP_PORT 123
#define OPS_SNTP_PKT_LEN 48     /* header without extension fields or MAC */
#define OPS_SNTP_MAX_SAMPLES 8  /* bound on the vote's input (insertion sort) */

/* Why a reply was refused: out->reject after ops_sntp_parse (stable values: logged and
 * counted). The return value of ops_sntp_parse is the lib/err.h code in brackets. */
enum ops_sntp_reject {
	OPS_SNTP_R_OK = 0,
	OPS_SNTP_R_SHORT,          /* [E_INVAL] fewer than 48 bytes */
	OPS_SNTP_R_MODE,           /* [E_PROTO] mode is not 4 (server) */
	OPS_SNTP_R_VERSION,        /* [E_PROTO] version is not 3 or 4 */
	OPS_SNTP_R_ORIGIN,         /* [E_PROTO] Originate Timestamp is not our nonce (or 0) */
	OPS_SNTP_R_KISS,           /* [E_PERM] stratum 0: Kiss-o'-Death, see kiss/kiss_stop */
	OPS_SNTP_R_UNSYNC,         /* [E_PROTO] leap indicator 3: the server is unsynchronised */
	OPS_SNTP_R_STRATUM,        /* [E_PROTO] stratum above 15 */
	OPS_SNTP_R_ZERO_TIME,      /* [E_PROTO] Receive or Transmit Timestamp is zero */
	OPS_SNTP_R_BEFORE_EPOCH,   /* [E_RANGE] a timestamp before 1970 (no Unix ns for it) */
	OPS_SNTP_R_PROC_NEGATIVE,  /* [E_PROTO] Transmit before Receive at the server */
	OPS_SNTP_R_DELAY_NEGATIVE, /* [E_PROTO] round-trip delay below 0 (t4 < t1 included) */
	OPS_SNTP_R_DELAY_HIGH,     /* [E_RANGE] round-trip delay above lim->max_delay_ns */
	OPS_SNTP_R_ROOT_DISTANCE,  /* [E_RANGE] root delay / 2 + root dispersion above the limit */
	OPS_SNTP_R__COUNT
};

/* Short stable name of a reason ("origin mismatch"); "unknown" out of range, never NULL. */
const char *ops_sntp_reject_name(uint32_t reject);

struct ops_sntp_limits {
	uint64_t max_delay_ns;         /* round-trip delay */
	uint64_t max_root_distance_ns; /* root delay / 2 + root dispersion */
};

/* One accepted reply, or why not. */
struct ops_sntp_sample {
	uint64_t mono_ns;      /* our monotonic time at receipt (t4) */
	uint64_t wall_ns;      /* server time at mono_ns: T3 + delay / 2, Unix ns */
	uint64_t delay_ns;     /* (t4 - t1) - (T3 - T2) */
	uint64_t root_dist_ns; /* root delay / 2 + root dispersion */
	uint8_t stratum;
	uint8_t reject;        /* enum ops_sntp_reject; OPS_SNTP_R_OK for a sample */
	/* Kiss-o'-Death (reject == OPS_SNTP_R_KISS) only, else "" / false: the code from the
	 * Reference ID, non-printable bytes as '?', NUL-terminated; kiss_stop when it is
	 * RATE, DENY or RSTR: stop asking this server (RFC 5905 7.4). */
	char kiss[5];
	bool kiss_stop;
};

/* Write the client request into pkt: LI 0, VN 4, mode 3, all other fields zero but the
 * Transmit Timestamp = nonce (64 random bits from the CSPRNG, never 0: a 0 originate is
 * always refused). pkt borrowed. */
void ops_sntp_request(uint8_t pkt[OPS_SNTP_PKT_LEN] /* out */, uint64_t nonce);

/* Check a reply (pkt borrowed, len bytes; bytes after the first 48 are ignored) to the
 * request carrying `nonce`, sent at our monotonic t1_mono_ns and received at t4_mono_ns.
 * Checks in this order, each its own reason: length, mode, version, originate, stratum 0
 * (kiss), leap indicator 3, stratum > 15, zero timestamps, timestamps before 1970,
 * T3 >= T2, delay in [0, lim->max_delay_ns], root distance <= lim->max_root_distance_ns.
 * Timestamps are read with RFC 4330 section 3's era rule: seconds with the MSB set are
 * from 1900 (1968-2036), clear are from 2036-02-07T06:28:16Z (2036-2104); the fraction
 * becomes ns as fraction * 1e9 >> 32 (rounded down). Root delay and dispersion are NTP
 * short format (16.16), read unsigned (RFC 5905): a "negative" root delay of RFC 4330 is
 * huge and fails the limit. Returns 0 with *out the sample (out->reject OPS_SNTP_R_OK),
 * or a negative lib/err.h code with out->reject the reason and the other fields zero
 * but kiss/kiss_stop. lim borrowed. Core-local, any context. */
MUST_CHECK int ops_sntp_parse(const uint8_t *pkt, size_t len, uint64_t nonce, uint64_t t1_mono_ns,
			      uint64_t t4_mono_ns, const struct ops_sntp_limits *lim,
			      struct ops_sntp_sample *out /* out */);

/* Unix ns of an NTP timestamp (seconds << 32 | fraction) under the era rule above; 0 for
 * the timestamps before 1970 (which the era rule maps into 1968-1970) and for the epoch
 * itself (0 is "unknown" to kernel/wallclock). */
uint64_t ops_sntp_ts_to_unix_ns(uint64_t ntp_ts);

/* ---- the vote ---- */

struct ops_sntp_vote_cfg {
	uint64_t agree_ns;    /* samples agree when their projected times are this close (1 s) */
	uint64_t max_step_ns; /* ntp.max_step_s in ns: bound on |offset| after the first sync */
	uint32_t min_agree;   /* configured sources that must agree (0 counts as 1) */
	bool first_sync;      /* SNTP has not set the wall clock yet: any distance may be stepped */
};

enum ops_sntp_outcome {
	OPS_SNTP_NO_QUORUM,      /* no agreeing set of min_agree samples that is a strict majority */
	OPS_SNTP_STEP_FIRST,     /* first sync or local time unknown: step to wall_ns */
	OPS_SNTP_ACCEPT,         /* |offset_ns| <= max_step_ns: feed to the wall clock's discipline */
	OPS_SNTP_REFUSE_TOO_FAR, /* |offset_ns| > max_step_ns after the first sync: leave the clock */
};

/* "no quorum", "step (first sync)", "accept", "refuse (too far)"; "unknown" otherwise. */
const char *ops_sntp_outcome_name(uint32_t outcome);

struct ops_sntp_decision {
	enum ops_sntp_outcome outcome;
	uint32_t n_agree;   /* size of the largest agreeing set (0: no usable sample) */
	uint64_t wall_ns;   /* voted time at now_mono_ns (0 for NO_QUORUM) */
	int64_t offset_ns;  /* wall_ns - local wall, saturated; 0 when local unknown or NO_QUORUM */
	uint64_t lo_ns, hi_ns; /* least and greatest projected time of the agreeing set */
};

/* Decide from n samples (s borrowed; n <= OPS_SNTP_MAX_SAMPLES, one per server) at our
 * monotonic now_mono_ns, when the local wall clock reads local_wall_ns_at_now (0:
 * unknown). Each sample is projected to now without rate correction (wall_ns + now_mono -
 * mono_ns); a sample whose projection is 0 or leaves 64 bits is unusable but still counts
 * in n. The agreeing set is the largest set of projections within cfg->agree_ns of each
 * other (sorted, sliding window; among sets of equal size the narrowest, then the
 * earliest). It carries the vote when its size is >= min_agree and a strict majority of
 * n; the voted time is its median, for an even size the lower middle one, so it is
 * always one server's time and never an average that no server reported. Then: local
 * unknown or cfg->first_sync -> STEP_FIRST; |offset| > max_step_ns -> REFUSE_TOO_FAR (the
 * offset still reported); else ACCEPT. Returns 0 with *out filled, or -E_RANGE when n >
 * OPS_SNTP_MAX_SAMPLES (out then NO_QUORUM). cfg borrowed. */
MUST_CHECK int ops_sntp_vote(const struct ops_sntp_sample *s, size_t n, uint64_t now_mono_ns,
			     uint64_t local_wall_ns_at_now, const struct ops_sntp_vote_cfg *cfg,
			     struct ops_sntp_decision *out /* out */);

#endif
