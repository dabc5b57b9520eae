/* SPDX-License-Identifier: MIT
 *
 * Echo service over our TCP (see tcp_echo.h), the upper layer of the kernel glue's unit
 * test and of the hosted platform's echo mode. Portable; allocates nothing (caller memory);
 * never touches a byte TCP still references.
 */
#include "tests/support/tcp_echo.h"
#include "lib/align.h"
#include "lib/err.h"
#include "lib/mem.h"

size_t tcp_echo_mem_size(uint32_t max_conns, uint32_t n_bufs, uint32_t buf_size)
{
	if (!max_conns || max_conns > (1u << 20) || !n_bufs || n_bufs > (1u << 16) ||
	    buf_size < 1024 || buf_size > (1u << 24))
		return 0;
	return align8((size_t)max_conns * sizeof(struct tcp_echo_conn)) +
	       align8((size_t)n_bufs * sizeof(uint32_t)) + (size_t)n_bufs * buf_size;
}

int tcp_echo_init(struct tcp_echo *e, void *mem, size_t mem_len, uint32_t max_conns,
		       uint32_t n_bufs, uint32_t buf_size)
{
	size_t need = tcp_echo_mem_size(max_conns, n_bufs, buf_size);
	memset(e, 0, sizeof *e);
	if (!need || !mem || mem_len < need || ((uintptr_t)mem & 7u))
		return -E_INVAL;
	uint8_t *p = mem;
	e->conns = (struct tcp_echo_conn *)(void *)p;
	p += align8((size_t)max_conns * sizeof(struct tcp_echo_conn));
	e->free_bufs = (uint32_t *)(void *)p;
	p += align8((size_t)n_bufs * sizeof(uint32_t));
	e->bufs = p;
	e->max_conns = max_conns;
	e->n_bufs = n_bufs;
	e->buf_size = buf_size;
	for (uint32_t i = 0; i < max_conns; i++)
		e->conns[i] = (struct tcp_echo_conn){ .buf = TCP_ECHO_NIL };
	for (uint32_t i = 0; i < n_bufs; i++)
		e->free_bufs[i] = i;
	e->n_free = n_bufs;
	return 0;
}

void tcp_echo_bind(struct tcp_echo *e, struct tcp_stack *tcp)
{
	e->tcp = tcp;
}

static void buf_release(struct tcp_echo *e, struct tcp_echo_conn *c)
{
	if (c->buf == TCP_ECHO_NIL)
		return;
	e->free_bufs[e->n_free++] = c->buf;
	c->buf = TCP_ECHO_NIL;
	c->head = 0;
	c->used = 0;
}

static int echo_accept(void *ctx, uint32_t conn, uint32_t src_ip, uint16_t src_port, uint16_t dst_port)
{
	struct tcp_echo *e = ctx;
	(void)src_ip;
	(void)src_port;
	(void)dst_port;
	if (conn >= e->max_conns || e->conns[conn].open)
		return -E_INVAL;
	e->conns[conn] = (struct tcp_echo_conn){ .buf = TCP_ECHO_NIL, .open = true };
	e->st.accepted++;
	e->st.open++;
	return 0;
}

static uint32_t echo_credit(void *ctx, uint32_t conn)
{
	struct tcp_echo *e = ctx;
	if (conn >= e->max_conns)
		return 0;
	const struct tcp_echo_conn *c = &e->conns[conn];
	if (c->buf != TCP_ECHO_NIL)
		return e->buf_size - c->used;
	return e->n_free ? e->buf_size : 0;
}

static size_t echo_recv(void *ctx, uint32_t conn, uint8_t *data, size_t len)
{
	struct tcp_echo *e = ctx;
	struct tcp_iov iov[2];
	size_t n_iov = 0;

	if (conn >= e->max_conns)
		return 0;
	struct tcp_echo_conn *c = &e->conns[conn];
	if (!data && !len) {
		c->fin = true; /* our FIN follows whatever is still queued */
		if (tcp_close(e->tcp, conn) < 0)
			e->st.send_refused++;
		return 0;
	}
	if (c->buf == TCP_ECHO_NIL) {
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
	size_t first = MIN(n, (size_t)e->buf_size - tail);
	memcpy(ring + tail, data, first);
	iov[n_iov++] = (struct tcp_iov){ ring + tail, first };
	if (first < n) {
		memcpy(ring, data + first, n - first);
		iov[n_iov++] = (struct tcp_iov){ ring, n - first };
	}
	if (tcp_send(e->tcp, conn, iov, n_iov) < 0) {
		/* Nothing queued: consume nothing, the peer retransmits. */
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
	struct tcp_echo *e = ctx;
	if (conn >= e->max_conns)
		return;
	struct tcp_echo_conn *c = &e->conns[conn];
	if (acked > c->used) {
		/* TCP acknowledged more than it was given: a bug below; count, clamp. */
		e->st.bug_overack++;
		acked = c->used;
	}
	if (c->buf == TCP_ECHO_NIL)
		return;
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
	struct tcp_echo *e = ctx;
	if (conn >= e->max_conns)
		return;
	struct tcp_echo_conn *c = &e->conns[conn];
	buf_release(e, c);
	if (c->open)
		e->st.open--;
	c->open = false;
	c->fin = false;
	if ((unsigned)reason < ARRAY_LEN(e->st.closed))
		e->st.closed[reason]++;
}

const struct tcp_upper_ops tcp_echo_ops = {
	.admit = NULL,
	.accept = echo_accept,
	.recv = echo_recv,
	.credit = echo_credit,
	.sent = echo_sent,
	.closed = echo_closed,
};

uint32_t tcp_echo_open_count(const struct tcp_echo *e)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < e->max_conns; i++)
		n += e->conns[i].open;
	return n;
}
