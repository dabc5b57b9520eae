/* SPDX-License-Identifier: MIT
 *
 * The node's broker (kernel/node/broker.h): dp/ + the TLS handshake env on the platform's
 * heap (kernel/node/port.h), the embedded credentials and revocation list, and the
 * periodic memory line. Owns the glue only; never parses protocol bytes and never touches
 * another core's state.
 */
#include "kernel/node/broker.h"

#include "kernel/log.h"
#include "kernel/node/port.h"
#include "kernel/node/tls_port.h"
#include "kernel/panic.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "lib/nameset.h"
#include "mqtt/fleet.h"
#include "tls/handshake.h"
#include "tls/accel/accel.h"
#include "urmqtt_config.h"

STATIC_ASSERT(NODE_MAX_CORES == TLS_HS_MAX_CORES, "node broker: one broker per core TLS keeps state for");

/* ---- accounted heap (invariant 2) ---------------------------------------------------- */

/* Each core's node broker (invariant 1): written on the boot core before the other cores
 * start (the start publishes it), read-only afterwards. */
static struct node_broker *kb_cores[NODE_MAX_CORES];
/* The node broker node_broker_init is building (boot core only, while no other core runs TLS):
 * its env's allocations are charged to it, not to the boot core's. */
static struct node_broker *kb_building;

static void *kb_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	struct node_broker *b = ctx;
	void *p = NULL;
	if (len == 0 || len > b->limit - b->used || !(p = node_port_alloc(len, tag))) {
		b->n_failed++;
		return NULL;
	}
	b->used += len;
	b->n_live++;
	if (b->used > b->peak)
		b->peak = b->used;
	return p;
}

static void kb_free(void *ctx, void *p, size_t len)
{
	struct node_broker *b = ctx;
	if (!p)
		return;
	if (len > b->used || b->n_live == 0)
		PANIC("node broker: heap accounting underflow (%lu B freed, %lu B live)", (unsigned long)len,
		      (unsigned long)b->used);
	b->used -= len;
	b->n_live--;
	node_port_free(p, len);
}

static size_t kb_used(void *ctx)
{
	return ((const struct node_broker *)ctx)->used;
}

/* What may still be allocated: the configured limit, and never more than the platform
 * still has (the kernel heap takes its slabs from the free frames). */
static size_t kb_avail(void *ctx)
{
	const struct node_broker *b = ctx;
	size_t room = node_port_room();
	size_t left = b->limit - b->used;
	return room < left ? room : left;
}

/* ---- handshake env and dp hooks ---------------------------------------------------------- */

/* The handshake env's heap (ctx unused; the rest of its hooks are kernel/node/tls_port.c's):
 * charge the calling core's node broker, or the one being built while node_broker_init
 * runs. */
static struct node_broker *kb_mine(void)
{
	if (kb_building)
		return kb_building;
	uint32_t c = node_port_core_self();
	struct node_broker *b = c < NODE_MAX_CORES ? kb_cores[c] : NULL;
	return b ? b : kb_cores[0];
}

static void *kb_hs_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx;
	struct node_broker *b = kb_mine();
	return b ? kb_alloc(b, len, tag) : NULL;
}

static void kb_hs_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	struct node_broker *b = kb_mine();
	if (b)
		kb_free(b, p, len);
}

static uint64_t kb_dp_now(void *ctx)
{
	(void)ctx;
	return node_port_now_ms();
}

/* ---- knet upper ------------------------------------------------------------------------ */

static void kb_bind(void *ctx, struct tcp_stack *tcp)
{
	struct node_broker *b = ctx;
	node_broker_attach(b, tcp);
	b->next_report_ms = b->cfg.report_ms ? node_port_now_ms() + b->cfg.report_ms : UINT64_MAX;
}

static uint32_t kb_poll(void *ctx)
{
	struct node_broker *b = ctx;
	uint32_t waiting = dp_poll(b->dp);
	uint64_t now = node_port_now_ms();
	if (now >= b->next_report_ms) {
		b->next_report_ms = now + b->cfg.report_ms;
		node_broker_report(b);
	}
	return waiting;
}

