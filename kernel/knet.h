/* SPDX-License-Identifier: MIT
 *
 * The kernel's data path below the application, on one core: a virtio-net queue pair
 * (drivers/virtio_net.h) under our network stack (net/net.h: Ethernet, ARP, IPv4, ICMP,
 * DHCP) under our TCP (net/tcp/tcp.h), polled from the core's run-to-completion loop
 * (knet_poll is a kloop handler). The upper layer is given by the caller (struct
 * knet_upper: the data plane dp/ in the image, through kernel/kbroker.h; an echo service
 * in the unit test, tests/support/tcp_echo.h). Portable: the platform gives the clock and the
 * CSPRNG through the config. Owns the glue only (frame lending between the stack and the
 * driver); never parses packets itself, never allocates (caller memory), never touches a
 * queue pair it was not given.
 *
 * Design note.
 *  1. Every transmit frame lent to net/ came from vnet_tx_alloc on cfg.pair and goes back
 *     exactly once: vnet_tx_send (then the driver reaps it) or vnet_tx_cancel.
 *  2. Every received frame is handed to net_stack_input and released to the driver
 *     before knet_poll returns (net/ keeps no pointer into it).
 *  3. Everything posted during a knet_poll call is made visible to the device (vnet_flush)
 *     before it returns.
 *  4. irq_armed is true exactly when the pairs' interrupts were enabled by the last call
 *     that changed them: a call that found no frame leaves them armed (the core may halt),
 *     a call that found frames leaves them off (polling under load).
 * States: INIT (knet_init) -> RUNNING (knet_poll)*; a broken queue -> BROKEN (logged once,
 * knet_poll does nothing more).
 */
#ifndef KERNEL_KNET_H
#define KERNEL_KNET_H

#include "drivers/virtio_net.h"
#include "net/net.h"
#include "net/tcp/tcp.h"

/* The TCP upper layer and its TCP settings (the image: kbroker_upper()). */
struct knet_upper {
	const struct tcp_upper_ops *ops; /* linked */
	void *ops_ctx;                   /* linked: the TCP ops' ctx */
	void *ctx;                       /* linked: ctx of bind and poll */
	/* Once the TCP stack exists (knet_init): the upper links its handle. */
	void (*bind)(void *ctx, struct tcp_stack *tcp);
	/* The upper's safe point, after tcp_poll in every knet_poll (dp_poll). Returns work
	 * still waiting (staged handshakes): knet then counts the pass as busy, so the loop
	 * polls again instead of halting. */
	uint32_t (*poll)(void *ctx);
	const struct tcp_config *tcp; /* linked: ports, connections, timers (local_ip replaced) */
};

struct knet_config {
	struct vnet *nic;      /* linked: initialised driver */
	uint16_t pair;         /* transmit (and first receive) queue pair */
	uint16_t n_rx_pairs;   /* receive from pairs [pair, pair + n_rx_pairs) (>= 1) */
	bool use_dhcp;         /* false: ip/mask/gw below */
	uint32_t ip, mask, gw; /* host order */
	const struct knet_upper *upper; /* linked: the layer above TCP, with its TCP limits */
	uint32_t n_arp, n_pending;
	uint32_t rx_batch;     /* frames per pair per knet_poll call */
	uint64_t (*now_ms)(void);                /* linked: monotonic ms */
	void (*random)(void *buf, size_t len);   /* linked: CSPRNG; never fails */
};

struct knet_stats {
	uint64_t rx_frames, tx_frames, tx_bad_frame, rx_release_err, polls;
};

struct knet {
	struct net_stack ns; /* first: the TCP port's ctx is &ns (net_tcp_tx_*) */
	struct knet_config cfg;
	struct tcp_stack *tcp;
	struct net_udp_sock udp[2];
	bool broken;
	bool irq_armed; /* the pairs' interrupts are enabled (idle mode) */
	uint32_t ip; /* current address (0: none) */
	uint8_t *rx_frame; /* the frame inside net_stack_input (ours until released), else NULL */
	size_t rx_len;
	struct knet_stats st;
};

/* Bytes of memory knet_init needs for cfg (0 if cfg is invalid). */
size_t knet_mem_size(const struct knet_config *cfg);
/* Build the stack over cfg->nic (cfg copied; nic linked) in mem (linked, 8-aligned,
 * knet_mem_size bytes, zeroed). Sends nothing yet. -E_INVAL, or the error of a layer. */
int knet_init(struct knet *k, const struct knet_config *cfg, void *mem, size_t mem_len) MUST_CHECK;
/* Loop handler (ctx = struct knet *): receive a batch, run timers, flush. Returns the
 * number of frames received (work done). The owning core only. */
int knet_poll(void *ctx);

#endif
