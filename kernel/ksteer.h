/* SPDX-License-Identifier: MIT
 *
 * Receive steering for the multicore network data plane (portable part): core 0 receives
 * every frame from the NIC and classifies it here: IPv4 TCP to our address goes to the
 * worker core net/rss picks for its flow (core 0 included), ARP is handled on core 0 and
 * copied to every other core (each worker's ARP cache learns the replies to its own
 * requests), everything else (ICMP, UDP/DHCP, fragments, unknown, garbage) stays on core
 * 0, whose net/ counts and drops what is bad. Also the mesh message kinds of the network
 * range (kernel/kdemux.h: 0x0100-0x01ff) and the address message's encoding.
 *
 * Owns only the classification and its counters. It reads frames through lib/cursor
 * (never casts frame bytes to structs), validates no more than it needs to choose a
 * core (the receiving stack validates everything again), never copies or keeps a frame,
 * never allocates. One struct ksteer belongs to the steering core.
 */
#ifndef KERNEL_KSTEER_H
#define KERNEL_KSTEER_H

#include "lib/compiler.h"
#include "net/rss.h"

/* Mesh message kinds of the network range (kernel/kdemux.h). */
#define KSTEER_KIND_RX_FRAME 0x0100u /* data: a received Ethernet frame for the destination's
				     * stack (core 0 -> worker; with the device steering, ARP
				     * copies between any cores and other frames to core 0) */
#define KSTEER_KIND_TX_FRAME 0x0101u /* worker -> core 0, data: a frame for core 0 to send */
#define KSTEER_KIND_ADDR 0x0102u     /* core 0 -> worker, control: the address (below) */
#define KSTEER_KIND_TAKE_PAIR 0x0103u /* core 0 -> worker, control, no data: receive from your
					* own queue pair from now on (the device steers) */
#define KSTEER_ADDR_LEN 12u          /* ip, mask, gateway: 32-bit big-endian each */

enum ksteer_class {
	KSTEER_LOCAL = 0, /* core 0 only */
	KSTEER_ARP = 1,   /* core 0, and a copy to every other core */
	KSTEER_FLOW = 2,  /* the worker in *worker (may be 0) */
};

/* Why a frame stayed on core 0 (one counter per decision site) and what was steered. */
struct ksteer_counters {
	uint64_t eth_short, not_ip, ip_short, ip_version, ip_hdr_len, ip_total_len, ip_frag,
		not_tcp, no_addr, not_ours, tcp_short, arp, flows;
};

struct ksteer {
	const struct rss_steer *rss; /* linked: workers = started cores */
	uint32_t ip;                 /* our address, host order; 0: none (nothing steered) */
	struct ksteer_counters cnt;
};

/* rss linked (initialised, n_workers = cores that run a stack). 0 or -E_INVAL. */
MUST_CHECK int ksteer_init(struct ksteer *s /* out */, const struct rss_steer *rss);
/* Our address changed (0: none). */
void ksteer_set_addr(struct ksteer *s, uint32_t ip);
/* Classify one received frame (borrowed for the call, len bytes from the Ethernet
 * header). For KSTEER_FLOW, *worker is the flow's core (< rss->n_workers); otherwise
 * *worker is 0. Never fails: anything it cannot read is KSTEER_LOCAL and counted. */
enum ksteer_class ksteer_classify(struct ksteer *s, const uint8_t *frame, size_t len,
				  uint32_t *worker /* out */);

/* The KSTEER_KIND_ADDR payload: encode into out (KSTEER_ADDR_LEN bytes), and decode
 * (0, or -E_INVAL when len is not KSTEER_ADDR_LEN). Host-order values. */
void ksteer_addr_encode(uint8_t out[KSTEER_ADDR_LEN] /* out */, uint32_t ip, uint32_t mask,
			uint32_t gw);
MUST_CHECK int ksteer_addr_decode(const uint8_t *buf, size_t len, uint32_t *ip /* out */,
				  uint32_t *mask /* out */, uint32_t *gw /* out */);

#endif