void node_broker_report(struct node_broker *b)
{
	struct dp_stats s;
	struct node_memory m;
	dp_stats_get(b->dp, &s);
	node_broker_memory(b, &m);
	/* One line, within LOG_LINE_MAX: the test and the run script parse name=value.
	 * conns/est/hs/hs_done/core_req are this core's; the heap figures are the machine's
	 * (every core's connections), per connection of this core only when it is alone. */
	LOG_INFO("broker", "core %u: conns=%u est=%u hs=%u hs_done=%lu core_req=%lu per_conn_req=%lu "
			   "per_conn_blk=%lu slot=%lu above_req=%lu above_blk=%lu",
		 (unsigned)b->cfg.core, (unsigned)s.open, (unsigned)s.established,
		 (unsigned)s.handshaking, (unsigned long)s.hs_done,
		 (unsigned long)(b->used > b->base_used ? b->used - b->base_used : 0),
		 (unsigned long)m.heap_req_per_conn, (unsigned long)m.heap_blk_per_conn,
		 (unsigned long)m.slot_bytes, (unsigned long)m.heap_req_above, (unsigned long)m.heap_blk_above);
	/* Storage: acknowledgements held for their commit, the link's backlog, the restore. */
	struct store_link_stats ls;
	if (dp_store_stats(b->dp, &ls)) {
		const struct mqtt_broker_stats *bs = mqtt_broker_stats(dp_broker(b->dp));
		LOG_INFO("broker", "core %u: store serving=%u held=%u held_total=%lu held_failed=%lu records=%lu "
				   "link_waited=%lu link_refused=%lu refused_syn=%lu restored_dlvs=%lu restored_sessions=%lu "
				   "telemetry=%lu telemetry_lost=%lu",
			 (unsigned)b->cfg.core, (unsigned)dp_serving(b->dp), (unsigned)mqtt_broker_held(dp_broker(b->dp)),
			 (unsigned long)bs->held, (unsigned long)bs->held_failed, (unsigned long)ls.records,
			 (unsigned long)ls.backlogged, (unsigned long)ls.refused,
			 (unsigned long)(s.refused_not_serving + s.refused_store_lag), (unsigned long)bs->restored_dlvs,
			 (unsigned long)bs->restored_sessions, (unsigned long)bs->tlog_records, (unsigned long)bs->tlog_lost);
	}
	/* QoS 0 drops per publisher identity (ADR-075): the three that lost most here, each
	 * as links/fair/queue (shard links full, over its fair share while congested, a
	 * subscriber's queue); printed only once something was dropped. */
	struct mqtt_dropper dr[OPSD_DROPPERS];
	size_t nd = mqtt_broker_droppers(dp_broker(b->dp), dr, OPSD_DROPPERS);
	if (nd) {
		char top[OPSD_DROPPERS * (MQTT_DROPPER_ID_MAX + 40u)];
		(void)mqtt_droppers_text(dr, nd, top, sizeof top);
		LOG_INFO("broker", "core %u: droppers (links/fair/queue)%s", (unsigned)b->cfg.core, top);
	}
	/* The shard's line: sessions homed here, retained replicas, wills published here,
	 * connections of this core forwarded to their home core, routed messages in/out. */
	if (b->cfg.n_cores <= 1)
		return;
	struct mqtt_broker_usage u;
	mqtt_broker_usage(dp_broker(b->dp), &u);
	const struct mqtt_broker_stats *ms = mqtt_broker_stats(dp_broker(b->dp));
	struct dp_shard_stats ss;
	if (!dp_shard_stats(b->dp, &ss))
		memset(&ss, 0, sizeof ss);
	LOG_INFO("broker", "core %u: shard sessions=%u proxies=%u retained=%u wills=%lu takeovers=%lu fwd=%lu "
			   "fanout_in=%lu fanout_out=%lu backlogged=%lu refused=%lu",
		 (unsigned)b->cfg.core, (unsigned)u.sessions, (unsigned)ss.proxies, (unsigned)u.retained,
		 (unsigned long)ms->wills_published, (unsigned long)ms->takeovers, (unsigned long)s.fwd_opened,
		 (unsigned long)ss.fanout_in,
		 (unsigned long)ss.fanout_out, (unsigned long)ss.backlogged,
		 (unsigned long)(ss.fanout_refused + ss.backlog_full));
	/* Routing under load: copies not sent to shards whose interest summary cannot match,
	 * messages waiting for the mesh now, QoS 0 PUBLISHes dropped for full links, times this
	 * core stopped reading its connections for a backlog, steered frames refused for lack
	 * of mesh credit. */
	uint64_t frame_drops = b->cfg.mesh_frame_drops ? b->cfg.mesh_frame_drops(b->cfg.core) : 0;
	LOG_INFO("broker", "core %u: routing skipped=%lu queued=%u qos0_dropped=%lu fair_dropped=%lu windows_shut=%lu "
			   "heavy_shut=%lu frame_drops=%lu",
		 (unsigned)b->cfg.core, (unsigned long)ss.fanout_skipped, (unsigned)ss.queued,
		 (unsigned long)ms->fanout_qos0_dropped, (unsigned long)ms->fair_qos0_dropped,
		 (unsigned long)s.route_windows_shut, (unsigned long)s.route_heavy_shut,
		 (unsigned long)frame_drops);
	/* Subscribers behind their publishers (ADR-092): copies a connected subscriber here
	 * dropped (busy: QoS 0 its output refused; all: with its queue's), times that slowed
	 * this core's heavy publishers, PRESS said to the copies' origins and heard. */
	LOG_INFO("broker", "core %u: press busy_dropped=%lu sub_full_dropped=%lu pressed=%lu press_out=%lu press_in=%lu",
		 (unsigned)b->cfg.core, (unsigned long)ms->qos0_busy_dropped, (unsigned long)ms->sub_full_dropped,
		 (unsigned long)ss.pressed, (unsigned long)ss.press_out, (unsigned long)ss.press_in);
	/* Why this core's connections ended (the console's per-site limit may drop the
	 * individual lines under load). */
	LOG_INFO("broker", "core %u: closes peer_fin=%lu tls_alert=%lu tls_error=%lu mqtt=%lu tcp=%lu fwd_full=%lu "
			   "out_send_failed=%lu out_alloc_failed=%lu",
		 (unsigned)b->cfg.core, (unsigned long)s.close_peer_fin, (unsigned long)s.close_tls_alert,
		 (unsigned long)s.close_tls_error, (unsigned long)s.close_mqtt, (unsigned long)s.close_tcp,
		 (unsigned long)s.fwd_full, (unsigned long)s.out_send_failed, (unsigned long)s.out_alloc_failed);
}

