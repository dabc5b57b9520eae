/* SPDX-License-Identifier: MIT
 *
 * tls-echo: a host test tool that serves TLS 1.3 with mandatory client certificates on a
 * loopback port using our tls/ module (mbedTLS handshake, then our record layer) and
 * echoes application data back. It exists so real clients (openssl s_client, Python's
 * ssl) can test tls/ end to end; it is never part of the image. One connection at a time:
 * its handshake must end within --timeout-ms of accept however the client paces its bytes
 * (as dp's hs_timeout_ms), and after it each receive waits at most --timeout-ms (0: no
 * limit). Logs one line per connection event on stderr, each starting "conn N:" (N counts
 * accepted connections from 1; the first line names the client's address and port), so a
 * test reads its own connection's outcome.
 *
 * usage: tls-echo --port N --ca ca.pem --cert srv.pem --key srv.key
 *                 [--id cn|uri] [--service-prefix P] [--revoked HEXSERIAL]...
 *                 [--max-plaintext N] [--tickets N] [--max-conns N] [--timeout-ms N] [--rsa]
 *                 [--revoke-after N HEXSERIAL] [--clock-skew-s N] [--max-hello N] [--max-chain N]
 *                 [--envs 2 [--own-secrets]] [--allow NAME]... [--unlist-at-finish N]
 * --envs 2 serves connection N with handshake env N % 2, as two cores of the broker would:
 * both derive their ticket keys from one secret (the broker's one key set for every core),
 * or each from its own with --own-secrets (a resumption then becomes a full handshake).
 * --rsa allows RSA certificates (the broker's tls.rsa_allowed, CONF_TLS_RSA_ALLOWED).
 * --revoke-after revokes a serial once connection N is done (a revocation arriving while
 * a device holds a resumption ticket: the tests resume with it and must be refused).
 * --allow turns the allowlist on (tls.registry_mode = "allowlist") with these device
 * identities; --unlist-at-finish empties it once connection N's handshake is done and before
 * tls_hs_finish (a removal arriving mid-handshake: the finish must still refuse it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "kernel/node/port.h"
#include "kernel/node/tls_port.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "tls/handshake.h"
#include "tls/record.h"

#define MAX_REVOKED 8
#define IO_BUF 20000

/* The allowlist (--allow), read by the handshakes of the one serving thread. */
#define MAX_ALLOWED 8
static const char *allowed[MAX_ALLOWED];
static size_t n_allowed;
static unsigned long unlist_at_finish; /* 0: never */

static bool echo_listed(void *ctx, const char *name, size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < n_allowed; i++)
		if (strlen(allowed[i]) == len && memcmp(allowed[i], name, len) == 0)
			return true;
	return false;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "tls-echo: cannot open %s\n", path);
		exit(2);
	}
	uint8_t *buf = malloc(65537);
	size_t n = fread(buf, 1, 65536, f);
	fclose(f);
	buf[n] = 0;
	*len = n + 1; /* PEM: mbedTLS wants the NUL counted */
	return buf;
}

static int send_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -E_IO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int hs_send(void *ctx, const uint8_t *p, size_t len)
{
	return send_all(*(int *)ctx, p, len);
}

struct conn {
	int fd;
	struct tls_rec_env *renv;
	struct tls_rec rec;
	uint8_t out[IO_BUF + 2048];
	int err;
};

/* Echo: encrypt straight back (tls_rec_write may be called from the data callback). */
static int on_data(void *ctx, const uint8_t *p, size_t len)
{
	struct conn *c = ctx;
	size_t n;
	int rc = tls_rec_write(c->renv, &c->rec, p, len, c->out, sizeof c->out, &n);
	if (rc)
		return rc;
	return send_all(c->fd, c->out, n);
}

static void flush(struct conn *c)
{
	size_t n = 0;
	if (tls_rec_want_flush(&c->rec) && tls_rec_flush(c->renv, &c->rec, c->out, sizeof c->out, &n) == 0 &&
	    n)
		(void)send_all(c->fd, c->out, n);
}

