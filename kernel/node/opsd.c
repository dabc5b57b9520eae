/* SPDX-License-Identifier: MIT
 *
 * Operators' channels of the node (kernel/node/opsd.h): syslog, statsd, the health and the
 * SNTP client, run by core 0.
 *
 * Owns, per core c, two SPSC rings towards core 0 (lib/ring.h): log lines (producer: c's
 * log tap, the consumer core 0's syslog sender) and figures (producer: c's opsd_publish
 * once a second; two slots, a full ring drops the newer figures). The producer side of a
 * core's state (od_prod[c]) is touched only by core c, the consumer side (od_cons[c]) and
 * everything else only by core 0: the rings are the only memory two cores share.
 *
 * Invariants:
 *  1. The tap never blocks, allocates, or reads the wall clock (an interrupt on core 0 may
 *     arrive while core 0 publishes it: kernel/wallclock.h); a line arriving while the same
 *     core is inside the tap (an exception) is dropped and counted, never interleaved.
 *  2. A log line leaves core c's ring only after every collector took it, or after
 *     OPSD_LOG_WAIT_MS of trying (then counted in syslog_dropped), so a missing address or
 *     an ARP miss delays lines rather than losing them, and a dead collector cannot stall
 *     the ring for longer than that per line.
 *  3. SNTP: a reply is believed only from the address and port a request of the current
 *     round went to, with that request's nonce (ops/sntp.h invariant 2); one sample per
 *     server per round; the vote runs when every server answered or the round's time is up.
 * States of SNTP (core 0): IDLE --next_ns--> ROUND (requests sent) --all answered or
 * round_end_ns--> vote, IDLE with next_ns one poll later; without an address, IDLE retries
 * every OPSD_NTP_RETRY_MS.
 */
#include "kernel/node/opsd.h"

#include "kernel/cmdline.h"
#include "kernel/log.h"
#include "kernel/node/broker.h"
#include "kernel/node/node.h"
#include "kernel/node/port.h"
#include "kernel/panic.h"
#include "lib/endpoint.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "lib/ring.h"
#include "net/net.h"
#include "ops/health.h"
#include "ops/sntp.h"
#include "ops/statsd.h"
#include "ops/syslog.h"
#include "plat/plat.h"
#include "urmqtt_config.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define OPSD_MAX_SYSLOG 4u
#define OPSD_MAX_STATSD 4u
#define OPSD_MAX_NTP OPS_SNTP_MAX_SAMPLES
#define OPSD_LOG_BUDGET 16u     /* lines sent per pass */
#define OPSD_LOG_WAIT_MS 2000u  /* invariant 2 */
#define OPSD_HEALTH_MS 1000u
#define OPSD_DISK_ERROR_HOLD_MS 60000u /* "disk errors" stays a minute after the last one */
#define OPSD_NTP_RETRY_MS 2000u
#define OPSD_NTP_SLACK_MS 200u  /* a round lasts ntp.max_delay_ms plus this */
#define OPSD_NTP_LOST_POLLS 4u  /* no agreed time for this many polls: unsynchronised */
#define OPSD_UDP_MAX 1472u      /* the largest UDP payload in one 1500-byte IPv4 packet */
#define OPSD_ID_MAX 128u        /* identity bytes kept (ops/syslog cuts SD values there) */

/* One log line on its way to core 0 (a ring slot). */
struct opsd_log_rec {
	uint64_t mono_ns;
	uint8_t lvl;
	uint8_t pad;
	uint16_t text_len;
	char mod[16];
	char reason[24];
	char identity[OPSD_ID_MAX + 1];
	char peer[16];
	char text[LOG_LINE_MAX];
};

/* Core c's side: c only. */
struct opsd_prod {
	bool in_tap;
	uint64_t log_dropped; /* ring full or re-entered: sent in c's figures */
} ALIGNED(64);

/* Core 0's view of core c. */
struct opsd_cons {
	struct spsc_ring logq;  /* c -> core 0 (no storage: syslog off) */
	struct spsc_ring figq;  /* c -> core 0 */
	uint8_t fig_slots[2 * sizeof(struct opsd_figures)] ALIGNED(8);
	struct opsd_figures latest;
	bool have;              /* latest holds figures */
	uint64_t watchdog_seen; /* WATCHDOG_OVERRUNS at the last health evaluation */
	uint32_t sent_mask;     /* collectors that took the line at the ring's tail */
	uint64_t tail_since_ms; /* when sending it began; 0: not yet tried */
	uint64_t statsd_last[OPSD_F__COUNT];
};

struct opsd_ntp_server {
	struct endpoint ep;
	uint64_t nonce, t1_ns;
	bool waiting, answered, stopped; /* stopped: a Kiss-o'-Death said RATE, DENY or RSTR */
	struct ops_sntp_sample sample;
};

