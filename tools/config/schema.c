/* SPDX-License-Identifier: MIT
 *
 * The configuration schema: every key the image can be built with, its type, default,
 * range, unit, one line of documentation and the constant it generates, plus the
 * cross-key constraints. docs/CONFIGURATION.md is generated from this table (and a unit
 * test keeps the committed copy equal), so adding a key here documents it. Layers add
 * their keys here (keep each section together: the generators emit in table order).
 *
 * Never: read input, allocate, or use libc (lib/ only). Defaults must satisfy every
 * range and constraint (tests/unit/tools/test_confparse.c parses an empty file).
 */
#include "tools/config/conf.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "mqtt/fleet.h"

static const char *const profile_vals[] = { "dev", "prod", NULL };
static const char *const log_level_vals[] = { "error", "warn", "info", "debug", "trace", NULL };
static const char *const identity_vals[] = { "cn", "san_uri", NULL };
static const char *const queue_policy_vals[] = { "drop_oldest", "refuse_newest", NULL };
static const char *const rate_policy_vals[] = { "drop", "disconnect", NULL };
static const char *const client_id_policy_vals[] = { "require", "override", NULL };
static const char *const unsynced_vals[] = { "accept", "refuse", NULL };
static const char *const registry_mode_vals[] = { "open", "allowlist", NULL };
static const char *const no_items[] = { NULL };
static const char *const svc_sub_def[] = { "devices/+/telemetry/#", "devices/+/status", NULL };
static const char *const svc_pub_def[] = { "devices/+/cmd/#", NULL };
static const char *const telemetry_def[] = { "devices/+/telemetry/#", NULL };

#define KEY(sec, nm, cn) .section = sec, .name = nm, .cname = cn
#define INT(d, lo, hi, u) .type = CONF_T_INT, .def = (d), .min = (lo), .max = (hi), .unit = (u)
#define BOOL(d) .type = CONF_T_BOOL, .def = (d), .min = 0, .max = 1
#define ENUM(vals, d) .type = CONF_T_ENUM, .allowed = (vals), .def = (d)
#define STR(d, lo, hi) .type = CONF_T_STR, .def_str = (d), .min = (lo), .max = (hi)
#define IPV4(d) .type = CONF_T_IPV4, .def_str = (d)
#define LIST(d, hi, ck) .type = CONF_T_LIST, .def_list = (d), .min = 0, .max = (hi), .check = (ck)
#define U_N CONF_U_NONE