void node_broker_figures(struct node_broker *b, struct opsd_figures *f)
{
	struct dp_stats s;
	struct tls_hs_stats hs;
	struct mqtt_broker_usage u;
	memset(f, 0, sizeof *f);
	dp_stats_get(b->dp, &s);
	tls_hs_stats_get(b->hs_env, &hs);
	const struct mqtt_broker_stats *ms = mqtt_broker_stats(dp_broker(b->dp));
	mqtt_broker_usage(dp_broker(b->dp), &u);
	uint64_t *v = f->v;
	f->n_droppers = (uint32_t)mqtt_broker_droppers(dp_broker(b->dp), f->droppers, OPSD_DROPPERS);
	v[OPSD_F_CONNECTIONS] = s.open;
	v[OPSD_F_HANDSHAKING] = s.handshaking;
	v[OPSD_F_SESSIONS] = u.sessions;
	v[OPSD_F_RETAINED] = u.retained;
	v[OPSD_F_HEAP_USED] = b->used;
	v[OPSD_F_HEAP_FREE] = kb_avail(b);
	uint32_t backlog;
	v[OPSD_F_STORE_LAGGING] = dp_store_lag(b->dp, &backlog) ? 1u : 0u;
	v[OPSD_F_STORE_BACKLOG] = backlog;
	v[OPSD_F_SERVING] = dp_serving(b->dp) ? 1u : 0u;
	v[OPSD_F_HS_FULL] = hs.n_done > hs.n_resumed ? hs.n_done - hs.n_resumed : 0;
	v[OPSD_F_HS_RESUMED] = hs.n_resumed;
	v[OPSD_F_HS_FAILED] = s.hs_failed;
	v[OPSD_F_HS_TIMEOUTS] = s.hs_timeouts;
	v[OPSD_F_REFUSED_HEAP] = s.refused_heap;
	v[OPSD_F_REFUSED_SOURCE] = s.refused_source;
	v[OPSD_F_REFUSED_LOAD] = s.refused_records + s.refused_inflight + s.refused_rate + s.refused_port +
				 s.accept_refused;
	v[OPSD_F_REFUSED_STORAGE] = s.refused_not_serving + s.refused_store_lag;
	v[OPSD_F_REFUSED_IDENTITY] = s.id_refused + s.mqtt_open_failed;
	v[OPSD_F_REFUSED_CONNACK] = ms->connack_refused;
	v[OPSD_F_REFUSED_ACL] = ms->acl_denied_pub + ms->acl_denied_sub;
	v[OPSD_F_REFUSED_RATE] = ms->rate_dropped;
	for (uint32_t q = 0; q < 3; q++) {
		v[OPSD_F_MSGS_IN_QOS0 + q] = ms->msgs_in_qos[q];
		v[OPSD_F_MSGS_OUT_QOS0 + q] = ms->msgs_out_qos[q];
	}
	v[OPSD_F_BYTES_IN] = s.bytes_in;
	v[OPSD_F_BYTES_OUT] = s.bytes_out;
	v[OPSD_F_QUEUE_DROPPED] = ms->queue_dropped_oldest + ms->queue_refused + ms->qos0_offline_dropped;
	v[OPSD_F_ROUTE_DROPPED] = ms->fanout_qos0_dropped + ms->fair_qos0_dropped; /* links full or over the fair share (ADR-075) */
	v[OPSD_F_TELEMETRY_RECORDS] = ms->tlog_records;
	v[OPSD_F_TELEMETRY_LOST] = ms->tlog_lost;
}

int node_broker_sys_publish(struct node_broker *b, const char *topic, const char *text)
{
	return mqtt_broker_publish_sys(dp_broker(b->dp), (const uint8_t *)topic, strlen(topic), (const uint8_t *)text,
				       strlen(text));
}

/* ---- the console (ops.console_identities; mqtt/broker.h's control hook) ------------------- */

static bool kb_word(const uint8_t *p, size_t n, const char *w)
{
	return n == strlen(w) && memcmp(p, w, n) == 0;
}

/* "serial=HEX" (an even number of hex digits, at most 20 bytes; ':' allowed between bytes as
 * openssl prints them) or "identity=NAME" (printable, no spaces): the op's data. */
static const char *kb_target(const uint8_t *a, size_t n, bool allow_serial, struct node_ctl *op, bool *serial)
{
	while (n && (a[n - 1] == '\n' || a[n - 1] == '\r' || a[n - 1] == ' '))
		n--;
	if (allow_serial && n > 7 && memcmp(a, "serial=", 7) == 0) {
		size_t k;
		if (tls_revoke_serial_from_hex((const char *)a + 7, n - 7, op->data, &k) != 0)
			return "error: serial= wants hex bytes (':' between them allowed), at most 20";
		op->len = (uint8_t)k;
		*serial = true;
		return NULL;
	}
	if (n > 9 && memcmp(a, "identity=", 9) == 0 && n - 9 <= TLS_IDENTITY_CAP) {
		for (size_t i = 9; i < n; i++)
			if (a[i] < 33 || a[i] > 126)
				return "error: identity= wants printable ASCII without spaces";
		memcpy(op->data, a + 9, n - 9);
		op->len = (uint8_t)(n - 9);
		*serial = false;
		return NULL;
	}
	return allow_serial ? "error: want serial=HEX or identity=NAME" : "error: want identity=NAME";
}

static const char *const kb_levels[] = { "error", "warn", "info", "debug" };

/* The console's loglevel ('l': payload empty to read, or a level to set on every core),
 * stats ('s': this core's figures; the node's totals are $SYS/urmqtt/...) and config ('c':
 * the operators' settings, read only). The reply's length. */
static size_t kb_console_read(struct node_broker *b, uint8_t which, const uint8_t *a, size_t n, char *reply,
			      size_t cap)
{
	int k = 0;
	while (n && (a[n - 1] == '\n' || a[n - 1] == '\r' || a[n - 1] == ' '))
		n--;
	if (which == 'l') {
		for (uint32_t i = 0; n && i < ARRAY_LEN(kb_levels); i++)
			if (kb_word(a, n, kb_levels[i])) {
				log_set_level((enum log_level)i);
				n = 0;
			}
		if (n)
			k = fmt_snprintf(reply, cap, "error: want one of error, warn, info, debug");
		else
			k = fmt_snprintf(reply, cap, "loglevel %s", kb_levels[MIN((uint32_t)log_get_level(), 3u)]);
	} else if (which == 's') {
		struct opsd_figures f;
		node_broker_figures(b, &f);
		/* the core's three biggest QoS 0 droppers as the report line names them (ADR-075) */
		char top[OPSD_DROPPERS * (MQTT_DROPPER_ID_MAX + 40u)];
		if (!mqtt_droppers_text(f.droppers, MIN(f.n_droppers, OPSD_DROPPERS), top, sizeof top))
			(void)fmt_snprintf(top, sizeof top, " none");
		k = fmt_snprintf(reply, cap,
				 "core %u (this connection's home core; the node's totals: $SYS/urmqtt/#): connections=%lu "
				 "sessions=%lu retained=%lu handshakes.full=%lu handshakes.resumed=%lu handshakes.failed=%lu "
				 "messages.in=%lu messages.out=%lu heap.used=%lu heap.free=%lu messages.route_dropped=%lu "
				 "droppers (links/fair/queue):%s",
				 (unsigned)b->cfg.core, (unsigned long)f.v[OPSD_F_CONNECTIONS], (unsigned long)f.v[OPSD_F_SESSIONS],
				 (unsigned long)f.v[OPSD_F_RETAINED], (unsigned long)f.v[OPSD_F_HS_FULL],
				 (unsigned long)f.v[OPSD_F_HS_RESUMED], (unsigned long)f.v[OPSD_F_HS_FAILED],
				 (unsigned long)(f.v[OPSD_F_MSGS_IN_QOS0] + f.v[OPSD_F_MSGS_IN_QOS1] + f.v[OPSD_F_MSGS_IN_QOS2]),
				 (unsigned long)(f.v[OPSD_F_MSGS_OUT_QOS0] + f.v[OPSD_F_MSGS_OUT_QOS1] + f.v[OPSD_F_MSGS_OUT_QOS2]),
				 (unsigned long)f.v[OPSD_F_HEAP_USED], (unsigned long)f.v[OPSD_F_HEAP_FREE],
				 (unsigned long)f.v[OPSD_F_ROUTE_DROPPED], top);
	} else {
		k = fmt_snprintf(reply, cap,
				 "profile=%s hostname=%s data_cores=%u tcp.max_connections=%u storage=%s "
				 "syslog_collectors=%u statsd_servers=%u ntp.servers=%u ntp.min_agree=%u ntp.max_step_s=%u "
				 "console_identities=%u sys_readers=%u loglevel=%s",
				 CONF_CORE_PROFILE_STR, CONF_OPS_HOSTNAME, (unsigned)b->cfg.n_data_cores,
				 (unsigned)CONF_TCP_MAX_CONNECTIONS, b->cfg.store_on ? "on" : "off",
				 (unsigned)CONF_OPS_SYSLOG_COLLECTORS_N, (unsigned)CONF_OPS_STATSD_SERVERS_N,
				 (unsigned)CONF_NTP_SERVERS_N, (unsigned)CONF_NTP_MIN_AGREE, (unsigned)CONF_NTP_MAX_STEP_S,
				 (unsigned)CONF_OPS_CONSOLE_IDENTITIES_N, (unsigned)CONF_OPS_SYS_READERS_N,
				 kb_levels[MIN((uint32_t)log_get_level(), 3u)]);
	}
	return k > 0 ? MIN((size_t)k, cap - 1) : 0;
}

