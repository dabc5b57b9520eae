/* SPDX-License-Identifier: MIT
 *
 * The node's broker, one per data core (the image) or one per process (the hosted
 * platform): a data plane (dp/: TCP upper layer, TLS
 * 1.3 with client certificates, MQTT broker shard) on the core whose network stack
 * (kernel/knet.h) it serves, with the development certificates, the revocation list and
 * the configuration embedded at build time. It owns that core's accounted view of the
 * platform's heap (kernel/node/port.h: requested bytes live through dp and mbedTLS,
 * against CONF_CORE_HEAP_LIMIT_MB per core), that core's TLS handshake env, and its periodic
 * memory line (every report_ms: the core's connections and handshakes, its accounted
 * bytes, and the machine's heap above the baseline per open connection).
 * It never touches another core's state and never parses protocol bytes (dp, tls/ and
 * mqtt/ do). Portable: the heap, the clocks and the CSPRNG come from kernel/node/port.h,
 * lines go to the kernel log (kernel/log.h: the console, or the hosted process's output).
 *
 * One broker per core (every started core is a worker; kernel/ksteer.h steers flows):
 *  - Each node broker is a separate MQTT broker shard. Routing between shards (a device on
 *    core 1 and a service on core 2 seeing each other's messages) is dp/'s, over the
 *    mesh kinds 0x0200-0x02ff (kernel/kdemux.h); until it exists, shards are islands.
 *  - mbedTLS's process-wide state (PSA's key store) is locked (ADR-026); its allocator,
 *    clock and entropy hooks are installed once and are the same for every core: the
 *    allocator hook charges the calling core's node broker (node_broker_init registers each one
 *    by core), never the one that installed it.
 *  - Each node broker builds its own handshake env (on the boot core, before any core
 *    handshakes): an env's session-ticket keys are created lazily and rotated in place
 *    by whichever core issues a ticket, so one env shared by several cores would race.
 *    Consequence: a ticket is accepted only by the core whose env issued it; a
 *    resumption steered to another core falls back to a full handshake.
 *
 * Design note.
 *  1. node_broker_init runs once per core, on the boot core, before any other core runs TLS;
 *     after it only the owning core calls node_broker_* and the hooks (through dp and
 *     mbedTLS); kb_cores[core] names that core's node broker and never changes after init.
 *  2. used == sum of the lengths of live allocations made through the hooks; every free
 *     passes the length of its allocation (dp and tls/ contracts), so used never wraps.
 *  3. The memory baseline (kheap_snapshot totals) is taken when the upper is bound, with
 *     no connection open; the report divides (now - baseline) by the open connections.
 *  States: ZERO -(node_broker_init)-> READY -(knet_init binds TCP)-> SERVING (for good).
 */
#ifndef KERNEL_NODE_BROKER_H
#define KERNEL_NODE_BROKER_H

#include "dp/dp.h"
#include "kernel/knet.h"
#include "kernel/node/opsd.h"
#include "kernel/node/allowlist.h"
#include "kernel/node/revoked.h"
#include "lib/compiler.h"

#define NODE_MAX_CORES 64u /* = TLS_HS_MAX_CORES */

/* A console change every data core applies (node_broker_ctl_apply), carried between cores
 * as one mesh message. */
enum node_ctl_kind {
	NODE_CTL_REVOKE_SERIAL = 1,
	NODE_CTL_UNREVOKE_SERIAL,
	NODE_CTL_REVOKE_ID,
	NODE_CTL_UNREVOKE_ID,
	NODE_CTL_KICK_ID,
	NODE_CTL_CLOCK,           /* data[0]: enum node_clock_trust (kernel/node/opsd's SNTP state) */
	NODE_CTL_ALLOW_ID,        /* allowlist: an identity added */
	NODE_CTL_DISALLOW_ID,     /* allowlist: an identity removed (its connections end) */
};
enum node_clock_trust {
	NODE_CLOCK_TRUSTED = 0,  /* no SNTP servers (the RTC is the reference), or their time followed */
	NODE_CLOCK_UNSYNCED_ACCEPT, /* servers set, no agreed time: check certificates anyway, warned */
	NODE_CLOCK_UNSYNCED_REFUSE, /* ... refuse every client certificate */
};
struct node_ctl {
	uint8_t kind; /* enum node_ctl_kind */
	uint8_t len;  /* bytes of data: a DER serial (1..20) or an identity (1..128) */
	uint8_t data[TLS_IDENTITY_CAP];
};

