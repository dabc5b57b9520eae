// SPDX-License-Identifier: MIT
/*
 * loadgen: MQTT 3.1.1 (or 5.0: --mqtt5) over TLS 1.3 with client certificates, one epoll
 * loop, OpenSSL.
 * Modes (see usage()):
 *   handshake  K connections in flight, each a full (or ticket-resumed) mTLS handshake +
 *              CONNECT/CONNACK + DISCONNECT, waiting for the server's close; handshakes/s
 *   hold       N connections with distinct identities, one QoS 1 subscription each,
 *              PINGREQ at the keepalive, held for T seconds; --cmd C: then one QoS 1
 *              command from the service identity to each of C random held devices, with
 *              its delivery latency. Lean per connection (the scale group holds 100,000):
 *              512-byte buffers, OpenSSL's record buffers released at idle, each
 *              certificate read when its connection opens; its own RSS growth per held
 *              connection is reported (lg_bytes_per_conn)
 *   pubsub     P publishers (devices load-i, topic devices/load-i/telemetry) to S
 *              subscribers (service `ops`, client ids ops/j, filter devices/+/telemetry)
 *              at QoS 0/1/2, payload size, a total rate or flat out; delivered msgs/s and
 *              latency percentiles from a send timestamp carried in the payload
 *   storm      pubsub's established clients publish through three windows (before, during
 *              and after a connection storm): D storm devices (load-(P+1)..) connect at
 *              once, capped at R new attempts/s, each attempt bounded by its own deadline,
 *              failures retried with exponential backoff and jitter, each connection held
 *              for a while after CONNACK and dropped without DISCONNECT, then reopened;
 *              at the storm's end all drop without DISCONNECT. Per window: delivered
 *              msgs/s and latency; for the storm: attempts, completions and failures by
 *              stage (no SYN-ACK, refused/reset, TLS, MQTT), and the time back to steady
 *              latency after it
 *   queue      S persistent subscribers (pubsub's, clean session 0) subscribe and leave;
 *              then P publishers send N QoS 1 messages in all, each acknowledged: the
 *              messages wait in the subscribers' offline queues (the broker's stored
 *              bytes per queued message are measured around it by the caller)
 *   mkcerts    cache N device certificates signed by the development CA (certs.c)
 *   telemetry  P publishers send N QoS 1 messages in all (16-byte payloads: send time, then
 *              the publisher's sequence number from 1), flat out within --window each, no
 *              reconnect; a connection that fails ends its publisher. --out FILE gets one line
 *              "identity acked" per publisher, rewritten every second and at the end: with
 *              acknowledgements in order, messages 1..acked of each were acknowledged.
 * pubsub and queue take --persistent: subscribers connect with clean session 0.
 * --mqtt5 (every mode): MQTT 5.0 instead of 3.1.1 (protocol level 5, empty property blocks;
 * --persistent: Clean Start 0 and a Session Expiry Interval that never ends). Every packet
 * from the server goes through the bounds-checked reader below (struct rcur), its property
 * blocks walked to their end. The CONNACK's Receive Maximum caps the QoS>0 PUBLISHes in
 * flight on that connection (with --window), its Server Keep Alive replaces --keepalive; a
 * CONNACK or SUBACK reason code >= 0x80 fails the connection, a PUBACK or PUBREC one counts
 * the message as rejected, a server DISCONNECT fails it; each is printed (the first few) and
 * counted by packet and code in the result's "reasons" (storm: not the storm process's).
 * A progress line per second on stderr, one JSON object at the end on stdout. Every loop
 * is bounded in count and time (deadlines below). Host tool only; never linked into the
 * image; it measures, it never asserts anything about the broker.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "tools/loadgen/loadgen.h"

#define MAX_SRC 16
#define RBUF 8192
#define WBUF 16384
#define CONN_TIMEOUT_NS (15ull * 1000000000ull)
#define LAT_BUCKETS (64 * 16)

enum mode { M_HANDSHAKE, M_HOLD, M_PUBSUB, M_STORM, M_QUEUE, M_TELEMETRY };
enum st { S_FREE, S_TCP, S_TLS, S_CONNACK, S_SUBACK, S_READY, S_CLOSING };
enum role { R_HS, R_HOLD, R_PUB, R_SUB, R_STORM, R_CMD };

struct opts {
	enum mode mode;
	struct sockaddr_in dst;
	struct in_addr src[MAX_SRC];
	unsigned n_src;
	const char *ca, *devdir, *svcdir, *ready_file, *go_file, *out;
	unsigned n, k, pubs, subs, qos, payload, keepalive, window;
	double seconds, rate;
	bool resume;
	bool persistent; /* subscribers with clean session 0 */
	bool mqtt5;      /* MQTT 5.0 instead of 3.1.1 */
	/* storm */
	unsigned storm_n, storm_rate, attempt_ms, hold_ms;
	double before_s, after_s;
	/* hold: commands at the end of the hold (service `ops` -> random held devices) */
	unsigned cmd_n;
	unsigned cmd_rate; /* commands/s (0: flat out) */
	unsigned open_s; /* hold: the deadline for opening all (600 s) */
	/* hold split over several processes (a host's descriptor limit per process): this one's
	 * first identity is load-<id_base + 1>; its service connection is ops/<cmd_client + 1> */
	unsigned id_base, cmd_client;
};

struct ident {
	X509 *crt;
	EVP_PKEY *key;
	char name[32];
	SSL_SESSION *sess; /* newest ticket (resume mode) */
};

struct conn {
	enum st st;
	enum role role;
	int fd;
	SSL *ssl;
	unsigned id;   /* identity index (devices) or subscriber index */
	uint32_t ev;   /* epoll interest currently set */
	uint64_t t0, deadline, next_ping;
	size_t rlen, wlen;
	uint16_t pid;
	uint16_t recv_max; /* the server's Receive Maximum (5.0; UINT16_MAX: none, or 3.1.1) */
	uint16_t ka_s;     /* keepalive: --keepalive, or the server's Server Keep Alive (5.0) */
	unsigned inflight;
	uint64_t sent, acked;
	uint64_t retry_at; /* storm: when this device tries again (0: not waiting) */
	unsigned tries;    /* storm: consecutive failed attempts (backoff exponent) */
	/* Kept across conn_open (allocated once per slot, sized by role: conn_bufs); last, so
	 * conn_open's reset stops before them. */
	size_t rcap, wcap;
	uint8_t *rbuf, *wbuf;
};

static struct opts o;
static SSL_CTX *ctx;
static int ep = -1;
static struct ident *ids, svc;
static unsigned n_ids;
static struct conn *conns;
static unsigned n_conns;
static unsigned src_rr;
static volatile sig_atomic_t stop;

/* results */
static uint64_t n_done, n_full, n_resumed, n_failed, n_ready;
static uint64_t delivered, published;

/* Measured windows: pubsub uses window 0; storm uses 0 before, 1 during, 2 after the storm.
 * cur_win < 0: not measuring (warm-up, drain). */
#define N_PHASES 3
struct phase_st {
	uint64_t hist[LAT_BUCKETS];
	uint64_t n_lat, delivered, published;
};
static struct phase_st win_st[N_PHASES];
static int cur_win = -1;

/* Storm: per-attempt outcomes (failures by the stage they reached) and the latency of each
 * 100 ms slice after the storm's end (time back to steady state). */
#define SLICES 600
static struct {
	uint64_t attempts, tcp_up, tls_up, completed, dropped, retries;
	uint64_t syn_timeout, tcp_refused, tls_failed, tls_timeout, mqtt_failed, mqtt_timeout;
	uint64_t open_failed, held_now, held_peak;
	uint64_t t_end;
	uint64_t slice_max[SLICES], slice_n[SLICES];
} sm;
static bool closing_timeout; /* conn_close called for a deadline, not an error */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- latency histogram: 16 sub-buckets per power of two of microseconds ------------ */

static unsigned lat_bucket(uint64_t us)
{
	if (us < 16)
		return (unsigned)us;
	unsigned msb = 63u - (unsigned)__builtin_clzll(us);
	unsigned idx = msb * 16u + (unsigned)((us >> (msb - 4)) & 15u);
	return idx < LAT_BUCKETS ? idx : LAT_BUCKETS - 1;
}

static uint64_t lat_value(unsigned idx)
{
	if (idx < 16)
		return idx;
	unsigned msb = idx / 16u, sub = idx % 16u;
	return (1ull << msb) + ((uint64_t)sub << (msb - 4)) + (1ull << (msb - 4)) / 2;
}

static double lat_pct(const struct phase_st *w, double p)
{
	if (!w->n_lat)
		return 0;
	uint64_t want = (uint64_t)((double)w->n_lat * p), acc = 0;
	for (unsigned i = 0; i < LAT_BUCKETS; i++) {
		acc += w->hist[i];
		if (acc > want)
			return (double)lat_value(i);
	}
	return (double)lat_value(LAT_BUCKETS - 1);
}

/* ---- MQTT encoding ------------------------------------------------------------------ */

static size_t put_len(uint8_t *p, size_t n)
{
	size_t i = 0;
	do {
		uint8_t b = (uint8_t)(n % 128);
		n /= 128;
		p[i++] = (uint8_t)(b | (n ? 0x80 : 0));
	} while (n);
	return i;
}

/* A bounds-checked writer into a caller's buffer: a write past the end writes nothing and
 * marks it bad, so one check after the last write covers them all. Copies its arguments. */
struct wcur {
	uint8_t *p;
	size_t cap, len;
	bool bad;
};

/* The next n bytes of the buffer, or NULL (and bad) when they are not there. */
static uint8_t *w_room(struct wcur *w, size_t n)
{
	if (w->bad || n > w->cap - w->len) {
		w->bad = true;
		return NULL;
	}
	uint8_t *at = w->p + w->len;
	w->len += n;
	return at;
}

static void w_bytes(struct wcur *w, const void *b, size_t n)
{
	uint8_t *at = w_room(w, n);
	if (at && n)
		memcpy(at, b, n);
}

static void w_u8(struct wcur *w, unsigned v)
{
	uint8_t b = (uint8_t)v;
	w_bytes(w, &b, 1);
}

static void w_u16(struct wcur *w, unsigned v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	w_bytes(w, b, 2);
}

static void w_u32(struct wcur *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	w_bytes(w, b, 4);
}

static void w_vbi(struct wcur *w, size_t n)
{
	if (n > 268435455u) { /* four bytes at most */
		w->bad = true;
		return;
	}
	uint8_t b[4];
	w_bytes(w, b, put_len(b, n));
}

static void w_str(struct wcur *w, const char *s)
{
	size_t n = strlen(s);
	if (n > 0xffff) {
		w->bad = true;
		return;
	}
	w_u16(w, (unsigned)n);
	w_bytes(w, s, n);
}