static const struct {
	const char *name;
	bool counter;
} opsd_fig_meta[OPSD_F__COUNT] = {
	[OPSD_F_CONNECTIONS] = { "connections", false },
	[OPSD_F_HANDSHAKING] = { "handshakes.in_progress", false },
	[OPSD_F_SESSIONS] = { "sessions", false },
	[OPSD_F_RETAINED] = { "retained", false },
	[OPSD_F_HEAP_USED] = { "heap.used", false },
	[OPSD_F_HEAP_FREE] = { "heap.free", false },
	[OPSD_F_STORE_BACKLOG] = { "storage.backlog_bytes", false },
	[OPSD_F_STORE_LAGGING] = { "storage.lagging", false },
	[OPSD_F_SERVING] = { "serving", false },
	[OPSD_F_HS_FULL] = { "handshakes.full", true },
	[OPSD_F_HS_RESUMED] = { "handshakes.resumed", true },
	[OPSD_F_HS_FAILED] = { "handshakes.failed", true },
	[OPSD_F_HS_TIMEOUTS] = { "handshakes.timeouts", true },
	[OPSD_F_REFUSED_HEAP] = { "refused.heap", true },
	[OPSD_F_REFUSED_SOURCE] = { "refused.source", true },
	[OPSD_F_REFUSED_LOAD] = { "refused.load", true },
	[OPSD_F_REFUSED_STORAGE] = { "refused.storage", true },
	[OPSD_F_REFUSED_IDENTITY] = { "refused.identity", true },
	[OPSD_F_REFUSED_CONNACK] = { "refused.connack", true },
	[OPSD_F_REFUSED_ACL] = { "refused.acl", true },
	[OPSD_F_REFUSED_RATE] = { "refused.rate", true },
	[OPSD_F_MSGS_IN_QOS0] = { "messages.in.qos0", true },
	[OPSD_F_MSGS_IN_QOS1] = { "messages.in.qos1", true },
	[OPSD_F_MSGS_IN_QOS2] = { "messages.in.qos2", true },
	[OPSD_F_MSGS_OUT_QOS0] = { "messages.out.qos0", true },
	[OPSD_F_MSGS_OUT_QOS1] = { "messages.out.qos1", true },
	[OPSD_F_MSGS_OUT_QOS2] = { "messages.out.qos2", true },
	[OPSD_F_BYTES_IN] = { "bytes.in", true },
	[OPSD_F_BYTES_OUT] = { "bytes.out", true },
	[OPSD_F_QUEUE_DROPPED] = { "messages.queue_dropped", true },
	[OPSD_F_ROUTE_DROPPED] = { "messages.route_dropped", true },
	[OPSD_F_TELEMETRY_RECORDS] = { "telemetry.records", true },
	[OPSD_F_TELEMETRY_LOST] = { "telemetry.lost", true },
	[OPSD_F_WATCHDOG_OVERRUNS] = { "watchdog.overruns", true },
	[OPSD_F_SYSLOG_DROPPED] = { "syslog.dropped", true },
	[OPSD_F_DB_COMMITS] = { "storage.commits", true },
	[OPSD_F_DB_COMMIT_FAILED] = { "storage.commit_failed", true },
	[OPSD_F_DB_COMMIT_US_MAX] = { "storage.commit_us_max", false },
	[OPSD_F_DISK_ERRORS] = { "storage.disk_errors", true },
	[OPSD_F_STORE_FAILED] = { "storage.failed", false },
};

static uint32_t od_n_cores;
static struct opsd_prod od_prod[PLAT_MAX_CPUS];
static struct opsd_cons od_cons[PLAT_MAX_CPUS];
static struct net_stack *od_ns;  /* core 0's stack, or NULL */
static struct node_broker *od_b0; /* core 0's broker ($SYS), or NULL */
static uint64_t od_next_sys_ms;
/* ops.statsd_interval_s and ops.sys_interval_s; development images: ops_interval_s=N sets both,
 * sys_interval_s=N the second (0: off) */
static uint32_t od_statsd_interval_s = CONF_OPS_STATSD_INTERVAL_S, od_sys_interval_s = CONF_OPS_SYS_INTERVAL_S;
static uint16_t od_port;         /* our UDP port (SNTP replies come back to it) */
static struct endpoint od_syslog[OPSD_MAX_SYSLOG], od_statsd[OPSD_MAX_STATSD];
static uint32_t od_n_syslog, od_n_statsd;
static uint64_t od_syslog_send_dropped; /* core 0: lines given up after OPSD_LOG_WAIT_MS */
static uint64_t od_next_health_ms, od_next_statsd_ms;
static struct ops_health od_health;
static bool od_health_logged;
static uint64_t od_statsd_total_last[OPSD_F__COUNT];
static char od_buf[OPSD_UDP_MAX]; /* core 0's datagram under construction */

/* What every data core was told of the wall clock (NODE_CTL_CLOCK), or -1: not yet; and
 * whether an unsynchronised clock refuses client certificates (ntp.unsynced_certs, or the
 * development knob unsynced_certs=refuse). */
static int od_clock_told = -1;
static bool od_unsynced_refuse = CONF_NTP_UNSYNCED_CERTS == CONF_NTP_UNSYNCED_CERTS_REFUSE;

static struct {
	struct opsd_ntp_server srv[OPSD_MAX_NTP];
	uint32_t n;
	uint32_t poll_s;
	bool in_round, synced;
	uint64_t round_end_ns, next_ns, last_sync_ns;
	uint32_t n_rounds, n_syncs, n_refused, n_no_quorum;
} od_ntp;

/* ---- configuration ------------------------------------------------------------------ */

/* The configured endpoints (validated at build time), or a development knob's one value
 * (key=a.b.c.d:port, several joined by '+'). */
