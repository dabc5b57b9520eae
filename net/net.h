/* SPDX-License-Identifier: MIT
 *
 * The network layers below TCP: Ethernet, ARP, strict IPv4, ICMP echo, UDP sockets and a
 * DHCPv4 client (or a static address). One `struct net_stack` per core, run to
 * completion on that core: nothing here is thread- or interrupt-safe, nothing allocates
 * (the caller provides every table), and nothing outlives a call except what the
 * design notes in net/net_int.h list. Received frames are borrowed for the duration of
 * net_stack_input(); TCP and UDP receivers get borrowed views into them.
 *
 * Addresses are IPv4 in host order (uint32_t, 10.0.2.15 == 0x0a00020f); MAC addresses
 * are 6 bytes in wire order.
 */
#ifndef NET_NET_H
#define NET_NET_H

#include "lib/compiler.h"
#include "net/port.h"

#define NET_MAC_LEN 6
/* Headroom TCP must leave in front of a segment: Ethernet (14) + IPv4 (20). */
#define NET_HDR_ROOM 34
/* net_tcp_tx_begin() lends at least this many bytes (TCP's TCP_MIN_FRAME). */
#define NET_TCP_MIN_ROOM 64

/* What the stack calls above itself. Every hook may be NULL. Called on the stack's
 * core from inside net_stack_input() / net_stack_poll(); hooks may transmit (the stack
 * holds no state across the call) but must not call net_stack_input() recursively. */
struct net_upper_ops {
	/* A TCP segment addressed to our unicast address, IPv4 header verified, at least
	 * 20 bytes. TCP verifies its own checksum (net_csum_pseudo + net_csum_add).
	 * `seg` (TCP header + payload, `len` bytes) is borrowed for the call. */
	void (*tcp_input)(void *ctx, uint32_t src_ip, uint32_t dst_ip, const uint8_t *seg,
			  size_t len);
	/* Our address changed: a static address (once, from net_stack_init), DHCP bound or
	 * renewed with a new address, or the lease lost or refused (ip 0). */
	void (*addr_changed)(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw);
};

/* A UDP receiver. `data` is borrowed for the call. */
typedef void (*net_udp_recv_fn)(void *ctx, uint32_t src_ip, uint16_t src_port,
				uint32_t dst_ip, const uint8_t *data, size_t len);

/* Caller-provided table entries: the caller only allocates arrays of them; their
 * fields are private to net/. */
struct net_arp_entry {
	uint32_t ip;
	uint8_t mac[NET_MAC_LEN];
	uint8_t state;   /* enum in net_int.h */
	uint8_t n_tries; /* requests sent while pending or refreshing */
	uint64_t expires_ms;
	uint64_t retry_ms;
};
struct net_pending_frame {
	uint8_t *frame; /* owned by the stack while queued (from tx_get) */
	size_t len;
	uint32_t next_hop;
};
struct net_udp_sock {
	uint16_t port; /* 0: free */
	net_udp_recv_fn recv;
	void *ctx;
};

struct net_config {
	uint8_t mac[NET_MAC_LEN];
	bool use_dhcp;       /* false: the static address below */
	uint32_t ip, mask, gw; /* static configuration; gw 0: on-link only */
	uint8_t ttl;         /* TTL of every packet we send (1..255) */
	uint16_t mtu;        /* largest IPv4 packet we build (576..9000) */
	/* ARP: cache of n_arp entries, frames waiting for resolution in n_pending slots. */
	struct net_arp_entry *arp;        /* linked: n_arp entries */
	size_t n_arp;
	struct net_pending_frame *pending; /* linked: n_pending entries */
	size_t n_pending;
	uint32_t arp_expiry_ms;  /* lifetime of a learned entry */
	uint32_t arp_retry_ms;   /* interval between requests for one address */
	uint32_t arp_max_tries;  /* requests before giving up (queued frames dropped) */
	uint32_t arp_defend_ms;  /* someone claims our address: re-announce at most this
				  * often (RFC 5227 DEFEND_INTERVAL, 10 s); 0: never */
	/* ICMP echo replies: token bucket. */
	uint32_t icmp_rate_per_s;
	uint32_t icmp_burst;
	/* UDP sockets. */
	struct net_udp_sock *udp; /* linked: n_udp entries */
	size_t n_udp;
	/* DHCP client timing. */
	uint32_t dhcp_retry_initial_ms; /* first retransmission (RFC 2131: 4 s) */
	uint32_t dhcp_retry_max_ms;     /* backoff cap (RFC 2131: 64 s) */
	uint32_t dhcp_request_tries;    /* REQUESTs in REQUESTING before starting over */
	uint32_t dhcp_renew_retry_min_ms; /* floor of RENEWING/REBINDING retries (60 s) */
	uint32_t dhcp_lease_min_s;      /* shorter leases are raised to this (>= 1) */
};

/* Counters: one per rejection site plus a few totals. Read-only for the caller. */
struct net_counters {
	uint64_t rx_frames, tx_frames, tx_nobuf, tx_err, tx_too_big;
	/* Ethernet */
	uint64_t eth_short, eth_dst, eth_src, eth_type;
	/* ARP */
	uint64_t arp_short, arp_format, arp_op, arp_sender, arp_conflict, arp_not_for_us,
		arp_unsolicited, arp_learned, arp_cache_full, arp_pending_full, arp_unresolved,
		arp_requests_sent, arp_replies_sent;
	/* IPv4 */
	uint64_t ip_short, ip_version, ip_options, ip_len, ip_csum, ip_frag, ip_src, ip_dst,
		ip_proto, ip_no_route, ip_no_addr;
	/* ICMP */
	uint64_t icmp_short, icmp_csum, icmp_type, icmp_broadcast, icmp_rate_limited,
		icmp_echo_replies;
	/* UDP */
	uint64_t udp_short, udp_len, udp_csum, udp_sport, udp_no_port, udp_delivered;
	/* TCP hand-off */
	uint64_t tcp_short, tcp_broadcast, tcp_no_handler, tcp_delivered;
	/* DHCP */
	uint64_t dhcp_short, dhcp_format, dhcp_xid, dhcp_options, dhcp_type, dhcp_server,
		dhcp_bad_addr, dhcp_unexpected, dhcp_naks, dhcp_sent, dhcp_bound, dhcp_expired;
};

