/* SPDX-License-Identifier: MIT
 *
 * The broker in the kernel: one data plane (dp/: TCP upper layer, TLS 1.3 with client
 * certificates, MQTT broker shard) on the core whose network stack (kernel/knet.h) it
 * serves, with the development certificates, the revocation list and the configuration
 * embedded at build time. It owns that core's accounted view of the kernel heap (requested
 * bytes live through dp and mbedTLS, against CONF_CORE_HEAP_LIMIT_MB), the TLS handshake
 * env, and the periodic memory line (every report_ms: connections, heap above the
 * baseline per open connection in requested bytes and in allocator block bytes).
 * It never touches another core's state and never parses protocol bytes (dp, tls/ and
 * mqtt/ do). Kernel-only (kernel heap, CSPRNG and log); the platform gives the clocks.
 *
 * Why one broker, on one core, for now (documented limitation):
 *  - MQTT routing is per broker shard: a device on core 1 and a service on core 2 would
 *    not see each other's messages without cross-core routing, which does not exist yet.
 *  - mbedTLS's allocator/clock/entropy hooks and PSA's key-slot store are process-global
 *    and this build has no MBEDTLS_THREADING: two cores handshaking at once would race.
 *    The handshake env (and those globals) are therefore the only state shared by nature;
 *    everything else of a kbroker lives in the struct and the pages it was given.
 * So the image runs one network stack on core 0 receiving from every virtio-net pair,
 * with one kbroker on it, whatever the addressing (DHCP or ip=).
 *
 * Design note.
 *  1. kbroker_init runs once, on the boot core, before any other core runs TLS; after it
 *     only the owning core calls kbroker_* and the hooks (through dp and mbedTLS).
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
#define KBROKER_SERIAL_MAX 20 /* RFC 5280: serial numbers are at most 20 octets */

struct kbroker_config {
	uint32_t core;            /* the core whose loop polls it (for the log line) */
	uint32_t report_ms;       /* memory line period; 0: never */
	uint64_t (*now_ms)(void); /* linked: monotonic milliseconds */
	int64_t (*wall_s)(void);  /* linked: Unix seconds (certificate validity), 0: unknown */
	uint32_t (*core_self)(void); /* linked: the calling core's index (TLS's per-core state) */
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
	uint64_t next_report_ms;
	struct tls_revoke_entry revoked[KBROKER_MAX_REVOKED];
	uint8_t revoked_bytes[KBROKER_MAX_REVOKED][KBROKER_SERIAL_MAX];
	struct tls_revoke_list revoke_list;
};

/* Build the handshake env (installs mbedTLS's hooks on the kernel heap, CSPRNG and
 * cfg's clocks) and the data plane from the CONF_* limits. b zeroed by the caller, cfg
 * copied. Boot core, once (invariant 1). 0 or the error of the failing layer (logged). */
MUST_CHECK int kbroker_init(struct kbroker *b, const struct kbroker_config *cfg);
/* The upper layer to put in knet_config.upper (TCP settings, dp's TCP ops, dp_poll and
 * the periodic memory line). Linked: lives as long as b. */
const struct knet_upper *kbroker_upper(struct kbroker *b);
/* Log the memory line now (also done every report_ms from the poll). Owning core. */
void kbroker_report(struct kbroker *b);

#endif