static uint32_t opsd_endpoints(const char *const *conf, uint32_t n_conf, const char *knob, const char *cmdline,
			       size_t cmdline_len, uint16_t default_port, struct endpoint *out, uint32_t max)
{
	uint32_t n = 0;
#ifndef URMQTT_PROD
	char v[160];
	if (cmdline && cmdline_get(cmdline, cmdline_len, knob, v, sizeof v) == 0) {
		const char *s = v;
		while (*s && n < max) {
			size_t len = 0;
			while (s[len] && s[len] != '+')
				len++;
			struct endpoint e;
			if (endpoint_parse(s, len, default_port, &e) == 0 && endpoint_unicast(e.ip))
				out[n++] = e;
			else
				LOG_WARN("ops", "ignoring %s=%.*s: not a.b.c.d[:port]", knob, (int)len, s);
			s += len + (s[len] == '+');
		}
		return n;
	}
#else
	(void)knob;
	(void)cmdline;
	(void)cmdline_len;
#endif
	for (uint32_t i = 0; i < n_conf && n < max; i++) {
		struct endpoint e;
		if (endpoint_parse(conf[i], strlen(conf[i]), default_port, &e) == 0)
			out[n++] = e;
	}
	return n;
}

static void opsd_endpoint_str(char *buf, size_t cap, const struct endpoint *e)
{
	(void)fmt_snprintf(buf, cap, "%u.%u.%u.%u:%u", (unsigned)(e->ip >> 24), (unsigned)(e->ip >> 16 & 255u),
			   (unsigned)(e->ip >> 8 & 255u), (unsigned)(e->ip & 255u), (unsigned)e->port);
}

/* ---- the log tap (any core, any context: invariant 1) -------------------------------- */

static void opsd_copy(char *dst, size_t cap, const char *src)
{
	size_t n = 0;
	if (src)
		while (n + 1 < cap && src[n])
			n++;
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
}

static void opsd_tap(enum log_level lvl, const char *mod, const struct log_fields *f, const char *text, size_t len)
{
	if ((uint32_t)lvl > CONF_OPS_SYSLOG_LEVEL)
		return;
	uint32_t c = node_port_core_self();
	if (c >= od_n_cores)
		return;
	struct opsd_prod *p = &od_prod[c];
	if (p->in_tap) {
		p->log_dropped++;
		return;
	}
	p->in_tap = true;
	struct opsd_log_rec *r = spsc_reserve(&od_cons[c].logq);
	if (!r) {
		p->log_dropped++;
	} else {
		r->mono_ns = node_port_now_ns();
		r->lvl = (uint8_t)lvl;
		r->text_len = (uint16_t)MIN(len, sizeof r->text);
		memcpy(r->text, text, r->text_len);
		opsd_copy(r->mod, sizeof r->mod, mod);
		opsd_copy(r->reason, sizeof r->reason, f ? f->reason : NULL);
		opsd_copy(r->identity, sizeof r->identity, f ? f->identity : NULL);
		opsd_copy(r->peer, sizeof r->peer, f ? f->peer : NULL);
		spsc_commit(&od_cons[c].logq);
	}
	p->in_tap = false;
}

/* ---- syslog (core 0) --------------------------------------------------------------- */

static int opsd_send(const struct endpoint *e, const void *data, size_t len)
{
	if (!od_ns)
		return -E_NOENT;
	return net_udp_send(od_ns, od_port, e->ip, e->port, data, len);
}

/* One line to every collector that has not taken it yet; true when it may leave the ring. */
static bool opsd_syslog_line(struct opsd_cons *oc, uint32_t core, const struct opsd_log_rec *r, uint64_t now_ms)
{
	uint64_t mono = node_port_now_ns();
	int64_t wall_ms = node_port_wall_ms();
	uint64_t age = mono > r->mono_ns ? mono - r->mono_ns : 0;
	uint64_t wall_ns = wall_ms > 0 ? (uint64_t)wall_ms * NS_PER_MS : 0;
	struct ops_syslog_msg m = {
		.facility = (uint8_t)CONF_OPS_SYSLOG_FACILITY,
		.severity = ops_syslog_severity(r->lvl),
		.unix_ns = wall_ns > age ? wall_ns - age : 0,
		.hostname = CONF_OPS_HOSTNAME,
		.app = "urmqtt",
		.procid = core,
		.msgid = r->mod,
		.sd_identity = r->identity[0] ? r->identity : NULL,
		.sd_reason = r->reason[0] ? r->reason : NULL,
		.sd_peer = r->peer[0] ? r->peer : NULL,
		.text = r->text,
		.text_len = r->text_len,
	};
	size_t n = ops_syslog_format(od_buf, CONF_OPS_SYSLOG_MAX_BYTES, &m);
	if (n == 0) { /* header and structured data above the configured size: without them */
		m.sd_identity = m.sd_reason = m.sd_peer = NULL;
		n = ops_syslog_format(od_buf, CONF_OPS_SYSLOG_MAX_BYTES, &m);
	}
	if (!oc->tail_since_ms)
		oc->tail_since_ms = now_ms ? now_ms : 1; /* the first try of this line */
	for (uint32_t i = 0; i < od_n_syslog; i++)
		if (!(oc->sent_mask & (1u << i)) && n && opsd_send(&od_syslog[i], od_buf, n) == 0)
			oc->sent_mask |= 1u << i;
	if (oc->sent_mask == (1u << od_n_syslog) - 1u)
		return true;
	if (n == 0 || now_ms - oc->tail_since_ms >= OPSD_LOG_WAIT_MS) {
		od_syslog_send_dropped++;
		return true;
	}
	return false;
}

static uint32_t opsd_syslog_drain(uint64_t now_ms)
{
	uint32_t done = 0;
	for (uint32_t c = 0; c < od_n_cores && done < OPSD_LOG_BUDGET; c++) {
		struct opsd_cons *oc = &od_cons[c];
		const struct opsd_log_rec *r;
		while (done < OPSD_LOG_BUDGET && (r = spsc_peek(&oc->logq)) != NULL) {
			if (!opsd_syslog_line(oc, c, r, now_ms))
				break; /* try again on a later pass (invariant 2) */
			oc->sent_mask = 0;
			oc->tail_since_ms = 0;
			spsc_release(&oc->logq);
			done++;
		}
	}
	return done;
}