struct node_broker_config {
	uint32_t core;            /* the core whose loop polls it (< NODE_MAX_CORES) */
	uint32_t report_ms;       /* memory line period; 0: never */
	uint32_t max_conns;       /* connection slots (dp, MQTT, TCP); 0: the configuration's */
	bool no_telemetry_log;    /* keep no telemetry (tests and benchmarks) */
	bool client_id_override;  /* mqtt.client_id_policy "override" whatever the configuration
				   * says (development knob and the hosted tests) */
	bool allowlist;           /* tls.registry_mode "allowlist" whatever the configuration */
	/* dp's lines (refusals, closes); NULL: the kernel log as "broker: core N: ..." */
	void (*log)(void *ctx, const char *line, const struct log_fields *f);
	void *log_ctx;
	/* Broker shards (dp/shard.h, ADR-027). n_cores > 1: every session lives on its home
	 * core, found by SipHash of its identity with home_key (the same on every core);
	 * mesh.send carries shard messages to another core (at most mesh_payload_max bytes
	 * each), and the platform hands this core's incoming ones to node_broker_mesh_recv. */
	uint32_t n_cores;
	struct dp_mesh_ops mesh;
	uint32_t mesh_payload_max;
	uint8_t home_key[16];
	/* The machine's ticket secret (tls/handshake.h, TLS_HS_TICKET_SECRET_LEN bytes, linked
	 * for node_broker_init only): every core's env derives the same ticket keys from it, so
	 * a resumption landing on another core than the full handshake is resumed. NULL: this
	 * core's own keys. */
	const uint8_t *ticket_secret;
	/* Frames of this core's steering refused for lack of mesh credit so far (core 0: to
	 * every worker; a worker: handed back to core 0), read on this core for its shard
	 * line; NULL: none. */
	uint64_t (*mesh_frame_drops)(uint32_t core);
	/* Storage (kernel/kstore.h): on when the machine has a data disk. store_send carries
	 * this core's storage records to the storage core (the mesh, or the storage engine's
	 * local queue when one core does both), at most store_payload_max bytes each; the
	 * storage core's answers come back through node_broker_store_recv. */
	bool store_on;
	int (*store_send)(void *ctx, uint16_t kind, const void *data, uint32_t len);
	void *store_ctx;
	uint32_t store_payload_max;
	/* The console (ops.console_identities): a change for every data core, this one
	 * included, applied after the command returns (node_broker_ctl_apply on each core).
	 * 0, or -E_AGAIN while a previous change is still on its way. NULL: no console. */
	int (*ctl_broadcast)(const struct node_ctl *op);
	uint32_t n_data_cores;    /* for the console's replies */
	/* The fleet's ring (mqtt/fleet.h, ADR-072) from these members ("name=host:port", linked)
	 * and this appliance's name (linked) instead of the configuration's [fleet]: the hosted
	 * simulation runs three appliances of one build. n_fleet_members 0: the configuration's. */
	const char *const *fleet_members;
	uint32_t n_fleet_members;
	const char *fleet_self;
};

struct node_broker {
	struct node_broker_config cfg;
	struct dp *dp;
	struct tls_hs_env *hs_env;
	struct tcp_config tcp;
	struct knet_upper upper;
	void *mem; /* dp region (node_port_region) */
	size_t mem_len;
	size_t used, limit, peak;     /* invariant 2; peak: the most used at once */
	uint64_t n_live, n_failed;    /* allocations live / refused */
	uint64_t base_req, base_blk;  /* invariant 3 */
	size_t base_used;             /* used at the same moment */
	uint64_t next_report_ms;
	struct dp_footprint fp;       /* what this core's tables cost (dp_footprint) */
	struct node_revoked revoked;  /* the image's serials, then storage's */
	struct node_allowlist allowed; /* allowlist mode's registry (empty in open mode) */
	uint8_t clock_trust;          /* this core's view of the wall clock: enum node_clock_trust */
	uint64_t clock_warned_ms;     /* the last "unsynchronised clock" warning */
};