/* DHCP client states (RFC 2131 figure 5, without INIT-REBOOT). */
enum net_dhcp_state {
	NET_DHCP_OFF = 0, /* static configuration */
	NET_DHCP_INIT,
	NET_DHCP_SELECTING,
	NET_DHCP_REQUESTING,
	NET_DHCP_BOUND,
	NET_DHCP_RENEWING,
	NET_DHCP_REBINDING,
};

struct net_dhcp {
	uint8_t state; /* enum net_dhcp_state */
	uint32_t xid;
	uint32_t server_id;
	uint32_t offered_ip;
	uint32_t n_tries;
	uint32_t backoff_ms;
	uint64_t started_ms;  /* start of the current exchange (secs field) */
	uint64_t next_tx_ms;  /* next (re)transmission */
	uint64_t t1_ms, t2_ms, expire_ms; /* absolute; UINT64_MAX: infinite lease */
};

/* One per core. Fields are private; the caller allocates it and reads `cnt`. */
struct net_stack {
	struct net_config cfg; /* copy; its tables are linked */
	const struct net_port_ops *port; /* linked */
	void *port_ctx;
	const struct net_upper_ops *up; /* linked */
	void *up_ctx;
	uint32_t ip, mask, gw; /* 0 ip: no address yet */
	bool garp_due;
	bool defended;          /* defended_ms is meaningful */
	uint64_t defended_ms;   /* last announcement defending our address */
	uint16_t ip_id;
	uint64_t icmp_tokens_milli; /* tokens * 1000 */
	uint64_t icmp_refill_ms;
	struct net_dhcp dhcp;
	struct net_counters cnt;
};

/* Initialise `s` from `cfg` (copied; its tables are linked and cleared here). Sends
 * nothing: the first net_stack_poll() starts DHCP or announces the static address.
 * `port`, `up` and their contexts are linked. -E_INVAL on an inconsistent config. */
MUST_CHECK int net_stack_init(struct net_stack *s, const struct net_config *cfg,
			      const struct net_port_ops *port, void *port_ctx,
			      const struct net_upper_ops *up, void *up_ctx);

/* Process one received frame (`frame`, borrowed for the call). Hostile input is
 * dropped and counted; returns 0 if the frame was consumed by a protocol, else the
 * negative -E_* of the first rejection (for tests; callers may ignore it). */
int net_stack_input(struct net_stack *s, const uint8_t *frame, size_t len);

/* Periodic work: ARP retries and expiry, DHCP timers, the gratuitous ARP. Call when
 * net_stack_next_timer_ms() is reached (calling more often is harmless). */
void net_stack_poll(struct net_stack *s, uint64_t now_ms);
/* Earliest time net_stack_poll() has work (UINT64_MAX: none), for idle halting. Input
 * and sends may move it earlier: ask again after them. */
uint64_t net_stack_next_timer_ms(const struct net_stack *s);

/* Check the invariants of the design notes in net/net_int.h and net/dhcp.c (tests,
 * fuzzers and debug asserts; O(n_arp * n_pending)). True when they all hold. */
bool net_stack_check_invariants(const struct net_stack *s);

/* Current address (0 when none); `mask`/`gw` may be NULL. */
uint32_t net_stack_addr(const struct net_stack *s, uint32_t *mask /* out */,
			uint32_t *gw /* out */);

/* UDP: bind a receiver to a local port (one per port). -E_EXIST, -E_NOMEM (table
 * full), -E_INVAL (port 0 or 68 while DHCP is on). `ctx` is linked. */
MUST_CHECK int net_udp_bind(struct net_stack *s, uint16_t port, net_udp_recv_fn recv,
			    void *ctx);
MUST_CHECK int net_udp_unbind(struct net_stack *s, uint16_t port);
/* Send a datagram from our address (copies `data`, borrowed). -E_NOENT without an
 * address or route, -E_OVERFLOW over the MTU, -E_AGAIN without a frame or ARP slot. */
MUST_CHECK int net_udp_send(struct net_stack *s, uint16_t src_port, uint32_t dst_ip,
			    uint16_t dst_port, const void *data, size_t len);

/* TCP adapter, shaped as TCP's lower port (ctx = struct net_stack *).
 * tx_begin: lend a frame, return a pointer NET_HDR_ROOM bytes into it with `cap` bytes
 *   usable for the segment (capped by the MTU, at least NET_TCP_MIN_ROOM); NULL when
 *   none. The frame is owned by the caller until it passes the same pointer to
 *   net_tcp_tx_send or net_tcp_tx_abort.
 * tx_send: takes the segment's frame (even on error); the segment must carry its
 *   checksum (TCP computes it with the pseudo-header). Adds IPv4 and Ethernet and sends
 *   it or queues it behind ARP. `src_ip` must be our address. 0 or negative -E_*. */
uint8_t *net_tcp_tx_begin(void *ctx, size_t *cap /* out */);
int net_tcp_tx_send(void *ctx, uint32_t src_ip, uint32_t dst_ip, uint8_t *seg, size_t len);
void net_tcp_tx_abort(void *ctx, uint8_t *seg);

#endif