const struct conf_key conf_schema[] = {
	/* [core] */
	{ KEY("core", "profile", "CONF_CORE_PROFILE"), ENUM(profile_vals, 0),
	  .doc = "Build profile: dev allows command-line overrides and debug aids, prod none." },
	{ KEY("core", "smp_max", "CONF_CORE_SMP_MAX"), INT(64, 1, 256, U_N), .cmdline = true,
	  .doc = "Most CPU cores used (data cores plus the storage core); extra cores stay parked." },
	{ KEY("core", "heap_limit_mb", "CONF_CORE_HEAP_LIMIT_MB"), INT(512, 16, 65536, CONF_U_MIB),
	  .cmdline = true, .doc = "Kernel heap limit; allocations beyond it fail with -E_NOMEM." },
	{ KEY("core", "log_level", "CONF_CORE_LOG_LEVEL"), ENUM(log_level_vals, 2), .cmdline = true,
	  .doc = "Least severe log level printed on the console." },
	{ KEY("core", "watchdog_budget_ms", "CONF_CORE_WATCHDOG_BUDGET_MS"), INT(10, 1, 1000, CONF_U_MS),
	  .doc = "A loop handler running longer than this is reported by name (once per call)." },
	{ KEY("core", "watchdog_hard_ms", "CONF_CORE_WATCHDOG_HARD_MS"), INT(200, 10, 60000, CONF_U_MS),
	  .doc = "A loop handler running longer than this stops the machine (stuck core); at least the budget." },
	{ KEY("core", "mesh_slots", "CONF_CORE_MESH_SLOTS"), INT(128, 4, 65536, U_N),
	  .check = CONF_CK_POW2,
	  .doc = "Message slots per ring of the core mesh (one ring per ordered pair of cores); power of two." },
	{ KEY("core", "mesh_slot_bytes", "CONF_CORE_MESH_SLOT_BYTES"), INT(2048, 1536, 65536, CONF_U_B),
	  .doc = "Bytes per mesh slot (8-byte header included, rounded up to a multiple of 8); must hold a whole Ethernet frame." },
	{ KEY("core", "mesh_ctrl_slots", "CONF_CORE_MESH_CTRL_SLOTS"), INT(8, 1, 1024, U_N),
	  .doc = "Slots per ring only control messages (addresses, takeovers) may use; data never blocks them." },
	{ KEY("core", "mesh_credit_batch", "CONF_CORE_MESH_CREDIT_BATCH"), INT(8, 1, 65536, U_N),
	  .doc = "A sender out of mesh credit takes new credit only in batches of at least this many slots." },
	{ KEY("core", "mesh_frame_slots", "CONF_CORE_MESH_FRAME_SLOTS"), INT(32, 0, 65536, U_N),
	  .doc = "Data slots per ring the broker shards' messages leave to network frames steered between cores, so a flood of routed messages never starves the TCP of another core's connections." },
	{ KEY("core", "mesh_poll_max", "CONF_CORE_MESH_POLL_MAX"), INT(64, 1, 65536, U_N),
	  .doc = "Mesh messages one core handles per loop pass (and at most this many from one source)." },
	{ KEY("core", "shard_backlog_bytes", "CONF_CORE_SHARD_BACKLOG_BYTES"), INT(262144, 16384, 268435456, CONF_U_B),
	  .doc = "Per destination core: bytes of broker-shard messages (forwarded MQTT, routed messages) a core holds while the mesh has no credit; a quarter more is kept for control messages; routed messages and replies may use only the first half, forwarded MQTT all of it. At least 3 x mqtt.max_packet_bytes." },
	{ KEY("core", "shard_out_window", "CONF_CORE_SHARD_OUT_WINDOW"), INT(65536, 1024, 16777216, CONF_U_B),
	  .doc = "Bytes a session's home core may send to its connection on another core before that core returns credit (acknowledged by the peer's TCP)." },
	{ KEY("core", "shard_data_window", "CONF_CORE_SHARD_DATA_WINDOW"), INT(16384, 1024, 16777216, CONF_U_B),
	  .doc = "Bytes of MQTT a connection whose session lives on another core may forward before that core returns credit; the home core withholds it while its own shard backlogs are congested, which closes the connection's TCP window." },
	{ KEY("core", "shard_interest_slots", "CONF_CORE_SHARD_INTEREST_SLOTS"), INT(4096, 64, 65536, U_N),
	  .check = CONF_CK_POW2,
	  .doc = "Slots of each core's summary of where subscriptions are (a 2-byte count here, a bit per other core): a routed message skips a core whose summary cannot match its topic. More slots, fewer false matches; a power of two." },
	{ KEY("core", "shard_lost_owed", "CONF_CORE_SHARD_LOST_OWED"), INT(256, 0, 16777216, U_N),
	  .doc = "Per core: notices of a forwarded connection's end (its will is due on the home core) kept for a later pass when even the control reserve of a shard backlog is full; beyond them a notice is dropped and counted, and the home core ends that session at its keepalive." },
	{ KEY("core", "shard_press_ms", "CONF_CORE_SHARD_PRESS_MS"), INT(20, 0, 60000, CONF_U_MS),
	  .doc = "A connected subscriber that drops copies (its output or queue full) slows the publishers over their fair share of the recent routed bytes this long after its last drop, on its own core and on the cores the copies came from (their TCP windows shut, as for a congested shard backlog). 0: off." },
	{ KEY("core", "cmdline_overrides", "CONF_CORE_CMDLINE_OVERRIDES"),
	  LIST(no_items, 16, CONF_CK_KEYREF),
	  .doc = "Keys (\"section.key\") the kernel command line may override; must be empty in prod." },

	/* [clock] */
	{ KEY("clock", "rtc_resync_s", "CONF_CLOCK_RTC_RESYNC_S"), INT(60, 0, 86400, CONF_U_S),
	  .doc = "Core 0 re-reads the CMOS RTC this often, at the instant a second begins, and corrects the wall clock (certificate validity, telemetry times) by clock.step_ms's rule; the reference until SNTP exists. 0: the RTC is read at boot only." },
	{ KEY("clock", "step_ms", "CONF_CLOCK_STEP_MS"), INT(1000, 1, 3600000, CONF_U_MS),
	  .doc = "A wall-clock error against the RTC above this is corrected at once (the wall clock jumps, forwards or back); a smaller one by a rate change that removes it by the next read. The monotonic clock (timers, timeouts) never moves." },
	{ KEY("clock", "log_error_ms", "CONF_CLOCK_LOG_ERROR_MS"), INT(100, 0, 3600000, CONF_U_MS),
	  .doc = "A slewed wall-clock error at least this large is logged (at most once per 10 minutes; steps are always logged)." },

	/* [net] */
	{ KEY("net", "dhcp", "CONF_NET_DHCP"), BOOL(1),
	  .doc = "Obtain the address by DHCP; false uses static_ip/static_netmask/static_gateway." },
	{ KEY("net", "static_ip", "CONF_NET_STATIC_IP"), IPV4("0.0.0.0"),
	  .doc = "IPv4 address when dhcp is false (required then)." },
	{ KEY("net", "static_netmask", "CONF_NET_STATIC_NETMASK"), IPV4("255.255.255.0"),
	  .check = CONF_CK_NETMASK, .doc = "Netmask when dhcp is false (contiguous ones)." },
	{ KEY("net", "static_gateway", "CONF_NET_STATIC_GATEWAY"), IPV4("0.0.0.0"),
	  .doc = "Default gateway when dhcp is false; 0.0.0.0 means none." },
	{ KEY("net", "arp_cache_entries", "CONF_NET_ARP_CACHE_ENTRIES"), INT(256, 16, 65536, U_N),
	  .doc = "ARP cache capacity per core; the oldest entry is replaced when full." },
	{ KEY("net", "arp_expiry_s", "CONF_NET_ARP_EXPIRY_S"), INT(300, 10, 86400, CONF_U_S),
	  .doc = "Age after which an ARP entry is re-resolved." },
	{ KEY("net", "icmp_rate_per_s", "CONF_NET_ICMP_RATE_PER_S"), INT(100, 0, 100000, U_N),
	  .doc = "ICMP replies per second per core (echo, errors); 0 sends none." },
	{ KEY("net", "rss_indirection_entries", "CONF_NET_RSS_INDIRECTION_ENTRIES"),
	  INT(128, 1, 32768, U_N), .check = CONF_CK_POW2,
	  .doc = "Entries of the flow-steering indirection table (power of two, at least the number of cores)." },
	{ KEY("net", "tx_stage_frames", "CONF_NET_TX_STAGE_FRAMES"), INT(64, 8, 65536, U_N),
	  .doc = "Transmit frames a worker core without its own queue pair may hold (sent through core 0)." },
	{ KEY("net", "frame_pool_frames", "CONF_NET_FRAME_POOL_FRAMES"),
	  INT(4096, 64, 1048576, U_N),
	  .doc = "Network frame buffers per core (receive rings plus frames in flight)." },

	/* [tcp] */
	{ KEY("tcp", "port", "CONF_TCP_PORT"), INT(8883, 1, 65535, U_N),
	  .doc = "The one TCP port the broker listens on (MQTT over TLS)." },
	{ KEY("tcp", "max_connections", "CONF_TCP_MAX_CONNECTIONS"), INT(65536, 1, 16777216, U_N),
	  .doc = "Open connections per core; further SYNs are dropped." },
	{ KEY("tcp", "table_slots", "CONF_TCP_TABLE_SLOTS"), INT(131072, 16, 33554432, U_N),
	  .check = CONF_CK_POW2,
	  .doc = "Connection hash table slots per core; power of two, at least 2 x max_connections." },
	{ KEY("tcp", "syn_cookie_rotate_s", "CONF_TCP_SYN_COOKIE_ROTATE_S"),
	  INT(64, 1, 3600, CONF_U_S), .doc = "Period of the SYN cookie secret and counter." },
	{ KEY("tcp", "rto_min_ms", "CONF_TCP_RTO_MIN_MS"), INT(200, 10, 60000, CONF_U_MS),
	  .doc = "Lower bound of the retransmission timeout." },
	{ KEY("tcp", "rto_max_ms", "CONF_TCP_RTO_MAX_MS"), INT(60000, 100, 65535, CONF_U_MS),
	  .doc = "Upper bound of the retransmission timeout (16-bit in the control block)." },
	{ KEY("tcp", "delayed_ack_ms", "CONF_TCP_DELAYED_ACK_MS"), INT(40, 0, 500, CONF_U_MS),
	  .doc = "Delay of a pure ACK waiting for data to ride on; 0 acknowledges at once." },
	{ KEY("tcp", "max_retransmits", "CONF_TCP_MAX_RETRANSMITS"), INT(8, 1, 30, U_N),
	  .doc = "Retransmissions of one segment before the connection is reset." },
	{ KEY("tcp", "rst_rate_per_s", "CONF_TCP_RST_RATE_PER_S"), INT(200, 0, 100000, U_N),
	  .doc = "RSTs sent per second per core in answer to stray segments; 0 sends none." },
	{ KEY("tcp", "mss", "CONF_TCP_MSS"), INT(1460, 536, 1460, CONF_U_B),
	  .doc = "Maximum segment size advertised and used." },
	{ KEY("tcp", "ooo_slots", "CONF_TCP_OOO_SLOTS"), INT(64, 0, 65536, U_N),
	  .doc = "Out-of-order hold: segment slots per stack, used only while a gap exists; 0 drops every out-of-order segment." },
	{ KEY("tcp", "ooo_per_conn", "CONF_TCP_OOO_PER_CONN"), INT(32, 1, 1024, U_N),
	  .doc = "Out-of-order hold: most slots one connection may own, so one flow cannot take the pool." },
	{ KEY("tcp", "ooo_slot_size", "CONF_TCP_OOO_SLOT_SIZE"), INT(1460, 64, 1460, CONF_U_B),
	  .doc = "Out-of-order hold: payload bytes per slot (a longer segment is held cut to this)." },

	/* [tls] */
	{ KEY("tls", "handshakes_per_core", "CONF_TLS_HANDSHAKES_PER_CORE"),
	  INT(64, 1, 4096, U_N), .doc = "Handshakes in flight per core; admission refuses more." },
	{ KEY("tls", "handshakes_per_source", "CONF_TLS_HANDSHAKES_PER_SOURCE"),
	  INT(4, 1, 4096, U_N),
	  .doc = "Handshakes in flight per source IPv4 address per core (at most handshakes_per_core)." },
	{ KEY("tls", "handshake_rate_per_s", "CONF_TLS_HANDSHAKE_RATE_PER_S"),
	  INT(2000, 1, 1000000, U_N), .doc = "New handshakes admitted per second per core." },
	{ KEY("tls", "heap_low_watermark_kb", "CONF_TLS_HEAP_LOW_WATERMARK_KB"),
	  INT(16384, 0, 67108864, CONF_U_KIB),
	  .doc = "Refuse new handshakes while free heap is below this (less than heap_limit_mb)." },
	{ KEY("tls", "ticket_lifetime_s", "CONF_TLS_TICKET_LIFETIME_S"),
	  INT(86400, 0, 604800, CONF_U_S),
	  .doc = "Lifetime of resumption tickets (at most ticket_key_rotate_s); 0 issues none." },
	{ KEY("tls", "max_client_hello_bytes", "CONF_TLS_MAX_CLIENT_HELLO_BYTES"), INT(16384, 512, 16384, CONF_U_B),
	  .doc = "The largest ClientHello accepted (the handshake message, header included; it may span records); a larger one is refused with illegal_parameter. Every handshake in flight holds a 16 KiB input buffer whatever this says." },
	{ KEY("tls", "max_client_chain_bytes", "CONF_TLS_MAX_CLIENT_CHAIN_BYTES"), INT(12288, 512, 16384, CONF_U_B),
	  .doc = "The largest client certificate chain accepted, as the DER bytes of its certificates added up (room for intermediates and RSA-4096); a larger one is refused with access_denied." },
	{ KEY("tls", "clock_skew_s", "CONF_TLS_CLOCK_SKEW_S"), INT(60, 0, 3600, CONF_U_S),
	  .doc = "A client certificate whose validity starts at most this many seconds after the broker's clock is accepted (a device's clock, or a virtual machine's, a little ahead); expiry is never extended." },
	{ KEY("tls", "ticket_key_rotate_s", "CONF_TLS_TICKET_KEY_ROTATE_S"),
	  INT(86400, 60, 604800, CONF_U_S),
	  .doc = "Period of the ticket key, the same on every core (each derives it from one boot secret); tickets sealed with the current and the previous period's key are accepted." },
	{ KEY("tls", "identity_source", "CONF_TLS_IDENTITY_SOURCE"), ENUM(identity_vals, 0),
	  .doc = "Where a device's identity (its MQTT client id) is taken from in its certificate." },
	{ KEY("tls", "service_uri_prefix", "CONF_TLS_SERVICE_URI_PREFIX"),
	  STR("urn:urmqtt:service:", 1, 128), .check = CONF_CK_URI_PREFIX,
	  .doc = "Certificates with a SAN URI starting with this are services (ACL from [acl])." },
	{ KEY("tls", "rsa_allowed", "CONF_TLS_RSA_ALLOWED"), BOOL(0),
	  .doc = "Accept RSA client certificates and signatures besides ECDSA P-256." },
	{ KEY("tls", "record_buffer_bytes", "CONF_TLS_RECORD_BUFFER_BYTES"),
	  INT(16640, 1024, 16640, CONF_U_B),
	  .doc = "Largest TLS record buffered while incomplete (16384 + 256 fits any TLS 1.3 record); also the receive window and twice the send budget per connection." },
	{ KEY("tls", "handshake_stage_bytes", "CONF_TLS_HANDSHAKE_STAGE_BYTES"), INT(8192, 512, 65536, CONF_U_B),
	  .doc = "Bytes of handshake input staged per handshake slot until the loop runs its cryptography (the receive window while handshaking)." },
	{ KEY("tls", "handshake_steps_per_poll", "CONF_TLS_HANDSHAKE_STEPS_PER_POLL"), INT(2, 1, 1024, U_N),
	  .doc = "Handshake steps (each one public-key operation or two) run per loop pass; established traffic is served in between." },
	{ KEY("tls", "key_cache_entries", "CONF_TLS_KEY_CACHE_ENTRIES"), INT(128, 0, 65536, U_N),
	  .doc = "Per-core cache of expanded record keys for busy connections, 88 B each (0: derive per record)." },
	{ KEY("tls", "registry_mode", "CONF_TLS_REGISTRY_MODE"), ENUM(registry_mode_vals, 0),
	  .doc = "open: every device with a valid certificate may connect; allowlist: only device identities in the registry (tls.registry, and those the console adds, kept in the database), others are refused with access_denied. Service identities are never asked." },
	{ KEY("tls", "registry", "CONF_TLS_REGISTRY"), LIST(no_items, 64, CONF_CK_PRINTABLE),
	  .doc = "Device identities in the registry from the image itself (allowlist mode); the console adds the rest at run time. The console cannot remove these." },
	{ KEY("tls", "registry_max", "CONF_TLS_REGISTRY_MAX"), INT(1024, 1, 4194304, U_N),
	  .doc = "Most identities the registry holds (allowlist mode); every data core keeps its own copy: 8 B per identity for the index (at 3/4 load) plus the names (tls.registry_name_kb)." },
	{ KEY("tls", "registry_name_kb", "CONF_TLS_REGISTRY_NAME_KB"), INT(64, 1, 1048576, CONF_U_KIB),
	  .doc = "Bytes for the registry's names per data core (one length byte plus the identity each; allowlist mode)." },

	/* [mqtt] */
	{ KEY("mqtt", "max_packet_bytes", "CONF_MQTT_MAX_PACKET_BYTES"),
	  INT(65536, 64, 268435455, CONF_U_B),
	  .doc = "Largest MQTT packet accepted; larger ones close the connection." },
	{ KEY("mqtt", "max_subscriptions_per_session", "CONF_MQTT_MAX_SUBSCRIPTIONS_PER_SESSION"),
	  INT(16, 1, 1024, U_N), .doc = "Subscriptions one session may hold." },
	{ KEY("mqtt", "offline_queue_len", "CONF_MQTT_OFFLINE_QUEUE_LEN"), INT(100, 0, 100000, U_N),
	  .doc = "QoS 1/2 messages queued for a disconnected persistent session." },
	{ KEY("mqtt", "offline_queue_policy", "CONF_MQTT_OFFLINE_QUEUE_POLICY"),
	  ENUM(queue_policy_vals, 0), .doc = "What a full offline queue does with a new message." },
	{ KEY("mqtt", "inflight_window", "CONF_MQTT_INFLIGHT_WINDOW"), INT(16, 1, 65535, U_N),
	  .doc = "Unacknowledged QoS 1/2 messages in flight per session." },
	{ KEY("mqtt", "topic_alias_max", "CONF_MQTT_TOPIC_ALIAS_MAX"), INT(16, 0, 65535, U_N),
	  .doc = "Topic Aliases an MQTT 5.0 client may set on its connection (its table, 16 B per alias plus the topics, exists only once it sets one); 0: none." },
	{ KEY("mqtt", "delayed_wills", "CONF_MQTT_DELAYED_WILLS"), INT(64, 0, 1048576, U_N),
	  .doc = "MQTT 5.0 wills held per core for their Will Delay Interval (24 B each); when all are taken, a will is published at once." },
	{ KEY("mqtt", "session_expiry_max_s", "CONF_MQTT_SESSION_EXPIRY_MAX_S"), INT(0, 0, 4294967295, CONF_U_S),
	  .doc = "Longest a kept session outlives its connection: an MQTT 5.0 client's Session Expiry Interval is lowered to it (the CONNACK says so) and a 3.1.1 clean-session-0 session ends after it; 0: no limit (a 3.1.1 session never ends, a 5.0 one when its interval says)." },
	{ KEY("mqtt", "subscription_ids", "CONF_MQTT_SUBSCRIPTION_IDS"), INT(1024, 0, 1048576, U_N),
	  .doc = "MQTT 5.0 subscriptions with a Subscription Identifier per core (12 B each, reserved); 0: identifiers not offered (the CONNACK says so)." },
	{ KEY("mqtt", "shared_groups", "CONF_MQTT_SHARED_GROUPS"), INT(256, 0, 1048576, U_N),
	  .doc = "MQTT 5.0 shared subscription groups ($share/<name>/<filter>) per core (40 B each, reserved); 0: not offered (the CONNACK says so and a $share filter is refused with 0x9E). Every core keeps every group that has members on any core, so this bounds the groups of the whole broker; up to 64 cores." },
	{ KEY("mqtt", "keepalive_max_s", "CONF_MQTT_KEEPALIVE_MAX_S"), INT(1200, 1, 65535, CONF_U_S),
	  .doc = "Longest keepalive granted; a client asking for more (or 0) gets this." },
	{ KEY("mqtt", "acl_violations_before_close", "CONF_MQTT_ACL_VIOLATIONS_BEFORE_CLOSE"),
	  INT(3, 1, 1000, U_N), .doc = "ACL denials tolerated on one connection; the next closes it." },
	{ KEY("mqtt", "rate_msgs_per_s", "CONF_MQTT_RATE_MSGS_PER_S"), INT(100, 1, 1000000, U_N),
	  .doc = "Token-bucket rate of PUBLISH packets per device identity (shared by its connections, kept across reconnects); services have service_rate_msgs_per_s." },
	{ KEY("mqtt", "rate_bytes_per_s", "CONF_MQTT_RATE_BYTES_PER_S"),
	  INT(131072, 64, 1073741824, CONF_U_B),
	  .doc = "Token-bucket rate of PUBLISH payload bytes per device identity; services have service_rate_bytes_per_s." },
	{ KEY("mqtt", "service_rate_msgs_per_s", "CONF_MQTT_SERVICE_RATE_MSGS_PER_S"),
	  INT(1000, 1, 1000000, U_N),
	  .doc = "Token-bucket rate of PUBLISH packets per service identity (an operator console and the like, which commands and queries many devices): rate_msgs_per_s applies to devices, this to services, each kind in buckets of its own." },
	{ KEY("mqtt", "service_rate_bytes_per_s", "CONF_MQTT_SERVICE_RATE_BYTES_PER_S"),
	  INT(1310720, 64, 1073741824, CONF_U_B),
	  .doc = "Token-bucket rate of PUBLISH payload bytes per service identity (rate_bytes_per_s applies to devices)." },
	{ KEY("mqtt", "rate_policy", "CONF_MQTT_RATE_POLICY"), ENUM(rate_policy_vals, 0),
	  .doc = "What exceeding a rate limit does. drop: a QoS 0 message is dropped, a QoS 1/2 one closes the connection unacknowledged (never acknowledged and lost); disconnect: any message over the limit closes the connection." },
	{ KEY("mqtt", "client_id_policy", "CONF_MQTT_CLIENT_ID_POLICY"), ENUM(client_id_policy_vals, 0),
	  .doc = "A device's client id must be its certificate identity (require: anything else gets CONNACK 5), or any client id is accepted and the certificate identity used instead (override: for generic clients that pick their own ids; logged per connection). Sessions, ACL and wills follow the certificate identity either way; services always need <identity> or <identity>/<suffix>." },
	{ KEY("mqtt", "rate_idle_identities", "CONF_MQTT_RATE_IDLE_IDENTITIES"), INT(512, 0, 16777216, U_N),
	  .doc = "Rate buckets kept per core for identities with no connection (beyond one per connection slot); 32 B each." },
	{ KEY("mqtt", "drop_identities", "CONF_MQTT_DROP_IDENTITIES"), INT(32, 0, 4096, U_N),
	  .doc = "Publishing identities tracked per core for QoS 0 drops (counted per identity and reason, the top ones on each core's routing report line) and for the fair-share rule: while the shard links a message takes are congested, a QoS 0 PUBLISH from a publisher over its share of the recent routed bytes is dropped first (ADR-075). 64 B each; 0: drops counted per reason only, no fair-share rule." },
	{ KEY("mqtt", "log_burst", "CONF_MQTT_LOG_BURST"), INT(10, 0, 1000000, U_N),
	  .doc = "Refusal log lines per reason in a burst (0: unlimited)." },
	{ KEY("mqtt", "log_lines_per_min", "CONF_MQTT_LOG_LINES_PER_MIN"), INT(60, 0, 600000, U_N),
	  .doc = "Refusal log lines per reason per minute after the burst; the rest are counted and reported." },
	{ KEY("mqtt", "max_sessions", "CONF_MQTT_MAX_SESSIONS"), INT(131072, 1, 16777216, U_N),
	  .doc = "Sessions (connected plus persistent offline) per core; at least tcp.max_connections." },
	{ KEY("mqtt", "retained_max", "CONF_MQTT_RETAINED_MAX"), INT(10000, 0, 1000000, U_N),
	  .doc = "Retained messages kept; further retained publishes are not retained." },

	/* [acl] */
	{ KEY("acl", "service_subscribe", "CONF_ACL_SERVICE_SUBSCRIBE"),
	  LIST(svc_sub_def, 64, CONF_CK_TOPIC_FILTER),
	  .doc = "Topic filters a service identity may subscribe to (devices are fixed to devices/{id}/#)." },
	{ KEY("acl", "service_publish", "CONF_ACL_SERVICE_PUBLISH"),
	  LIST(svc_pub_def, 64, CONF_CK_TOPIC_FILTER),
	  .doc = "Topic filters a service identity may publish to." },

	/* [storage] */
	{ KEY("storage", "batch_ms", "CONF_STORAGE_BATCH_MS"), INT(5, 1, 1000, CONF_U_MS),
	  .doc = "The storage core commits a batch at least this often." },
	{ KEY("storage", "batch_ops", "CONF_STORAGE_BATCH_OPS"), INT(512, 1, 65536, U_N),
	  .doc = "... or as soon as this many operations are pending." },
	{ KEY("storage", "required", "CONF_STORAGE_REQUIRED"), BOOL(1),
	  .doc = "Without a usable data disk (none, foreign, damaged, unknown layout) the broker stops with the reason; false: it serves without persistence and says so." },
	{ KEY("storage", "esp_mb", "CONF_STORAGE_ESP_MB"), INT(32, 0, 4096, CONF_U_MIB),
	  .doc = "EFI system partition reserved when a blank disk is formatted (boot files of an installed system)." },
	{ KEY("storage", "wal_mb", "CONF_STORAGE_WAL_MB"), INT(16, 1, 4096, CONF_U_MIB),
	  .doc = "Region of the database's write-ahead log (smaller disks get a sixteenth of the data partition)." },
	{ KEY("storage", "telemetry_pct", "CONF_STORAGE_TELEMETRY_PCT"), INT(25, 0, 90, U_N),
	  .doc = "Percent of the data partition given to the telemetry log; the database and its two backup slots share the rest." },
	{ KEY("storage", "db_heap_mb", "CONF_STORAGE_DB_HEAP_MB"), INT(64, 4, 65536, CONF_U_MIB),
	  .doc = "Heap the database engine may hold (page cache, statements, restore buffers)." },
	{ KEY("storage", "page_cache_kb", "CONF_STORAGE_PAGE_CACHE_KB"), INT(16384, 256, 16777216, CONF_U_KIB),
	  .doc = "Database page cache; at most half of storage.db_heap_mb." },
	{ KEY("storage", "checkpoint_pages", "CONF_STORAGE_CHECKPOINT_PAGES"), INT(1000, 16, 1048576, U_N),
	  .doc = "Write-ahead-log pages after which the storage core copies them into the database (a checkpoint)." },
	{ KEY("storage", "io_timeout_ms", "CONF_STORAGE_IO_TIMEOUT_MS"), INT(30000, 100, 600000, CONF_U_MS),
	  .doc = "A disk request not completed by then marks the disk broken: storage stops, acknowledgements that need it are refused." },
	{ KEY("storage", "link_backlog_bytes", "CONF_STORAGE_LINK_BACKLOG_BYTES"), INT(4194304, 65536, 1073741824, CONF_U_B),
	  .doc = "Per data core: state changes waiting for the storage core; at least 4 x mqtt.max_packet_bytes." },
	{ KEY("storage", "lag_backlog_bytes", "CONF_STORAGE_LAG_BACKLOG_BYTES"), INT(1048576, 4096, 1073741824, CONF_U_B),
	  .doc = "Above this backlog to the storage core a data core refuses new connections at the SYN and stops reading from publishers; below storage.link_backlog_bytes / 2." },
	{ KEY("storage", "lag_commit_ms", "CONF_STORAGE_LAG_COMMIT_MS"), INT(200, 10, 60000, CONF_U_MS),
	  .doc = "A commit slower than this puts the storage core in lag: new connections are refused at the SYN until a commit is fast again." },
	{ KEY("storage", "held_acks", "CONF_STORAGE_HELD_ACKS"), INT(4096, 16, 1048576, U_N),
	  .doc = "Per data core: acknowledgements (PUBACK, PUBREC, PUBCOMP, SUBACK, UNSUBACK) waiting for their commit, or a SUBACK for the other cores to learn of its subscription (with several cores, storage or not); when full, publishers are not read." },
	{ KEY("storage", "pass_budget_us", "CONF_STORAGE_PASS_BUDGET_US"), INT(2000, 100, 1000000, U_N),
	  .doc = "With one core: microseconds of database work per loop pass (the network is served in between)." },
	{ KEY("storage", "telemetry_topics", "CONF_STORAGE_TELEMETRY_TOPICS"),
	  LIST(telemetry_def, 32, CONF_CK_TOPIC_FILTER),
	  .doc = "Accepted publishes whose topic matches one of these filters are also kept in the telemetry log (routing to subscribers is unchanged); empty: no log." },
	{ KEY("storage", "telemetry_partitions", "CONF_STORAGE_TELEMETRY_PARTITIONS"), INT(0, 0, 64, U_N),
	  .doc = "Partitions of the telemetry log when its region is first used; 0: one per data core of that boot. Data core i writes partition i mod this; the disk keeps its own afterwards." },
	{ KEY("storage", "telemetry_segment_kb", "CONF_STORAGE_TELEMETRY_SEGMENT_KB"), INT(1024, 64, 16384, CONF_U_KIB),
	  .doc = "Segment size of the telemetry log when its region is first used (lowered to fit at least 4 segments per partition)." },
	{ KEY("storage", "telemetry_flush_ms", "CONF_STORAGE_TELEMETRY_FLUSH_MS"), INT(5, 1, 1000, CONF_U_MS),
	  .doc = "Telemetry records are written out and flushed at the latest this long after the first of them arrived." },
	{ KEY("storage", "telemetry_flush_bytes", "CONF_STORAGE_TELEMETRY_FLUSH_BYTES"), INT(262144, 65536, 16777216, CONF_U_B),
	  .doc = "Telemetry records are written out once a partition holds this many bytes (also its buffer's size)." },
	{ KEY("storage", "backup_interval_s", "CONF_STORAGE_BACKUP_INTERVAL_S"), INT(3600, 0, 604800, U_N),
	  .doc = "Seconds between two backups of the database into the inactive backup slot (SQLite's online backup, in steps); 0: none." },
	{ KEY("storage", "backup_first_s", "CONF_STORAGE_BACKUP_FIRST_S"), INT(60, 1, 604800, U_N),
	  .doc = "Seconds after storage started before the first backup." },
	{ KEY("storage", "backup_step_pages", "CONF_STORAGE_BACKUP_STEP_PAGES"), INT(16, 1, 65536, U_N),
	  .doc = "Database pages one backup step copies (the steps run between the storage core's other work)." },
	{ KEY("storage", "scrub_kb_per_s", "CONF_STORAGE_SCRUB_KB_PER_S"), INT(1024, 0, 1048576, U_N),
	  .doc = "KiB per second the scrubber reads to check the database, its backup and the telemetry log against their checksums, reporting each damaged page or record with its location; never more at once than one second of it (plus one page or telemetry segment); 0: off." },
	{ KEY("storage", "telemetry_readers", "CONF_STORAGE_TELEMETRY_READERS"), LIST(no_items, 16, CONF_CK_NONE),
	  .doc = "Service identities (exact names) that may query the telemetry log over MQTT ($telemetry/query)." },
	{ KEY("storage", "telemetry_queries", "CONF_STORAGE_TELEMETRY_QUERIES"), INT(2, 0, 64, U_N),
	  .doc = "Telemetry queries running at once: per data core, and on the storage core (each holds a segment buffer there); 0: none." },
	{ KEY("storage", "telemetry_query_limit", "CONF_STORAGE_TELEMETRY_QUERY_LIMIT"), INT(100000, 1, 100000000, U_N),
	  .doc = "Records one telemetry query returns at most (its limit= may ask fewer)." },
	{ KEY("storage", "telemetry_retention_days", "CONF_STORAGE_TELEMETRY_RETENTION_DAYS"), INT(30, 0, 36500, U_N),
	  .doc = "Telemetry older than this is skipped and its segments discarded; 0: kept until the ring overwrites it." },

	/* [ops] */
	{ KEY("ops", "hostname", "CONF_OPS_HOSTNAME"), STR("urmqtt", 1, 255), .check = CONF_CK_PRINTABLE,
	  .doc = "This broker's name for operators: the HOSTNAME of its syslog lines." },
	{ KEY("ops", "syslog_collectors", "CONF_OPS_SYSLOG_COLLECTORS"), LIST(no_items, 4, CONF_CK_UDP_ENDPOINT),
	  .doc = "syslog collectors (\"a.b.c.d\" or \"a.b.c.d:port\", port 514 when omitted): every log line at or above ops.syslog_level goes to each as one RFC 5424 message over UDP (RFC 5426); empty: none." },
	{ KEY("ops", "syslog_level", "CONF_OPS_SYSLOG_LEVEL"), ENUM(log_level_vals, 2),
	  .doc = "Least severe level sent to the syslog collectors (the console's own level filters first)." },
	{ KEY("ops", "syslog_facility", "CONF_OPS_SYSLOG_FACILITY"), INT(16, 0, 23, U_N),
	  .doc = "syslog facility number (16: local0)." },
	{ KEY("ops", "syslog_max_bytes", "CONF_OPS_SYSLOG_MAX_BYTES"), INT(1024, 480, 1472, CONF_U_B),
	  .doc = "Largest syslog message; a longer line is cut and ends in '~' (collectors must take 480 bytes, should take 2048)." },
	{ KEY("ops", "syslog_queue_lines", "CONF_OPS_SYSLOG_QUEUE_LINES"), INT(64, 4, 4096, U_N),
	  .check = CONF_CK_POW2,
	  .doc = "Per core: log lines waiting for core 0 to send them to syslog; beyond them lines are dropped and counted (statsd ops.syslog_dropped). A power of two." },
	{ KEY("ops", "statsd_servers", "CONF_OPS_STATSD_SERVERS"), LIST(no_items, 4, CONF_CK_UDP_ENDPOINT),
	  .doc = "statsd servers (\"a.b.c.d\" or \"a.b.c.d:port\", port 8125 when omitted): the broker's figures every ops.statsd_interval_s, plain statsd lines batched into datagrams that fit the path MTU; empty: none." },
	{ KEY("ops", "statsd_prefix", "CONF_OPS_STATSD_PREFIX"), STR("urmqtt", 1, 64), .check = CONF_CK_PRINTABLE,
	  .doc = "First part of every statsd name (\"<prefix>.connections\", \"<prefix>.core1.connections\")." },
	{ KEY("ops", "statsd_interval_s", "CONF_OPS_STATSD_INTERVAL_S"), INT(10, 1, 3600, CONF_U_S),
	  .doc = "How often the figures go to the statsd servers." },
	{ KEY("ops", "sys_readers", "CONF_OPS_SYS_READERS"), LIST(no_items, 16, CONF_CK_PRINTABLE),
	  .doc = "Service identities that may subscribe to $SYS/# (the broker's figures and health; devices never can)." },
	{ KEY("ops", "console_identities", "CONF_OPS_CONSOLE_IDENTITIES"), LIST(no_items, 16, CONF_CK_PRINTABLE),
	  .doc = "Service identities with the console: they publish commands to $CONTROL/urmqtt/<command> (revoke, unrevoke, kick) and get the reply on $CONTROL/urmqtt/reply/<command>." },
	{ KEY("ops", "sys_interval_s", "CONF_OPS_SYS_INTERVAL_S"), INT(10, 0, 3600, CONF_U_S),
	  .doc = "How often the $SYS/urmqtt/... topics (and Mosquitto's $SYS/broker/... names where one exists) are published, retained; 0: never." },
	{ KEY("ops", "health_heap_low_pct", "CONF_OPS_HEALTH_HEAP_LOW_PCT"), INT(10, 1, 90, U_N),
	  .doc = "The health turns degraded (heap low) when a core's free heap falls below this percentage of core.heap_limit_mb." },
	{ KEY("ops", "health_heap_ok_pct", "CONF_OPS_HEALTH_HEAP_OK_PCT"), INT(15, 2, 95, U_N),
	  .doc = "... and back when every core has at least this percentage free again (above ops.health_heap_low_pct: no flapping)." },

	/* [ntp] */
	{ KEY("ntp", "servers", "CONF_NTP_SERVERS"), LIST(no_items, 8, CONF_CK_NTP_SERVER),
	  .doc = "SNTP servers (RFC 4330) on private networks (\"a.b.c.d\" or \"a.b.c.d:port\", port 123 when omitted): when set, their agreed time replaces the RTC as the wall clock's reference; empty: the RTC alone." },
	{ KEY("ntp", "min_agree", "CONF_NTP_MIN_AGREE"), INT(2, 1, 8, U_N),
	  .doc = "Servers whose times must agree within one second, and be a majority of those that answered, before the wall clock follows them." },
	{ KEY("ntp", "poll_s", "CONF_NTP_POLL_S"), INT(64, 4, 86400, CONF_U_S),
	  .doc = "How often every server is asked." },
	{ KEY("ntp", "max_step_s", "CONF_NTP_MAX_STEP_S"), INT(600, 1, 31536000, CONF_U_S),
	  .doc = "After the first synchronisation, an agreed time further than this from the wall clock is refused (logged): a stolen or broken time source cannot move certificate validity far." },
	{ KEY("ntp", "max_delay_ms", "CONF_NTP_MAX_DELAY_MS"), INT(1000, 1, 10000, CONF_U_MS),
	  .doc = "An answer whose round trip (less the server's own time) took longer than this is ignored." },
	{ KEY("ntp", "unsynced_certs", "CONF_NTP_UNSYNCED_CERTS"), ENUM(unsynced_vals, 0),
	  .doc = "With servers set, while no agreed time is followed (before the first, or four polls without one): \"accept\" checks client certificates against the wall clock as it is and logs a warning (at most one a minute); \"refuse\" refuses every client certificate (access_denied) until the clock is synchronised again." },

	/* [fleet] */
	{ KEY("fleet", "members", "CONF_FLEET_MEMBERS"), LIST(no_items, 16, CONF_CK_FLEET_MEMBER),
	  .doc = "The appliances of a fleet behind one name, the same list on every appliance (docs/SCALE-OUT.md): \"name=host:port\" each (name: 1 to 32 of A-Z a-z 0-9 _ . -; host: a DNS name or a.b.c.d). A device identity's home is the member its SipHash (fleet.ring_key) falls to on a ring of fleet.vnodes points per member; an MQTT 5.0 device (never a service) that connects elsewhere gets CONNACK 0x9C (Use another server) with its home's host:port as Server Reference. Empty: no fleet, nobody is redirected." },
	{ KEY("fleet", "self", "CONF_FLEET_SELF"), STR("", 0, 32), .check = CONF_CK_PRINTABLE,
	  .doc = "This appliance's name among fleet.members (required with members; the one key that differs between the appliances of a fleet)." },
	{ KEY("fleet", "ring_key", "CONF_FLEET_RING_KEY"), STR("75726d7174742d666c6565742d6b6579", 32, 32),
	  .check = CONF_CK_HEX_KEY,
	  .doc = "SipHash key of the ring (32 hex digits), the same on every appliance; not a secret (the CA decides which identities exist). Changing it moves nearly every device." },
	{ KEY("fleet", "vnodes", "CONF_FLEET_VNODES"), INT(256, 1, 256, U_N),
	  .doc = "Points per member on the ring, the same on every appliance: more points, more equal shares (256: each of 3 appliances within a few percent of a third)." },

	/* [diag] (the diagnostics boot mode, kernel/diag/) */
	{ KEY("diag", "measure_ms", "CONF_DIAG_MEASURE_MS"), INT(250, 10, 60000, CONF_U_MS),
	  .doc = "Each timed measurement of the diagnostics (memory copy, each crypto figure) runs at least this long (and at least one operation)." },
	{ KEY("diag", "memory_buffer_kb", "CONF_DIAG_MEMORY_BUFFER_KB"), INT(4096, 64, 65536, CONF_U_KIB),
	  .doc = "The diagnostics' memory copy runs between two buffers of this size, taken from free pages and given back after (none free: no figure, and the summary says so)." },
	{ KEY("diag", "disk_read_mb", "CONF_DIAG_DISK_READ_MB"), INT(16, 1, 4096, CONF_U_MIB),
	  .doc = "Bytes the diagnostics read from each disk, from LBA 0 (less on a smaller disk)." },
	{ KEY("diag", "disk_write_mb", "CONF_DIAG_DISK_WRITE_MB"), INT(4, 1, 1024, CONF_U_MIB),
	  .doc = "Most bytes the diagnostics' write test writes (and reads back) per disk, only after the operator typed WIPE, only at the start of the unallocated run of a valid GPT (less when the run is shorter)." },
	{ KEY("diag", "disk_chunk_kb", "CONF_DIAG_DISK_CHUNK_KB"), INT(64, 4, 1024, CONF_U_KIB),
	  .check = CONF_CK_POW2,
	  .doc = "Bytes per disk request of the diagnostics' read and write tests (a power of two, so a multiple of 4 KiB; at most 1 MiB, so never more than diag.disk_read_mb or diag.disk_write_mb); a disk whose logical block is larger is not measured." },
	{ KEY("diag", "wipe_prompt_s", "CONF_DIAG_WIPE_PROMPT_S"), INT(30, 5, 600, CONF_U_S),
	  .doc = "The operator's time to type WIPE at the diagnostics' write-test prompt; no answer in time skips the write test. A development image's kernel command line may set it with diag_wipe_s=N (1 to 600)." },

	/* [dev] */
	{ KEY("dev", "certs_devices", "CONF_DEV_CERTS_DEVICES"), INT(10, 1, 100000, U_N),
	  .doc = "Device certificates the development CA tool generates." },
};

