// SPDX-License-Identifier: MIT
/*
 * micro_tls (make bench): our TLS 1.3 server (tls/handshake.h, mbedTLS underneath, then
 * our record layer tls/record.h) in process, against an OpenSSL client over memory BIOs:
 *   - server-side CPU per full mTLS handshake (client certificate dev-1, ECDSA P-256) and
 *     per resumed handshake (the client offers the ticket it got): median and p90 in us of
 *     this thread's CPU time (CLOCK_THREAD_CPUTIME_ID) summed over the server's calls only
 *     (tls_hs_start, tls_hs_input, tls_hs_finish; the send callback only appends to a BIO);
 *     the OpenSSL client's work between them is not counted; each figure twice, with the
 *     curve driver (tls/accel) on and off ("curve_driver"), handshakes alternating;
 *   - bytes of TLS state per idle connection (tls_rec_sizeof) and peak bytes per handshake
 *     in flight (the handshake allocator's live bytes above the env's, per handshake, from
 *     this file's accounting hook; the env's own peak from tls_hs_stats_get beside it);
 *   - the record layer alone: us per record sealed and opened at 64 B, 1 KiB and 16 KiB for
 *     both suites, with key and IV expanded per record (key_cache "off") and served from
 *     the per-core key cache (key_cache "on"; ADR-014), and the key + IV derivation alone
 *     (two HKDF-Expand-Label calls);
 *   - the plain copy beside them: ns per memcpy at the same sizes, lib/mem.c's (the image's)
 *     and libc's.
 * One JSON line per figure on stdout ({"micro":...}). Host benchmark (hostrel); never linked
 * into the image. usage: micro_tls CERTDIR [budget_s] (CERTDIR: build/dev/certs: ca.crt,
 * server.crt/.key, dev-1.crt/.key).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "kernel/node/port.h"
#include "kernel/node/tls_port.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "tls/accel/accel.h"
#include "tls/handshake.h"
#include "tls/record.h"

#define MAX_HS 400
#define MIN_HS 15

static size_t live, hs_base, hs_peak;

/* The handshake heap: the hosted port's (hosted/node_port.c), with the live bytes and their
 * peak counted here; the other hooks are the port's as they are. */
static void *a_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx;
	void *p = node_port_alloc(len, tag);
	if (p) {
		live += len;
		if (live > hs_peak)
			hs_peak = live;
	}
	return p;
}
static void a_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	if (p)
		live -= len;
	node_port_free(p, len);
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t *load(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "micro_tls: cannot open %s\n", path);
		exit(2);
	}
	uint8_t *buf = malloc(65537);
	size_t n = fread(buf, 1, 65536, f);
	fclose(f);
	buf[n] = 0;
	*len = n + 1; /* PEM: the NUL counted */
	return buf;
}

/* Server output goes straight into the client's read BIO. */
static int srv_send(void *ctx, const uint8_t *p, size_t len)
{
	return BIO_write((BIO *)ctx, p, (int)len) == (int)len ? 0 : -E_IO;
}

