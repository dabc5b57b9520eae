/* SPDX-License-Identifier: MIT
 *
 * dp-bench (tools/dpbench/dpbench.h): an mbedTLS client and one dp joined by two byte
 * pipes in place of TCP. Owns the client's mbedTLS state, the pipes and the cycle's
 * state machine; never touches another core's dp, never blocks, and ends a cycle that
 * goes wrong (counted) rather than retrying inside one step.
 *
 * Design note. One connection (TCP id 0) at a time. States:
 *   IDLE -accept-> HANDSHAKE -client done-> CONNECT sent -CONNACK-> DISCONNECT sent
 *     -server FIN-> (closed reported, reaped) -> IDLE, cycles++
 *   any state -error-> abort, closed reported -> IDLE, failures++
 * Invariants: 1. c2s holds client bytes not yet given to dp; s2c holds server bytes the
 * client has not read. 2. unacked counts bytes dp sent that dpb has not acknowledged
 * (they are acknowledged at the start of the next step, outside dp's callbacks).
 */
#include "tools/dpbench/dpbench.h"

#include "lib/align.h"
#include "lib/err.h"
#include "lib/mem.h"

#include "mbedtls/ssl.h"
#include "mbedtls/x509_crt.h"
#include "mbedtls/pk.h"

#ifndef MBEDTLS_SSL_CLI_C
#error "dp-bench needs mbedTLS's client side: build with URMQTT_DP_BENCH=1"
#endif

#define DPB_PIPE 32768u
#define DPB_CONN 0u
#define DPB_SRC_IP 0x0a000002u

enum dpb_state { DPB_IDLE, DPB_HS, DPB_CONNACK, DPB_BYE };

struct dpb_pipe {
	uint8_t buf[DPB_PIPE];
	uint32_t len;
};

struct dpb {
	struct dpb_client_config cc;
	struct dp *dp;
	mbedtls_ssl_config conf;
	mbedtls_ssl_context ssl;
	mbedtls_x509_crt ca, cert;
	mbedtls_pk_context key;
	bool ssl_ready;
	enum dpb_state state;
	struct dpb_pipe c2s, s2c;
	size_t unacked;
	bool server_fin, server_abort, closed_reported;
	uint16_t src_port;
	uint8_t plain[64];
	size_t plain_len;
	struct dpb_stats st;
};

/* ---- the pipes: dp's lower ops ----------------------------------------------------- */

static int low_send(void *ctx, uint32_t conn, const struct tcp_iov *iov, size_t n)
{
	struct dpb *b = ctx;
	if (conn != DPB_CONN || b->server_fin || b->server_abort)
		return -E_CLOSED;
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += iov[i].len;
	if (total > DPB_PIPE - b->s2c.len)
		return -E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(b->s2c.buf + b->s2c.len, iov[i].base, iov[i].len);
		b->s2c.len += (uint32_t)iov[i].len;
	}
	b->unacked += total;
	return 0;
}
static int low_close(void *ctx, uint32_t conn)
{
	struct dpb *b = ctx;
	(void)conn;
	b->server_fin = true;
	return 0;
}
static void low_abort(void *ctx, uint32_t conn)
{
	struct dpb *b = ctx;
	(void)conn;
	b->server_abort = true;
}
static void low_window(void *ctx, uint32_t conn)
{
	(void)ctx, (void)conn;
}

/* ---- the client's BIO -------------------------------------------------------------- */

static int bio_send(void *ctx, const unsigned char *p, size_t n)
{
	struct dpb *b = ctx;
	size_t take = MIN(n, (size_t)(DPB_PIPE - b->c2s.len));
	if (!take)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	memcpy(b->c2s.buf + b->c2s.len, p, take);
	b->c2s.len += (uint32_t)take;
	return (int)take;
}
static int bio_recv(void *ctx, unsigned char *p, size_t n)
{
	struct dpb *b = ctx;
	if (!b->s2c.len)
		return (b->server_fin || b->server_abort) ? 0 : MBEDTLS_ERR_SSL_WANT_READ;
	size_t take = MIN(n, (size_t)b->s2c.len);
	memcpy(p, b->s2c.buf, take);
	memmove(b->s2c.buf, b->s2c.buf + take, b->s2c.len - take);
	b->s2c.len -= (uint32_t)take;
	return (int)take;
}
static int client_rng(void *ctx, unsigned char *out, size_t n)
{
	struct dpb *b = ctx;
	return b->cc.random(b->cc.random_ctx, out, n) ? MBEDTLS_ERR_SSL_INTERNAL_ERROR : 0;
}

