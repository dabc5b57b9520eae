/* SPDX-License-Identifier: MIT
 *
 * The data plane's settings from the build-time configuration (the CONF_* constants of
 * $(B)/gen/urmqtt_config.h): TCP, admission, identity rules, broker limits and the ACL
 * patterns of service identities. The only file of dp/ that reads the configuration
 * header; it holds constant tables only (the ACL patterns) and never mutable state.
 * Limits the configuration file does not name yet are derived here, each with its reason.
 */
#include "dp/dp.h"

#include "lib/mem.h"
#include "urmqtt_certs.h"
#include "urmqtt_config.h"

static const char *const dp_acl_sub[] = CONF_ACL_SERVICE_SUBSCRIBE_INIT;
static const char *const dp_acl_pub[] = CONF_ACL_SERVICE_PUBLISH_INIT;
/* One rule for every service identity (identity NULL): the configuration has one set. */
static const struct mqtt_acl_service dp_acl_services[] = {
	{ NULL, dp_acl_pub, dp_acl_sub, CONF_ACL_SERVICE_PUBLISH_N, CONF_ACL_SERVICE_SUBSCRIBE_N },
};

void dp_tcp_config_set_conns(struct tcp_config *tc, uint32_t n)
{
	tc->max_conns = n;
	/* A connection holds a few records unacknowledged at a time (handshake flight,
	 * CONNACK, deliveries up to the inflight window). */
	tc->max_send_refs = 4u * n;
	tc->max_pending_acks = n;
}

void dp_config_set_conns(struct dp_config *g, uint32_t n)
{
	g->max_conns = n;
	g->mqtt.max_conns = n;
	if (g->shard.n_cores > 1)
		g->shard.max_proxies = n; /* a session homed here may have its connection elsewhere */
}

void dp_tcp_config_from_conf(struct tcp_config *tc)
{
	tcp_config_default(tc);
	tc->ports[0] = CONF_TCP_PORT;
	tc->n_ports = 1;
	dp_tcp_config_set_conns(tc, CONF_TCP_MAX_CONNECTIONS);
	tc->mss = CONF_TCP_MSS;
	tc->rto_min_ms = CONF_TCP_RTO_MIN_MS;
	tc->rto_max_ms = CONF_TCP_RTO_MAX_MS;
	tc->delack_ms = CONF_TCP_DELAYED_ACK_MS;
	tc->max_retries = CONF_TCP_MAX_RETRANSMITS;
	tc->cookie_period_ms = CONF_TCP_SYN_COOKIE_ROTATE_S * 1000u;
	tc->rst_per_s = CONF_TCP_RST_RATE_PER_S;
	tc->ooo_slots = CONF_TCP_OOO_SLOTS;
	tc->ooo_per_conn = CONF_TCP_OOO_PER_CONN;
	tc->ooo_slot_size = CONF_TCP_OOO_SLOT_SIZE;
}

void dp_hs_id_config(struct tls_id_config *id)
{
	id->source = CONF_TLS_IDENTITY_SOURCE == CONF_TLS_IDENTITY_SOURCE_SAN_URI ?
			     TLS_ID_FROM_SAN_URI : TLS_ID_FROM_CN;
	id->max_len = 64; /* an MQTT client id a device may use; topic level budget */
	id->service_uri_prefix = CONF_TLS_SERVICE_URI_PREFIX;
}