/* ---- $SYS (core 0) --------------------------------------------------------------------- */

static void opsd_sys_put(const char *topic, const char *text)
{
	/* -E_INVAL only for a topic that is not a $SYS/ topic name: a bug in the names here */
	if (node_broker_sys_publish(od_b0, topic, text) != 0)
		LOG_ERR("ops", "$SYS: '%s' is not a $SYS topic name", topic);
}

static void opsd_sys_u64(const char *topic, uint64_t v)
{
	char text[24];
	(void)fmt_snprintf(text, sizeof text, "%llu", (unsigned long long)v);
	opsd_sys_put(topic, text);
}

/* ---- figures and health (core 0) ------------------------------------------------------ */

void opsd_publish(uint32_t core, const struct opsd_figures *f)
{
	if (core >= od_n_cores)
		return;
	struct opsd_figures *slot = spsc_reserve(&od_cons[core].figq);
	if (!slot)
		return; /* core 0 has not taken the previous ones: these are dropped */
	*slot = *f;
	slot->v[OPSD_F_SYSLOG_DROPPED] = od_prod[core].log_dropped;
	spsc_commit(&od_cons[core].figq);
}

static void opsd_take_figures(void)
{
	for (uint32_t c = 0; c < od_n_cores; c++) {
		struct opsd_cons *oc = &od_cons[c];
		while (spsc_pop(&oc->figq, &oc->latest) == 0)
			oc->have = true;
	}
}

static bool opsd_clock_synced(uint64_t now_ns)
{
	return od_ntp.synced && now_ns - od_ntp.last_sync_ns <= (uint64_t)OPSD_NTP_LOST_POLLS * od_ntp.poll_s * NS_PER_S;
}

/* Tell every data core when the clock's trust changes (retried each second while this
 * core's previous change is still on its way). */
static void opsd_clock_tell(uint64_t now_ns)
{
	int want = !od_ntp.n || opsd_clock_synced(now_ns) ? NODE_CLOCK_TRUSTED
			: od_unsynced_refuse			 ? NODE_CLOCK_UNSYNCED_REFUSE
								 : NODE_CLOCK_UNSYNCED_ACCEPT;
	if (want == od_clock_told)
		return;
	struct node_ctl op = { .kind = NODE_CTL_CLOCK, .len = 1 };
	op.data[0] = (uint8_t)want;
	if (node_ctl_broadcast(&op) == 0) {
		if (od_clock_told >= 0 || want != NODE_CLOCK_TRUSTED)
			LOG_INFO("ntp", "ntp: client certificates %s",
				 want == NODE_CLOCK_TRUSTED	      ? "checked against SNTP's time again"
				 : want == NODE_CLOCK_UNSYNCED_REFUSE ? "REFUSED until SNTP's time is followed (ntp.unsynced_certs)"
								      : "checked against an unconfirmed wall clock (ntp.unsynced_certs)");
		od_clock_told = want;
	}
}

static void opsd_health(uint64_t now_ms)
{
	struct ops_health_inputs in = {
		.now_ms = now_ms,
		.clock_sync_expected = od_ntp.n > 0,
		.clock_synced = opsd_clock_synced(node_port_now_ns()),
		.admission_open = true,
	};
	uint32_t n_have = 0;
	for (uint32_t c = 0; c < od_n_cores; c++) {
		struct opsd_cons *oc = &od_cons[c];
		if (!oc->have)
			continue;
		const uint64_t *v = oc->latest.v;
		uint64_t total = v[OPSD_F_HEAP_USED] + v[OPSD_F_HEAP_FREE];
		/* The core with the least free share speaks for the heap. */
		if (total && (!in.heap_total || v[OPSD_F_HEAP_FREE] * in.heap_total < in.heap_free * total)) {
			in.heap_free = v[OPSD_F_HEAP_FREE];
			in.heap_total = total;
		}
		in.db_backlog += v[OPSD_F_STORE_BACKLOG];
		if (v[OPSD_F_STORE_LAGGING])
			in.db_lagging = true;
		in.disk_errors += v[OPSD_F_DISK_ERRORS];
		if (v[OPSD_F_STORE_FAILED])
			in.storage_failed = true;
		if (v[OPSD_F_WATCHDOG_OVERRUNS] != oc->watchdog_seen && c < 32)
			in.watchdog_over_mask |= 1u << c;
		oc->watchdog_seen = v[OPSD_F_WATCHDOG_OVERRUNS];
		if (total && !v[OPSD_F_SERVING])
			in.admission_open = false;
		n_have++;
	}
	static const struct ops_health_cfg cfg = {
		.heap_low_pct = CONF_OPS_HEALTH_HEAP_LOW_PCT,
		.heap_ok_pct = CONF_OPS_HEALTH_HEAP_OK_PCT,
		.disk_hold_ms = OPSD_DISK_ERROR_HOLD_MS,
		.storage_required = CONF_STORAGE_REQUIRED,
	};
	struct ops_health h;
	ops_health_eval(&od_health, &in, &cfg, &h);
	if (!n_have)
		return; /* no core reported yet: nothing to say */
	if (!od_health_logged || ops_health_changed(&od_health, &h)) {
		char line[128];
		(void)ops_health_describe(&h, line, sizeof line);
		if (h.state == OPS_HEALTH_SERVING)
			LOG_INFO("health", "health: %s", line);
		else
			LOG_WARN("health", "health: %s", line);
		od_health_logged = true;
		od_health = h;
		if (od_b0 && od_sys_interval_s)
			opsd_sys_put("$SYS/urmqtt/health", line); /* at once, not at the next interval */
	}
	od_health = h;
}