/* Appends a packet (header byte + body) to the connection's output. false: no room. */
static bool out_pkt(struct conn *c, uint8_t hdr, const uint8_t *body, size_t len)
{
	if (c->wlen + len + 5 > c->wcap)
		return false;
	c->wbuf[c->wlen++] = hdr;
	c->wlen += put_len(c->wbuf + c->wlen, len);
	if (len) /* body may be NULL for an empty packet */
		memcpy(c->wbuf + c->wlen, body, len);
	c->wlen += len;
	return true;
}

static const char *conn_name(const struct conn *c, char *buf, size_t len)
{
	if (c->role == R_SUB || c->role == R_CMD) {
		snprintf(buf, len, "%s/%u", svc.name, c->id + 1);
		return buf;
	}
	return ids[c->id].name;
}

static void out_connect(struct conn *c)
{
	uint8_t b[128] = { 0 };
	char nb[48];
	struct wcur w = { .p = b, .cap = sizeof b };
	bool keep = c->role == R_SUB && o.persistent;
	w_str(&w, "MQTT");
	w_u8(&w, o.mqtt5 ? 5 : 4);
	w_u8(&w, keep ? 0x00 : 0x02); /* clean session (5.0: Clean Start), or a persistent one */
	w_u16(&w, o.keepalive);
	if (o.mqtt5) {
		if (keep) { /* 5.0: a session ends with its connection unless it has an expiry */
			w_vbi(&w, 5);
			w_u8(&w, 0x11); /* Session Expiry Interval: never */
			w_u32(&w, UINT32_MAX);
		} else {
			w_vbi(&w, 0);
		}
	}
	w_str(&w, conn_name(c, nb, sizeof(nb)));
	if (!w.bad)
		(void)out_pkt(c, 0x10, b, w.len);
}

static void out_subscribe(struct conn *c, const char *filter, unsigned qos)
{
	uint8_t b[128] = { 0 };
	struct wcur w = { .p = b, .cap = sizeof b };
	w_u16(&w, 1); /* packet identifier */
	if (o.mqtt5)
		w_vbi(&w, 0);
	w_str(&w, filter);
	w_u8(&w, qos); /* 5.0: the options byte; No Local, Retain As Published, Retain Handling 0 */
	if (!w.bad)
		(void)out_pkt(c, 0x82, b, w.len);
}

static bool out_publish(struct conn *c)
{
	uint8_t b[128 + 65536];
	char topic[64];
	struct wcur w = { .p = b, .cap = sizeof b };
	snprintf(topic, sizeof(topic), "devices/%s/telemetry", ids[c->id].name);
	w_str(&w, topic);
	if (o.qos) {
		if (++c->pid == 0)
			c->pid = 1;
		w_u16(&w, c->pid);
	}
	if (o.mqtt5)
		w_vbi(&w, 0);
	uint64_t t = now_ns(), seqno = c->sent + 1;
	uint8_t *pl = w_room(&w, o.payload);
	if (!pl || w.bad)
		return false;
	memset(pl, 'x', o.payload);
	memcpy(pl, &t, sizeof(t)); /* o.payload >= 8 (options) */
	if (o.payload >= 16)
		memcpy(pl + 8, &seqno, sizeof(seqno)); /* the publisher's sequence (telemetry's oracle) */
	if (!out_pkt(c, (uint8_t)(0x30 | (o.qos << 1)), b, w.len))
		return false;
	c->sent++;
	published++;
	if (cur_win >= 0)
		win_st[cur_win].published++;
	if (o.qos)
		c->inflight++;
	return true;
}

/* QoS>0 PUBLISHes this connection may have unacknowledged: --window, and under 5.0 never
 * more than the server's Receive Maximum [MQTT-3.3.4-9] (3.1.1: UINT16_MAX, no cap). */
static unsigned conn_window(const struct conn *c)
{
	return o.window < c->recv_max ? o.window : c->recv_max;
}

/* ---- connections -------------------------------------------------------------------- */

static void ep_set(struct conn *c, uint32_t ev)
{
	if (c->ev == ev)
		return;
	struct epoll_event e = { .events = ev, .data.u32 = (uint32_t)(c - conns) };
	if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->ev = ev;
}

static uint64_t storm_backoff_ns(unsigned tries)
{
	/* 100 ms x 2^tries, at most 3.2 s, times a jitter factor in [0.5, 1.5) */
	uint64_t base = 100000000ull << (tries < 5 ? tries : 5);
	return base / 2 + (uint64_t)((double)base * ((double)random() / ((double)RAND_MAX + 1.0)));
}

/* Storm bookkeeping when a storm connection ends: failures by stage, retry time. */
static void storm_closed(struct conn *c, bool ok)
{
	if (c->st == S_READY) {
		if (sm.held_now)
			sm.held_now--;
		c->tries = 0;
		c->retry_at = now_ns(); /* dropped: reconnect as soon as the rate cap allows */
		return;
	}
	if (ok)
		return;
	switch (c->st) {
	case S_TCP:
		if (closing_timeout)
			sm.syn_timeout++;
		else
			sm.tcp_refused++;
		break;
	case S_TLS:
		if (closing_timeout)
			sm.tls_timeout++;
		else
			sm.tls_failed++;
		break;
	default:
		if (closing_timeout)
			sm.mqtt_timeout++;
		else
			sm.mqtt_failed++;
		break;
	}
	c->retry_at = now_ns() + storm_backoff_ns(c->tries);
	c->tries++;
}

static void conn_close(struct conn *c, bool ok)
{
	if (c->role == R_STORM && c->st != S_FREE)
		storm_closed(c, ok);
	if (c->ssl) {
		/* A connection freed without a shutdown mark makes OpenSSL drop its ticket. */
		if (ok)
			SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
		SSL_free(c->ssl);
	}
	if (c->fd >= 0)
		close(c->fd);
	c->ssl = NULL;
	c->fd = -1;
	if (!ok && c->role != R_STORM) /* the storm's failures are counted by stage */
		n_failed++;
	if (c->st == S_READY && c->role != R_STORM && n_ready)
		n_ready--;
	c->st = S_FREE;
	c->rlen = c->wlen = 0;
}

static int new_session_cb(SSL *ssl, SSL_SESSION *sess)
{
	struct conn *c = SSL_get_app_data(ssl);
	if (!c || c->role == R_SUB || c->role == R_CMD || !o.resume)
		return 0;
	struct ident *id = &ids[c->id];
	if (id->sess)
		SSL_SESSION_free(id->sess);
	id->sess = sess;
	return 1; /* we keep the reference */
}

/* The slot's buffers, once: a held device (hold mode) only ever receives CONNACK, SUBACK,
 * PINGRESP and small commands, so 512 B each (its share of the 100,000 the scale group
 * opens); every other role the full RBUF/WBUF. */
static bool conn_bufs(struct conn *c, enum role role)
{
	if (c->rbuf)
		return true;
	c->rcap = role == R_HOLD ? 512 : RBUF;
	c->wcap = role == R_HOLD ? 512 : WBUF;
	c->rbuf = malloc(c->rcap);
	c->wbuf = malloc(c->wcap);
	return c->rbuf && c->wbuf;
}

/* Hold mode keeps no certificate per identity (100,000 of them): it is read from the cache
 * when its connection opens and lives only in that connection's SSL (returned owned). */
static X509 *ident_crt(const struct ident *id)
{
	if (id->crt)
		return X509_up_ref(id->crt) ? id->crt : NULL;
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.crt", o.devdir, id->name);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return x;
}

static bool conn_open(struct conn *c, enum role role, unsigned id)
{
	unsigned tries = c->tries;
	memset(c, 0, offsetof(struct conn, rcap));
	if (!conn_bufs(c, role))
		return false;
	c->fd = -1;
	c->role = role;
	c->id = id;
	c->tries = tries;
	c->recv_max = UINT16_MAX;
	c->ka_s = (uint16_t)o.keepalive;
	c->t0 = now_ns();
	c->deadline = c->t0 + (role == R_STORM ? (uint64_t)o.attempt_ms * 1000000ull : CONN_TIMEOUT_NS);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return false;
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (o.n_src) {
		setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = o.src[src_rr++ % o.n_src] };
		if (bind(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
			conn_close(c, false);
			return false;
		}
	}
	if (connect(c->fd, (struct sockaddr *)&o.dst, sizeof(o.dst)) && errno != EINPROGRESS) {
		conn_close(c, false);
		return false;
	}
	c->ssl = SSL_new(ctx);
	const struct ident *idn = role == R_SUB || role == R_CMD ? &svc : &ids[id];
	X509 *crt = ident_crt(idn);
	bool ok = c->ssl && crt && SSL_use_certificate(c->ssl, crt) &&
		  SSL_use_PrivateKey(c->ssl, idn->key) && SSL_set_fd(c->ssl, c->fd);
	X509_free(crt); /* the SSL holds its own reference */
	if (!ok) {
		conn_close(c, false);
		return false;
	}
	SSL_set_app_data(c->ssl, c);
	if (o.resume && role != R_SUB && role != R_CMD && idn->sess) {
		if (!SSL_set_session(c->ssl, idn->sess)) {
			conn_close(c, false);
			return false;
		}
	}
	struct epoll_event e = { .events = EPOLLOUT, .data.u32 = (uint32_t)(c - conns) };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e)) {
		conn_close(c, false);
		return false;
	}
	c->ev = EPOLLOUT;
	c->st = S_TCP;
	return true;
}

/* Writes what is queued; false on a fatal error. */
static bool conn_flush(struct conn *c)
{
	while (c->wlen) {
		int n = SSL_write(c->ssl, c->wbuf, (int)c->wlen);
		if (n > 0) {
			memmove(c->wbuf, c->wbuf + n, c->wlen - (size_t)n);
			c->wlen -= (size_t)n;
			continue;
		}
		int e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
			ep_set(c, EPOLLIN | EPOLLOUT);
			return true;
		}
		return false;
	}
	ep_set(c, EPOLLIN);
	return true;
}

static void on_ready(struct conn *c)
{
	c->st = S_READY;
	if (c->role == R_STORM) {
		/* held until deadline (reused as the drop time), not counted as an established client */
		sm.completed++;
		sm.held_now++;
		if (sm.held_now > sm.held_peak)
			sm.held_peak = sm.held_now;
		c->deadline = now_ns() + (uint64_t)o.hold_ms * 1000000ull;
		return;
	}
	n_ready++;
	c->next_ping = now_ns() + (uint64_t)c->ka_s * 1000000000ull;
}

/* ---- MQTT decoding: the bounds-checked reader ------------------------------------------ */

/* A reader over one packet's bytes (borrowed): a read past the end returns zeros and marks
 * it bad; a length from the wire is never used before it is checked against what is left. */
struct rcur {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static const uint8_t *r_take(struct rcur *r, size_t n)
{
	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *at = r->p + r->off;
	r->off += n;
	return at;
}

static unsigned r_u8(struct rcur *r)
{
	const uint8_t *b = r_take(r, 1);
	return b ? b[0] : 0;
}

static unsigned r_u16(struct rcur *r)
{
	const uint8_t *b = r_take(r, 2);
	return b ? ((unsigned)b[0] << 8) | b[1] : 0;
}

static uint32_t r_u32(struct rcur *r)
{
	const uint8_t *b = r_take(r, 4);
	return b ? ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3] : 0;
}