/* The registry's reads: "list" (or nothing) and "list after=NAME", one reply of names in
 * byte order, and "has identity=NAME". The reply's length; *handled false for "add" and
 * "remove", which change every core (kb_control). */
struct kb_page {
	char *out;
	size_t cap, used;
	uint32_t n;
	bool full;
	const char *last;
	size_t last_len;
};

static void kb_page_name(void *ctx, const char *name, size_t len)
{
	struct kb_page *pg = ctx;
	if (pg->full || pg->used + len + 1 >= pg->cap) {
		pg->full = true;
		return;
	}
	pg->out[pg->used++] = ' ';
	memcpy(pg->out + pg->used, name, len);
	pg->last = pg->out + pg->used;
	pg->last_len = len;
	pg->used += len;
	pg->n++;
}

static size_t kb_registry_read(struct node_broker *b, const uint8_t *a, size_t n, char *reply, size_t cap)
{
	const struct nameset *set = node_allowlist_set(&b->allowed);
	struct node_ctl op = { 0 };
	bool serial;
	int k;
	while (n && (a[n - 1] == '\n' || a[n - 1] == '\r' || a[n - 1] == ' '))
		n--;
	if (n > 4 && memcmp(a, "has ", 4) == 0) {
		const char *err = kb_target(a + 4, n - 4, false, &op, &serial);
		k = err ? fmt_snprintf(reply, cap, "%s", err)
			: fmt_snprintf(reply, cap, "registry: %.*s is %sin the registry", (int)op.len, (const char *)op.data,
				       nameset_has(set, (const char *)op.data, op.len) ? "" : "NOT ");
		return k > 0 ? MIN((size_t)k, cap - 1) : 0;
	}
	const uint8_t *after = NULL;
	size_t after_len = 0;
	if (n > 11 && memcmp(a, "list after=", 11) == 0) {
		after = a + 11;
		after_len = n - 11;
	} else if (n && !kb_word(a, n, "list")) {
		k = fmt_snprintf(reply, cap, "error: registry wants list, list after=NAME, has identity=NAME, "
					     "add identity=NAME or remove identity=NAME");
		return k > 0 ? MIN((size_t)k, cap - 1) : 0;
	}
	/* Room for the heading and the "more" line: names fill what is left. */
	char names[MQTT_CONTROL_REPLY_MAX];
	struct kb_page pg = { .out = names, .cap = MIN(cap, sizeof names) > 160 ? MIN(cap, sizeof names) - 160 : 1 };
	uint32_t got = nameset_page(set, (const char *)after, after_len, 64, kb_page_name, &pg);
	names[pg.used] = '\0';
	bool more = pg.full || (got == 64 && pg.n == got);
	k = fmt_snprintf(reply, cap, "registry: %u identities (allowlist mode); %u here%s:%s%s%.*s",
			 (unsigned)nameset_count(set), (unsigned)pg.n, after ? " after the one named" : "", names,
			 more ? "; more: list after=" : "", more ? (int)pg.last_len : 0, more && pg.last ? pg.last : "");
	return k > 0 ? MIN((size_t)k, cap - 1) : 0;
}

