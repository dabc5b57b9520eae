/* SPDX-License-Identifier: MIT
 *
 * The broker mode of the hosted platform: the node's broker (kernel/node/broker.h, the
 * image's own glue: accounted heap, TLS handshake env, embedded certificates and revoked
 * serials, data plane from the configuration) over the hosted port (hosted/node_port.c),
 * with storage on a disk file when one is given, and the stats lines the tests read.
 * Host code; never linked into the image.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dp/dp.h"
#include "hosted/hosted.h"
#include "kernel/node/port.h"
#include "lib/err.h"
#include "urmqtt_config.h"

/* dp's lines: on stdout as they are (the tests read them). */
static void hb_log(void *ctx, const char *line, const struct log_fields *f)
{
	(void)ctx;
	(void)f;
	printf("%s\n", line);
}

int hosted_broker_init(struct hosted_broker *hb, uint32_t max_conn, struct blk_dev *disk, const char *disk_name,
		       const struct hosted_storage_opts *so, bool client_id_override,
		       const struct hosted_fleet_opts *fleet)
{
	int rc;
	memset(hb, 0, sizeof *hb);
	struct node_broker_config bc = {
		.core = 0, .max_conns = max_conn, .no_telemetry_log = so->no_telemetry_log, .log = hb_log,
		.client_id_override = client_id_override,
		.fleet_members = fleet->members, .n_fleet_members = fleet->n, .fleet_self = fleet->self,
	};
	if (disk) {
		if ((rc = node_revoked_image(&hb->image)) != 0) {
			fprintf(stderr, "hosted: embedded revocation list: %s\n", err_name(rc));
			return rc;
		}
		rc = hosted_store_create(&hb->store, disk, disk_name, &hb->image.set.list, so);
		if (rc) {
			fprintf(stderr, "hosted: storage: %s\n", err_name(rc));
			return rc;
		}
		hosted_store_link(hb->store, &bc);
	}
	rc = node_broker_init(&hb->nb, &bc);
	if (rc) {
		fprintf(stderr, "hosted: broker: %s\n", err_name(rc));
		return rc;
	}
	if (hb->store)
		hosted_store_bind(hb->store, hb->nb.dp);
	if (fleet->n)
		printf("hosted: fleet appliance %s of %u (--fleet-member): other homes' 5.0 devices are redirected\n",
		       fleet->self, (unsigned)fleet->n);
	printf("hosted: broker on port %u: %u connection records of %zu B, data plane region %zu B,"
	       " tls_rec %zu B, mqtt conn %zu B, session %zu B\n",
	       (unsigned)CONF_TCP_PORT, max_conn, dp_conn_sizeof(), hb->nb.mem_len, tls_rec_sizeof(),
	       mqtt_sizeof_conn(), mqtt_sizeof_session());
	return 0;
}

void hosted_broker_attach(struct hosted_broker *hb, struct tcp_stack *tcp)
{
	node_broker_attach(&hb->nb, tcp);
}

uint32_t hosted_broker_poll(struct hosted_broker *hb)
{
	uint32_t left = dp_poll(hb->nb.dp);
	if (hb->store) {
		(void)hosted_store_poll(hb->store);
		left += hosted_store_due_ms(hb->store) <= node_port_now_ms(); /* work now: no sleep */
	}
	return left;
}

uint64_t hosted_broker_due_ms(const struct hosted_broker *hb)
{
	return hb->store ? hosted_store_due_ms(hb->store) : UINT64_MAX;
}