/* A Variable Byte Integer: at most four bytes. */
static size_t r_vbi(struct rcur *r)
{
	size_t v = 0;
	for (unsigned i = 0; i < 4; i++) {
		unsigned b = r_u8(r);
		if (r->bad)
			return 0;
		v |= (size_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* A two-byte length and that many bytes (UTF-8 string or binary data); its length out. */
static const uint8_t *r_lstr(struct rcur *r, size_t *len)
{
	*len = r_u16(r);
	return r_take(r, *len);
}

static size_t r_left(const struct rcur *r)
{
	return r->bad ? 0 : r->len - r->off;
}

/* What loadgen uses of a 5.0 property block (MQTT 5.0 2.2.2.2); 0 / NULL: absent. */
struct props5 {
	unsigned recv_max;    /* Receive Maximum; 0: absent (0 on the wire is refused) */
	unsigned server_ka;   /* Server Keep Alive + 1; 0: absent */
	unsigned max_qos;     /* Maximum QoS + 1; 0: absent */
	uint32_t max_packet;  /* Maximum Packet Size */
	const uint8_t *reason; /* Reason String (borrowed from the packet) */
	size_t reason_len;
};

/* Walks the property block at the reader: its length, then every property to the block's
 * end. false when the block is malformed (a length past the packet, an unknown identifier,
 * a value out of range). */
static bool props5_read(struct rcur *r, struct props5 *pr)
{
	memset(pr, 0, sizeof *pr);
	size_t n = r_vbi(r);
	const uint8_t *blk = r_take(r, n);
	if (!blk)
		return false;
	struct rcur q = { .p = blk, .len = n };
	size_t sl;
	while (r_left(&q)) {
		size_t id = r_vbi(&q);
		switch (id) {
		case 0x01: case 0x17: case 0x19: case 0x25: case 0x28: case 0x29: case 0x2A: /* byte */
			(void)r_u8(&q);
			break;
		case 0x24: /* Maximum QoS */
			pr->max_qos = r_u8(&q) + 1;
			if (pr->max_qos > 2)
				return false; /* 0 or 1 only [MQTT-3.2.2-9] */
			break;
		case 0x13: /* Server Keep Alive */
			pr->server_ka = r_u16(&q) + 1;
			break;
		case 0x21: /* Receive Maximum */
			pr->recv_max = r_u16(&q);
			if (!pr->recv_max)
				return false; /* 0 is a protocol error */
			break;
		case 0x22: case 0x23: /* two-byte integers */
			(void)r_u16(&q);
			break;
		case 0x27: /* Maximum Packet Size */
			pr->max_packet = r_u32(&q);
			if (!pr->max_packet)
				return false;
			break;
		case 0x02: case 0x11: case 0x18: /* four-byte integers */
			(void)r_u32(&q);
			break;
		case 0x0B: /* Subscription Identifier */
			(void)r_vbi(&q);
			break;
		case 0x1F: /* Reason String */
			pr->reason = r_lstr(&q, &pr->reason_len);
			break;
		case 0x03: case 0x08: case 0x09: case 0x12: case 0x15: case 0x16: case 0x1A: case 0x1C:
			(void)r_lstr(&q, &sl); /* strings and binary data */
			break;
		case 0x26: /* User Property: a string pair */
			(void)r_lstr(&q, &sl);
			(void)r_lstr(&q, &sl);
			break;
		default:
			return false;
		}
		if (q.bad)
			return false;
	}
	return true;
}

/* ---- reason codes (5.0) ---------------------------------------------------------------- */

enum rc_kind { RK_CONNACK, RK_SUBACK, RK_PUBACK, RK_PUBREC, RK_PUBREL, RK_PUBCOMP, RK_DISCONNECT, RK_N };
static const char *const rc_kind_name[RK_N] = { "connack", "suback", "puback", "pubrec", "pubrel",
						 "pubcomp", "disconnect" };
static uint64_t rc_count[RK_N][256]; /* non-zero reason codes received, by packet */
static uint64_t n_rejected;          /* PUBACK / PUBREC >= 0x80: a message not accepted */
static unsigned srv_recv_max;        /* the smallest Receive Maximum a CONNACK announced */
static unsigned rc_printed;

static const char *rc_text(unsigned rc)
{
	static const struct { uint8_t rc; const char *t; } tab[] = {
		{ 0x00, "Success" }, { 0x04, "Disconnect with Will Message" },
		{ 0x10, "No matching subscribers" }, { 0x80, "Unspecified error" },
		{ 0x81, "Malformed Packet" }, { 0x82, "Protocol Error" },
		{ 0x83, "Implementation specific error" }, { 0x84, "Unsupported Protocol Version" },
		{ 0x85, "Client Identifier not valid" }, { 0x86, "Bad User Name or Password" },
		{ 0x87, "Not authorized" }, { 0x88, "Server unavailable" }, { 0x89, "Server busy" },
		{ 0x8A, "Banned" }, { 0x8B, "Server shutting down" }, { 0x8C, "Bad authentication method" },
		{ 0x8D, "Keep Alive timeout" }, { 0x8E, "Session taken over" },
		{ 0x8F, "Topic Filter invalid" }, { 0x90, "Topic Name invalid" },
		{ 0x91, "Packet Identifier in use" }, { 0x92, "Packet Identifier not found" },
		{ 0x93, "Receive Maximum exceeded" }, { 0x94, "Topic Alias invalid" },
		{ 0x95, "Packet too large" }, { 0x96, "Message rate too high" }, { 0x97, "Quota exceeded" },
		{ 0x98, "Administrative action" }, { 0x99, "Payload format invalid" },
		{ 0x9A, "Retain not supported" }, { 0x9B, "QoS not supported" },
		{ 0x9C, "Use another server" }, { 0x9D, "Server moved" },
		{ 0x9E, "Shared Subscriptions not supported" }, { 0x9F, "Connection rate exceeded" },
		{ 0xA0, "Maximum connect time" }, { 0xA1, "Subscription Identifiers not supported" },
		{ 0xA2, "Wildcard Subscriptions not supported" },
	};
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (tab[i].rc == rc)
			return tab[i].t;
	return "?";
}

/* Counts a non-zero reason code; prints (the first 20 in all) every failure (>= 0x80), a
 * refusing CONNACK's and every DISCONNECT's, with the connection's name and the Reason
 * String when there is one (pr may be NULL). */
static void rc_seen(const struct conn *c, enum rc_kind k, unsigned rc, const struct props5 *pr)
{
	if (rc)
		rc_count[k][rc & 0xff]++;
	bool show = rc >= 0x80 || k == RK_DISCONNECT || (k == RK_CONNACK && rc);
	if (!show || rc_printed >= 20)
		return;
	rc_printed++;
	char nb[48];
	int rl = pr && pr->reason ? (int)(pr->reason_len > 200 ? 200 : pr->reason_len) : 0;
	fprintf(stderr, "loadgen: %s: %s reason 0x%02X (%s)%s%.*s\n", conn_name(c, nb, sizeof nb),
		rc_kind_name[k], rc, rc_text(rc), rl ? ": " : "", rl, rl ? (const char *)pr->reason : "");
}

/* Largest PUBLISH this loadgen sends: header and length (5), topic (2 + < 64), packet
 * identifier (2), empty properties (1), payload. */
#define PUBLISH_MAX_BYTES(payload) ((size_t)(payload) + 74u)

/* ---- MQTT packets from the server --------------------------------------------------------- */

/* The CONNACK accepted: the next step of the connection's role. */
static void after_connack(struct conn *c)
{
	if (c->role == R_HS) {
		if (SSL_session_reused(c->ssl))
			n_resumed++;
		else
			n_full++;
		(void)out_pkt(c, 0xE0, NULL, 0);
		c->st = S_CLOSING;
		return;
	}
	if (c->role == R_HOLD) {
		char f[64];
		snprintf(f, sizeof(f), "devices/%s/cmd/#", ids[c->id].name);
		out_subscribe(c, f, 1);
		c->st = S_SUBACK;
	} else if (c->role == R_SUB) {
		out_subscribe(c, "devices/+/telemetry", o.qos);
		c->st = S_SUBACK;
	} else {
		on_ready(c);
	}
}

/* A PUBLISH delivered to a subscriber: its payload (the send time in its first 8 bytes). */
static void on_delivery(const uint8_t *pl, size_t len)
{
	delivered++;
	if (len < 8)
		return;
	uint64_t t;
	memcpy(&t, pl, sizeof(t));
	uint64_t now = now_ns(), us = now > t ? (now - t) / 1000u : 0;
	if (cur_win >= 0) {
		struct phase_st *w = &win_st[cur_win];
		w->delivered++;
		w->hist[lat_bucket(us)]++;
		w->n_lat++;
	}
	if (sm.t_end && now >= sm.t_end) {
		uint64_t si = (now - sm.t_end) / 100000000ull;
		if (si < SLICES) {
			sm.slice_n[si]++;
			if (us > sm.slice_max[si])
				sm.slice_max[si] = us;
		}
	}
}

/* A QoS 1 or 2 exchange this connection started has ended (PUBACK, PUBCOMP, or a PUBREC
 * refusing it): its place in the window is free. */
static void publish_done(struct conn *c, bool accepted)
{
	if (c->inflight)
		c->inflight--;
	if (accepted)
		c->acked++;
	else
		n_rejected++;
}

/* One MQTT 5.0 packet from the server. false: close the connection as failed. */
static bool on_packet5(struct conn *c, uint8_t hdr, const uint8_t *b, size_t len)
{
	struct rcur r = { .p = b, .len = len };
	struct props5 pr;
	unsigned type = hdr >> 4u, rc;
	switch (type) {
	case 2: /* CONNACK: flags, reason code, properties */
		if (c->st != S_CONNACK)
			return false;
		(void)r_u8(&r);
		rc = r_u8(&r);
		if (r.bad)
			return false;
		if (rc) { /* refused (a 3.1.1-style 2-byte CONNACK, too, is printed by its code) */
			memset(&pr, 0, sizeof pr);
			if (r_left(&r) && !props5_read(&r, &pr))
				memset(&pr, 0, sizeof pr);
			rc_seen(c, RK_CONNACK, rc, &pr);
			return false;
		}
		if (!props5_read(&r, &pr) || r_left(&r))
			return false;
		if (pr.recv_max) {
			c->recv_max = (uint16_t)pr.recv_max;
			if (!srv_recv_max || pr.recv_max < srv_recv_max)
				srv_recv_max = pr.recv_max;
		}
		if (pr.server_ka) /* it replaces ours [MQTT-3.2.2-21] */
			c->ka_s = (uint16_t)(pr.server_ka - 1);
		if (c->role == R_PUB) {
			if (pr.max_qos && o.qos > pr.max_qos - 1) {
				fprintf(stderr, "loadgen: the server's Maximum QoS is %u, below --qos %u\n",
					pr.max_qos - 1, o.qos);
				return false;
			}
			if (pr.max_packet && PUBLISH_MAX_BYTES(o.payload) > pr.max_packet) {
				fprintf(stderr, "loadgen: the server's Maximum Packet Size %u is below a PUBLISH"
						" of --payload %u\n", (unsigned)pr.max_packet, o.payload);
				return false;
			}
		}
		after_connack(c);
		return true;
	case 9: { /* SUBACK: packet identifier, properties, one reason code per filter */
		if (c->st != S_SUBACK)
			return false;
		(void)r_u16(&r);
		if (!props5_read(&r, &pr) || !r_left(&r))
			return false;
		bool ok = true;
		while (r_left(&r)) {
			rc = r_u8(&r);
			if (rc >= 0x80) {
				rc_seen(c, RK_SUBACK, rc, &pr);
				ok = false;
			}
		}
		if (ok)
			on_ready(c);
		return ok;
	}
	case 3: { /* PUBLISH to a subscriber: topic, packet identifier (QoS > 0), properties */
		unsigned q = (hdr >> 1) & 3u;
		size_t tl;
		if (q == 3)
			return false;
		(void)r_lstr(&r, &tl);
		unsigned pid = q ? r_u16(&r) : 0;
		if (!props5_read(&r, &pr) || (q && !pid))
			return false;
		if (q) { /* QoS 1: PUBACK; QoS 2: PUBREC, then PUBREL -> PUBCOMP below */
			uint8_t ack[2] = { (uint8_t)(pid >> 8), (uint8_t)pid };
			(void)out_pkt(c, q == 1 ? 0x40 : 0x50, ack, 2);
		}
		size_t pl = r_left(&r);
		on_delivery(r_take(&r, pl), pl);
		return true;
	}
	case 4: /* PUBACK, PUBREC, PUBREL, PUBCOMP: packet identifier, [reason code, [properties]] */
	case 5:
	case 6:
	case 7: {
		static const enum rc_kind kind[] = { RK_PUBACK, RK_PUBREC, RK_PUBREL, RK_PUBCOMP };
		enum rc_kind k = kind[type - 4];
		if (type == 6 ? hdr != 0x62 : (hdr & 0x0f) != 0)
			return false; /* reserved flags [MQTT-2.1.3-1] */
		unsigned pid = r_u16(&r);
		rc = r_left(&r) ? r_u8(&r) : 0;
		memset(&pr, 0, sizeof pr);
		if (r_left(&r) && (!props5_read(&r, &pr) || r_left(&r)))
			return false;
		if (r.bad || !pid)
			return false;
		rc_seen(c, k, rc, &pr);
		uint8_t id[2] = { (uint8_t)(pid >> 8), (uint8_t)pid };
		if (type == 4 || type == 7) {
			publish_done(c, rc < 0x80);
		} else if (type == 5) { /* PUBREC: release, unless it refused the message */
			if (rc >= 0x80)
				publish_done(c, false);
			else
				(void)out_pkt(c, 0x62, id, 2);
		} else { /* PUBREL to a QoS 2 subscriber: complete it */
			(void)out_pkt(c, 0x70, id, 2);
		}
		return true;
	}
	case 13: /* PINGRESP */
		return len == 0;
	case 14: /* DISCONNECT from the server: reason code (absent: 0), properties */
		rc = r_left(&r) ? r_u8(&r) : 0;
		memset(&pr, 0, sizeof pr);
		if (r_left(&r) && !props5_read(&r, &pr))
			memset(&pr, 0, sizeof pr);
		rc_seen(c, RK_DISCONNECT, rc, &pr);
		return false;
	default:
		return false;
	}
}

/* One MQTT packet from the server. false: close the connection as failed. */
static bool on_packet(struct conn *c, uint8_t hdr, const uint8_t *b, size_t len)
{
	if (o.mqtt5)
		return on_packet5(c, hdr, b, len);
	uint8_t type = hdr >> 4;
	switch (type) {
	case 2: /* CONNACK */
		if (c->st != S_CONNACK || len < 2 || b[1] != 0)
			return false;
		after_connack(c);
		return true;
	case 9: /* SUBACK */
		if (c->st != S_SUBACK || len < 3 || b[2] == 0x80)
			return false;
		on_ready(c);
		return true;
	case 3: { /* PUBLISH to a subscriber */
		unsigned q = (hdr >> 1) & 3u;
		if (len < 2 || q == 3)
			return false;
		size_t tl = ((size_t)b[0] << 8) | b[1], off = 2 + tl + (q ? 2 : 0);
		if (off > len)
			return false;
		if (q) { /* QoS 1: PUBACK; QoS 2: PUBREC, then PUBREL -> PUBCOMP below */
			uint8_t ack[2] = { b[2 + tl], b[3 + tl] };
			(void)out_pkt(c, q == 1 ? 0x40 : 0x50, ack, 2);
		}
		on_delivery(b + off, len - off);
		return true;
	}
	case 4: /* PUBACK */
	case 7: /* PUBCOMP: the end of a QoS 2 exchange */
		publish_done(c, true);
		return true;
	case 5: /* PUBREC to a QoS 2 publisher: release the message */
	case 6: /* PUBREL to a QoS 2 subscriber: complete it */
		if (len != 2)
			return false;
		(void)out_pkt(c, type == 5 ? 0x62 : 0x70, b, 2);
		return true;
	case 13: /* PINGRESP */
		return true;
	default:
		return false;
	}
}

/* Parses whole packets out of rbuf. */
static bool conn_parse(struct conn *c)
{
	size_t off = 0;
	while (c->rlen - off >= 2) {
		size_t len = 0, i = 1;
		unsigned shift = 0;
		for (;; i++) {
			if (off + i >= c->rlen)
				goto partial;
			if (i > 4)
				return false;
			len |= (size_t)(c->rbuf[off + i] & 0x7f) << shift;
			shift += 7;
			if (!(c->rbuf[off + i] & 0x80))
				break;
		}
		if (1 + i + len > c->rcap)
			return false;
		if (off + 1 + i + len > c->rlen)
			break;
		if (!on_packet(c, c->rbuf[off], c->rbuf + off + 1 + i, len))
			return false;
		off += 1 + i + len;
	}
partial:
	memmove(c->rbuf, c->rbuf + off, c->rlen - off);
	c->rlen -= off;
	return true;
}

/* Drives one connection after an event (or a timer). */
static void conn_drive(struct conn *c)
{
	if (c->st == S_TCP) {
		int err = 0;
		socklen_t l = sizeof(err);
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) || err) {
			conn_close(c, false);
			return;
		}
		if (c->role == R_STORM)
			sm.tcp_up++;
		c->st = S_TLS;
	}
	if (c->st == S_TLS) {
		int r = SSL_connect(c->ssl);
		if (r != 1) {
			int e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ)
				ep_set(c, EPOLLIN);
			else if (e == SSL_ERROR_WANT_WRITE)
				ep_set(c, EPOLLOUT);
			else
				conn_close(c, false);
			return;
		}
		if (c->role == R_STORM)
			sm.tls_up++;
		out_connect(c);
		c->st = S_CONNACK;
	}
	for (int rounds = 0; rounds < 64; rounds++) {
		if (!conn_flush(c)) {
			conn_close(c, false);
			return;
		}
		if (c->rlen >= c->rcap) {
			conn_close(c, false);
			return;
		}
		int n = SSL_read(c->ssl, c->rbuf + c->rlen, (int)(c->rcap - c->rlen));
		if (n > 0) {
			c->rlen += (size_t)n;
			if (!conn_parse(c)) {
				conn_close(c, false);
				return;
			}
			continue;
		}
		int e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			break;
		/* EOF or error: the expected end after DISCONNECT in handshake mode. */
		if (c->st == S_CLOSING) {
			n_done++;
			conn_close(c, true);
		} else {
			conn_close(c, false);
		}
		return;
	}
	if (!conn_flush(c))
		conn_close(c, false);
}