/* ---- statsd (core 0) ------------------------------------------------------------------ */

static void opsd_statsd_flush(struct ops_statsd *b)
{
	if (!b->lines)
		return;
	/* statsd over UDP is lossy by design: a datagram the stack cannot send now (no address,
	 * no ARP answer yet) is not kept, and the counter changes it carried are lost */
	for (uint32_t i = 0; i < od_n_statsd; i++)
		(void)opsd_send(&od_statsd[i], b->buf, b->len);
	ops_statsd_begin(b, od_buf, OPSD_UDP_MAX, CONF_OPS_STATSD_PREFIX);
}

/* One line; a full datagram is sent and the line goes into the next, empty one. */
static void opsd_statsd_gauge(struct ops_statsd *b, const char *name, uint64_t v)
{
	if (!ops_statsd_gauge(b, name, v)) {
		opsd_statsd_flush(b);
		(void)ops_statsd_gauge(b, name, v); /* fits an empty datagram (ops/statsd.h) */
	}
}

static void opsd_statsd_count(struct ops_statsd *b, const char *name, uint64_t total, uint64_t *last)
{
	if (!ops_statsd_count_total(b, name, total, last)) {
		opsd_statsd_flush(b);
		(void)ops_statsd_count_total(b, name, total, last);
	}
}

static void opsd_statsd_fig(struct ops_statsd *b, const char *name, uint32_t f, uint64_t v, uint64_t *last)
{
	if (opsd_fig_meta[f].counter)
		opsd_statsd_count(b, name, v, last);
	else
		opsd_statsd_gauge(b, name, v);
}

/* The figures over every core that reported: sums, but the retained count (every shard
 * holds every retained message: one shard's count), plus core 0's own syslog drops. */
static void opsd_totals(uint64_t total[OPSD_F__COUNT])
{
	memset(total, 0, OPSD_F__COUNT * sizeof total[0]);
	for (uint32_t c = 0; c < od_n_cores; c++) {
		if (!od_cons[c].have)
			continue;
		for (uint32_t f = 0; f < OPSD_F__COUNT; f++) {
			uint64_t v = od_cons[c].latest.v[f];
			total[f] = f == OPSD_F_RETAINED ? MAX(total[f], v) : total[f] + v;
		}
	}
	total[OPSD_F_SYSLOG_DROPPED] += od_syslog_send_dropped;
}

static void opsd_statsd(void)
{
	struct ops_statsd b;
	ops_statsd_begin(&b, od_buf, OPSD_UDP_MAX, CONF_OPS_STATSD_PREFIX);
	uint64_t total[OPSD_F__COUNT];
	opsd_totals(total);
	for (uint32_t f = 0; f < OPSD_F__COUNT; f++)
		opsd_statsd_fig(&b, opsd_fig_meta[f].name, f, total[f], &od_statsd_total_last[f]);
	opsd_statsd_gauge(&b, "health", (uint64_t)od_health.state);
	opsd_statsd_gauge(&b, "health.reasons", od_health.reasons);
	opsd_statsd_gauge(&b, "clock.synced", opsd_clock_synced(node_port_now_ns()) ? 1u : 0u);
	for (uint32_t c = 0; c < od_n_cores; c++) {
		struct opsd_cons *oc = &od_cons[c];
		if (!oc->have)
			continue;
		for (uint32_t f = 0; f < OPSD_F__COUNT; f++) {
			char name[64];
			(void)fmt_snprintf(name, sizeof name, "core%u.%s", (unsigned)c, opsd_fig_meta[f].name);
			opsd_statsd_fig(&b, name, f, oc->latest.v[f], &oc->statsd_last[f]);
		}
		/* The core's three biggest QoS 0 droppers, each reason a gauge of its drops
		 * since the identity took its entry (a rank may change hands: no deltas). */
		for (uint32_t i = 0; i < oc->latest.n_droppers && i < OPSD_DROPPERS; i++)
			for (uint32_t r = 0; r < MQTT_DROP__COUNT; r++) {
				char name[128];
				int k = fmt_snprintf(name, sizeof name, "core%u.", (unsigned)c);
				if (k <= 0 || (size_t)k >= sizeof name ||
				    !mqtt_dropper_metric(&oc->latest.droppers[i], (enum mqtt_drop_reason)r, name + k,
							 sizeof name - (size_t)k))
					continue;
				opsd_statsd_gauge(&b, name, oc->latest.droppers[i].dropped[r]);
			}
	}
	opsd_statsd_flush(&b);
}

/* ---- $SYS messages (core 0) ---------------------------------------------------------- */

/* Retained messages under $SYS/urmqtt/: the health, every figure's total (its statsd name
 * with '/' for '.'), one line per core, and Mosquitto's $SYS/broker/ names for the figures
 * it has. */