static void serve(struct tls_hs_env *env, struct tls_rec_env *renv, int fd, unsigned long id_no,
		  long timeout_ms)
{
	const int64_t t_accept_ns = (int64_t)node_port_now_ns();
	const int64_t deadline_ns = t_accept_ns + (int64_t)timeout_ms * 1000000;
	static uint8_t buf[IO_BUF];
	static struct conn c;
	struct tls_hs *hs;
	struct tls_identity ident;
	size_t used = 0;
	int rc;
	bool in_rec = false;

	memset(&c, 0, sizeof c);
	c.fd = fd;
	c.renv = renv;
	if (tls_hs_start(env, hs_send, &c.fd, &hs)) {
		fprintf(stderr, "conn %lu: refused (handshakes in flight)\n", id_no);
		return;
	}
	for (;;) {
		if (!in_rec && timeout_ms > 0) {
			/* The handshake's deadline. Rounded up to whole ms, and poll sleeps at
			 * least that long: never early (tests/smoke/tls-echo.sh's stall case
			 * measures "not before"; SO_RCVTIMEO may wake a jiffy early). */
			int64_t left_ns = deadline_ns - (int64_t)node_port_now_ns();
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			int pr = left_ns > 0 ? poll(&pfd, 1, (int)((left_ns + 999999) / 1000000)) : 0;
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr == 0) {
				fprintf(stderr, "conn %lu: timed out (handshake) after %lld ms\n", id_no,
					(long long)(((int64_t)node_port_now_ns() - t_accept_ns) / 1000000));
				break;
			}
		}
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n < 0 && errno == EINTR)
			continue;
		/* One line per outcome: tests/smoke/tls-echo.sh tells a timeout (above, or
		 * SO_RCVTIMEO between records) from a client that hung up. */
		if (n == 0) {
			fprintf(stderr, "conn %lu: peer closed (%s)\n", id_no, in_rec ? "records" : "handshake");
			break;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			fprintf(stderr, "conn %lu: timed out (%s)\n", id_no, in_rec ? "records" : "handshake");
			break;
		}
		if (n < 0) {
			fprintf(stderr, "conn %lu: receive error (%s): %s\n", id_no,
				in_rec ? "records" : "handshake", strerror(errno));
			break;
		}
		size_t off = 0;
		if (!in_rec) {
			rc = tls_hs_input(hs, buf, (size_t)n, &used);
			if (rc < 0) {
				fprintf(stderr, "conn %lu: handshake failed: %s mbedtls=-0x%04x\n", id_no,
					err_name(rc), (unsigned)-tls_hs_error(hs));
				tls_hs_abort(hs);
				hs = NULL;
				break;
			}
			if (rc == 0)
				continue;
			if (unlist_at_finish && id_no == unlist_at_finish) {
				n_allowed = 0;
				fprintf(stderr, "tls-echo: allowlist emptied before conn %lu finished\n", id_no);
			}
			const char *why = NULL;
			rc = tls_hs_finish(hs, &c.rec, &ident, &why);
			hs = NULL;
			if (rc) {
				fprintf(stderr, "conn %lu: identity refused: %s (%s)\n", id_no, why, err_name(rc));
				flush(&c);
				tls_rec_close(renv, &c.rec);
				break;
			}
			in_rec = true;
			fprintf(stderr, "conn %lu: established identity=%s kind=%s tls_rec=%zu B\n", id_no,
				ident.name, ident.kind == TLS_ID_SERVICE ? "service" : "device",
				tls_rec_sizeof());
			off = used;
		}
		uint64_t ku_before = renv->n_key_updates_in;
		rc = tls_rec_input(renv, &c.rec, buf + off, (size_t)n - off, on_data, &c);
		if (renv->n_key_updates_in != ku_before)
			fprintf(stderr, "conn %lu: key update received\n", id_no);
		flush(&c);
		if (rc == -E_CLOSED) {
			fprintf(stderr, "conn %lu: closed by peer alert=%u\n", id_no,
				tls_rec_alert(&c.rec));
			break;
		}
		if (rc < 0) {
			fprintf(stderr, "conn %lu: record error %s alert=%u\n", id_no, err_name(rc),
				tls_rec_alert(&c.rec));
			break;
		}
	}
	if (hs)
		tls_hs_abort(hs);
	if (in_rec)
		tls_rec_close(renv, &c.rec);
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* A serial in hex (an even number of digits, at most 64 bytes) into out; its length, or 0
 * when it is not one. */