/* ---- identities ---------------------------------------------------------------------- */

static bool load_ident(struct ident *id, const char *crt, const char *key, const char *name)
{
	FILE *f = fopen(crt, "r");
	if (!f)
		return false;
	id->crt = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (!(f = fopen(key, "r")))
		return false;
	id->key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	snprintf(id->name, sizeof(id->name), "%s", name);
	return id->crt && id->key;
}

static bool load_ids(unsigned n)
{
	char crt[512], key[512], name[32];
	ids = calloc(n, sizeof(*ids));
	if (!ids)
		return false;
	snprintf(key, sizeof(key), "%s/load.key", o.devdir);
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "load-%u", o.id_base + i + 1);
		snprintf(crt, sizeof(crt), "%s/%s.crt", o.devdir, name);
		if (o.mode == M_HOLD && i) { /* the certificate is read when it connects (ident_crt) */
			if (access(crt, R_OK)) {
				fprintf(stderr, "loadgen: cannot read %s (loadgen mkcerts)\n", crt);
				return false;
			}
			snprintf(ids[i].name, sizeof(ids[i].name), "%s", name);
			ids[i].key = ids[0].key;
			continue;
		}
		if (!load_ident(&ids[i], crt, key, name)) {
			fprintf(stderr, "loadgen: cannot load %s (loadgen mkcerts)\n", crt);
			return false;
		}
		if (o.mode == M_HOLD) { /* identity 0 keeps the shared key only */
			X509_free(ids[i].crt);
			ids[i].crt = NULL;
		}
		if (i) { /* one shared key: keep a single object */
			EVP_PKEY_free(ids[i].key);
			ids[i].key = ids[0].key;
		}
	}
	n_ids = n;
	return true;
}

/* ---- the loop ------------------------------------------------------------------------ */

static void progress(const char *phase, uint64_t t_start)
{
	fprintf(stderr, "loadgen %s t=%.0fs ready=%llu done=%llu full=%llu resumed=%llu failed=%llu"
			" published=%llu delivered=%llu\n",
		phase, (double)(now_ns() - t_start) / 1e9, (unsigned long long)n_ready,
		(unsigned long long)n_done, (unsigned long long)n_full, (unsigned long long)n_resumed,
		(unsigned long long)n_failed, (unsigned long long)published,
		(unsigned long long)delivered);
}

