/* SPDX-License-Identifier: MIT
 *
 * The TCP segment format (RFC 9293 section 3.1, RFC 7323 window scale): constants and the
 * parsed form of one segment. No code that reads bytes lives here (that is tcp_seg_parse,
 * through the cursor); nothing here owns memory.
 */
#ifndef NET_TCP_WIRE_TCP_H
#define NET_TCP_WIRE_TCP_H

#include "lib/compiler.h"

#define TCP_HDR_LEN 20
#define TCP_PROTO 6
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_URG 0x20

#define TCP_OPT_EOL 0
#define TCP_OPT_NOP 1
#define TCP_OPT_MSS 2
#define TCP_OPT_WS 3
#define TCP_WS_MAX 14
#define TCP_WS_NONE 0xff
#define TCP_MSS_DEFAULT 536

/* A parsed segment; data borrows the caller's frame (mutable: see tcp_input). */
struct tcp_seg {
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t wnd;
	uint16_t mss;   /* 0 when absent */
	uint8_t ws;     /* TCP_WS_NONE when absent */
	uint8_t *data;
	size_t len;
};

#endif
