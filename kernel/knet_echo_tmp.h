/* SPDX-License-Identifier: MIT
 *
 * TEMPORARY: an echo service over our TCP, standing in for the TLS + MQTT data path until
 * that is wired into the kernel (it then replaces this file and its user in knet.c). What a
 * connection sends comes back. Every boot that runs it says so loudly in the banner. It
 * owns a fixed pool of ring buffers in caller memory; a connection holds one only while
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
#ifndef KERNEL_KNET_ECHO_TMP_H
#define KERNEL_KNET_ECHO_TMP_H

#include "lib/compiler.h"
#include "net/tcp/tcp.h"

#define KNET_ECHO_TMP_NIL UINT32_MAX

struct knet_echo_tmp_conn {
	uint32_t buf; /* KNET_ECHO_TMP_NIL: none */
	uint32_t head, used;
	bool open, fin;
};

struct knet_echo_tmp_stats {
	uint64_t accepted, open, bytes_in, bytes_acked, no_buffer, short_consume, send_refused,
		bug_overack;
	uint64_t closed[5]; /* by enum tcp_close_reason */
};

struct knet_echo_tmp {
	struct tcp_stack *tcp; /* linked: set by knet_echo_tmp_bind */
	struct knet_echo_tmp_conn *conns; /* linked: max_conns */
	uint32_t max_conns;
	uint8_t *bufs;       /* linked: n_bufs * buf_size */
	uint32_t *free_bufs; /* linked: n_bufs */
	uint32_t n_bufs, n_free, buf_size;
	struct knet_echo_tmp_stats st;
};

/* Bytes of caller memory for these sizes (8-aligned pieces), 0 if out of range
 * (max_conns >= 1, n_bufs >= 1, buf_size 1 KiB .. 16 MiB). */
size_t knet_echo_tmp_mem_size(uint32_t max_conns, uint32_t n_bufs, uint32_t buf_size);
/* Carve the tables out of mem (linked, 8-aligned, knet_echo_tmp_mem_size bytes, zeroed).
 * -E_INVAL on bad sizes or too little memory. */
int knet_echo_tmp_init(struct knet_echo_tmp *e, void *mem, size_t mem_len, uint32_t max_conns,
		       uint32_t n_bufs, uint32_t buf_size) MUST_CHECK;
/* The TCP stack it answers on (linked; its upper ops are knet_echo_tmp_ops, ctx e). */
void knet_echo_tmp_bind(struct knet_echo_tmp *e, struct tcp_stack *tcp);

extern const struct tcp_upper_ops knet_echo_tmp_ops;

#endif