/* One epoll round (timeout ms), then per-connection timeouts and pings. */
static void poll_once(int timeout_ms)
{
	struct epoll_event evs[256];
	int n = epoll_wait(ep, evs, 256, timeout_ms);
	for (int i = 0; i < n; i++) {
		struct conn *c = &conns[evs[i].data.u32];
		if (c->st != S_FREE)
			conn_drive(c);
	}
	static uint64_t last_scan;
	uint64_t now = now_ns();
	if (now - last_scan < 100000000ull)
		return;
	last_scan = now;
	for (unsigned i = 0; i < n_conns; i++) {
		struct conn *c = &conns[i];
		if (c->st == S_FREE)
			continue;
		if (c->st != S_READY && now > c->deadline) {
			closing_timeout = true;
			conn_close(c, false);
			closing_timeout = false;
		} else if (c->role == R_STORM) {
			if (now > c->deadline) { /* held long enough: drop without DISCONNECT */
				sm.dropped++;
				conn_close(c, true);
			}
		} else if (c->st == S_READY && c->ka_s && now > c->next_ping) {
			(void)out_pkt(c, 0xC0, NULL, 0);
			c->next_ping = now + (uint64_t)c->ka_s * 1000000000ull;
			conn_drive(c);
		}
	}
}

/* 5.0 only (3.1.1 prints nothing): the smallest Receive Maximum announced (null: none),
 * messages refused by a PUBACK/PUBREC reason code, and every non-zero reason code received,
 * by packet; each member after a comma. */
static void emit_mqtt5(FILE *f)
{
	if (!o.mqtt5)
		return;
	fprintf(f, ",\"mqtt\":5,\"server_receive_max\":");
	if (srv_recv_max)
		fprintf(f, "%u", srv_recv_max);
	else
		fprintf(f, "null");
	fprintf(f, ",\"rejected\":%llu,\"reasons\":{", (unsigned long long)n_rejected);
	const char *sep = "";
	for (unsigned k = 0; k < RK_N; k++)
		for (unsigned rc = 1; rc < 256; rc++)
			if (rc_count[k][rc]) {
				fprintf(f, "%s\"%s_0x%02x\":%llu", sep, rc_kind_name[k], rc,
					(unsigned long long)rc_count[k][rc]);
				sep = ",";
			}
	fprintf(f, "}");
}

static void emit_common(FILE *f, double elapsed)
{
	fprintf(f, "\"elapsed_s\":%.3f,\"failed\":%llu", elapsed, (unsigned long long)n_failed);
	emit_mqtt5(f);
}

static int run_handshake(void)
{
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(o.seconds * 1e9), last = t0;
	/* Resumed: one untimed full handshake per identity first, so every timed one can resume. */
	if (o.resume) {
		for (unsigned i = 0; i < n_conns; i++)
			(void)conn_open(&conns[i], R_HS, i % n_ids);
		uint64_t warm_end = t0 + CONN_TIMEOUT_NS;
		while (!stop && n_done + n_failed < n_conns && now_ns() < warm_end)
			poll_once(10);
		for (unsigned i = 0; i < n_conns; i++)
			if (conns[i].st != S_FREE)
				conn_close(&conns[i], false);
		n_done = n_full = n_resumed = n_failed = 0;
		t0 = last = now_ns();
		end = t0 + (uint64_t)(o.seconds * 1e9);
	}
	for (unsigned i = 0; i < n_conns; i++)
		(void)conn_open(&conns[i], R_HS, i % n_ids);
	while (!stop) {
		uint64_t now = now_ns();
		if (now >= end)
			break;
		poll_once(10);
		for (unsigned i = 0; i < n_conns; i++)
			if (conns[i].st == S_FREE)
				(void)conn_open(&conns[i], R_HS, i % n_ids);
		if (now_ns() - last >= 1000000000ull) {
			last = now_ns();
			progress("handshake", t0);
		}
	}
	double el = (double)(now_ns() - t0) / 1e9;
	for (unsigned i = 0; i < n_conns; i++)
		if (conns[i].st != S_FREE)
			conn_close(&conns[i], true);
	printf("{\"mode\":\"handshake\",\"resume\":%s,\"in_flight\":%u,\"done\":%llu,\"full\":%llu,"
	       "\"resumed\":%llu,\"handshakes_per_s\":%.1f,",
	       o.resume ? "true" : "false", o.k, (unsigned long long)n_done,
	       (unsigned long long)n_full, (unsigned long long)n_resumed, (double)n_done / el);
	emit_common(stdout, el);
	printf("}\n");
	return 0;
}

/* Opens the connections of [from, to) with at most o.k in flight; true when all ready. */
static bool open_all(unsigned from, unsigned to, enum role role, unsigned id_base, const char *ph,
		     uint64_t t0, uint64_t deadline)
{
	unsigned next = from;
	uint64_t last = now_ns();
	while (!stop && now_ns() < deadline) {
		unsigned pending = 0, ready = 0;
		for (unsigned i = from; i < to; i++) {
			if (conns[i].st == S_READY)
				ready++;
			else if (conns[i].st != S_FREE)
				pending++;
		}
		if (ready == to - from)
			return true;
		while (pending < o.k && next < to) {
			(void)conn_open(&conns[next], role, id_base + (next - from));
			next++;
			pending++;
		}
		/* reopen failed ones (bounded by the deadline) */
		if (next >= to)
			for (unsigned i = from; i < to && pending < o.k; i++)
				if (conns[i].st == S_FREE) {
					(void)conn_open(&conns[i], role, id_base + (i - from));
					pending++;
				}
		poll_once(5);
		if (now_ns() - last >= 1000000000ull) {
			last = now_ns();
			progress(ph, t0);
		}
	}
	return false;
}

/* This process's resident set (KiB), 0 when unreadable. */
static unsigned long self_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long kb = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* One QoS 1 command (16-byte payload: the send time, then its number) from the service
 * connection c to held device d, topic devices/<id>/cmd/scale. */
static bool out_cmd(struct conn *c, unsigned d, uint64_t seq)
{
	uint8_t b[128];
	char topic[64];
	struct wcur w = { .p = b, .cap = sizeof b };
	snprintf(topic, sizeof(topic), "devices/%s/cmd/scale", ids[d].name);
	w_str(&w, topic);
	if (++c->pid == 0)
		c->pid = 1;
	w_u16(&w, c->pid);
	if (o.mqtt5)
		w_vbi(&w, 0);
	uint64_t t = now_ns();
	w_bytes(&w, &t, sizeof(t));
	w_bytes(&w, &seq, sizeof(seq));
	if (w.bad || !out_pkt(c, 0x32, b, w.len))
		return false;
	c->inflight++;
	published++;
	return true;
}

/* Commands to o.cmd_n distinct held devices chosen at random (a partial Fisher-Yates over
 * the ready ones), 64 unacknowledged at most, from one service connection (slot n_conns);
 * each device's delivery latency into win_st[0]. Bounded: 60 s for everything. */
static void hold_commands(uint64_t t0, FILE *out)
{
	struct conn *c = &conns[n_conns];
	unsigned *pick = calloc(n_conns ? n_conns : 1, sizeof(*pick)), n_pick = 0, sent = 0;
	uint64_t start = now_ns(), dl = start + 60ull * 1000000000ull, last = start;
	for (unsigned i = 0; pick && i < n_conns; i++)
		if (conns[i].st == S_READY)
			pick[n_pick++] = i;
	unsigned want = o.cmd_n < n_pick ? o.cmd_n : n_pick;
	for (unsigned i = 0; i < want; i++) {
		unsigned j = i + (unsigned)((double)(n_pick - i) * ((double)random() / ((double)RAND_MAX + 1.0)));
		unsigned t = pick[i];
		pick[i] = pick[j];
		pick[j] = t;
	}
	bool up = want && conn_open(c, R_CMD, o.cmd_client);
	while (up && !stop && now_ns() < dl && c->st != S_READY && c->st != S_FREE)
		poll_once(5);
	up = up && c->st == S_READY;
	uint64_t d0 = delivered;
	cur_win = 0;
	uint64_t t_first = now_ns();
	while (up && !stop && now_ns() < dl && (sent < want || delivered - d0 < want)) {
		/* paced: the service is one identity under the broker's per-identity rate limit */
		uint64_t due = o.cmd_rate ? (now_ns() - t_first) * o.cmd_rate / 1000000000ull + 1 : want;
		while (sent < want && sent < due && c->st == S_READY && c->inflight < 64 &&
		       out_cmd(c, conns[pick[sent]].id, sent + 1))
			sent++;
		if (c->st != S_READY)
			break;
		conn_drive(c);
		poll_once(2);
		if (now_ns() - last >= 1000000000ull) {
			last = now_ns();
			progress("hold-cmd", t0);
		}
	}
	double cmd_s = (double)(now_ns() - t_first) / 1e9;
	cur_win = -1;
	struct phase_st *w = &win_st[0];
	fprintf(out, "\"cmd_rate\":%u,\"cmd_wanted\":%u,\"cmd_sent\":%u,\"cmd_acked\":%llu,\"cmd_delivered\":%llu,"
		"\"cmd_s\":%.3f,\"cmd_lat_us_p50\":%.0f,\"cmd_lat_us_p99\":%.0f,\"cmd_lat_us_max\":%.0f,",
		o.cmd_rate, want, sent, (unsigned long long)c->acked, (unsigned long long)w->delivered, cmd_s,
		lat_pct(w, 0.50), lat_pct(w, 0.99), lat_pct(w, 0.999999));
	/* the histogram itself (sparse [us, count] pairs), for merging several processes' */
	fprintf(out, "\"cmd_lat_hist\":[");
	for (unsigned i = 0, first = 1; i < LAT_BUCKETS; i++)
		if (w->hist[i]) {
			fprintf(out, "%s[%llu,%llu]", first ? "" : ",", (unsigned long long)lat_value(i),
				(unsigned long long)w->hist[i]);
			first = 0;
		}
	fprintf(out, "],");
	if (c->st != S_FREE) {
		(void)out_pkt(c, 0xE0, NULL, 0);
		(void)conn_flush(c);
		conn_close(c, true);
	}
	free(pick);
}

static int run_hold(void)
{
	uint64_t t0 = now_ns();
	unsigned long rss0 = self_rss_kb();
	bool all = open_all(0, n_conns, R_HOLD, 0, "hold-connect", t0, t0 + (uint64_t)o.open_s * 1000000000ull);
	unsigned long rss1 = self_rss_kb();
	double connect_s = (double)(now_ns() - t0) / 1e9;
	uint64_t held = n_ready;
	fprintf(stderr, "loadgen hold: %llu of %u ready in %.1f s\n", (unsigned long long)held,
		n_conns, connect_s);
	if (o.ready_file) {
		FILE *f = fopen(o.ready_file, "w");
		if (f) {
			fprintf(f, "%llu\n", (unsigned long long)held);
			fclose(f);
		}
	}
	/* held for --seconds, or (--go-file) until that file exists, --seconds at most */
	uint64_t t1 = now_ns(), end = t1 + (uint64_t)(o.seconds * 1e9), last = t1;
	while (!stop && now_ns() < end && !(o.go_file && !access(o.go_file, F_OK))) {
		poll_once(50);
		if (now_ns() - last >= 1000000000ull) {
			last = now_ns();
			progress("hold", t0);
		}
	}
	uint64_t still = n_ready;
	printf("{\"mode\":\"hold\",");
	if (o.cmd_n)
		hold_commands(t0, stdout);
	for (unsigned i = 0; i < n_conns; i++)
		if (conns[i].st != S_FREE) {
			(void)out_pkt(&conns[i], 0xE0, NULL, 0);
			(void)conn_flush(&conns[i]);
			conn_close(&conns[i], true);
		}
	/* the load generator's own memory per held connection (RSS growth while opening) */
	printf("\"wanted\":%u,\"all_ready\":%s,\"held\":%llu,\"still_ready\":%llu,"
	       "\"connect_s\":%.3f,\"connects_per_s\":%.1f,\"lg_rss0_kb\":%lu,\"lg_rss1_kb\":%lu,"
	       "\"lg_bytes_per_conn\":%.0f,",
	       n_conns, all ? "true" : "false", (unsigned long long)held,
	       (unsigned long long)still, connect_s, connect_s > 0 ? (double)held / connect_s : 0,
	       rss0, rss1, held ? (double)(rss1 > rss0 ? rss1 - rss0 : 0) * 1024.0 / (double)held : 0);
	emit_common(stdout, (double)(now_ns() - t0) / 1e9);
	printf("}\n");
	return 0;
}