static size_t kb_control(void *ctx, const uint8_t *id, size_t id_len, const uint8_t *cmd, size_t cmd_len,
			 const uint8_t *args, size_t args_len, char *reply, size_t cap)
{
	struct node_broker *b = ctx;
	struct node_ctl op = { 0 };
	const char *err = NULL;
	bool serial = false;
	char who[TLS_IDENTITY_CAP + 1], what[2 * TLS_REVOKE_SERIAL_MAX + 1];
	size_t wl = MIN(id_len, sizeof who - 1);
	memcpy(who, id, wl);
	who[wl] = '\0';
	struct log_fields f = { .reason = "console", .identity = who, .peer = NULL };
	if (kb_word(cmd, cmd_len, "revoke") || kb_word(cmd, cmd_len, "unrevoke")) {
		bool un = cmd[0] == 'u';
		err = kb_target(args, args_len, true, &op, &serial);
		op.kind = (uint8_t)(serial ? (un ? NODE_CTL_UNREVOKE_SERIAL : NODE_CTL_REVOKE_SERIAL)
					   : (un ? NODE_CTL_UNREVOKE_ID : NODE_CTL_REVOKE_ID));
	} else if (kb_word(cmd, cmd_len, "kick")) {
		err = kb_target(args, args_len, false, &op, &serial);
		op.kind = NODE_CTL_KICK_ID;
	} else if (kb_word(cmd, cmd_len, "registry")) {
		bool add = args_len > 4 && memcmp(args, "add ", 4) == 0;
		bool rem = args_len > 7 && memcmp(args, "remove ", 7) == 0;
		size_t n = 0;
		if (!node_allowlist_on(&b->allowed))
			n = (size_t)MAX(fmt_snprintf(reply, cap, "error: tls.registry_mode is open (every device with a valid "
								  "certificate connects); the registry is allowlist mode's"),
					0);
		else if (!add && !rem)
			n = kb_registry_read(b, args, args_len, reply, cap);
		if (!node_allowlist_on(&b->allowed) || (!add && !rem)) {
			LOG_FIELDS(LOG_LEVEL_WARN, "console", &f, "console: %s: registry %.*s", who, (int)MIN(args_len, 48u),
				   (const char *)args);
			return MIN(n, cap - 1);
		}
		err = kb_target(args + (add ? 4 : 7), args_len - (add ? 4 : 7), false, &op, &serial);
		op.kind = add ? NODE_CTL_ALLOW_ID : NODE_CTL_DISALLOW_ID;
	} else if (kb_word(cmd, cmd_len, "loglevel") || kb_word(cmd, cmd_len, "stats") ||
		   kb_word(cmd, cmd_len, "config")) {
		size_t n = kb_console_read(b, cmd[0], args, args_len, reply, cap);
		LOG_FIELDS(LOG_LEVEL_WARN, "console", &f, "console: %s: %.*s %.*s", who, (int)MIN(cmd_len, 32u),
			   (const char *)cmd, (int)MIN(args_len, 16u), (const char *)args);
		return n;
	} else {
		int n = fmt_snprintf(reply, cap, "error: unknown command '%.*s' (revoke, unrevoke, kick, loglevel, "
						 "stats, config, registry)",
				     (int)MIN(cmd_len, 32u), (const char *)cmd);
		LOG_FIELDS(LOG_LEVEL_WARN, "console", &f, "console: %s: unknown command '%.*s'", who, (int)MIN(cmd_len, 32u),
			   (const char *)cmd);
		return n > 0 ? MIN((size_t)n, cap - 1) : 0;
	}
	if (serial) {
		for (uint32_t i = 0; i < op.len; i++)
			(void)fmt_snprintf(what + (size_t)2 * i, 3, "%02x", (unsigned)op.data[i]);
		what[(size_t)2 * op.len] = '\0';
	} else {
		memcpy(what, op.data, MIN((size_t)op.len, sizeof what - 1));
		what[MIN((size_t)op.len, sizeof what - 1)] = '\0';
	}
	if (!err && !serial && op.kind != NODE_CTL_ALLOW_ID && id_len >= op.len && memcmp(id, op.data, op.len) == 0 &&
	    (id_len == op.len || id[op.len] == '/'))
		err = "error: a console cannot end its own connections";
	if (!err && op.kind == NODE_CTL_UNREVOKE_SERIAL && node_revoked_in_image(op.data, op.len))
		err = "error: the image itself revokes this serial (a new image lifts it)";
	if (!err && op.kind == NODE_CTL_DISALLOW_ID && node_allowlist_in_image((const char *)op.data, op.len))
		err = "error: the image itself lists this identity (tls.registry; a new image lifts it)";
	bool listing = op.kind == NODE_CTL_ALLOW_ID || op.kind == NODE_CTL_DISALLOW_ID;
	if (!err && op.kind == NODE_CTL_ALLOW_ID && nameset_count(node_allowlist_set(&b->allowed)) >= CONF_TLS_REGISTRY_MAX)
		err = "error: the registry is full (tls.registry_max)";
	if (!err && b->cfg.ctl_broadcast(&op) != 0)
		err = "busy: the previous change is still reaching every core; send it again";
	const char *kept = "";
	if (!err && op.kind != NODE_CTL_KICK_ID) {
		bool put = op.kind == NODE_CTL_REVOKE_SERIAL || op.kind == NODE_CTL_REVOKE_ID || op.kind == NODE_CTL_ALLOW_ID;
		int se = listing ? dp_allowlist_record(b->dp, put, op.data, op.len)
				 : dp_revocation_record(b->dp, put, !serial, op.data, op.len);
		kept = se == 0		 ? " and stored"
		       : se == -E_NOSYS ? " (in memory only: this machine has no storage)"
					: " (in memory only: storage did not take it; send it again)";
		if (se && se != -E_NOSYS)
			LOG_ERR("console", "console: %s: the %.*s of %s was not stored (%s): lost at a restart", who,
				(int)MIN(cmd_len, 32u), (const char *)cmd, what, err_name(se));
	}
	const char *verb = op.kind == NODE_CTL_ALLOW_ID ? "registry add"
			   : op.kind == NODE_CTL_DISALLOW_ID ? "registry remove" : (const char *)cmd;
	size_t verb_len = listing ? strlen(verb) : MIN(cmd_len, 32u);
	int n;
	if (err) {
		n = fmt_snprintf(reply, cap, "%s", err);
		LOG_FIELDS(LOG_LEVEL_WARN, "console", &f, "console: %s: %.*s %s refused: %s", who, (int)verb_len, verb,
			   what, err);
	} else {
		n = fmt_snprintf(reply, cap, "ok: %.*s %s %s on %u cores%s", (int)verb_len, verb,
				 serial ? "serial" : "identity", what, (unsigned)b->cfg.n_data_cores, kept);
		LOG_FIELDS(LOG_LEVEL_WARN, "console", &f, "console: %s: %.*s %s %s", who, (int)verb_len, verb,
			   serial ? "serial" : "identity", what);
	}
	return n > 0 ? MIN((size_t)n, cap - 1) : 0;
}

/* tls_hs_config.clock_trusted, from this core's view (NODE_CTL_CLOCK, sent by core 0's
 * SNTP client): without SNTP servers the RTC is the reference and trusted; with them, their
 * agreed time must be followed, else ntp.unsynced_certs decides (accept: warned at most
 * once a minute per core). */