static size_t parse_serial(const char *hex, uint8_t out[64])
{
	size_t n = strlen(hex) / 2;
	if (n == 0 || n > 64 || strlen(hex) % 2)
		return 0;
	for (size_t j = 0; j < n; j++) {
		int hi = hexval(hex[2 * j]), lo = hexval(hex[2 * j + 1]);
		if (hi < 0 || lo < 0)
			return 0;
		out[j] = (uint8_t)(hi << 4 | lo);
	}
	return n;
}

int main(int argc, char **argv)
{
	struct tls_hs_config cfg;
	struct tls_rec_config rcfg;
	static struct tls_revoke_entry revoked[MAX_REVOKED];
	static uint8_t revoked_bytes[MAX_REVOKED][64];
	static struct tls_revoke_list rlist;
	const char *ca = NULL, *cert = NULL, *key = NULL;
	int port = 0;
	long max_conns = -1;
	long timeout_ms = 10000;
	unsigned long revoke_after = 0; /* 0: none */
	int n_envs = 1;
	bool own_secrets = false;
	const char *revoke_later = NULL;

	memset(&cfg, 0, sizeof cfg);
	memset(&rcfg, 0, sizeof rcfg);
	cfg.max_in_flight = 4;
	cfg.id.source = TLS_ID_FROM_CN;
	cfg.id.max_len = 64;
	cfg.ticket_lifetime_s = 3600;
	cfg.n_tickets = 1;
	rcfg.max_plaintext = TLS_REC_MAX_PLAINTEXT;
	rcfg.key_update_after = 1u << 24;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--rsa")) {
			cfg.rsa = true;
			continue;
		}
		if (!strcmp(a, "--own-secrets")) {
			own_secrets = true;
			continue;
		}
		if (!strcmp(a, "--envs") && v) {
			n_envs = atoi(v);
			i++;
			if (n_envs < 1 || n_envs > 2)
				goto usage;
			continue;
		}
		if (!v)
			goto usage;
		i++;
		if (!strcmp(a, "--port"))
			port = atoi(v);
		else if (!strcmp(a, "--ca"))
			ca = v;
		else if (!strcmp(a, "--cert"))
			cert = v;
		else if (!strcmp(a, "--key"))
			key = v;
		else if (!strcmp(a, "--id"))
			cfg.id.source = !strcmp(v, "uri") ? TLS_ID_FROM_SAN_URI : TLS_ID_FROM_CN;
		else if (!strcmp(a, "--service-prefix"))
			cfg.id.service_uri_prefix = v;
		else if (!strcmp(a, "--max-plaintext"))
			rcfg.max_plaintext = (uint16_t)atoi(v);
		else if (!strcmp(a, "--max-hello"))
			cfg.max_client_hello_bytes = (uint32_t)atoi(v);
		else if (!strcmp(a, "--max-chain"))
			cfg.max_client_chain_bytes = (uint32_t)atoi(v);
		else if (!strcmp(a, "--clock-skew-s"))
			cfg.clock_skew_s = (uint32_t)atoi(v);
		else if (!strcmp(a, "--tickets"))
			cfg.n_tickets = (uint8_t)atoi(v);
		else if (!strcmp(a, "--timeout-ms"))
			timeout_ms = atol(v);
		else if (!strcmp(a, "--max-conns"))
			max_conns = atol(v);
		else if (!strcmp(a, "--revoked") && rlist.n < MAX_REVOKED - 1) { /* one kept for later */
			size_t n = parse_serial(v, revoked_bytes[rlist.n]);
			if (!n)
				goto usage;
			revoked[rlist.n].serial = revoked_bytes[rlist.n];
			revoked[rlist.n].len = (uint8_t)n;
			rlist.n++;
		} else if (!strcmp(a, "--allow") && n_allowed < MAX_ALLOWED) {
			allowed[n_allowed++] = v;
			cfg.revoke.is_listed_id = echo_listed;
		} else if (!strcmp(a, "--unlist-at-finish")) {
			unlist_at_finish = strtoul(v, NULL, 10);
		} else if (!strcmp(a, "--revoke-after") && i + 1 < argc) {
			revoke_after = strtoul(v, NULL, 10);
			revoke_later = argv[++i];
			if (!revoke_after || !parse_serial(revoke_later, revoked_bytes[MAX_REVOKED - 1]))
				goto usage;
		} else
			goto usage;
	}
	if (!port || !ca || !cert || !key)
		goto usage;
	rlist.entries = revoked;
	cfg.revoke.is_revoked = tls_revoke_list_check;
	cfg.revoke.ctx = &rlist;
	cfg.ca = read_file(ca, &cfg.ca_len);
	cfg.cert = read_file(cert, &cfg.cert_len);
	cfg.key = read_file(key, &cfg.key_len);
	cfg.ops = node_tls_port_hs_ops(); /* the hosted port's hooks (hosted/node_port.c) */
	rcfg.ops = node_tls_port_rec_ops();

	struct tls_hs_env *envs[2] = { NULL, NULL };
	struct tls_rec_env renv;
	uint8_t secret[TLS_HS_TICKET_SECRET_LEN];
	if (n_envs == 2 && !own_secrets) {
		if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) {
			perror("tls-echo: getrandom");
			return 1;
		}
		cfg.ticket_secret = secret;
	}
	int rc = 0;
	for (int e = 0; e < n_envs && !rc; e++)
		rc = tls_hs_env_create(&cfg, &envs[e]);
	mem_wipe(secret, sizeof secret);
	if (rc) {
		fprintf(stderr, "tls-echo: tls_hs_env_create: %s\n", err_name(rc));
		return 1;
	}
	if ((rc = tls_rec_env_init(&renv, &rcfg)) != 0) {
		fprintf(stderr, "tls-echo: tls_rec_env_init: %s\n", err_name(rc));
		return 1;
	}

	int ls = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 16)) {
		perror("tls-echo: bind/listen");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	fprintf(stderr, "tls-echo: listening on 127.0.0.1:%d\n", port);
	for (unsigned long n = 1; max_conns < 0 || (long)n <= max_conns; n++) {
		struct sockaddr_in peer;
		socklen_t peer_len = sizeof peer;
		int fd = accept(ls, (struct sockaddr *)&peer, &peer_len);
		if (fd < 0)
			continue;
		/* Every later line of this connection starts "conn N:"; a client finds its N
		 * here by its own source port. */
		fprintf(stderr, "conn %lu: accepted from %s:%u\n", n, inet_ntoa(peer.sin_addr),
			(unsigned)ntohs(peer.sin_port));
		struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		struct tls_hs_env *env = envs[n % (unsigned long)n_envs];
		serve(env, &renv, fd, n, timeout_ms);
		close(fd);
		struct tls_hs_stats st;
		tls_hs_stats_get(env, &st);
		fprintf(stderr, "conn %lu: done; tls-handshake live=%zu peak=%zu in_flight=%u\n", n,
			st.live_bytes, st.peak_bytes, st.in_flight);
		if (revoke_later && n == revoke_after) { /* the handshakes read rlist: one thread */
			size_t k = rlist.n;
			revoked[k].serial = revoked_bytes[MAX_REVOKED - 1];
			revoked[k].len = (uint8_t)parse_serial(revoke_later, revoked_bytes[MAX_REVOKED - 1]);
			rlist.n++;
			fprintf(stderr, "tls-echo: serial %s revoked after conn %lu\n", revoke_later, n);
		}
	}
	close(ls);
	for (int e = n_envs - 1; e >= 0; e--)
		tls_hs_env_destroy(envs[e]);
	return 0;
usage:
	fprintf(stderr, "usage: tls-echo --port N --ca F --cert F --key F [--id cn|uri] "
			"[--service-prefix P] [--revoked HEX]... [--max-plaintext N] [--tickets N] "
			"[--max-conns N] [--timeout-ms N] [--rsa] [--revoke-after N HEX] [--clock-skew-s N] [--max-hello N] [--max-chain N] "
			"[--envs 2 [--own-secrets]]\n");
	return 2;
}
