/* SPDX-License-Identifier: MIT
 *
 * The broker mode of the hosted platform: the per-core data plane (dp/) on our TCP, with
 * the development certificates embedded at build time ($(B)/gen/urmqtt_certs.h) and the
 * limits of the configuration (CONF_*). It owns the accounted heap of the process (malloc
 * with a byte count of requested sizes and the configured limit), the TLS handshake env
 * (one per process: mbedTLS's hooks are process-global) and the periodic broker line.
 * Host code; never linked into the image; never allocates per packet except through the
 * accounted heap the data plane asks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "dp/dp.h"
#include "hosted/hosted.h"
#include "lib/err.h"
#include "urmqtt_certs.h"
#include "urmqtt_config.h"

static uint64_t hb_clock_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		abort();
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- accounted heap ---------------------------------------------------------------- */

static void *hb_alloc(void *ctx, size_t len, const char *tag)
{
	struct hosted_broker *hb = ctx;
	(void)tag;
	if (len == 0 || len > hb->heap_limit - hb->heap_used) {
		hb->heap_failed++;
		return NULL;
	}
	void *p = malloc(len);
	if (!p) {
		hb->heap_failed++;
		return NULL;
	}
	hb->heap_used += len;
	hb->heap_blocks++;
	if (hb->heap_used > hb->heap_peak)
		hb->heap_peak = hb->heap_used;
	return p;
}

static void hb_free(void *ctx, void *p, size_t len)
{
	struct hosted_broker *hb = ctx;
	if (!p)
		return;
	if (len > hb->heap_used || hb->heap_blocks == 0) {
		fprintf(stderr, "hosted: heap accounting underflow (%zu > %zu)\n", len, hb->heap_used);
		abort();
	}
	hb->heap_used -= len;
	hb->heap_blocks--;
	free(p);
}

static size_t hb_used(void *ctx)
{
	return ((struct hosted_broker *)ctx)->heap_used;
}

static size_t hb_avail(void *ctx)
{
	struct hosted_broker *hb = ctx;
	return hb->heap_limit - hb->heap_used;
}

/* ---- handshake env hooks ------------------------------------------------------------- */

static int hb_random(void *ctx, uint8_t *out, size_t len)
{
	(void)ctx;
	while (len) {
		ssize_t n = getrandom(out, len, 0);
		if (n <= 0)
			return -E_IO;
		out += n;
		len -= (size_t)n;
	}
	return 0;
}

static int64_t hb_now_s(void *ctx)
{
	(void)ctx;
	return (int64_t)time(NULL);
}

static int64_t hb_now_ms(void *ctx)
{
	(void)ctx;
	return (int64_t)hb_clock_ms();
}

static uint64_t hb_dp_now(void *ctx)
{
	(void)ctx;
	return hb_clock_ms();
}

static void hb_log(void *ctx, const char *line)
{
	(void)ctx;
	printf("%s\n", line);
}

/* A revoked serial storage holds: joins the list (bounded; said loudly when it cannot). */
static void hb_revoked_add(void *ctx, const uint8_t *serial, size_t len)
{
	struct hosted_broker *hb = ctx;
	int err = tls_revoke_set_add(&hb->revokes, serial, len);
	if (err && err != -E_EXIST)
		fprintf(stderr, "hosted: a stored revocation could not join the list (%s): NOT enforced\n",
			err_name(err));
}