void hosted_broker_stats(struct hosted_broker *hb, const char *tag)
{
	struct dp_stats s;
	struct tls_hs_stats hs;
	struct mqtt_broker_usage u;
	dp_stats_get(hb->nb.dp, &s);
	tls_hs_stats_get(hb->nb.hs_env, &hs);
	mqtt_broker_usage(dp_broker(hb->nb.dp), &u);
	const struct mqtt_broker_stats *ms = mqtt_broker_stats(dp_broker(hb->nb.dp));
	printf("%s broker conns=%u handshaking=%u established=%u sessions=%u subs=%u retained=%u"
	       " heap_used=%zu heap_baseline=%zu heap_per_conn=%zu fixed_per_conn=%zu"
	       " bytes_per_conn=%zu heap_blocks=%zu\n",
	       tag, s.open, s.handshaking, s.established, u.sessions, u.subs, u.retained, s.heap_used,
	       s.heap_baseline, s.heap_per_conn, s.fixed_per_conn, s.bytes_per_conn,
	       (size_t)hb->nb.n_live);
	struct node_memory m;
	node_broker_memory(&hb->nb, &m);
	printf("%s memory slot_bytes=%zu core_bytes=%zu slots=%u heap_req_per_conn=%zu heap_blk_per_conn=%zu"
	       " idle_bytes_per_conn=%zu\n",
	       tag, m.slot_bytes, m.core_bytes, (unsigned)m.slots, m.heap_req_per_conn, m.heap_blk_per_conn,
	       m.idle_bytes_per_conn);
	printf("%s tls rx_copied=%llu key_hits=%llu key_misses=%llu key_evictions=%llu\n", tag,
	       (unsigned long long)s.rx_copied, (unsigned long long)s.key_hits,
	       (unsigned long long)s.key_misses, (unsigned long long)s.key_evictions);
	printf("%s dp accepted=%llu hs_done=%llu hs_failed=%llu hs_timeouts=%llu id_refused=%llu"
	       " refused heap/records/inflight/source/rate=%llu/%llu/%llu/%llu/%llu"
	       " closes fin/alert/tls_err/mqtt/tcp=%llu/%llu/%llu/%llu/%llu reaped=%llu"
	       " out_chunks=%llu out_blocked=%llu out_failed=%llu/%llu tls_hs_live=%zu peak=%zu"
	       " msgs_in=%llu msgs_out=%llu acl_denied=%llu/%llu connack_refused=%llu wills=%llu"
	       " redirected=%llu\n",
	       tag, (unsigned long long)s.accepted, (unsigned long long)s.hs_done,
	       (unsigned long long)s.hs_failed, (unsigned long long)s.hs_timeouts,
	       (unsigned long long)s.id_refused, (unsigned long long)s.refused_heap,
	       (unsigned long long)s.refused_records, (unsigned long long)s.refused_inflight,
	       (unsigned long long)s.refused_source, (unsigned long long)s.refused_rate,
	       (unsigned long long)s.close_peer_fin, (unsigned long long)s.close_tls_alert,
	       (unsigned long long)s.close_tls_error, (unsigned long long)s.close_mqtt,
	       (unsigned long long)s.close_tcp, (unsigned long long)s.reaped,
	       (unsigned long long)s.out_chunks_live, (unsigned long long)s.out_blocked,
	       (unsigned long long)s.out_alloc_failed, (unsigned long long)s.out_send_failed,
	       hs.live_bytes, hs.peak_bytes, (unsigned long long)ms->msgs_in,
	       (unsigned long long)ms->msgs_out, (unsigned long long)ms->acl_denied_pub,
	       (unsigned long long)ms->acl_denied_sub, (unsigned long long)ms->connack_refused,
	       (unsigned long long)ms->wills_published, (unsigned long long)ms->redirected);
	if (hb->store)
		hosted_store_stats(hb->store, tag);
}

void hosted_broker_fini(struct hosted_broker *hb)
{
	if (hb->store)
		hosted_store_finish(hb->store); /* commit what waits; its answers still reach dp */
	node_broker_fini(&hb->nb);
	hosted_store_destroy(hb->store);
	hb->store = NULL;
	if (hb->nb.used || hb->nb.n_live)
		fprintf(stderr, "hosted: broker heap not empty at exit: %zu B in %lu blocks\n", hb->nb.used,
			(unsigned long)hb->nb.n_live);
	else
		printf("hosted: broker heap empty at exit (peak %zu B)\n", hb->nb.peak);
}
