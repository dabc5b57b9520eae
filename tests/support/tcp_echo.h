/* SPDX-License-Identifier: MIT
 *
 * An echo service over our TCP: what a connection sends comes back. The upper layer of
 * kernel/knet's unit test and of the hosted platform's echo mode (Linux's TCP against ours,
 * tests/smoke/hosted-tcp.sh); never part of an image. It owns a fixed pool of ring buffers
 * in caller memory; a connection holds one only while
 * some of its bytes are unacknowledged. It never consumes bytes it cannot queue for
 * sending (credit is the ring's free space) and never overwrites bytes TCP still
 * references (they leave the ring only through sent()).
 *
 * Design note.
 *  1. A connection holds a buffer iff used > 0 (taken on the first byte, returned when
 *     sent() brings used back to 0 or at closed()).
 *  2. Bytes [head, head + used) mod buf_size of its ring are exactly those handed to
 *     tcp_send() and not yet acknowledged through sent().
 *  3. credit() never exceeds what recv() could take right now.
 *  Connection: FREE -(accept)-> OPEN -(recv FIN: tcp_close)-> FIN -(closed)-> FREE;
 *  closed() may come from any state after accept.
 * Context: the core of its TCP stack only.
 */
#ifndef TESTS_SUPPORT_TCP_ECHO_H
#define TESTS_SUPPORT_TCP_ECHO_H

#include "lib/compiler.h"
#include "net/tcp/tcp.h"

#define TCP_ECHO_NIL UINT32_MAX

struct tcp_echo_conn {
	uint32_t buf; /* TCP_ECHO_NIL: none */
	uint32_t head, used;
	bool open, fin;
};

struct tcp_echo_stats {
	uint64_t accepted, open, bytes_in, bytes_acked, no_buffer, short_consume, send_refused,
		bug_overack;
	uint64_t closed[5]; /* by enum tcp_close_reason */
};

struct tcp_echo {
	struct tcp_stack *tcp; /* linked: set by tcp_echo_bind */
	struct tcp_echo_conn *conns; /* linked: max_conns */
	uint32_t max_conns;
	uint8_t *bufs;       /* linked: n_bufs * buf_size */
	uint32_t *free_bufs; /* linked: n_bufs */
	uint32_t n_bufs, n_free, buf_size;
	struct tcp_echo_stats st;
};

/* Bytes of caller memory for these sizes (8-aligned pieces), 0 if out of range
 * (max_conns >= 1, n_bufs >= 1, buf_size 1 KiB .. 16 MiB). */
size_t tcp_echo_mem_size(uint32_t max_conns, uint32_t n_bufs, uint32_t buf_size);
/* Carve the tables out of mem (linked, 8-aligned, tcp_echo_mem_size bytes, zeroed).
 * -E_INVAL on bad sizes or too little memory. */
int tcp_echo_init(struct tcp_echo *e, void *mem, size_t mem_len, uint32_t max_conns,
		       uint32_t n_bufs, uint32_t buf_size) MUST_CHECK;
/* The TCP stack it answers on (linked; its upper ops are tcp_echo_ops, ctx e). */
void tcp_echo_bind(struct tcp_echo *e, struct tcp_stack *tcp);
/* Connections open now (for a clean-shutdown report). */
uint32_t tcp_echo_open_count(const struct tcp_echo *e);

extern const struct tcp_upper_ops tcp_echo_ops;

#endif