int hosted_broker_init(struct hosted_broker *hb, uint32_t max_conn, struct blk_dev *disk, const char *disk_name,
		       const struct hosted_storage_opts *so)
{
	int rc;
	memset(hb, 0, sizeof *hb);
	hb->heap_limit = (size_t)CONF_CORE_HEAP_LIMIT_MB << 20;
	tls_revoke_set_init(&hb->revokes, hb->revoked, hb->revoked_bytes, HOSTED_BROKER_MAX_REVOKED);
	if ((rc = tls_revoke_set_add_hex(&hb->revokes, urmqtt_revoked_serials)) != 0) {
		fprintf(stderr, "hosted: embedded revocation list: %s\n", err_name(rc));
		return rc;
	}

	struct tls_hs_config hc;
	dp_hs_config_from_conf(&hc);
	hc.revoke.is_revoked = tls_revoke_list_check;
	hc.revoke.ctx = &hb->revokes.list;
	hc.ops = (struct tls_hs_ops){ hb_alloc, hb_free, hb_random, hb_now_s, hb_now_ms, hb, NULL };
	rc = tls_hs_env_create(&hc, &hb->hs_env);
	if (rc) {
		fprintf(stderr, "hosted: tls_hs_env_create: %s\n", err_name(rc));
		return rc;
	}

	struct dp_config g;
	dp_config_from_conf(&g);
	g.max_conns = max_conn;
	g.mqtt.max_conns = max_conn;
	g.hs_env = hb->hs_env;
	g.heap = (struct dp_heap_ops){ hb_alloc, hb_free, hb_used, hb_avail, hb };
	g.lower = dp_lower_tcp;
	g.log = hb_log;
	g.now_ms = hb_dp_now;
	if (so->no_telemetry_log)
		g.mqtt.n_telemetry_filters = 0;
	if (disk) {
		rc = hosted_store_create(&hb->store, disk, disk_name, &hb->revokes.list, so);
		if (rc) {
			fprintf(stderr, "hosted: storage: %s\n", err_name(rc));
			return rc;
		}
		hosted_store_link(hb->store, &g);
		g.store.revoked = hb_revoked_add;
		g.store.revoked_ctx = hb;
	}
	if (hb_random(NULL, g.mqtt.hash_key, sizeof g.mqtt.hash_key))
		return -E_IO;
	size_t need = dp_mem_size(&g);
	if (!need) {
		fprintf(stderr, "hosted: data plane configuration rejected\n");
		return -E_INVAL;
	}
	hb->dp_mem_len = (need + 63) & ~(size_t)63;
	hb->dp_mem = aligned_alloc(64, hb->dp_mem_len);
	if (!hb->dp_mem)
		return -E_NOMEM;
	rc = dp_init(&hb->dp, hb->dp_mem, hb->dp_mem_len, &g);
	if (rc) {
		fprintf(stderr, "hosted: dp_init: %s\n", err_name(rc));
		return rc;
	}
	if (hb->store)
		hosted_store_bind(hb->store, hb->dp);
	printf("hosted: broker on port %u: %u connection records of %zu B, data plane region %zu B,"
	       " tls_rec %zu B, mqtt conn %zu B, session %zu B\n",
	       (unsigned)CONF_TCP_PORT, max_conn, dp_conn_sizeof(), need, tls_rec_sizeof(),
	       mqtt_sizeof_conn(), mqtt_sizeof_session());
	return 0;
}

void hosted_broker_attach(struct hosted_broker *hb, struct tcp_stack *tcp)
{
	dp_set_lower_ctx(hb->dp, tcp);
}

uint32_t hosted_broker_poll(struct hosted_broker *hb)
{
	uint32_t left = dp_poll(hb->dp);
	if (hb->store) {
		(void)hosted_store_poll(hb->store);
		left += hosted_store_due_ms(hb->store) <= hb_clock_ms(); /* work now: no sleep */
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
	dp_stats_get(hb->dp, &s);
	tls_hs_stats_get(hb->hs_env, &hs);
	mqtt_broker_usage(dp_broker(hb->dp), &u);
	const struct mqtt_broker_stats *ms = mqtt_broker_stats(dp_broker(hb->dp));
	printf("%s broker conns=%u handshaking=%u established=%u sessions=%u subs=%u retained=%u"
	       " heap_used=%zu heap_baseline=%zu heap_per_conn=%zu fixed_per_conn=%zu"
	       " bytes_per_conn=%zu heap_blocks=%zu\n",
	       tag, s.open, s.handshaking, s.established, u.sessions, u.subs, u.retained, s.heap_used,
	       s.heap_baseline, s.heap_per_conn, s.fixed_per_conn, s.bytes_per_conn,
	       hb->heap_blocks);
	printf("%s tls rx_copied=%llu key_hits=%llu key_misses=%llu key_evictions=%llu\n", tag,
	       (unsigned long long)s.rx_copied, (unsigned long long)s.key_hits,
	       (unsigned long long)s.key_misses, (unsigned long long)s.key_evictions);
	printf("%s dp accepted=%llu hs_done=%llu hs_failed=%llu hs_timeouts=%llu id_refused=%llu"
	       " refused heap/records/inflight/source/rate=%llu/%llu/%llu/%llu/%llu"
	       " closes fin/alert/tls_err/mqtt/tcp=%llu/%llu/%llu/%llu/%llu reaped=%llu"
	       " out_chunks=%llu out_blocked=%llu out_failed=%llu/%llu tls_hs_live=%zu peak=%zu"
	       " msgs_in=%llu msgs_out=%llu acl_denied=%llu/%llu connack_refused=%llu wills=%llu\n",
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
	       (unsigned long long)ms->wills_published);
	if (hb->store)
		hosted_store_stats(hb->store, tag);
}

void hosted_broker_fini(struct hosted_broker *hb)
{
	if (hb->store)
		hosted_store_finish(hb->store); /* commit what waits; its answers still reach dp */
	if (hb->dp) {
		dp_fini(hb->dp);
		hb->dp = NULL;
	}
	if (hb->hs_env) {
		tls_hs_env_destroy(hb->hs_env);
		hb->hs_env = NULL;
	}
	free(hb->dp_mem);
	hb->dp_mem = NULL;
	hosted_store_destroy(hb->store);
	hb->store = NULL;
	if (hb->heap_used || hb->heap_blocks)
		fprintf(stderr, "hosted: broker heap not empty at exit: %zu B in %zu blocks\n",
			hb->heap_used, hb->heap_blocks);
	else
		printf("hosted: broker heap empty at exit (peak %zu B)\n", hb->heap_peak);
}
