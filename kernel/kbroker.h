/* SPDX-License-Identifier: MIT
 *
 * The broker in the kernel, one per worker core: a data plane (dp/: TCP upper layer, TLS
 * 1.3 with client certificates, MQTT broker shard) on the core whose network stack
 * (kernel/knet.h) it serves, with the development certificates, the revocation list and
 * the configuration embedded at build time. It owns that core's accounted view of the
 * kernel heap (requested bytes live through dp and mbedTLS, against
 * CONF_CORE_HEAP_LIMIT_MB per core), that core's TLS handshake env, and its periodic
 * memory line (every report_ms: the core's connections and handshakes, its accounted
 * bytes, and the machine's heap above the baseline per open connection).
 * It never touches another core's state and never parses protocol bytes (dp, tls/ and
 * mqtt/ do). Kernel-only (kernel heap, CSPRNG and log); the platform gives the clocks.
 *
 * One broker per core (every started core is a worker; kernel/ksteer.h steers flows):
 *  - Each kbroker is a separate MQTT broker shard. Routing between shards (a device on
 *    core 1 and a service on core 2 seeing each other's messages) is dp/'s, over the
 *    mesh kinds 0x0200-0x02ff (kernel/kdemux.h); until it exists, shards are islands.
 *  - mbedTLS's process-wide state (PSA's key store) is locked (ADR-026); its allocator,
 *    clock and entropy hooks are installed once and are the same for every core: the
 *    allocator hook charges the calling core's kbroker (kbroker_init registers each one
 *    by core), never the one that installed it.
 *  - Each kbroker builds its own handshake env (on the boot core, before any core
 *    handshakes): an env's session-ticket keys are created lazily and rotated in place
 *    by whichever core issues a ticket, so one env shared by several cores would race.
 *    Consequence: a ticket is accepted only by the core whose env issued it; a
 *    resumption steered to another core falls back to a full handshake.
 *
 * Design note.
 *  1. kbroker_init runs once per core, on the boot core, before any other core runs TLS;
 *     after it only the owning core calls kbroker_* and the hooks (through dp and
 *     mbedTLS); kb_cores[core] names that core's kbroker and never changes after init.
 *  2. used == sum of the lengths of live allocations made through the hooks; every free
 *     passes the length of its allocation (dp and tls/ contracts), so used never wraps.
 *  3. The memory baseline (kheap_snapshot totals) is taken when the upper is bound, with
 *     no connection open; the report divides (now - baseline) by the open connections.
 *  States: ZERO -(kbroker_init)-> READY -(knet_init binds TCP)-> SERVING (for good).
 */
#ifndef KERNEL_KBROKER_H
#define KERNEL_KBROKER_H

#include "dp/dp.h"
#include "kernel/knet.h"
#include "lib/compiler.h"
#include "tls/revoke.h"

#define KBROKER_MAX_REVOKED 64

#define KBROKER_MAX_CORES 64u /* = TLS_HS_MAX_CORES */

struct kbroker_config {
	uint32_t core;            /* the core whose loop polls it (< KBROKER_MAX_CORES) */
	uint32_t report_ms;       /* memory line period; 0: never */
	uint64_t (*now_ms)(void); /* linked: monotonic milliseconds */
	int64_t (*wall_s)(void);  /* linked: Unix seconds (certificate validity), 0: unknown */
	uint32_t (*core_self)(void); /* linked: the calling core's index (TLS's per-core state) */
	/* Broker shards (dp/shard.h, ADR-027). n_cores > 1: every session lives on its home
	 * core, found by SipHash of its identity with home_key (the same on every core);
	 * mesh.send carries shard messages to another core (at most mesh_payload_max bytes
	 * each), and the platform hands this core's incoming ones to kbroker_mesh_recv. */
	uint32_t n_cores;
	struct dp_mesh_ops mesh;
	uint32_t mesh_payload_max;
	uint8_t home_key[16];
	/* Storage (kernel/kstore.h): on when the machine has a data disk. store_send carries
	 * this core's storage records to the storage core (the mesh, or the storage engine's
	 * local queue when one core does both), at most store_payload_max bytes each; the
	 * storage core's answers come back through kbroker_store_recv. */
	bool store_on;
	int (*store_send)(void *ctx, uint16_t kind, const void *data, uint32_t len);
	void *store_ctx;
	uint32_t store_payload_max;
};

struct kbroker {
	struct kbroker_config cfg;
	struct dp *dp;
	struct tls_hs_env *hs_env;
	struct tcp_config tcp;
	struct knet_upper upper;
	void *mem; /* dp region, whole pages from kheap_pages_alloc */
	size_t mem_len;
	size_t used, limit;           /* invariant 2 */
	uint64_t n_live, n_failed;    /* allocations live / refused */
	uint64_t base_req, base_blk;  /* invariant 3 */
	size_t base_used;             /* used at the same moment */
	uint64_t next_report_ms;
	struct tls_revoke_entry revoked[KBROKER_MAX_REVOKED];
	uint8_t revoked_bytes[KBROKER_MAX_REVOKED][TLS_REVOKE_SERIAL_MAX];
	struct tls_revoke_set revokes; /* the image's serials, then storage's */
};

/* Build core cfg->core's handshake env (installs mbedTLS's hooks on the kernel heap,
 * CSPRNG and cfg's clocks) and data plane from the CONF_* limits. b zeroed by the
 * caller, linked (registered for cfg->core's allocations), cfg copied. Boot core, once
 * per core, before the other cores run (invariant 1). 0, -E_EXIST (core already has
 * one), or the error of the failing layer (logged). */
MUST_CHECK int kbroker_init(struct kbroker *b, const struct kbroker_config *cfg);
/* The upper layer to put in knet_config.upper (TCP settings, dp's TCP ops, dp_poll and
 * the periodic memory line). Linked: lives as long as b. */
const struct knet_upper *kbroker_upper(struct kbroker *b);
/* A shard message from core src (kinds DP_SHARD_KIND_FIRST..LAST; data borrowed). Owning
 * core, from its mesh handler. */
void kbroker_mesh_recv(struct kbroker *b, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len);
/* A storage message for this core (kinds 0x0380-0x03ff, data borrowed). Owning core. */
void kbroker_store_recv(struct kbroker *b, uint16_t kind, const uint8_t *data, uint32_t len);
/* Boot core, before any connection: serve every session here (the other shards cannot
 * run). */
void kbroker_shards_off(struct kbroker *b);
/* Log the memory line now (also done every report_ms from the poll). Owning core. */
void kbroker_report(struct kbroker *b);

#endif