static void opsd_sys(uint64_t now_ms)
{
	uint64_t total[OPSD_F__COUNT];
	opsd_totals(total);
	char topic[96], line[1024];
	(void)ops_health_describe(&od_health, line, sizeof line);
	opsd_sys_put("$SYS/urmqtt/health", line);
	opsd_sys_u64("$SYS/urmqtt/uptime", now_ms / 1000u);
	opsd_sys_u64("$SYS/urmqtt/clock/synced", opsd_clock_synced(node_port_now_ns()) ? 1u : 0u);
	for (uint32_t f = 0; f < OPSD_F__COUNT; f++) {
		int n = fmt_snprintf(topic, sizeof topic, "$SYS/urmqtt/%s", opsd_fig_meta[f].name);
		for (int i = 0; i < n && (size_t)i < sizeof topic; i++)
			topic[i] = topic[i] == '.' ? '/' : topic[i];
		opsd_sys_u64(topic, total[f]);
	}
	for (uint32_t c = 0; c < od_n_cores; c++) {
		if (!od_cons[c].have)
			continue;
		size_t len = 0;
		for (uint32_t f = 0; f < OPSD_F__COUNT && len < sizeof line; f++) {
			int n = fmt_snprintf(line + len, sizeof line - len, "%s%s=%llu", f ? " " : "", opsd_fig_meta[f].name,
					     (unsigned long long)od_cons[c].latest.v[f]);
			len += n > 0 ? (size_t)n : 0;
		}
		(void)fmt_snprintf(topic, sizeof topic, "$SYS/urmqtt/core/%u", (unsigned)c);
		opsd_sys_put(topic, line);
	}
	/* Mosquitto's names (its $SYS documentation), for dashboards made for it. */
	char up[32];
	(void)fmt_snprintf(up, sizeof up, "%llu seconds", (unsigned long long)(now_ms / 1000u));
	opsd_sys_put("$SYS/broker/uptime", up);
	opsd_sys_u64("$SYS/broker/clients/connected", total[OPSD_F_CONNECTIONS]);
	opsd_sys_u64("$SYS/broker/messages/received", total[OPSD_F_MSGS_IN_QOS0] + total[OPSD_F_MSGS_IN_QOS1] +
							       total[OPSD_F_MSGS_IN_QOS2]);
	opsd_sys_u64("$SYS/broker/messages/sent", total[OPSD_F_MSGS_OUT_QOS0] + total[OPSD_F_MSGS_OUT_QOS1] +
							   total[OPSD_F_MSGS_OUT_QOS2]);
	opsd_sys_u64("$SYS/broker/bytes/received", total[OPSD_F_BYTES_IN]);
	opsd_sys_u64("$SYS/broker/bytes/sent", total[OPSD_F_BYTES_OUT]);
	opsd_sys_u64("$SYS/broker/retained messages/count", total[OPSD_F_RETAINED]);
}

/* ---- SNTP (core 0) -------------------------------------------------------------------- */

static uint64_t opsd_random64(void)
{
	uint64_t v = 0;
	while (v == 0)
		if (node_port_random(&v, sizeof v) != 0)
			PANIC("ops: the CSPRNG failed");
	return v;
}

static void opsd_ntp_recv(void *ctx, uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, const uint8_t *data,
			  size_t len)
{
	(void)ctx;
	(void)dst_ip;
	uint64_t t4 = node_port_now_ns();
	if (!od_ntp.in_round)
		return;
	for (uint32_t i = 0; i < od_ntp.n; i++) {
		struct opsd_ntp_server *s = &od_ntp.srv[i];
		if (s->ep.ip != src_ip || s->ep.port != src_port || !s->waiting)
			continue;
		const struct ops_sntp_limits lim = {
			.max_delay_ns = CONF_NTP_MAX_DELAY_MS * NS_PER_MS,
			.max_root_distance_ns = 1000u * NS_PER_MS,
		};
		struct ops_sntp_sample smp;
		char who[24];
		opsd_endpoint_str(who, sizeof who, &s->ep);
		if (ops_sntp_parse(data, len, s->nonce, s->t1_ns, t4, &lim, &smp) != 0) {
			if (smp.reject == OPS_SNTP_R_ORIGIN)
				return; /* not an answer to our request: ignored, the request still waits */
			s->waiting = false;
			if (smp.kiss_stop) {
				s->stopped = true;
				LOG_WARN("ntp", "ntp: %s said %s: not asked again", who, smp.kiss);
			} else {
				LOG_WARN("ntp", "ntp: %s: reply refused (%s)", who, ops_sntp_reject_name(smp.reject));
			}
			return;
		}
		s->waiting = false;
		s->answered = true;
		s->sample = smp;
		return;
	}
}

static void opsd_ntp_start(uint64_t now_ns)
{
	uint32_t asked = 0;
	od_ntp.n_rounds++;
	for (uint32_t i = 0; i < od_ntp.n; i++) {
		struct opsd_ntp_server *s = &od_ntp.srv[i];
		s->waiting = s->answered = false;
		if (s->stopped)
			continue;
		uint8_t pkt[OPS_SNTP_PKT_LEN];
		s->nonce = opsd_random64();
		ops_sntp_request(pkt, s->nonce);
		s->t1_ns = node_port_now_ns();
		if (opsd_send(&s->ep, pkt, sizeof pkt) == 0) {
			s->waiting = true;
			asked++;
		}
	}
	od_ntp.in_round = asked > 0;
	od_ntp.round_end_ns = now_ns + (CONF_NTP_MAX_DELAY_MS + OPSD_NTP_SLACK_MS) * NS_PER_MS;
	if (!asked)
		od_ntp.next_ns = now_ns + OPSD_NTP_RETRY_MS * NS_PER_MS;
}

