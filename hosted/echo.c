/* SPDX-License-Identifier: MIT
 *
 * An echo service on our TCP, the hosted platform's stand-in for the broker: what a
 * connection sends comes back. It owns a fixed pool of ring buffers; a connection holds
 * one only while some of its bytes are unacknowledged. It must never consume bytes it
 * cannot queue for sending (TCP's credit is the ring's free space), and never free or
 * overwrite bytes TCP still references (they leave the ring only through sent()).
 *
 * Design notes
 *   1. A connection holds a buffer iff used > 0 (taken on the first byte, returned when
 *      sent() brings used back to 0 or when the connection closes).
 *   2. The bytes [head, head + used) mod buf_size of the ring are exactly those handed to
 *      tcp_send() and not yet reported by sent(); TCP's references point into them.
 *   3. credit() never exceeds what recv() could take right now, so consumption is short
 *      only when the buffer pool runs dry between the two calls (counted).
 *   Connection states: free --accept--> open --recv(FIN)--> fin (our FIN queued)
 *   --closed()--> free; closed() may come from any state after accept.
 */
#include <stdlib.h>
#include <string.h>

#include "hosted/hosted.h"
#include "lib/err.h"
#include "net/tcp/tcp.h"

int hosted_echo_init(struct hosted_echo *e, uint32_t max_conns, uint32_t n_bufs,
		     uint32_t buf_size)
{
	*e = (struct hosted_echo){0};
	if (!max_conns || !n_bufs || buf_size < 1024 || buf_size > (1u << 24))
		return -E_INVAL;
	e->conns = calloc(max_conns, sizeof e->conns[0]);
	e->bufs = calloc(n_bufs, buf_size);
	e->free_bufs = calloc(n_bufs, sizeof e->free_bufs[0]);
	if (!e->conns || !e->bufs || !e->free_bufs) {
		hosted_echo_fini(e);
		return -E_NOMEM;
	}
	e->max_conns = max_conns;
	e->n_bufs = n_bufs;
	e->buf_size = buf_size;
	for (uint32_t i = 0; i < max_conns; i++)
		e->conns[i].buf = HOSTED_ECHO_NIL;
	for (uint32_t i = 0; i < n_bufs; i++)
		e->free_bufs[i] = i;
	e->n_free = n_bufs;
	return 0;
}

void hosted_echo_fini(struct hosted_echo *e)
{
	free(e->conns);
	free(e->bufs);
	free(e->free_bufs);
	*e = (struct hosted_echo){0};
}

static void buf_release(struct hosted_echo *e, struct hosted_echo_conn *c)
{
	if (c->buf == HOSTED_ECHO_NIL)
		return;
	e->free_bufs[e->n_free++] = c->buf;
	c->buf = HOSTED_ECHO_NIL;
	c->head = 0;
	c->used = 0;
}

static int echo_accept(void *ctx, uint32_t conn, uint32_t src_ip, uint16_t src_port,
		       uint16_t dst_port)
{
	struct hosted_echo *e = ctx;
	(void)src_ip;
	(void)src_port;
	(void)dst_port;
	if (conn >= e->max_conns || e->conns[conn].open)
		return -E_INVAL;
	e->conns[conn] = (struct hosted_echo_conn){.buf = HOSTED_ECHO_NIL, .open = true};
	e->st.accepted++;
	e->st.open++;
	return 0;
}

static uint32_t echo_credit(void *ctx, uint32_t conn)
{
	struct hosted_echo *e = ctx;
	struct hosted_echo_conn *c = &e->conns[conn];
	if (c->buf != HOSTED_ECHO_NIL)
		return e->buf_size - c->used;
	return e->n_free ? e->buf_size : 0;
}

static size_t echo_recv(void *ctx, uint32_t conn, uint8_t *data, size_t len)
{
	struct hosted_echo *e = ctx;
	struct hosted_echo_conn *c = &e->conns[conn];
	struct tcp_iov iov[2];
	size_t n_iov = 0;

	if (!data && !len) {
		/* Peer's FIN: ours follows whatever is still queued. */
		c->fin = true;
		if (tcp_close(e->tcp, conn) < 0)
			e->st.send_refused++;
		return 0;
	}
	if (c->buf == HOSTED_ECHO_NIL) {
		if (!e->n_free) {
			e->st.no_buffer++;
			return 0;
		}
		c->buf = e->free_bufs[--e->n_free];
		c->head = 0;
		c->used = 0;
	}
	size_t room = e->buf_size - c->used;
	size_t n = MIN(len, room);
	if (n < len)
		e->st.short_consume++;
	if (!n || !data)
		return 0;
	uint8_t *ring = e->bufs + (size_t)c->buf * e->buf_size;
	size_t tail = ((size_t)c->head + c->used) % e->buf_size;
	size_t first = MIN(n, e->buf_size - tail);
	memcpy(ring + tail, data, first);
	iov[n_iov++] = (struct tcp_iov){ring + tail, first};
	if (first < n) {
		memcpy(ring, data + first, n - first);
		iov[n_iov++] = (struct tcp_iov){ring, n - first};
	}
	if (tcp_send(e->tcp, conn, iov, n_iov) < 0) {
		/* Nothing was queued: consume nothing, the peer retransmits. */
		e->st.send_refused++;
		if (!c->used)
			buf_release(e, c);
		return 0;
	}
	c->used += (uint32_t)n;
	e->st.bytes_in += n;
	return n;
}

static void echo_sent(void *ctx, uint32_t conn, size_t acked)
{
	struct hosted_echo *e = ctx;
	struct hosted_echo_conn *c = &e->conns[conn];
	if (acked > c->used) {
		/* TCP acknowledged more than we gave it: a bug below us. */
		abort();
	}
	c->head = (uint32_t)(((size_t)c->head + acked) % e->buf_size);
	c->used -= (uint32_t)acked;
	e->st.bytes_acked += acked;
	if (!c->used)
		buf_release(e, c);
	if (!c->fin)
		tcp_window_update(e->tcp, conn);
}

static void echo_closed(void *ctx, uint32_t conn, enum tcp_close_reason reason)
{
	struct hosted_echo *e = ctx;
	struct hosted_echo_conn *c = &e->conns[conn];
	buf_release(e, c);
	if (c->open)
		e->st.open--;
	c->open = false;
	c->fin = false;
	if ((unsigned)reason < ARRAY_LEN(e->st.closed))
		e->st.closed[reason]++;
}

const struct tcp_upper_ops hosted_echo_ops = {
	.admit = NULL,
	.accept = echo_accept,
	.recv = echo_recv,
	.credit = echo_credit,
	.sent = echo_sent,
	.closed = echo_closed,
};