/* Storm: start the attempts that are due, at most o.storm_rate per second (a token bucket
 * refilled per call, at most 1/20 s of burst), for devices [from, to). */
static void storm_open_due(unsigned from, unsigned to, uint64_t now, double *tokens,
			   uint64_t *last_ns, unsigned *cursor)
{
	double add = (double)(now - *last_ns) / 1e9 * o.storm_rate, cap = o.storm_rate / 20.0 + 1;
	*last_ns = now;
	*tokens = *tokens + add > cap ? cap : *tokens + add;
	unsigned n = to - from, scanned = 0;
	for (; scanned < n && *tokens >= 1.0; scanned++) {
		unsigned i = from + (*cursor + scanned) % n;
		struct conn *c = &conns[i];
		if (c->st != S_FREE || c->retry_at > now)
			continue;
		if (c->tries)
			sm.retries++;
		sm.attempts++;
		*tokens -= 1.0;
		if (!conn_open(c, R_STORM, o.pubs + (i - from))) {
			/* no socket (fd or port exhaustion): counted, retried after a backoff */
			sm.open_failed++;
			c->retry_at = now + storm_backoff_ns(c->tries);
			c->tries++;
		}
	}
	*cursor = n ? (*cursor + scanned) % n : 0; /* fairness: resume after the last one looked at */
}

/* The storm runs in a child process (forked after the identities are loaded and the
 * established clients are up, niced by 10 on the same core): its client-side handshakes
 * then take only the CPU the established clients leave, so their figures show the broker,
 * not the load generator. The child drives only the storm slots [s+p, s+p+d) on an epoll
 * of its own, from tb[1] to tb[2], then drops every storm connection without DISCONNECT
 * and writes its counters (a JSON fragment) to the pipe. */
static void storm_child(unsigned s, unsigned p, unsigned d, const uint64_t *tb, int wfd)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
	(void)setpriority(PRIO_PROCESS, 0, 10);
	srandom((unsigned)now_ns() ^ (unsigned)getpid());
	close(ep);
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (unsigned i = 0; i < s + p; i++) { /* the parent's: forget them here */
		close(conns[i].fd);
		conns[i].fd = -1;
		conns[i].ssl = NULL;
		conns[i].st = S_FREE;
	}
	while (!stop && now_ns() < tb[1])
		usleep(1000);
	uint64_t last = now_ns(), st_last = last;
	double tokens = 0;
	unsigned cursor = 0;
	fprintf(stderr, "loadgen storm: %u devices, at most %u attempts/s\n", d, o.storm_rate);
	while (!stop && ep >= 0) {
		uint64_t now = now_ns();
		if (now >= tb[2])
			break;
		storm_open_due(s + p, s + p + d, now, &tokens, &st_last, &cursor);
		poll_once(1);
		if (now_ns() - last >= 1000000000ull) {
			last = now_ns();
			fprintf(stderr, "loadgen storm: attempts=%llu completed=%llu held=%llu"
					" syn_timeout=%llu refused=%llu tls_failed=%llu tls_timeout=%llu\n",
				(unsigned long long)sm.attempts, (unsigned long long)sm.completed,
				(unsigned long long)sm.held_now, (unsigned long long)sm.syn_timeout,
				(unsigned long long)sm.tcp_refused, (unsigned long long)sm.tls_failed,
				(unsigned long long)sm.tls_timeout);
		}
	}
	uint64_t in_flight = 0;
	for (unsigned i = s + p; i < s + p + d; i++)
		if (conns[i].st != S_FREE) {
			if (conns[i].st == S_READY)
				sm.dropped++;
			else
				in_flight++;
			conn_close(&conns[i], true);
		}
	char b[2048];
	int n = snprintf(b, sizeof(b),
		"\"attempts\":%llu,\"attempts_per_s\":%.1f,\"tcp_up\":%llu,\"tls_up\":%llu,"
		"\"completed\":%llu,\"completed_per_s\":%.1f,\"retries\":%llu,\"dropped\":%llu,"
		"\"held_peak\":%llu,\"syn_timeout\":%llu,\"tcp_refused\":%llu,\"tls_failed\":%llu,"
		"\"tls_timeout\":%llu,\"mqtt_failed\":%llu,\"mqtt_timeout\":%llu,\"open_failed\":%llu,"
		"\"in_flight_at_end\":%llu,",
		(unsigned long long)sm.attempts, (double)sm.attempts / o.seconds,
		(unsigned long long)sm.tcp_up, (unsigned long long)sm.tls_up,
		(unsigned long long)sm.completed, (double)sm.completed / o.seconds,
		(unsigned long long)sm.retries, (unsigned long long)sm.dropped,
		(unsigned long long)sm.held_peak, (unsigned long long)sm.syn_timeout,
		(unsigned long long)sm.tcp_refused, (unsigned long long)sm.tls_failed,
		(unsigned long long)sm.tls_timeout, (unsigned long long)sm.mqtt_failed,
		(unsigned long long)sm.mqtt_timeout, (unsigned long long)sm.open_failed,
		(unsigned long long)in_flight);
	if (n > 0 && (size_t)n < sizeof(b))
		(void)!write(wfd, b, (size_t)n);
	close(wfd);
}