static bool kb_clock_trusted(void *ctx)
{
	struct node_broker *b = ctx;
	if (b->clock_trust == NODE_CLOCK_TRUSTED)
		return true;
	if (b->clock_trust == NODE_CLOCK_UNSYNCED_REFUSE)
		return false;
	uint64_t now = node_port_now_ms();
	if (!b->clock_warned_ms || now - b->clock_warned_ms >= 60000u) {
		b->clock_warned_ms = now;
		LOG_WARN("tls", "core %u: client certificates are checked against a wall clock SNTP has not confirmed "
				"(ntp.unsynced_certs = accept)",
			 (unsigned)b->cfg.core);
	}
	return true;
}

static const char *const kb_ctl_name[] = {
	[NODE_CTL_REVOKE_SERIAL] = "revoke serial", [NODE_CTL_UNREVOKE_SERIAL] = "unrevoke serial",
	[NODE_CTL_REVOKE_ID] = "revoke identity",   [NODE_CTL_UNREVOKE_ID] = "unrevoke identity",
	[NODE_CTL_KICK_ID] = "kick identity",  [NODE_CTL_CLOCK] = "clock state",
	[NODE_CTL_ALLOW_ID] = "registry add",  [NODE_CTL_DISALLOW_ID] = "registry remove",
};

void node_broker_ctl_apply(struct node_broker *b, const struct node_ctl *op)
{
	uint32_t closed = 0;
	int err = 0;
	const char *name = (const char *)op->data;
	switch (op->kind) {
	case NODE_CTL_REVOKE_SERIAL:
		err = tls_revoke_set_add(&b->revoked.set, op->data, op->len);
		closed = dp_revoke_serial(b->dp, op->data, op->len);
		break;
	case NODE_CTL_UNREVOKE_SERIAL:
		err = tls_revoke_set_remove(&b->revoked.set, op->data, op->len);
		break;
	case NODE_CTL_REVOKE_ID:
		err = node_revoked_add_id(&b->revoked, name, op->len);
		closed = dp_kick_identity(b->dp, name, op->len);
		break;
	case NODE_CTL_UNREVOKE_ID:
		err = node_revoked_remove_id(&b->revoked, name, op->len);
		break;
	case NODE_CTL_KICK_ID:
		closed = dp_kick_identity(b->dp, name, op->len);
		break;
	case NODE_CTL_CLOCK:
		b->clock_trust = op->len ? op->data[0] : (uint8_t)NODE_CLOCK_TRUSTED;
		return;
	case NODE_CTL_ALLOW_ID:
		err = node_allowlist_add(&b->allowed, name, op->len);
		break;
	case NODE_CTL_DISALLOW_ID:
		err = node_allowlist_remove(&b->allowed, name, op->len);
		closed = dp_kick_identity(b->dp, name, op->len);
		break;
	default:
		return;
	}
	if (err && err != -E_EXIST && err != -E_NOENT)
		LOG_ERR("console", "core %u: console's %s NOT applied (%s: the sets hold %u serials and %u identities, "
				   "the registry %u identities in %u KiB)",
			(unsigned)b->cfg.core, kb_ctl_name[op->kind], err_name(err), (unsigned)NODE_MAX_REVOKED,
			(unsigned)NODE_MAX_REVOKED_IDS, (unsigned)CONF_TLS_REGISTRY_MAX,
			(unsigned)CONF_TLS_REGISTRY_NAME_KB);
	else if (closed)
		LOG_INFO("console", "core %u: console's %s ended %u connection(s)", (unsigned)b->cfg.core,
			 kb_ctl_name[op->kind], (unsigned)closed);
}

/* Development builds' ballast (node.c's ballast_mb knob), in blocks of the platform heap's
 * largest request; core 0 only. */
#define KB_BALLAST_BLOCK ((size_t)1 << 20)
static void *kb_ballast[1024];
static uint32_t kb_n_ballast;

#define KB_BALLAST_STEP 1u /* blocks per call: zeroing 1 MiB takes ~4 ms under TCG */

bool node_broker_ballast(struct node_broker *b, uint32_t free_pct, size_t *held)
{
	bool done = true;
	if (!free_pct) {
		for (uint32_t i = 0; i < KB_BALLAST_STEP && kb_n_ballast; i++)
			kb_free(b, kb_ballast[--kb_n_ballast], KB_BALLAST_BLOCK);
		done = kb_n_ballast == 0;
	} else {
		for (uint32_t i = 0;; i++) {
			size_t avail = kb_avail(b);
			if (kb_n_ballast == ARRAY_LEN(kb_ballast) ||
			    (uint64_t)avail * 100u < (uint64_t)free_pct * (b->used + avail))
				break;
			void *p = i < KB_BALLAST_STEP ? kb_alloc(b, KB_BALLAST_BLOCK, HEAP_TAG_OTHER) : NULL;
			if (!p) {
				done = i < KB_BALLAST_STEP; /* the heap said no: as far as it goes */
				break;
			}
			kb_ballast[kb_n_ballast++] = p;
		}
	}
	*held = (size_t)kb_n_ballast * KB_BALLAST_BLOCK;
	return done;
}

/* A revocation storage holds (kept across boots: the image's serials, the console's
 * serials and identities): added to this core's sets unless there already; the sets are
 * bounded, and one beyond them is said loudly, since a device it names could still connect. */
static void kb_revoked_add(void *ctx, bool identity, const uint8_t *id, size_t len)
{
	struct node_broker *b = ctx;
	int err = identity ? node_revoked_add_id(&b->revoked, (const char *)id, len)
			   : tls_revoke_set_add(&b->revoked.set, id, len);
	if (err && err != -E_EXIST)
		LOG_ERR("broker", "core %u: a stored revoked %s could not join this core's set (%s; at most %u): NOT enforced",
			(unsigned)b->cfg.core, identity ? "identity" : "serial", err_name(err),
			(unsigned)(identity ? NODE_MAX_REVOKED_IDS : NODE_MAX_REVOKED));
}

/* An identity of the allowlist storage restores: added to this core's set unless there
 * already; one beyond the set's room is said loudly (that device is refused). */
static void kb_allowed_add(void *ctx, const uint8_t *id, size_t len)
{
	struct node_broker *b = ctx;
	int err = node_allowlist_add(&b->allowed, (const char *)id, len);
	if (err == -E_NOSYS)
		return; /* open mode: a registry kept from an allowlist configuration is not used */
	if (err && err != -E_EXIST)
		LOG_ERR("broker", "core %u: a stored allowlist identity could not join this core's registry (%s; "
				  "tls.registry_max %u, tls.registry_name_kb %u): that device is refused",
			(unsigned)b->cfg.core, err_name(err), (unsigned)CONF_TLS_REGISTRY_MAX,
			(unsigned)CONF_TLS_REGISTRY_NAME_KB);
}