/* The memory figures of one core's broker (docs/ARCHITECTURE.md, Memory): what a connection
 * slot costs in tables sized by tcp.max_connections, what the core costs whatever that
 * count, and the heap above the baseline per open connection, in the platform heap's
 * blocks (what it really holds) and in requested bytes. The headline "bytes per idle
 * connection" is slot_bytes + heap_blk_per_conn. The heap figures are the platform's
 * (every core's connections): divided by this core's open connections, they are per
 * connection only when this core holds them all. */
struct node_memory {
	size_t slot_bytes, core_bytes;
	uint32_t slots, open;
	uint64_t heap_req_above, heap_blk_above;  /* above the baseline taken at attach */
	size_t heap_req_per_conn, heap_blk_per_conn, idle_bytes_per_conn;
};

/* Build core cfg->core's handshake env (installs mbedTLS's hooks on the platform's heap,
 * CSPRNG and clocks: kernel/node/port.h) and data plane from the CONF_* limits. b
 * linked (registered for cfg->core's allocations), cfg copied. Boot core, once per core,
 * before the other cores run (invariant 1). 0, -E_EXIST (core already has one), or the
 * error of the failing layer (logged). */
MUST_CHECK int node_broker_init(struct node_broker *b, const struct node_broker_config *cfg);
/* Undo node_broker_init (connections aborted by dp_fini); the platform's process exits
 * after (hosted). Owning core. */
void node_broker_fini(struct node_broker *b);
/* The upper layer to put in knet_config.upper (TCP settings, dp's TCP ops, dp_poll and
 * the periodic memory line). Linked: lives as long as b. */
const struct knet_upper *node_broker_upper(struct node_broker *b);
/* The TCP stack the data plane sends on (knet's bind calls it; the hosted platform
 * directly), and the memory baseline: every table exists, no connection is open. */
void node_broker_attach(struct node_broker *b, struct tcp_stack *tcp);
/* The memory figures now (struct node_memory). Owning core. */
void node_broker_memory(struct node_broker *b, struct node_memory *out);
/* The image's revoked serials, then storage's, as the handshakes check them. */
const struct tls_revoke_list *node_broker_revoked(const struct node_broker *b);
/* A shard message from core src (kinds DP_SHARD_KIND_FIRST..LAST; data borrowed). Owning
 * core, from its mesh handler. */
void node_broker_mesh_recv(struct node_broker *b, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len);
/* A storage message for this core (kinds 0x0380-0x03ff, data borrowed). Owning core. */
void node_broker_store_recv(struct node_broker *b, uint16_t kind, const uint8_t *data, uint32_t len);
/* Boot core, before any connection: serve every session here (the other shards cannot
 * run). */
void node_broker_shards_off(struct node_broker *b);
/* Log the memory line now (also done every report_ms from the poll). Owning core. */
void node_broker_report(struct node_broker *b);
/* A console change on this core (op borrowed): its revocation sets, and the connections it
 * ends here. On this core. */
void node_broker_ctl_apply(struct node_broker *b, const struct node_ctl *op);
/* This core's figures for kernel/node/opsd (every field but the loop's watchdog count and
 * opsd's own). On this core. */
void node_broker_figures(struct node_broker *b, struct opsd_figures *f /* out */);
/* The broker's own retained QoS 0 message on a "$SYS/..." topic (NUL-terminated, borrowed),
 * to this shard's readers and then every other shard. On this core. 0 or -E_INVAL. */
MUST_CHECK int node_broker_sys_publish(struct node_broker *b, const char *topic, const char *text);
/* Development builds: take 1 MiB blocks of this core's broker heap, charged like any
 * allocation and unused, until less than free_pct % of it is free; 0 gives them back. A
 * few blocks per call: true once done, *held the bytes held. */
bool node_broker_ballast(struct node_broker *b, uint32_t free_pct, size_t *held /* out */);

#endif