static void opsd_ntp_vote(uint64_t now_ns)
{
	struct ops_sntp_sample smp[OPSD_MAX_NTP];
	size_t n = 0;
	uint32_t asked = 0;
	for (uint32_t i = 0; i < od_ntp.n; i++) {
		struct opsd_ntp_server *s = &od_ntp.srv[i];
		asked += s->waiting || s->answered;
		if (s->answered)
			smp[n++] = s->sample;
		s->waiting = false;
	}
	od_ntp.in_round = false;
	od_ntp.next_ns = now_ns + (uint64_t)od_ntp.poll_s * NS_PER_S;
	int64_t wall_ms = node_port_wall_ms();
	const struct ops_sntp_vote_cfg cfg = {
		.agree_ns = NS_PER_S,
		.max_step_ns = (uint64_t)CONF_NTP_MAX_STEP_S * NS_PER_S,
		.min_agree = CONF_NTP_MIN_AGREE,
		.first_sync = !od_ntp.synced,
	};
	struct ops_sntp_decision d;
	if (ops_sntp_vote(smp, n, now_ns, wall_ms > 0 ? (uint64_t)wall_ms * NS_PER_MS : 0, &cfg, &d) != 0)
		return;
	char utc[32];
	(void)fmt_utc(utc, sizeof utc, (int64_t)(d.wall_ns / NS_PER_MS));
	uint64_t mag = d.offset_ns < 0 ? (uint64_t)0 - (uint64_t)d.offset_ns : (uint64_t)d.offset_ns;
	const char *sign = d.offset_ns < 0 ? "-" : "+";
	switch (d.outcome) {
	case OPS_SNTP_STEP_FIRST:
	case OPS_SNTP_ACCEPT:
		if (d.outcome == OPS_SNTP_STEP_FIRST || !od_ntp.synced)
			LOG_INFO("ntp", "ntp: %u of %u servers agree on %s (%s%lu ms from the wall clock): the wall "
					"clock's reference from now on",
				 (unsigned)d.n_agree, (unsigned)asked, utc, sign, (unsigned long)(mag / NS_PER_MS));
		node_port_wall_reference(d.wall_ns, now_ns, od_ntp.poll_s);
		od_ntp.synced = true;
		od_ntp.last_sync_ns = now_ns;
		od_ntp.n_syncs++;
		opsd_clock_tell(now_ns); /* at once, not at the next health tick */
		break;
	case OPS_SNTP_REFUSE_TOO_FAR:
		od_ntp.n_refused++;
		LOG_WARN("ntp", "ntp: %u of %u servers agree on %s, %s%lu s from the wall clock: more than "
				"ntp.max_step_s (%lu s), refused",
			 (unsigned)d.n_agree, (unsigned)asked, utc, sign, (unsigned long)(mag / NS_PER_S),
			 (unsigned long)CONF_NTP_MAX_STEP_S);
		break;
	case OPS_SNTP_NO_QUORUM:
	default:
		od_ntp.n_no_quorum++;
		LOG_WARN("ntp", "ntp: no agreed time: %u of %u servers answered, at most %u agree within 1 s (%u "
				"needed, and a majority)",
			 (unsigned)n, (unsigned)asked, (unsigned)d.n_agree, (unsigned)CONF_NTP_MIN_AGREE);
		break;
	}
}

static uint32_t opsd_ntp_poll(uint64_t now_ns)
{
	if (!od_ntp.n)
		return 0;
	if (od_ntp.in_round) {
		bool all = true;
		for (uint32_t i = 0; i < od_ntp.n; i++)
			all = all && !od_ntp.srv[i].waiting;
		if (!all && now_ns < od_ntp.round_end_ns)
			return 0;
		opsd_ntp_vote(now_ns);
		return 1;
	}
	if (now_ns < od_ntp.next_ns)
		return 0;
	opsd_ntp_start(now_ns);
	return 1;
}

/* ---- core 0's handler ------------------------------------------------------------------ */

int opsd_poll(void *ctx)
{
	(void)ctx;
	uint64_t now_ms = node_port_now_ms();
	uint32_t work = 0;
	if (od_n_syslog)
		work += opsd_syslog_drain(now_ms);
	if (now_ms >= od_next_health_ms) {
		opsd_take_figures();
		opsd_health(now_ms);
		opsd_clock_tell(node_port_now_ns());
		od_next_health_ms = now_ms + OPSD_HEALTH_MS;
		work++;
	}
	if (od_n_statsd && now_ms >= od_next_statsd_ms) {
		opsd_take_figures();
		opsd_statsd();
		od_next_statsd_ms = now_ms + (uint64_t)od_statsd_interval_s * 1000u;
		work++;
	}
	if (od_b0 && od_sys_interval_s && now_ms >= od_next_sys_ms) {
		opsd_take_figures();
		opsd_sys(now_ms);
		od_next_sys_ms = now_ms + (uint64_t)od_sys_interval_s * 1000u;
		work++;
	}
	work += opsd_ntp_poll(node_port_now_ns());
	return (int)work;
}

/* ---- init ----------------------------------------------------------------------------- */

static const char *const opsd_conf_syslog[] = CONF_OPS_SYSLOG_COLLECTORS_INIT;
static const char *const opsd_conf_statsd[] = CONF_OPS_STATSD_SERVERS_INIT;
static const char *const opsd_conf_ntp[] = CONF_NTP_SERVERS_INIT;

