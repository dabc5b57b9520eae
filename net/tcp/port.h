/* SPDX-License-Identifier: MIT
 *
 * What TCP needs from the layer below (IPv4): a frame to build a segment in, a way to send
 * it, the time and randomness. TCP never touches Ethernet or IP headers, never keeps a
 * frame after tx_send, and never calls these from anywhere but the owning core's loop.
 */
#ifndef NET_TCP_PORT_H
#define NET_TCP_PORT_H

#include "lib/compiler.h"

/* Smallest buffer tx_begin may return: header, options and some payload. */
#define TCP_MIN_FRAME 64

struct tcp_port_ops {
	/* A buffer where TCP writes header + payload, returned owned until tx_send; cap is an
	 * out parameter (its size, at least TCP_MIN_FRAME). NULL when no frame is free: TCP counts it and retries on
	 * a timer. */
	uint8_t *(*tx_begin)(void *ctx, size_t *cap);
	/* Send len bytes of the buffer from tx_begin (taken). Addresses in host order; TCP
	 * has already filled its checksum including the pseudo-header. 0 or -E_*. */
	int (*tx_send)(void *ctx, uint32_t src_ip, uint32_t dst_ip, uint8_t *seg, size_t len);
	/* Monotonic milliseconds. */
	uint64_t (*now_ms)(void *ctx);
	/* Cryptographically random bytes (keys). */
	void (*random)(void *ctx, void *buf, size_t len);
	/* Give back a buffer from tx_begin unsent (taken). Optional: TCP only needs it when
	 * a port breaks the TCP_MIN_FRAME promise. */
	void (*tx_abort)(void *ctx, uint8_t *seg);
};

#endif