void dp_config_from_conf(struct dp_config *g)
{
	memset(g, 0, sizeof *g);
	g->port = CONF_TCP_PORT;
	g->hs_per_core = CONF_TLS_HANDSHAKES_PER_CORE;
	g->hs_per_source = CONF_TLS_HANDSHAKES_PER_SOURCE;
	g->hs_rate_per_s = CONF_TLS_HANDSHAKE_RATE_PER_S;
	g->hs_burst = CONF_TLS_HANDSHAKES_PER_CORE; /* a full pool may start at once */
	g->hs_timeout_ms = 10000;                  /* a slow device on a bad link */
	g->hs_stage_bytes = CONF_TLS_HANDSHAKE_STAGE_BYTES;
	g->hs_steps_per_poll = CONF_TLS_HANDSHAKE_STEPS_PER_POLL;
	g->heap_low_watermark = (size_t)CONF_TLS_HEAP_LOW_WATERMARK_KB * 1024u;
	g->max_out_bytes = 2u * CONF_TLS_RECORD_BUFFER_BYTES;
	g->rx_window = CONF_TLS_RECORD_BUFFER_BYTES;
	/* Per-core key/IV cache for busy connections (ADR-014). */
	g->rec.key_cache_slots = CONF_TLS_KEY_CACHE_ENTRIES;
	g->rec.max_plaintext = TLS_REC_MAX_PLAINTEXT;
	g->rec.key_update_after = 1u << 24; /* far below the AEAD limits of both suites */

	struct mqtt_broker_config *m = &g->mqtt;
	dp_config_set_conns(g, CONF_TCP_MAX_CONNECTIONS);
	m->max_sessions = CONF_MQTT_MAX_SESSIONS;
	m->max_nodes = 2u * CONF_MQTT_MAX_SESSIONS + 1024u; /* a few absolute filters each */
	m->max_subs = 2u * CONF_MQTT_MAX_SESSIONS;          /* beyond the inline one */
	m->max_deliveries = 4u * CONF_MQTT_MAX_SESSIONS;
	m->max_retained = CONF_MQTT_RETAINED_MAX;
	m->max_packet = CONF_MQTT_MAX_PACKET_BYTES;
	m->heap_limit = (size_t)CONF_CORE_HEAP_LIMIT_MB << 19; /* half the heap */
	m->max_topic_levels = 16;
	m->max_inflight = CONF_MQTT_INFLIGHT_WINDOW;
	m->max_queue = CONF_MQTT_OFFLINE_QUEUE_LEN;
	m->max_qos2_rx = CONF_MQTT_INFLIGHT_WINDOW;
	m->topic_alias_max = CONF_MQTT_TOPIC_ALIAS_MAX;
	m->max_delayed_wills = CONF_MQTT_DELAYED_WILLS;
	m->max_session_expiry_s = (uint32_t)CONF_MQTT_SESSION_EXPIRY_MAX_S;
	m->max_sub_ids = CONF_MQTT_SUBSCRIPTION_IDS;
	m->max_shared_groups = CONF_MQTT_SHARED_GROUPS;
	m->max_subs_per_session = CONF_MQTT_MAX_SUBSCRIPTIONS_PER_SESSION;
	m->queue_drop_oldest = CONF_MQTT_OFFLINE_QUEUE_POLICY == CONF_MQTT_OFFLINE_QUEUE_POLICY_DROP_OLDEST;
	m->max_violations = CONF_MQTT_ACL_VIOLATIONS_BEFORE_CLOSE;
	m->connect_timeout_ms = 10000;
	m->rate_msgs_per_s = CONF_MQTT_RATE_MSGS_PER_S;
	m->rate_burst_msgs = CONF_MQTT_RATE_MSGS_PER_S;
	m->rate_bytes_per_s = CONF_MQTT_RATE_BYTES_PER_S;
	m->rate_burst_bytes = CONF_MQTT_RATE_BYTES_PER_S;
	m->service_rate_msgs_per_s = CONF_MQTT_SERVICE_RATE_MSGS_PER_S;
	m->service_rate_burst_msgs = CONF_MQTT_SERVICE_RATE_MSGS_PER_S;
	m->service_rate_bytes_per_s = CONF_MQTT_SERVICE_RATE_BYTES_PER_S;
	m->service_rate_burst_bytes = CONF_MQTT_SERVICE_RATE_BYTES_PER_S;
	m->rate_disconnect = CONF_MQTT_RATE_POLICY == CONF_MQTT_RATE_POLICY_DISCONNECT;
	m->client_id_override = CONF_MQTT_CLIENT_ID_POLICY == CONF_MQTT_CLIENT_ID_POLICY_OVERRIDE;
	/* Identities remembered after they leave (buckets owing tokens, ADR-022), and
	 * refusal lines per reason. */
	m->rate_idle_ids = CONF_MQTT_RATE_IDLE_IDENTITIES;
	m->drop_ids = CONF_MQTT_DROP_IDENTITIES; /* QoS 0 drops per identity, fair shares (ADR-075) */
	m->log_burst = CONF_MQTT_LOG_BURST;
	m->log_per_min = CONF_MQTT_LOG_LINES_PER_MIN;
	m->services = dp_acl_services;
	m->n_services = 1;
	/* Telemetry: what the storage core keeps in its log (recorded only when storage is on). */
	m->telemetry_filters = conf_storage_telemetry_topics;
	m->n_telemetry_filters = (uint16_t)CONF_STORAGE_TELEMETRY_TOPICS_N;
	m->telemetry_readers = conf_storage_telemetry_readers;
	m->n_telemetry_readers = (uint16_t)CONF_STORAGE_TELEMETRY_READERS_N;
	m->sys_readers = conf_ops_sys_readers;
	m->n_sys_readers = (uint16_t)CONF_OPS_SYS_READERS_N;
	m->console_ids = conf_ops_console_identities;
	m->n_console_ids = (uint16_t)CONF_OPS_CONSOLE_IDENTITIES_N;
	m->max_queries = (uint16_t)CONF_STORAGE_TELEMETRY_QUERIES;
	m->query_limit = CONF_STORAGE_TELEMETRY_QUERY_LIMIT;

	/* Storage: sizes only; the platform says whether it is on and links the send op. */
	g->store.held_acks = CONF_STORAGE_HELD_ACKS;
	g->store.max_queries = CONF_STORAGE_TELEMETRY_QUERIES;
	g->store.link.backlog_bytes = CONF_STORAGE_LINK_BACKLOG_BYTES;
	g->store.link.lag_bytes = CONF_STORAGE_LAG_BACKLOG_BYTES;
	g->store.link.max_record = STORE_REC_HDR + 255u + UINT16_MAX + CONF_MQTT_MAX_PACKET_BYTES;
}

void dp_hs_config_from_conf(struct tls_hs_config *hc)
{
	memset(hc, 0, sizeof *hc);
	hc->max_in_flight = CONF_TLS_HANDSHAKES_PER_CORE;
	hc->ca = urmqtt_ca_der;
	hc->ca_len = sizeof urmqtt_ca_der;
	hc->cert = urmqtt_server_crt_der;
	hc->cert_len = sizeof urmqtt_server_crt_der;
	hc->key = urmqtt_server_key_der;
	hc->key_len = sizeof urmqtt_server_key_der;
	dp_hs_id_config(&hc->id);
	hc->ticket_lifetime_s = CONF_TLS_TICKET_LIFETIME_S;
	hc->ticket_key_rotate_s = CONF_TLS_TICKET_KEY_ROTATE_S;
	hc->clock_skew_s = CONF_TLS_CLOCK_SKEW_S;
	hc->max_client_hello_bytes = CONF_TLS_MAX_CLIENT_HELLO_BYTES;
	hc->max_client_chain_bytes = CONF_TLS_MAX_CLIENT_CHAIN_BYTES;
	hc->n_tickets = 1;
	hc->rsa = CONF_TLS_RSA_ALLOWED != 0;
}