const size_t conf_schema_len = ARRAY_LEN(conf_schema);

STATIC_ASSERT(ARRAY_LEN(conf_schema) <= CONF_MAX_KEYS, "raise CONF_MAX_KEYS");

static bool name_eq(const char *s, const char *p, size_t n)
{
	return strnlen(s, n + 1) == n && memcmp(s, p, n) == 0;
}

int conf_key_find(const char *section, size_t section_len, const char *name, size_t name_len)
{
	for (size_t i = 0; i < conf_schema_len; i++)
		if (name_eq(conf_schema[i].section, section, section_len) &&
		    name_eq(conf_schema[i].name, name, name_len))
			return (int)i;
	return -1;
}

/* Index of a key this file itself names: a missing one is a bug in this file. */
static size_t key(const char *section, const char *name)
{
	int i = conf_key_find(section, strlen(section), name, strlen(name));
	return i < 0 ? 0 : (size_t)i; /* test_confparse checks every name used here */
}

static int64_t val(const struct conf_doc *d, const char *section, const char *name)
{
	return d->vals[key(section, name)].i;
}

static uint32_t line_of(const struct conf_doc *d, const char *section, const char *name)
{
	return d->vals[key(section, name)].line;
}

/* The constraints, in the order they are checked; gen-doc lists them. */
const char *const conf_constraints[] = {
	"core.cmdline_overrides must be empty when core.profile is \"prod\"",
	"net.static_ip is required when net.dhcp is false",
	"tcp.rto_min_ms must not exceed tcp.rto_max_ms",
	"tcp.table_slots must be at least 2 x tcp.max_connections",
	"tls.handshakes_per_source must not exceed tls.handshakes_per_core",
	"tls.heap_low_watermark_kb must be below core.heap_limit_mb",
	"tls.ticket_lifetime_s must not exceed tls.ticket_key_rotate_s",
	"mqtt.max_sessions must be at least tcp.max_connections",
	"core.mesh_ctrl_slots + core.mesh_credit_batch + core.mesh_frame_slots must not exceed core.mesh_slots",
	"core.shard_backlog_bytes must be at least 3 x mqtt.max_packet_bytes",
	"storage.link_backlog_bytes must be at least 4 x mqtt.max_packet_bytes",
	"storage.lag_backlog_bytes must be below storage.link_backlog_bytes / 2",
	"storage.page_cache_kb must be at most half of storage.db_heap_mb",
	"ops.health_heap_ok_pct must be above ops.health_heap_low_pct",
	"ntp.min_agree must not exceed the number of ntp.servers (when any are set)",
	"fleet.self must name one of fleet.members (names unique), and be empty without members",
	NULL
};