int opsd_init(uint32_t n_cores, struct net_stack *ns0, struct node_broker *b0, const char *cmdline,
	      size_t cmdline_len)
{
	if (n_cores == 0 || n_cores > PLAT_MAX_CPUS)
		return -E_INVAL;
	od_n_cores = n_cores;
	od_ns = ns0;
	od_b0 = CONF_OPS_SYS_READERS_N ? b0 : NULL; /* nobody may read $SYS: nothing published there */
	od_next_sys_ms = node_port_now_ms() + 2000u; /* after the first figures */
	ops_health_init(&od_health);
	for (uint32_t c = 0; c < n_cores; c++)
		if (spsc_init(&od_cons[c].figq, od_cons[c].fig_slots, 2, sizeof(struct opsd_figures)) != 0)
			return -E_INVAL;
	if (!ns0)
		return 0;
	od_n_syslog = opsd_endpoints(opsd_conf_syslog, CONF_OPS_SYSLOG_COLLECTORS_N, "ops_syslog", cmdline,
				     cmdline_len, 514, od_syslog, OPSD_MAX_SYSLOG);
	od_n_statsd = opsd_endpoints(opsd_conf_statsd, CONF_OPS_STATSD_SERVERS_N, "ops_statsd", cmdline, cmdline_len,
				     8125, od_statsd, OPSD_MAX_STATSD);
	struct endpoint ntp[OPSD_MAX_NTP] = { { 0, 0 } };
	uint32_t n_ntp = opsd_endpoints(opsd_conf_ntp, CONF_NTP_SERVERS_N, "ntp_servers", cmdline, cmdline_len,
					OPS_SNTP_PORT, ntp, OPSD_MAX_NTP);
	for (uint32_t i = 0; i < n_ntp; i++) {
		if (endpoint_private(ntp[i].ip)) /* the configuration's are; a development knob's may not be */
			od_ntp.srv[od_ntp.n++].ep = ntp[i];
		else
			LOG_WARN("ops", "ignoring SNTP server %u: not on a private network", (unsigned)i);
	}
	uint32_t iv;
	if (node_knob_u32(cmdline, cmdline_len, "ops_interval_s", 1, 3600, &iv))
		od_statsd_interval_s = od_sys_interval_s = iv;
	/* sys_interval_s=0: no $SYS (the memory tests count every retained byte) */
	(void)node_knob_u32(cmdline, cmdline_len, "sys_interval_s", 0, 3600, &od_sys_interval_s);
#ifndef URMQTT_PROD
	char pol[8];
	if (cmdline && cmdline_get(cmdline, cmdline_len, "unsynced_certs", pol, sizeof pol) == 0)
		od_unsynced_refuse = strcmp(pol, "refuse") == 0;
#endif
	od_ntp.poll_s = CONF_NTP_POLL_S;
	(void)node_knob_u32(cmdline, cmdline_len, "ntp_poll_s", 1, 86400, &od_ntp.poll_s);
	/* A random port in the dynamic range: replies to it are matched by address, port and
	 * nonce (invariant 3). */
	uint16_t r = 0;
	if (node_port_random(&r, sizeof r) != 0)
		return -E_INVAL;
	od_port = (uint16_t)(49152u + r % 16384u);
	if (od_ntp.n && net_udp_bind(ns0, od_port, opsd_ntp_recv, NULL) != 0) {
		LOG_ERR("ops", "SNTP: UDP port %u not bound: the RTC stays the reference", (unsigned)od_port);
		od_ntp.n = 0;
	}
	if (od_n_syslog) {
		size_t slots = CONF_OPS_SYSLOG_QUEUE_LINES;
		size_t bytes = slots * sizeof(struct opsd_log_rec);
		for (uint32_t c = 0; c < n_cores; c++) {
			void *mem = node_port_alloc(bytes, HEAP_TAG_OTHER);
			if (!mem || spsc_init(&od_cons[c].logq, mem, (uint32_t)slots, sizeof(struct opsd_log_rec)) != 0) {
				LOG_ERR("ops", "syslog: no memory for core %u's queue (%lu B): syslog off", (unsigned)c,
					(unsigned long)bytes);
				od_n_syslog = 0;
				return -E_NOMEM;
			}
		}
		log_set_tap(opsd_tap);
	}
	char a[24];
	for (uint32_t i = 0; i < od_n_syslog; i++) {
		opsd_endpoint_str(a, sizeof a, &od_syslog[i]);
		LOG_INFO("ops", "syslog: lines at %s and above to %s (RFC 5424 over UDP, facility %u, host %s)",
			 CONF_OPS_SYSLOG_LEVEL_STR, a, (unsigned)CONF_OPS_SYSLOG_FACILITY, CONF_OPS_HOSTNAME);
	}
	for (uint32_t i = 0; i < od_n_statsd; i++) {
		opsd_endpoint_str(a, sizeof a, &od_statsd[i]);
		LOG_INFO("ops", "statsd: figures every %u s to %s (prefix %s)", (unsigned)od_statsd_interval_s, a,
			 CONF_OPS_STATSD_PREFIX);
	}
	for (uint32_t i = 0; i < od_ntp.n; i++) {
		opsd_endpoint_str(a, sizeof a, &od_ntp.srv[i].ep);
		LOG_INFO("ops", "SNTP: server %s asked every %u s (%u must agree)", a, (unsigned)od_ntp.poll_s,
			 (unsigned)CONF_NTP_MIN_AGREE);
	}
	od_next_statsd_ms = node_port_now_ms() + (uint64_t)od_statsd_interval_s * 1000u;
	if (!od_ntp.n)
		od_clock_told = NODE_CLOCK_TRUSTED; /* every core starts there: nothing to tell */
	return 0;
}