/* ---- init -------------------------------------------------------------------------------- */

/* dp's lines, without a platform hook: the kernel log. */
static void kb_log(void *ctx, const char *line, const struct log_fields *f)
{
	const struct node_broker *b = ctx;
	LOG_FIELDS(LOG_LEVEL_INFO, "broker", f, "core %u: %s", (unsigned)b->cfg.core, line);
}

/* The fleet's ring: one for the machine, built by the first node_broker_init (boot core,
 * before any core runs TLS: design note 1) and read-only afterwards, so every core's broker
 * reads it without synchronisation. NULL: no fleet (no members). */
static struct mqtt_fleet kb_fleet;
static const char *const kb_fleet_conf[] = CONF_FLEET_MEMBERS_INIT;

static int kb_fleet_ring(const struct node_broker_config *cfg, const struct mqtt_fleet **out)
{
	static bool built;
	*out = NULL;
	const char *const *members = cfg->n_fleet_members ? cfg->fleet_members : kb_fleet_conf;
	size_t n = cfg->n_fleet_members ? cfg->n_fleet_members : CONF_FLEET_MEMBERS_N;
	const char *self = cfg->n_fleet_members ? cfg->fleet_self : CONF_FLEET_SELF;
	if (n == 0)
		return 0;
	if (!built || cfg->core == 0) {
		uint8_t key[MQTT_FLEET_KEY_LEN];
		const char *why = "the ring key is not 32 hex digits";
		int rc = mqtt_fleet_key_parse(CONF_FLEET_RING_KEY, strlen(CONF_FLEET_RING_KEY), key);
		if (rc == 0)
			rc = mqtt_fleet_init(&kb_fleet, members, n, self ? self : "", self ? strlen(self) : 0, key,
					     CONF_FLEET_VNODES, &why);
		if (rc != 0) {
			LOG_ERR("broker", "fleet: %s", why);
			return rc;
		}
		built = true;
		const struct mqtt_fleet_member *me = mqtt_fleet_member(&kb_fleet, kb_fleet.self);
		LOG_INFO("broker", "fleet: appliance %.*s (%.*s) of %u, %u points each; other homes' 5.0 devices are redirected",
			 (int)me->name_len, me->name, (int)me->ref_len, me->ref, (unsigned)kb_fleet.n_members,
			 (unsigned)kb_fleet.vnodes);
	}
	*out = &kb_fleet;
	return 0;
}