static SSL_SESSION *ticket;
static int new_session(SSL *s, SSL_SESSION *sess)
{
	(void)s;
	if (ticket)
		SSL_SESSION_free(ticket);
	ticket = sess;
	return 1; /* we keep the reference */
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct hs_result {
	double us[MAX_HS];
	size_t peak[MAX_HS];
	unsigned n, resumed, failed;
};

/* One handshake; server CPU time in *us, handshake peak bytes in *peak. 0 or -1. */
static int one_handshake(SSL_CTX *cctx, struct tls_hs_env *env, struct tls_rec_env *renv,
			 bool resume, double *us, size_t *peak, bool *was_resumed)
{
	SSL *c = SSL_new(cctx);
	BIO *c_in = BIO_new(BIO_s_mem()), *c_out = BIO_new(BIO_s_mem());
	SSL_set_bio(c, c_in, c_out);
	SSL_set_connect_state(c);
	if (resume && ticket)
		SSL_set_session(c, ticket);
	struct tls_hs *hs = NULL;
	struct tls_rec rec;
	struct tls_identity id;
	static uint8_t buf[65536];
	double srv = 0, t0;
	int rc = -1, done = 0;
	hs_base = live;
	hs_peak = live;
	t0 = cpu_s();
	int s = tls_hs_start(env, srv_send, c_in, &hs);
	srv += cpu_s() - t0;
	if (s)
		goto out;
	for (int round = 0; round < 16 && done == 0; round++) {
		int r = SSL_do_handshake(c);
		if (r <= 0 && SSL_get_error(c, r) != SSL_ERROR_WANT_READ)
			break;
		int n = BIO_read(c_out, buf, sizeof buf);
		if (n <= 0)
			break;
		size_t used = 0;
		t0 = cpu_s();
		done = tls_hs_input(hs, buf, (size_t)n, &used);
		if (done == 1) {
			int f = tls_hs_finish(hs, &rec, &id, NULL);
			hs = NULL;
			srv += cpu_s() - t0;
			if (f)
				break;
			tls_rec_close(renv, &rec);
			rc = 0;
		} else {
			srv += cpu_s() - t0;
		}
		if (done < 0)
			break;
	}
	if (rc == 0) {
		/* Let the client take the NewSessionTicket(s). */
		(void)SSL_do_handshake(c);
		uint8_t tmp[64];
		(void)SSL_read(c, tmp, sizeof tmp);
		*was_resumed = SSL_session_reused(c) == 1;
		/* Freed without a shutdown mark, OpenSSL would drop the ticket. */
		SSL_set_shutdown(c, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
	}
out:
	if (hs) {
		fprintf(stderr, "micro_tls: handshake failed (mbedtls -0x%04x)\n", (unsigned)-tls_hs_error(hs));
		tls_hs_abort(hs);
	}
	*us = srv * 1e6;
	*peak = hs_peak - hs_base;
	SSL_free(c);
	return rc;
}

/* Handshakes alternate between the curve driver on (res[1]) and off (res[0], mbedTLS's
 * built-in arithmetic), one each in turn, so that both see the same machine load (paired). */
static void run_handshakes(SSL_CTX *cctx, struct tls_hs_env *env, struct tls_rec_env *renv,
			   bool resume, double budget, struct hs_result res[2])
{
	memset(res, 0, 2 * sizeof *res);
	double t0 = cpu_s();
	for (unsigned turn = 0;; turn++) {
		struct hs_result *r = &res[turn & 1];
		if (r->failed > 5 || res[0].n >= MAX_HS || res[1].n >= MAX_HS ||
		    (res[0].n >= MIN_HS && res[1].n >= MIN_HS && cpu_s() - t0 >= budget))
			break;
		bool reused = false;
		double us;
		size_t peak;
		accel_set_enabled(turn & 1);
		if (one_handshake(cctx, env, renv, resume, &us, &peak, &reused)) {
			r->failed++;
			continue;
		}
		r->us[r->n] = us;
		r->peak[r->n] = peak;
		r->n++;
		r->resumed += reused;
	}
	accel_set_enabled(true);
}

static void print_hs(const char *kind, bool driver, struct hs_result *r)
{
	size_t pk = 0;
	for (unsigned i = 0; i < r->n; i++)
		pk = r->peak[i] > pk ? r->peak[i] : pk;
	qsort(r->us, r->n, sizeof r->us[0], cmp_d);
	printf("{\"micro\":\"tls_handshake\",\"kind\":\"%s\",\"curve_driver\":\"%s\","
	       "\"handshakes\":%u,\"resumed\":%u,"
	       "\"failed\":%u,\"server_cpu_us_median\":%.0f,\"server_cpu_us_p90\":%.0f,"
	       "\"server_cpu_us_min\":%.0f,\"peak_bytes_per_handshake\":%zu}\n",
	       kind, driver ? "on" : "off", r->n, r->resumed, r->failed, r->n ? r->us[r->n / 2] : 0.0,
	       r->n ? r->us[r->n * 9 / 10] : 0.0, r->n ? r->us[0] : 0.0, pk);
	fflush(stdout);
}

static int handshakes(const char *dir, double budget, struct tls_rec_env *renv)
{
	struct tls_hs_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.max_in_flight = 4;
	cfg.ca = load(dir, "ca.crt", &cfg.ca_len);
	cfg.cert = load(dir, "server.crt", &cfg.cert_len);
	cfg.key = load(dir, "server.key", &cfg.key_len);
	cfg.id = (struct tls_id_config){ TLS_ID_FROM_CN, 64, NULL };
	cfg.ticket_lifetime_s = 600;
	cfg.n_tickets = 1;
	cfg.ops = node_tls_port_hs_ops();
	cfg.ops.alloc = a_alloc;
	cfg.ops.free = a_free;
	cfg.ops.core = NULL; /* one core */
	struct tls_hs_env *env;
	int rc = tls_hs_env_create(&cfg, &env);
	if (rc)
		return fprintf(stderr, "micro_tls: env: %s\n", err_name(rc)), 1;
	size_t env_bytes = live;

	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	char path[4096];
	SSL_CTX_set_min_proto_version(cctx, TLS1_3_VERSION);
	snprintf(path, sizeof path, "%s/dev-1.crt", dir);
	if (SSL_CTX_use_certificate_file(cctx, path, SSL_FILETYPE_PEM) != 1)
		return fprintf(stderr, "micro_tls: client cert %s\n", path), 1;
	snprintf(path, sizeof path, "%s/dev-1.key", dir);
	if (SSL_CTX_use_PrivateKey_file(cctx, path, SSL_FILETYPE_PEM) != 1)
		return fprintf(stderr, "micro_tls: client key %s\n", path), 1;
	snprintf(path, sizeof path, "%s/ca.crt", dir);
	if (SSL_CTX_load_verify_locations(cctx, path, NULL) != 1)
		return fprintf(stderr, "micro_tls: CA %s\n", path), 1;
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_session_cache_mode(cctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(cctx, new_session);

	static struct hs_result full[2], res[2];
	run_handshakes(cctx, env, renv, false, budget, full);
	struct tls_hs_stats st;
	tls_hs_stats_get(env, &st);
	size_t env_peak_full = st.peak_bytes;
	run_handshakes(cctx, env, renv, true, budget, res);
	print_hs("full", true, &full[1]);
	print_hs("resumed", true, &res[1]);
	print_hs("full", false, &full[0]);
	print_hs("resumed", false, &res[0]);
	tls_hs_stats_get(env, &st);
	printf("{\"micro\":\"tls_idle_conn\",\"tls_rec_bytes\":%zu,\"env_heap_bytes\":%zu,"
	       "\"hs_env_peak_bytes_after_full\":%zu,\"hs_env_peak_bytes\":%zu,"
	       "\"hs_done\":%llu,\"hs_resumed\":%llu,\"hs_failed\":%llu,\"hs_live_bytes_after\":%zu}\n",
	       tls_rec_sizeof(), env_bytes, env_peak_full, st.peak_bytes, (unsigned long long)st.n_done,
	       (unsigned long long)st.n_resumed, (unsigned long long)st.n_failed, st.live_bytes);
	fflush(stdout);
	if (ticket)
		SSL_SESSION_free(ticket);
	SSL_CTX_free(cctx);
	tls_hs_env_destroy(env);
	return full[0].n && full[1].n && res[0].n && res[1].n ? 0 : 1;
}

static int sink_n;
static int sink(void *ctx, const uint8_t *d, size_t len)
{
	(void)ctx, (void)d;
	sink_n += (int)len;
	return 0;
}

/* One record sealed by a and opened by b under env e; adds the CPU seconds. */
static int one_record(struct tls_rec_env *e, struct tls_rec *a, struct tls_rec *b, size_t len,
		      double *seal, double *open)
{
	static uint8_t in[16384], out[16384 + 256];
	size_t n = 0;
	double a0 = cpu_s();
	if (tls_rec_write(e, a, in, len, out, sizeof out, &n))
		return fprintf(stderr, "micro_tls: rec write\n"), 1;
	double a1 = cpu_s();
	if (tls_rec_input(e, b, out, n, sink, NULL)) /* decrypted in place, as from a frame */
		return fprintf(stderr, "micro_tls: rec input\n"), 1;
	double b1 = cpu_s();
	*seal += a1 - a0;
	*open += b1 - a1;
	return 0;
}

/* Record layer alone: seal with one tls_rec, open with its mirror, at 64 B, 1 KiB and
 * 16 KiB for both suites. envs[0] expands keys per record, envs[1] has the key cache; the
 * two alternate record by record so that both see the same machine load (paired). */
static int records(struct tls_rec_env *envs[2], double budget)
{
	static const uint16_t suites[] = { TLS_SUITE_AES_128_GCM_SHA256, TLS_SUITE_CHACHA20_POLY1305_SHA256 };
	static const size_t sizes[] = { 64, 1024, 16384 };
	static const char *const mode[2] = { "off", "on" };
	uint8_t s1[32], s2[32];
	for (size_t i = 0; i < 32; i++)
		s1[i] = (uint8_t)(i * 3 + 1), s2[i] = (uint8_t)(i * 5 + 2);
	for (unsigned su = 0; su < 2; su++) {
		for (unsigned z = 0; z < 3; z++) {
			struct tls_rec a[2], b[2];
			double seal[2] = { 0, 0 }, open[2] = { 0, 0 };
			size_t len = sizes[z];
			unsigned count = 0;
			for (int m = 0; m < 2; m++)
				if (tls_rec_open(&a[m], suites[su], s1, s2, 0, 0) ||
				    tls_rec_open(&b[m], suites[su], s2, s1, 0, 0))
					return fprintf(stderr, "micro_tls: rec open\n"), 1;
			double t0 = cpu_s();
			while (count < 20 || cpu_s() - t0 < budget / 3) {
				for (int m = 0; m < 2; m++)
					if (one_record(envs[m], &a[m], &b[m], len, &seal[m], &open[m]))
						return 1;
				count++;
			}
			for (int m = 0; m < 2; m++) {
				printf("{\"micro\":\"tls_record\",\"key_cache\":\"%s\",\"suite\":\"%s\","
				       "\"bytes\":%zu,\"records\":%u,\"seal_us\":%.2f,\"open_us\":%.2f,"
				       "\"seal_MB_per_s\":%.1f}\n",
				       mode[m], su ? "CHACHA20_POLY1305_SHA256" : "AES_128_GCM_SHA256", len,
				       count, seal[m] / count * 1e6, open[m] / count * 1e6,
				       (double)len * count / seal[m] / 1e6);
				tls_rec_close(envs[m], &a[m]);
				tls_rec_close(envs[m], &b[m]);
			}
		}
	}
	return 0;
}

/* The copy a record costs besides its AEAD: lib/mem.c's memcpy (the image's) and libc's
 * (the hosted broker's) at the record sizes above, ns per copy, to set beside seal_us. */
static void copies(double budget)
{
	static uint8_t src[16384], dst[16384];
	static const size_t sizes[] = { 64, 1024, 16384 };
	for (unsigned z = 0; z < 3; z++) {
		double t[2] = { 0, 0 };
		unsigned count = 0;
		double t0 = cpu_s();
		while (count < 1000 || cpu_s() - t0 < budget / 6) {
			for (int which = 0; which < 2; which++) {
				double c0 = cpu_s();
				for (int k = 0; k < 1000; k++) {
					src[k & 63] = (uint8_t)k; /* a new source each time: no copy is elided */
					if (which)
						memcpy(dst, src, sizes[z]);
					else
						lib_memcpy(dst, src, sizes[z]);
					__asm__ __volatile__("" : : "r"(dst) : "memory");
				}
				t[which] += cpu_s() - c0;
			}
			count += 1000;
		}
		printf("{\"micro\":\"mem_copy\",\"bytes\":%zu,\"copies\":%u,\"lib_ns\":%.1f,\"libc_ns\":%.1f}\n",
		       sizes[z], count, t[0] / count * 1e9, t[1] / count * 1e9);
	}
	fflush(stdout);
}

/* Per-record derivation alone: key (16 or 32 B) and IV (12 B) from the traffic secret. */
static int derivation(double budget)
{
	uint8_t s1[32], key[32], iv[12];
	for (size_t i = 0; i < 32; i++)
		s1[i] = (uint8_t)(i * 3 + 1);
	unsigned count = 0;
	double t0 = cpu_s(), t = t0;
	while (count < 1000 || t - t0 < budget / 6) {
		for (int k = 0; k < 100; k++)
			if (tls_rec_expand_label(s1, "key", NULL, 0, key, 16) ||
			    tls_rec_expand_label(s1, "iv", NULL, 0, iv, sizeof iv))
				return fprintf(stderr, "micro_tls: expand\n"), 1;
		count += 100;
		t = cpu_s();
	}
	printf("{\"micro\":\"tls_key_derivation\",\"derivations\":%u,\"us_per_key_and_iv\":%.2f}\n", count,
	       (t - t0) / count * 1e6);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: micro_tls CERTDIR [budget_s [records]]\n");
		return 2;
	}
	double budget = argc > 2 ? atof(argv[2]) : 2.0;
	if (budget <= 0 || budget > 60)
		budget = 2.0;
	struct tls_rec_env renv, cenv;
	static struct tls_rec_key_slot cache[16];
	struct tls_rec_config rc = { TLS_REC_MAX_PLAINTEXT, (uint64_t)1 << 40, node_tls_port_rec_ops(), NULL, 0 };
	if (tls_rec_env_init(&renv, &rc))
		return fprintf(stderr, "micro_tls: rec env\n"), 1;
	rc.key_cache = cache;
	rc.key_cache_slots = 16;
	if (tls_rec_env_init(&cenv, &rc))
		return fprintf(stderr, "micro_tls: rec env\n"), 1;
	int r = argc > 3 && strcmp(argv[3], "records") == 0 ? 0 : handshakes(argv[1], budget, &renv);
	struct tls_rec_env *envs[2] = { &renv, &cenv };
	r |= records(envs, budget);
	copies(budget);
	printf("{\"micro\":\"tls_key_cache\",\"hits\":%llu,\"misses\":%llu,\"evictions\":%llu,"
	       "\"slot_bytes\":%zu}\n",
	       (unsigned long long)cenv.n_key_hits, (unsigned long long)cenv.n_key_misses,
	       (unsigned long long)cenv.n_key_evictions, sizeof cache[0]);
	r |= derivation(budget);
	tls_rec_env_fini(&cenv);
	return r;
}