static int storm_start(unsigned s, unsigned p, unsigned d, const uint64_t *tb, pid_t *pid, int *rfd)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	fflush(stdout);
	fflush(stderr);
	*pid = fork();
	if (*pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (*pid == 0) {
		close(pfd[0]);
		storm_child(s, p, d, tb, pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	*rfd = pfd[0];
	return 0;
}

/* Reads the child's counters (waits at most 10 s for them), reaps it. */
static void storm_collect(pid_t pid, int fd, char *out, size_t len)
{
	size_t n = 0;
	uint64_t dl = now_ns() + 10000000000ull;
	out[0] = 0;
	while (fd >= 0 && n + 1 < len && now_ns() < dl) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, 100) <= 0)
			continue;
		ssize_t r = read(fd, out + n, len - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	out[n] = 0;
	if (fd >= 0)
		close(fd);
	if (pid > 0) {
		kill(pid, SIGTERM);
		(void)waitpid(pid, NULL, 0);
	}
	if (!n)
		snprintf(out, len, "\"storm_error\":\"no counters from the storm process\",");
}

static void emit_phase(const char *name, const struct phase_st *w, double secs)
{
	printf("\"%s\":{\"seconds\":%.3f,\"msgs_per_s\":%.1f,\"published_per_s\":%.1f,"
	       "\"lat_us_p50\":%.0f,\"lat_us_p99\":%.0f,\"lat_us_p999\":%.0f,\"lat_samples\":%llu},",
	       name, secs, secs > 0 ? (double)w->delivered / secs : 0,
	       secs > 0 ? (double)w->published / secs : 0, lat_pct(w, 0.5), lat_pct(w, 0.99),
	       lat_pct(w, 0.999), (unsigned long long)w->n_lat);
}

/* queue: the subscribers make their persistent sessions and leave; the publishers then
 * send o.n QoS 1 messages in all, at most conn_window() in flight each, until every one is
 * acknowledged (bounded: 120 s). */
static int run_queue(void)
{
	uint64_t t0 = now_ns(), dl = t0 + 120ull * 1000000000ull;
	unsigned s = o.subs, p = o.pubs;
	o.qos = 1; /* QoS 1 both ways: the subscription and every message */
	if (!open_all(0, s, R_SUB, 0, "queue-subs", t0, dl)) {
		printf("{\"mode\":\"queue\",\"error\":\"connect subscribers\",\"failed\":%llu}\n",
		       (unsigned long long)n_failed);
		return 1;
	}
	for (unsigned i = 0; i < s; i++) { /* gone: what comes now waits in their queues */
		(void)out_pkt(&conns[i], 0xE0, NULL, 0);
		(void)conn_flush(&conns[i]);
		conn_close(&conns[i], true);
	}
	if (!open_all(s, s + p, R_PUB, 0, "queue-pubs", t0, dl)) {
		printf("{\"mode\":\"queue\",\"error\":\"connect publishers\",\"failed\":%llu}\n",
		       (unsigned long long)n_failed);
		return 1;
	}
	uint64_t sent = 0, acked = 0, t1 = now_ns();
	while (!stop && acked < o.n && now_ns() < dl) {
		acked = 0;
		for (unsigned i = s; i < s + p; i++) {
			struct conn *c = &conns[i];
			acked += c->acked;
			if (c->st != S_READY)
				continue;
			bool any = false;
			while (sent < o.n && c->inflight < conn_window(c) && out_publish(c)) {
				sent++;
				any = true;
			}
			if (any)
				conn_drive(c);
		}
		poll_once(1);
	}
	double e = (double)(now_ns() - t1) / 1e9;
	for (unsigned i = s; i < s + p; i++)
		if (conns[i].st != S_FREE) {
			(void)out_pkt(&conns[i], 0xE0, NULL, 0);
			(void)conn_flush(&conns[i]);
			conn_close(&conns[i], true);
		}
	printf("{\"mode\":\"queue\",\"queued\":%u,\"sent\":%llu,\"acked\":%llu,\"seconds\":%.3f,\"failed\":%llu",
	       o.n, (unsigned long long)sent, (unsigned long long)acked, e, (unsigned long long)n_failed);
	emit_mqtt5(stdout);
	printf("}\n");
	return acked == o.n ? 0 : 1;
}

static void telemetry_oracle(unsigned p)
{
	if (!o.out)
		return;
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp", o.out);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	for (unsigned i = 0; i < p; i++)
		fprintf(f, "%s %llu\n", ids[conns[i].id].name, (unsigned long long)conns[i].acked);
	if (fclose(f) == 0)
		(void)rename(tmp, o.out);
}

/* telemetry: P publishers, o.n QoS 1 messages in all, flat out within the window. */
static int run_telemetry(void)
{
	uint64_t t0 = now_ns(), dl = t0 + 600ull * 1000000000ull;
	unsigned p = o.pubs;
	o.qos = 1;
	if (o.payload < 16)
		o.payload = 16;
	if (!open_all(0, p, R_PUB, 0, "telemetry-pubs", t0, dl)) {
		printf("{\"mode\":\"telemetry\",\"error\":\"connect\",\"failed\":%llu}\n",
		       (unsigned long long)n_failed);
		return 1;
	}
	uint64_t sent = 0, acked = 0, t1 = now_ns(), last = t1;
	uint64_t end = o.seconds > 0 ? t1 + (uint64_t)(o.seconds * 1e9) : dl;
	/* Under the broker's per-identity rate limit: a token bucket per publisher holding at
	 * most 32 messages, so a stall (the broker pausing reads) is never followed by a
	 * catch-up burst above the rate. */
	static double tokens[4096]; /* --pubs is at most 4096 */
	double per_pub = o.rate > 0 ? o.rate / p : 0;
	uint64_t refill_ns = t1;
	for (unsigned i = 0; i < p; i++)
		tokens[i] = per_pub > 0 ? 1 : 0;
	unsigned alive = p;
	while (!stop && acked < o.n && alive && now_ns() < end) {
		acked = 0;
		alive = 0;
		uint64_t tnow = now_ns();
		double add = per_pub * (double)(tnow - refill_ns) / 1e9;
		refill_ns = tnow;
		for (unsigned i = 0; i < p; i++) {
			struct conn *c = &conns[i];
			acked += c->acked;
			if (per_pub > 0)
				tokens[i] = tokens[i] + add > 32 ? 32 : tokens[i] + add;
			if (c->st != S_READY)
				continue;
			alive++;
			bool any = false;
			while (sent < o.n && c->inflight < conn_window(c) && (per_pub <= 0 || tokens[i] >= 1) &&
			       out_publish(c)) {
				sent++;
				tokens[i] -= per_pub > 0 ? 1 : 0;
				any = true;
			}
			if (any)
				conn_drive(c);
		}
		poll_once(1);
		if (now_ns() - last >= 1000000000ull) {
			last = now_ns();
			telemetry_oracle(p);
			progress("telemetry", t0);
		}
	}
	acked = 0;
	for (unsigned i = 0; i < p; i++)
		acked += conns[i].acked;
	telemetry_oracle(p);
	double e = (double)(now_ns() - t1) / 1e9;
	for (unsigned i = 0; i < p; i++)
		if (conns[i].st != S_FREE) {
			(void)out_pkt(&conns[i], 0xE0, NULL, 0);
			(void)conn_flush(&conns[i]);
			conn_close(&conns[i], true);
		}
	printf("{\"mode\":\"telemetry\",\"publishers\":%u,\"sent\":%llu,\"acked\":%llu,\"seconds\":%.3f,"
	       "\"msgs_per_s\":%.1f,\"failed\":%llu",
	       p, (unsigned long long)sent, (unsigned long long)acked, e, e > 0 ? (double)acked / e : 0,
	       (unsigned long long)n_failed);
	emit_mqtt5(stdout);
	printf("}\n");
	return 0;
}

/* pubsub (storm = false): warm-up 1 s, the measured window (o.seconds), 1 s to drain.
 * storm: warm-up 1 s, before (o.before_s), storm (o.seconds), after (o.after_s), drain 1 s. */
static int run_pubsub(bool storm)
{
	uint64_t t0 = now_ns(), dl = t0 + 120ull * 1000000000ull;
	unsigned s = o.subs, p = o.pubs, d = storm ? o.storm_n : 0;
	bool ok = open_all(0, s, R_SUB, 0, "pubsub-subs", t0, dl) &&
		  open_all(s, s + p, R_PUB, 0, "pubsub-pubs", t0, dl);
	if (!ok) {
		fprintf(stderr, "loadgen %s: connections not ready\n", storm ? "storm" : "pubsub");
		printf("{\"mode\":\"%s\",\"error\":\"connect\",\"failed\":%llu}\n",
		       storm ? "storm" : "pubsub", (unsigned long long)n_failed);
		return 1;
	}
	uint64_t sec = 1000000000ull;
	/* window boundaries: [0] start of before/measured, [1] storm start, [2] storm end, [3] end */
	uint64_t t_start = now_ns(), tb[4];
	tb[0] = t_start + sec;
	if (storm) {
		tb[1] = tb[0] + (uint64_t)(o.before_s * 1e9);
		tb[2] = tb[1] + (uint64_t)(o.seconds * 1e9);
		tb[3] = tb[2] + (uint64_t)(o.after_s * 1e9);
	} else {
		tb[1] = tb[0] + (uint64_t)(o.seconds * 1e9);
		tb[2] = tb[3] = tb[1];
	}
	uint64_t t_drain = tb[3] + sec, last = t_start;
	double per_pub = o.rate > 0 ? o.rate / p : 0;
	uint64_t n_failed_est = n_failed;
	int storm_fd = -1;
	pid_t storm_pid = -1;
	if (storm && storm_start(s, p, d, tb, &storm_pid, &storm_fd)) {
		printf("{\"mode\":\"storm\",\"error\":\"fork\"}\n");
		return 1;
	}
	while (!stop) {
		uint64_t now = now_ns();
		if (now >= t_drain)
			break;
		int want = -1;
		if (now >= tb[0] && now < tb[3])
			want = !storm ? 0 : now < tb[1] ? 0 : now < tb[2] ? 1 : 2;
		cur_win = want;
		if (storm && !sm.t_end && now >= tb[2])
			sm.t_end = now; /* the child drops its connections now */
		if (now < tb[3]) {
			for (unsigned i = s; i < s + p; i++) {
				struct conn *c = &conns[i];
				if (c->st != S_READY)
					continue;
				unsigned win = conn_window(c);
				uint64_t due;
				if (per_pub > 0) {
					uint64_t should = (uint64_t)((double)(now - t_start) / 1e9 * per_pub);
					due = should > c->sent ? should - c->sent : 0;
				} else if (o.qos)
					due = win > c->inflight ? win - c->inflight : 0;
				else
					due = c->wlen == 0 ? 64 : 0;
				if (due > 256)
					due = 256;
				if (o.qos && c->inflight + due > win)
					due = win > c->inflight ? win - c->inflight : 0;
				bool any = false;
				for (uint64_t k = 0; k < due && out_publish(c); k++)
					any = true;
				if (any)
					conn_drive(c);
			}
		}
		poll_once(per_pub > 0 ? 1 : 0);
		if (now_ns() - last >= sec) {
			last = now_ns();
			progress(storm ? "storm" : "pubsub", t0);
		}
	}
	cur_win = -1;
	/* established clients that failed during the run (the storm's own are counted apart) */
	uint64_t est_failed = n_failed - n_failed_est;
	unsigned est_ready = 0;
	for (unsigned i = 0; i < s + p; i++)
		if (conns[i].st == S_READY)
			est_ready++;
	for (unsigned i = 0; i < n_conns; i++)
		if (conns[i].st != S_FREE) {
			if (conns[i].role != R_STORM) {
				(void)out_pkt(&conns[i], 0xE0, NULL, 0);
				(void)conn_flush(&conns[i]);
			}
			conn_close(&conns[i], true);
		}
	double e = (double)(now_ns() - t0) / 1e9;
	if (!storm) {
		const struct phase_st *w = &win_st[0];
		double win = o.seconds;
		printf("{\"mode\":\"pubsub\",\"qos\":%u,\"payload\":%u,\"publishers\":%u,\"subscribers\":%u,"
		       "\"rate\":%.0f,\"published_in_window\":%llu,\"delivered_in_window\":%llu,"
		       "\"msgs_per_s\":%.1f,\"published_per_s\":%.1f,\"lat_us_p50\":%.0f,\"lat_us_p99\":%.0f,"
		       "\"lat_us_p999\":%.0f,\"lat_samples\":%llu,",
		       o.qos, o.payload, p, s, o.rate, (unsigned long long)w->published,
		       (unsigned long long)w->delivered, (double)w->delivered / win,
		       (double)w->published / win, lat_pct(w, 0.5), lat_pct(w, 0.99), lat_pct(w, 0.999),
		       (unsigned long long)w->n_lat);
		emit_common(stdout, e);
		printf("}\n");
		return 0;
	}
	char sj[2048];
	storm_collect(storm_pid, storm_fd, sj, sizeof(sj));
	/* Back to steady state: the start of the first run of 5 slices (0.5 s) after the storm,
	 * each with deliveries and a worst latency within 2x the p99 before the storm (1 ms at
	 * least); -1 when the after window never got there. */
	double lim = lat_pct(&win_st[0], 0.99) * 2 > 1000 ? lat_pct(&win_st[0], 0.99) * 2 : 1000;
	long steady = -1;
	unsigned n_sl = (unsigned)(o.after_s * 10);
	if (n_sl > SLICES)
		n_sl = SLICES;
	for (unsigned i = 0; i + 5 <= n_sl && steady < 0; i++) {
		unsigned j = 0;
		while (j < 5 && sm.slice_n[i + j] && (double)sm.slice_max[i + j] <= lim)
			j++;
		if (j == 5)
			steady = (long)i * 100;
	}
	printf("{\"mode\":\"storm\",\"qos\":%u,\"payload\":%u,\"publishers\":%u,\"subscribers\":%u,"
	       "\"rate\":%.0f,\"storm_devices\":%u,\"storm_rate_cap\":%u,\"attempt_ms\":%u,\"hold_ms\":%u,",
	       o.qos, o.payload, p, s, o.rate, d, o.storm_rate, o.attempt_ms, o.hold_ms);
	emit_phase("before", &win_st[0], o.before_s);
	emit_phase("storm", &win_st[1], o.seconds);
	emit_phase("after", &win_st[2], o.after_s);
	printf("%s\"steady_after_ms\":%ld,\"steady_limit_us\":%.0f,\"established_ready_at_end\":%u,"
	       "\"established_failed\":%llu,",
	       sj, steady, lim, est_ready, (unsigned long long)est_failed);
	emit_common(stdout, e);
	printf("}\n");
	return 0;
}

/* ---- options ------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: loadgen MODE [options]\n"
		"  MODE: handshake | hold | pubsub | storm | queue | telemetry | mkcerts\n"
		"  --host IP --port N        broker (default 127.0.0.1:8883)\n"
		"  --src IP[,IP...]          source addresses, round robin (max %d)\n"
		"  --ca FILE                 CA certificate the server chain is verified against\n"
		"  --devdir DIR              device certificates load-<i>.crt + load.key\n"
		"  --svcdir DIR              service identity ops.crt/ops.key (pubsub subscribers)\n"
		"  --n N                     identities / connections (hold, mkcerts); messages (queue)\n"
		"  --k K                     connections in flight (handshake; connect phases)\n"
		"  --seconds T               measured time (handshake, hold, pubsub window)\n"
		"  --resume                  handshake: resume with the ticket of the previous one\n"
		"  --pubs P --subs S --qos 0|1|2 --payload B --rate R (0 = flat out) --window W\n"
		"  storm: pubsub's options, --seconds T (storm), --before T --after T (windows, 3 s),\n"
		"         --storm-n D (devices, 1000) --storm-rate R (attempts/s cap, 2000)\n"
		"         --attempt-ms A (per attempt, 3000) --hold-ms H (held after CONNACK, 2000)\n"
		"  --persistent              pubsub, queue: subscribers with clean session 0\n"
		"  --mqtt5                   speak MQTT 5.0 (default 3.1.1); the server's Receive Maximum\n"
		"                            caps --window; reason codes counted in \"reasons\"\n"
		"  queue: --subs S --pubs P --n N --window W (QoS 1 into S offline queues)\n"
		"  telemetry: --pubs P --n N --window W [--rate R] [--seconds T] [--out FILE] (QoS 1, the oracle)\n"
		"  --keepalive S             MQTT keepalive; PINGREQ at that period (default 60)\n"
		"  --ready-file F            hold: written with the held count once all are up\n"
		"  --open-s S                hold: seconds allowed for opening them all (600)\n"
		"  --cmd C                   hold: at the end, service ops (--svcdir) sends one QoS 1\n"
		"                            command to each of C random held devices; their latency\n"
		"  --cmd-rate R              commands/s (80, under config/scale-100k.conf's 100 msgs/s per\n"
		"                            identity, which a service is too; 0: flat out)\n"
		"  hold over several processes (one process's descriptors are limited):\n"
		"  --id-base B               identities load-<B+1>..load-<B+N> (0)\n"
		"  --cmd-client K            the service connection's client ID ops/<K+1> (0)\n"
		"  --go-file F               hold until F exists (--seconds at most), then --cmd\n"
		"  mkcerts: --cadir DIR (ca.crt + ca.key) --out DIR --n N\n",
		MAX_SRC);
}

static bool parse_u(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		return false;
	*out = (unsigned)v;
	return true;
}

int main(int argc, char **argv)
{
	const char *cadir = NULL, *out = NULL;
	if (argc < 2) {
		usage();
		return 2;
	}
	o.dst.sin_family = AF_INET;
	o.dst.sin_port = htons(8883);
	inet_pton(AF_INET, "127.0.0.1", &o.dst.sin_addr);
	o.n = 100;
	o.k = 16;
	o.seconds = 5;
	o.pubs = 1;
	o.subs = 1;
	o.payload = 64;
	o.keepalive = 60;
	o.window = 32;
	o.storm_n = 1000;
	o.storm_rate = 2000;
	o.attempt_ms = 3000;
	o.hold_ms = 2000;
	o.open_s = 600;
	o.cmd_rate = 80;
	o.before_s = 3;
	o.after_s = 3;
	const char *m = argv[1];
	bool mk = false;
	if (!strcmp(m, "handshake"))
		o.mode = M_HANDSHAKE;
	else if (!strcmp(m, "hold"))
		o.mode = M_HOLD;
	else if (!strcmp(m, "pubsub"))
		o.mode = M_PUBSUB;
	else if (!strcmp(m, "queue"))
		o.mode = M_QUEUE;
	else if (!strcmp(m, "telemetry"))
		o.mode = M_TELEMETRY;
	else if (!strcmp(m, "storm"))
		o.mode = M_STORM;
	else if (!strcmp(m, "mkcerts"))
		mk = true;
	else {
		usage();
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool ok = true;
		if (!strcmp(a, "--resume")) {
			o.resume = true;
			continue;
		}
		if (!strcmp(a, "--persistent")) {
			o.persistent = true;
			continue;
		}
		if (!strcmp(a, "--mqtt5")) {
			o.mqtt5 = true;
			continue;
		}
		if (!v) {
			usage();
			return 2;
		}
		i++;
		if (!strcmp(a, "--host"))
			ok = inet_pton(AF_INET, v, &o.dst.sin_addr) == 1;
		else if (!strcmp(a, "--port")) {
			unsigned p;
			ok = parse_u(v, 1, 65535, &p);
			o.dst.sin_port = htons((uint16_t)p);
		} else if (!strcmp(a, "--src")) {
			char buf[512];
			snprintf(buf, sizeof(buf), "%s", v);
			for (char *sv, *t = strtok_r(buf, ",", &sv); t && ok; t = strtok_r(NULL, ",", &sv))
				ok = o.n_src < MAX_SRC && inet_pton(AF_INET, t, &o.src[o.n_src++]) == 1;
		} else if (!strcmp(a, "--ca"))
			o.ca = v;
		else if (!strcmp(a, "--devdir"))
			o.devdir = v;
		else if (!strcmp(a, "--svcdir"))
			o.svcdir = v;
		else if (!strcmp(a, "--cadir"))
			cadir = v;
		else if (!strcmp(a, "--out"))
			out = o.out = v;
		else if (!strcmp(a, "--ready-file"))
			o.ready_file = v;
		else if (!strcmp(a, "--go-file"))
			o.go_file = v;
		else if (!strcmp(a, "--id-base"))
			ok = parse_u(v, 0, 10000000, &o.id_base);
		else if (!strcmp(a, "--cmd-client"))
			ok = parse_u(v, 0, 1000, &o.cmd_client);
		else if (!strcmp(a, "--n"))
			ok = parse_u(v, 1, 100000000, &o.n);
		else if (!strcmp(a, "--k"))
			ok = parse_u(v, 1, 4096, &o.k);
		else if (!strcmp(a, "--pubs"))
			ok = parse_u(v, 1, 4096, &o.pubs);
		else if (!strcmp(a, "--subs"))
			ok = parse_u(v, 1, 4096, &o.subs);
		else if (!strcmp(a, "--qos"))
			ok = parse_u(v, 0, 2, &o.qos);
		else if (!strcmp(a, "--storm-n"))
			ok = parse_u(v, 1, 50000, &o.storm_n);
		else if (!strcmp(a, "--storm-rate"))
			ok = parse_u(v, 1, 100000, &o.storm_rate);
		else if (!strcmp(a, "--attempt-ms"))
			ok = parse_u(v, 100, 60000, &o.attempt_ms);
		else if (!strcmp(a, "--cmd"))
			ok = parse_u(v, 0, 100000, &o.cmd_n);
		else if (!strcmp(a, "--cmd-rate"))
			ok = parse_u(v, 0, 1000000, &o.cmd_rate);
		else if (!strcmp(a, "--open-s"))
			ok = parse_u(v, 1, 86400, &o.open_s);
		else if (!strcmp(a, "--hold-ms"))
			ok = parse_u(v, 0, 600000, &o.hold_ms);
		else if (!strcmp(a, "--before"))
			ok = (o.before_s = strtod(v, NULL)) > 0 && o.before_s <= 600;
		else if (!strcmp(a, "--after"))
			ok = (o.after_s = strtod(v, NULL)) >= 0.5 && o.after_s <= 60;
		else if (!strcmp(a, "--payload"))
			ok = parse_u(v, 8, 65536, &o.payload);
		else if (!strcmp(a, "--keepalive"))
			ok = parse_u(v, 0, 65535, &o.keepalive);
		else if (!strcmp(a, "--window"))
			ok = parse_u(v, 1, 65535, &o.window);
		else if (!strcmp(a, "--seconds"))
			ok = (o.seconds = strtod(v, NULL)) > 0 && o.seconds <= 86400; /* hold: the opening of a split run too */
		else if (!strcmp(a, "--rate"))
			ok = (o.rate = strtod(v, NULL)) >= 0 && o.rate <= 1e7;
		else
			ok = false;
		if (!ok) {
			fprintf(stderr, "loadgen: bad option %s %s\n", a, v);
			return 2;
		}
	}
	if (mk) {
		if (!cadir || !out) {
			usage();
			return 2;
		}
		return loadgen_mkcerts(cadir, out, o.n) ? 1 : 0;
	}
	if (o.mode == M_HOLD && o.n > 100000) {
		fprintf(stderr, "loadgen: hold: --n at most 100000\n");
		return 2;
	}
	if (!o.ca || !o.devdir ||
	    ((o.mode == M_PUBSUB || o.mode == M_STORM || o.mode == M_QUEUE || (o.mode == M_HOLD && o.cmd_n)) &&
	     !o.svcdir)) {
		fprintf(stderr, "loadgen: --ca and --devdir (and --svcdir for pubsub, storm) are required\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* a descriptor per held connection (hold: up to 100,000) */
	rlim_t nfd = o.n + 1024 > 65536 ? (rlim_t)o.n + 1024 : 65536;
	struct rlimit rl = { nfd, nfd };
	if (setrlimit(RLIMIT_NOFILE, &rl) && o.mode == M_HOLD && o.n + 64 > 65536)
		fprintf(stderr, "loadgen: cannot raise the descriptor limit to %lu\n", (unsigned long)nfd);

	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_load_verify_locations(ctx, o.ca, NULL)) {
		fprintf(stderr, "loadgen: TLS context / CA %s\n", o.ca);
		return 1;
	}
	/* The dev server certificate names localhost; the chain is still verified. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* Held connections are idle: OpenSSL frees a connection's record buffers whenever they
	 * are empty (about 34 KB each otherwise), so 100,000 fit on the host. */
	if (o.mode == M_HOLD)
		SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, new_session_cb);

	unsigned need_ids = o.mode == M_HANDSHAKE ? o.k : o.mode == M_HOLD ? o.n
			  : o.mode == M_STORM ? o.pubs + o.storm_n : o.pubs;
	if (!load_ids(need_ids))
		return 1;
	if (o.mode == M_PUBSUB || o.mode == M_STORM || o.mode == M_QUEUE || (o.mode == M_HOLD && o.cmd_n)) {
		char crt[512], key[512];
		snprintf(crt, sizeof(crt), "%s/ops.crt", o.svcdir);
		snprintf(key, sizeof(key), "%s/ops.key", o.svcdir);
		if (!load_ident(&svc, crt, key, "ops")) {
			fprintf(stderr, "loadgen: cannot load %s\n", crt);
			return 1;
		}
	}
	n_conns = o.mode == M_HANDSHAKE ? o.k : o.mode == M_HOLD ? o.n : o.mode == M_TELEMETRY ? o.pubs
		: o.pubs + o.subs + (o.mode == M_STORM ? o.storm_n : 0);
	/* hold: one slot more for the service connection of --cmd */
	conns = calloc(n_conns + 1, sizeof(*conns));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!conns || ep < 0)
		return 1;
	for (unsigned i = 0; i <= n_conns; i++)
		conns[i].fd = -1;
	srandom((unsigned)now_ns());
	int rc = o.mode == M_HANDSHAKE ? run_handshake() : o.mode == M_HOLD ? run_hold()
		 : o.mode == M_QUEUE ? run_queue() : o.mode == M_TELEMETRY ? run_telemetry()
		 : run_pubsub(o.mode == M_STORM);
	fflush(stdout);
	return rc;
}