int node_broker_init(struct node_broker *b, const struct node_broker_config *cfg)
{
	int rc;
	memset(b, 0, sizeof *b);
	if (cfg->core >= NODE_MAX_CORES)
		return -E_INVAL;
	if (kb_cores[cfg->core])
		return -E_EXIST;
	b->cfg = *cfg;
	kb_cores[cfg->core] = b; /* before the env: its own allocations are this core's */
	b->limit = (size_t)CONF_CORE_HEAP_LIMIT_MB << 20;
	b->next_report_ms = UINT64_MAX;
	if ((rc = node_revoked_image(&b->revoked)) != 0) {
		LOG_ERR("broker", "embedded revocation list unusable (%s)", err_name(rc));
		return rc;
	}
	if ((rc = node_allowlist_init(&b->allowed, CONF_TLS_REGISTRY_MODE == 1 || cfg->allowlist)) != 0) {
		LOG_ERR("broker", "core %u: the allowlist (tls.registry_max %u, tls.registry_name_kb %u) cannot be made: %s",
			(unsigned)cfg->core, (unsigned)CONF_TLS_REGISTRY_MAX, (unsigned)CONF_TLS_REGISTRY_NAME_KB,
			err_name(rc));
		return rc;
	}
	b->revoked.allowed = node_allowlist_set(&b->allowed);
	if (b->revoked.allowed && cfg->core == 0)
		LOG_INFO("broker", "allowlist mode: %u device identities from the image (room for %u per core, %lu KiB each)",
			 (unsigned)nameset_count(b->revoked.allowed), (unsigned)CONF_TLS_REGISTRY_MAX,
			 (unsigned long)(b->allowed.mem_len >> 10));

	struct tls_hs_config hc;
	dp_hs_config_from_conf(&hc);
	hc.revoke = node_revoked_hooks(&b->revoked);
	hc.clock_trusted = kb_clock_trusted;
	hc.clock_ctx = b;
	hc.ticket_secret = cfg->ticket_secret;
	hc.ops = node_tls_port_hs_ops();
	hc.ops.alloc = kb_hs_alloc;
	hc.ops.free = kb_hs_free;
	kb_building = b;
	rc = tls_hs_env_create(&hc, &b->hs_env);
	kb_building = NULL;
	if (rc != 0) {
		LOG_ERR("broker", "TLS handshake env: %s", err_name(rc));
		return rc;
	}
	/* Once (the envs share one registry): a refused CA key verifies on the generic path. */
	if (cfg->core == 0)
		LOG_INFO("broker", "CA keys with a P-256 fixed-base table: %u (limit %u, %u refused)",
			 accel_trusted_p256_keys(), (unsigned)ACCEL_P256_TRUSTED_MAX, accel_trust_p256_refused());

	struct dp_config g;
	dp_config_from_conf(&g);
	if (cfg->client_id_override)
		g.mqtt.client_id_override = true;
	if (cfg->max_conns)
		dp_config_set_conns(&g, cfg->max_conns);
	if (cfg->no_telemetry_log)
		g.mqtt.n_telemetry_filters = 0;
	g.hs_env = b->hs_env;
	g.heap = (struct dp_heap_ops){ kb_alloc, kb_free, kb_used, kb_avail, b };
	g.lower = dp_lower_tcp;
	if (cfg->ctl_broadcast) {
		g.mqtt.control = kb_control;
		g.mqtt.control_ctx = b;
	}
	g.log = cfg->log ? cfg->log : kb_log;
	g.log_ctx = cfg->log ? cfg->log_ctx : b;
	g.now_ms = kb_dp_now;
	g.clock_ctx = b;
	if ((rc = node_port_random(g.mqtt.hash_key, sizeof g.mqtt.hash_key)) != 0)
		return rc;
	if ((rc = kb_fleet_ring(cfg, &g.mqtt.fleet)) != 0)
		return rc;
	if (cfg->n_cores > 1) {
		g.shard = (struct dp_shard_config){
			.n_cores = cfg->n_cores, .self = cfg->core, .payload_max = cfg->mesh_payload_max,
			.backlog_bytes = CONF_CORE_SHARD_BACKLOG_BYTES, .out_window = CONF_CORE_SHARD_OUT_WINDOW,
			.data_window = CONF_CORE_SHARD_DATA_WINDOW,
			.interest_slots = CONF_CORE_SHARD_INTEREST_SLOTS,
			.max_proxies = g.max_conns, .max_lost_owed = CONF_CORE_SHARD_LOST_OWED,
			.press_ms = CONF_CORE_SHARD_PRESS_MS, .mesh = cfg->mesh,
		};
		memcpy(g.shard.home_key, cfg->home_key, sizeof g.shard.home_key);
	}
	if (cfg->store_on) {
		g.store.on = true;
		g.store.self = cfg->core;
		g.store.link.send = cfg->store_send;
		g.store.link.ctx = cfg->store_ctx;
		g.store.link.payload_max = cfg->store_payload_max;
		g.store.revoked = kb_revoked_add;
		g.store.allowed = kb_allowed_add;
		g.store.revoked_ctx = b;
	}
	size_t need = dp_mem_size(&g);
	if (!need) {
		LOG_ERR("broker", "data plane configuration rejected");
		return -E_INVAL;
	}
	if (!(b->mem = node_port_region(need, &b->mem_len))) {
		LOG_ERR("broker", "no %lu KiB for the data plane", (unsigned long)(need >> 10));
		return -E_NOMEM;
	}
	if ((rc = dp_init(&b->dp, b->mem, b->mem_len, &g)) != 0) {
		LOG_ERR("broker", "data plane: %s", err_name(rc));
		return rc;
	}
	dp_tcp_config_from_conf(&b->tcp);
	dp_tcp_config_set_conns(&b->tcp, g.max_conns); /* knet's TCP tables: the same slots */
	struct tcp_config tc = b->tcp;
	if (dp_footprint(&g, &tc, &b->fp) == 0)
		LOG_INFO("broker", "core %u: memory: %lu B per connection slot (%u slots: %lu KiB), %lu KiB per core "
				   "besides (handshake staging, key cache, sessions, topics, backlogs)",
			 (unsigned)cfg->core, (unsigned long)b->fp.slot_bytes, (unsigned)b->fp.slots,
			 (unsigned long)((b->fp.slot_bytes * b->fp.slots) >> 10), (unsigned long)(b->fp.core_bytes >> 10));
	b->upper = (struct knet_upper){
		.ops = &dp_tcp_upper, .ops_ctx = b->dp, .ctx = b,
		.bind = kb_bind, .poll = kb_poll, .tcp = &b->tcp,
	};
	LOG_INFO("broker", "MQTT over TLS 1.3 (client certificates) on TCP %u: %u connection records "
			   "of %lu B, data plane region %lu KiB, %u revoked serial(s)",
		 (unsigned)CONF_TCP_PORT, (unsigned)g.max_conns, (unsigned long)dp_conn_sizeof(),
		 (unsigned long)(need >> 10), (unsigned)b->revoked.set.list.n);
	return 0;
}

void node_broker_fini(struct node_broker *b)
{
	if (b->dp) {
		dp_fini(b->dp);
		b->dp = NULL;
	}
	if (b->hs_env) {
		kb_building = b; /* the env's frees are this broker's, whichever core runs this */
		tls_hs_env_destroy(b->hs_env);
		kb_building = NULL;
		b->hs_env = NULL;
	}
	if (b->mem) {
		node_port_region_free(b->mem, b->mem_len);
		b->mem = NULL;
	}
	b->revoked.allowed = NULL;
	node_allowlist_fini(&b->allowed);
	if (b->cfg.core < NODE_MAX_CORES && kb_cores[b->cfg.core] == b)
		kb_cores[b->cfg.core] = NULL;
}

void node_broker_attach(struct node_broker *b, struct tcp_stack *tcp)
{
	dp_set_lower_ctx(b->dp, tcp);
	/* Invariant 3: every table and the TCP stack exist, no connection is open. */
	node_port_heap_totals(&b->base_req, &b->base_blk);
	b->base_used = b->used;
}

void node_broker_memory(struct node_broker *b, struct node_memory *out)
{
	struct dp_stats s;
	uint64_t req_now, blk_now;
	dp_stats_get(b->dp, &s);
	node_port_heap_totals(&req_now, &blk_now);
	memset(out, 0, sizeof *out);
	out->slot_bytes = b->fp.slot_bytes;
	out->core_bytes = b->fp.core_bytes;
	out->slots = b->fp.slots;
	out->open = s.open;
	out->heap_req_above = req_now > b->base_req ? req_now - b->base_req : 0;
	out->heap_blk_above = blk_now > b->base_blk ? blk_now - b->base_blk : 0;
	if (s.open) {
		out->heap_req_per_conn = (size_t)(out->heap_req_above / s.open);
		out->heap_blk_per_conn = (size_t)(out->heap_blk_above / s.open);
	}
	out->idle_bytes_per_conn = out->slot_bytes + out->heap_blk_per_conn;
}

const struct tls_revoke_list *node_broker_revoked(const struct node_broker *b)
{
	return &b->revoked.set.list;
}

void node_broker_shards_off(struct node_broker *b)
{
	dp_shards_off(b->dp);
	b->cfg.n_cores = 1;
}

void node_broker_mesh_recv(struct node_broker *b, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len)
{
	dp_mesh_recv(b->dp, src, kind, data, len);
}

void node_broker_store_recv(struct node_broker *b, uint16_t kind, const uint8_t *data, uint32_t len)
{
	dp_store_recv(b->dp, kind, data, len);
}

const struct knet_upper *node_broker_upper(struct node_broker *b)
{
	return &b->upper;
}