/* ---- setup -------------------------------------------------------------------------- */

size_t dpb_mem_size(const struct dp_config *dcfg)
{
	struct dp_config g = *dcfg;
	g.lower = (struct dp_lower_ops){ low_send, low_close, low_abort, low_window };
	g.shard.n_cores = 1;
	size_t d = dp_mem_size(&g);
	return d ? align8(sizeof(struct dpb)) + d : 0;
}

int dpb_init(struct dpb **out, void *mem, size_t len, const struct dp_config *dcfg,
	     const struct dpb_client_config *cc)
{
	*out = NULL;
	size_t need = dpb_mem_size(dcfg);
	if (!need || len < need || ((uintptr_t)mem & 7u) || !cc->random || !cc->client_id)
		return -E_INVAL;
	struct dpb *b = mem;
	memset(b, 0, sizeof *b);
	b->cc = *cc;
	struct dp_config g = *dcfg;
	g.lower = (struct dp_lower_ops){ low_send, low_close, low_abort, low_window };
	g.lower_ctx = b;
	g.shard.n_cores = 1; /* each core works on its own */
	uint8_t *dmem = (uint8_t *)mem + align8(sizeof *b);
	int rc = dp_init(&b->dp, dmem, len - align8(sizeof *b), &g);
	if (rc)
		return rc;
	mbedtls_ssl_config_init(&b->conf);
	mbedtls_ssl_init(&b->ssl);
	mbedtls_x509_crt_init(&b->ca);
	mbedtls_x509_crt_init(&b->cert);
	mbedtls_pk_init(&b->key);
	if (mbedtls_x509_crt_parse(&b->ca, cc->ca, cc->ca_len) ||
	    mbedtls_x509_crt_parse(&b->cert, cc->cert, cc->cert_len) ||
	    mbedtls_pk_parse_key(&b->key, cc->key, cc->key_len, NULL, 0, client_rng, b) ||
	    mbedtls_ssl_config_defaults(&b->conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
					MBEDTLS_SSL_PRESET_DEFAULT)) {
		dpb_fini(b);
		return -E_INVAL;
	}
	mbedtls_ssl_conf_min_tls_version(&b->conf, MBEDTLS_SSL_VERSION_TLS1_3);
	mbedtls_ssl_conf_max_tls_version(&b->conf, MBEDTLS_SSL_VERSION_TLS1_3);
	mbedtls_ssl_conf_authmode(&b->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_rng(&b->conf, client_rng, b);
	mbedtls_ssl_conf_ca_chain(&b->conf, &b->ca, NULL);
	if (mbedtls_ssl_conf_own_cert(&b->conf, &b->cert, &b->key) || mbedtls_ssl_setup(&b->ssl, &b->conf) ||
	    mbedtls_ssl_set_hostname(&b->ssl, "localhost")) {
		dpb_fini(b);
		return -E_INVAL;
	}
	mbedtls_ssl_set_bio(&b->ssl, b, bio_send, bio_recv, NULL);
	b->ssl_ready = true;
	b->src_port = 1024;
	*out = b;
	return 0;
}

/* ---- the cycle ----------------------------------------------------------------------- */

static void end_cycle(struct dpb *b, int err)
{
	if (err) {
		b->st.failures++;
		b->st.last_error = err;
	}
	if (!b->closed_reported && b->state != DPB_IDLE) /* as TCP would report it */
		dp_tcp_upper.closed(b->dp, DPB_CONN, err ? TCP_CLOSE_RESET : TCP_CLOSE_NORMAL);
	(void)dp_poll(b->dp); /* reap */
	(void)mbedtls_ssl_session_reset(&b->ssl);
	b->c2s.len = b->s2c.len = 0;
	b->unacked = 0;
	b->server_fin = b->server_abort = b->closed_reported = false;
	b->plain_len = 0;
	b->state = DPB_IDLE;
	if (!err)
		b->st.cycles++;
}

/* Client bytes to the server, server acknowledgements, the server's staged steps. */
static void pump(struct dpb *b)
{
	if (b->unacked) {
		size_t n = b->unacked;
		b->unacked = 0;
		dp_tcp_upper.sent(b->dp, DPB_CONN, n);
	}
	while (b->c2s.len && !b->server_abort) {
		size_t used = dp_tcp_upper.recv(b->dp, DPB_CONN, b->c2s.buf, b->c2s.len);
		if (!used)
			break;
		memmove(b->c2s.buf, b->c2s.buf + used, b->c2s.len - used);
		b->c2s.len -= (uint32_t)used;
	}
	while (dp_poll(b->dp))
		;
}

static int client_write(struct dpb *b, const uint8_t *p, size_t n)
{
	int r = mbedtls_ssl_write(&b->ssl, p, n);
	return r == (int)n ? 0 : (r < 0 ? r : -E_IO);
}

int dpb_step(struct dpb *b)
{
	static const uint8_t disconnect[2] = { 0xe0, 0x00 };
	int r;
	switch (b->state) {
	case DPB_IDLE:
		if (++b->src_port == 0)
			b->src_port = 1024;
		if (!dp_tcp_upper.admit(b->dp, DPB_SRC_IP, b->src_port, 8883) ||
		    dp_tcp_upper.accept(b->dp, DPB_CONN, DPB_SRC_IP, b->src_port, 8883) != 0) {
			b->st.failures++;
			b->st.last_error = -E_PERM;
			(void)dp_poll(b->dp);
			return 1;
		}
		b->state = DPB_HS;
		return 1;
	case DPB_HS:
		r = mbedtls_ssl_handshake(&b->ssl);
		if (r != 0 && r != MBEDTLS_ERR_SSL_WANT_READ && r != MBEDTLS_ERR_SSL_WANT_WRITE) {
			end_cycle(b, r);
			return 1;
		}
		if (r == 0) {
			/* CONNECT: MQTT 3.1.1, clean session, keepalive 60, client id */
			uint8_t p[64];
			size_t idl = strnlen(b->cc.client_id, 32), n = 0;
			p[n++] = 0x10;
			p[n++] = (uint8_t)(12 + idl);
			static const uint8_t var[] = { 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 60 };
			memcpy(p + n, var, sizeof var);
			n += sizeof var;
			p[n++] = 0;
			p[n++] = (uint8_t)idl;
			memcpy(p + n, b->cc.client_id, idl);
			n += idl;
			if ((r = client_write(b, p, n)) != 0) {
				end_cycle(b, r);
				return 1;
			}
			b->state = DPB_CONNACK;
		}
		pump(b);
		if (b->server_abort)
			end_cycle(b, -E_CLOSED);
		return 1;
	case DPB_CONNACK:
		pump(b);
		r = mbedtls_ssl_read(&b->ssl, b->plain + b->plain_len, sizeof b->plain - b->plain_len);
		if (r > 0)
			b->plain_len += (size_t)r;
		else if (r != MBEDTLS_ERR_SSL_WANT_READ && r != MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) {
			end_cycle(b, r ? r : -E_CLOSED);
			return 1;
		}
		if (b->plain_len >= 4) {
			if (b->plain[0] != 0x20 || b->plain[3] != 0) {
				end_cycle(b, -E_PROTO);
				return 1;
			}
			if ((r = client_write(b, disconnect, sizeof disconnect)) != 0) {
				end_cycle(b, r);
				return 1;
			}
			b->state = DPB_BYE;
		}
		return 1;
	case DPB_BYE:
		pump(b);
		if (b->server_fin) { /* the broker ended it after DISCONNECT */
			end_cycle(b, 0);
		} else if (b->server_abort) {
			end_cycle(b, -E_CLOSED);
		}
		return 1;
	}
	return 1;
}

void dpb_stats_get(const struct dpb *b, struct dpb_stats *out)
{
	*out = b->st;
}

void dpb_fini(struct dpb *b)
{
	if (b->state != DPB_IDLE)
		end_cycle(b, -E_CLOSED);
	dp_fini(b->dp);
	mbedtls_ssl_free(&b->ssl);
	mbedtls_ssl_config_free(&b->conf);
	mbedtls_x509_crt_free(&b->ca);
	mbedtls_x509_crt_free(&b->cert);
	mbedtls_pk_free(&b->key);
}