static int fail(struct conf_err *err, uint32_t l1, uint32_t l2, size_t which)
{
	err->kind = CONF_E_CONSTRAINT;
	err->line = MAX(l1, l2);
	(void)fmt_snprintf(err->msg, sizeof err->msg, "%s", conf_constraints[which]);
	return -E_INVAL;
}

/* [fleet]: self one of the members (mqtt/fleet.c's own rules), or both empty. */
static int fleet_check(const struct conf_doc *d)
{
	size_t km = key("fleet", "members"), n = conf_doc_list_len(d, km);
	const char *self = conf_doc_str(d, key("fleet", "self"));
	const char *m[MQTT_FLEET_MAX_MEMBERS];
	const char *why;
	if (n == 0)
		return self[0] ? -E_INVAL : 0;
	if (n > MQTT_FLEET_MAX_MEMBERS)
		return -E_INVAL;
	for (size_t i = 0; i < n; i++)
		m[i] = conf_doc_list_item(d, km, i);
	return mqtt_fleet_check_list(m, n, self, strlen(self), &why);
}

/* Each rule: the two keys it relates (their later line is the error's line). */
#define LINES(s1, k1, s2, k2) line_of(d, s1, k1), line_of(d, s2, k2)

int conf_schema_cross_check(const struct conf_doc *d, struct conf_err *err)
{
	if (val(d, "core", "profile") == 1 && d->vals[key("core", "cmdline_overrides")].len)
		return fail(err, LINES("core", "profile", "core", "cmdline_overrides"), 0);
	if (!val(d, "net", "dhcp") && !val(d, "net", "static_ip"))
		return fail(err, LINES("net", "dhcp", "net", "static_ip"), 1);
	if (val(d, "tcp", "rto_min_ms") > val(d, "tcp", "rto_max_ms"))
		return fail(err, LINES("tcp", "rto_min_ms", "tcp", "rto_max_ms"), 2);
	if (val(d, "tcp", "table_slots") < 2 * val(d, "tcp", "max_connections"))
		return fail(err, LINES("tcp", "table_slots", "tcp", "max_connections"), 3);
	if (val(d, "tls", "handshakes_per_source") > val(d, "tls", "handshakes_per_core"))
		return fail(err, LINES("tls", "handshakes_per_source", "tls", "handshakes_per_core"), 4);
	if (val(d, "tls", "heap_low_watermark_kb") >= val(d, "core", "heap_limit_mb") * 1024)
		return fail(err, LINES("tls", "heap_low_watermark_kb", "core", "heap_limit_mb"), 5);
	if (val(d, "tls", "ticket_lifetime_s") > val(d, "tls", "ticket_key_rotate_s"))
		return fail(err, LINES("tls", "ticket_lifetime_s", "tls", "ticket_key_rotate_s"), 6);
	if (val(d, "mqtt", "max_sessions") < val(d, "tcp", "max_connections"))
		return fail(err, LINES("mqtt", "max_sessions", "tcp", "max_connections"), 7);
	if (val(d, "core", "mesh_ctrl_slots") + val(d, "core", "mesh_credit_batch") + val(d, "core", "mesh_frame_slots") >
	    val(d, "core", "mesh_slots"))
		return fail(err, LINES("core", "mesh_ctrl_slots", "core", "mesh_slots"), 8);
	if (val(d, "core", "shard_backlog_bytes") < 3 * val(d, "mqtt", "max_packet_bytes"))
		return fail(err, LINES("core", "shard_backlog_bytes", "mqtt", "max_packet_bytes"), 9);
	if (val(d, "storage", "link_backlog_bytes") < 4 * val(d, "mqtt", "max_packet_bytes"))
		return fail(err, LINES("storage", "link_backlog_bytes", "mqtt", "max_packet_bytes"), 10);
	if (val(d, "storage", "lag_backlog_bytes") >= val(d, "storage", "link_backlog_bytes") / 2)
		return fail(err, LINES("storage", "lag_backlog_bytes", "storage", "link_backlog_bytes"), 11);
	if (val(d, "storage", "page_cache_kb") > val(d, "storage", "db_heap_mb") * 512)
		return fail(err, LINES("storage", "page_cache_kb", "storage", "db_heap_mb"), 12);
	if (val(d, "ops", "health_heap_ok_pct") <= val(d, "ops", "health_heap_low_pct"))
		return fail(err, LINES("ops", "health_heap_ok_pct", "ops", "health_heap_low_pct"), 13);
	size_t n_ntp = d->vals[key("ntp", "servers")].len;
	if (n_ntp && (size_t)val(d, "ntp", "min_agree") > n_ntp)
		return fail(err, LINES("ntp", "min_agree", "ntp", "servers"), 14);
	if (fleet_check(d) != 0)
		return fail(err, LINES("fleet", "self", "fleet", "members"), 15);
	return 0;
}
