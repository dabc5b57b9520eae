/* SPDX-License-Identifier: MIT
 *
 * What net/ needs from the layer below (a NIC driver queue, the hosted TAP platform, or
 * a test fake): transmit frame buffers, a clock and randomness. One ops table per stack
 * (per core). net/ never includes a driver header and never allocates; frames are
 * owned by the port and lent to the stack between tx_get and tx_send / tx_put.
 */
#ifndef NET_PORT_H
#define NET_PORT_H

#include "lib/compiler.h"

struct net_port_ops {
	/* Lend a transmit frame buffer; NULL when none is free (the stack counts it and
	 * drops what it wanted to send). `cap` receives the usable size in bytes (at least
	 * 60 is expected; frames beyond the configured MTU + 14 are never built).
	 * Returned buffer is owned by the stack until tx_send or tx_put. */
	uint8_t *(*tx_get)(void *ctx, size_t *cap /* out */);
	/* Transmit `len` bytes of a frame from tx_get. Takes the frame (even on error).
	 * Returns 0 or a negative -E_*; the stack counts failures. */
	int (*tx_send)(void *ctx, uint8_t *frame, size_t len);
	/* Give back a frame from tx_get that will not be sent. Takes the frame. */
	void (*tx_put)(void *ctx, uint8_t *frame);
	/* Monotonic milliseconds (same clock as the now_ms given to net_stack_poll). */
	uint64_t (*now_ms)(void *ctx);
	/* 32 random bits (DHCP transaction ids and jitter; not used for secrets). */
	uint32_t (*random)(void *ctx);
};

#endif
