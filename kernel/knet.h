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
 * Multicore (kernel/ksteer.h, arch glue): the steering core's knet receives from every
 * pair and offers each frame to hooks.rx_steer first (a frame taken there went to another
 * core through the mesh); a worker's knet receives no pair (n_rx_pairs 0) and is fed by
 * knet_input with the frames the mesh brings, transmits either on its own pair or through
 * hooks.tx (copied into the mesh for core 0 to send: knet_send_frame), and takes its
 * address from knet_set_addr (ext_addr) instead of DHCP. A pair may then be shared: core
 * 0 uses only its receive queue, the worker only its transmit queue (never vnet_flush or
 * vnet_irq_* on it, which touch both).
 *
 * Design note.
 *  1. Every transmit frame lent to net/ came from vnet_tx_alloc on cfg.pair (or, with
 *     tx_hook, from the staging stack) and goes back exactly once: vnet_tx_send (then the
 *     driver reaps it) or vnet_tx_cancel (staging: back on the stack, after hooks.tx
 *     copied it or refused it, counted in tx_hook_drops).
 *  2. Every received frame is handed to net_stack_input (or taken by rx_steer) and
 *     released to the driver before knet_poll returns (net/ keeps no pointer into it);
 *     knet_input's frame is the caller's and is not kept either.
 *  3. Everything posted during a knet_poll call is made visible to the device (receive
 *     queues of the rx pairs, transmit queue of cfg.pair) before it returns.
 *  4. irq_armed is true exactly when the rx pairs' interrupts were enabled by the last call
 *     that changed them: a call that found no frame leaves them armed (the core may halt),
 *     a call that found frames leaves them off (polling under load).
 *  5. net_up is true exactly when ns was initialised with the current address (always
 *     without ext_addr); without it no frame reaches net/ (counted in rx_no_addr).
 * States: INIT (knet_init) -> RUNNING (knet_poll)*; a broken queue -> BROKEN (logged once,
 * knet_poll does nothing more). With ext_addr: NO_ADDR -(knet_set_addr ip)-> UP
 * -(knet_set_addr other ip)-> UP (stack re-initialised) -(ip 0)-> NO_ADDR.
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

/* Multicore hooks (all optional; ctx = knet_config.hooks_ctx). Called on the knet's core
 * from inside knet_poll / knet_input / knet_set_addr. */
struct knet_hooks {
	/* A received frame (borrowed for the call) before the stack sees it: true when the
	 * hook took it (copied it to another core, or dropped and counted it). */
	bool (*rx_steer)(void *ctx, const uint8_t *frame, size_t len);
	/* tx_hook mode: transmit a copy of the frame elsewhere (borrowed for the call).
	 * 0, or a negative -E_* when it could not (the frame is dropped and counted). */
	int (*tx)(void *ctx, const uint8_t *frame, size_t len);
	/* Our address changed (after knet took it): DHCP, static, or knet_set_addr. */
	void (*addr_changed)(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw);
};

struct knet_config {
	struct vnet *nic;      /* linked: initialised driver */
	uint32_t core;         /* for the log lines */
	uint16_t pair;         /* transmit queue pair (unless tx_hook), first receive pair */
	uint16_t n_rx_pairs;   /* receive from pairs [pair, pair + n_rx_pairs); 0: none
				* (a worker fed by knet_input) */
	bool tx_hook;          /* transmit through hooks->tx, never on a pair */
	uint32_t n_tx_stage;   /* tx_hook: frames net/ may hold at once (>= n_pending + 2) */
	bool ext_addr;         /* the address comes from knet_set_addr (use_dhcp false) */
	const struct knet_hooks *hooks; /* linked, may be NULL */
	void *hooks_ctx;                /* linked */
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
	uint64_t rx_steered;    /* received frames rx_steer took */
	uint64_t rx_no_addr;    /* frames dropped: ext_addr without an address yet */
	uint64_t tx_hook_drops; /* tx_hook frames hooks->tx refused (no mesh credit) */
	uint64_t fwd_frames, fwd_drops; /* knet_send_frame: sent, dropped (no frame/slot) */
};

struct knet {
	struct net_stack ns; /* first: the TCP port's ctx is &ns (net_tcp_tx_*) */
	struct knet_config cfg;
	struct tcp_stack *tcp;
	struct net_udp_sock udp[2];
	bool broken;
	bool irq_armed; /* the rx pairs' interrupts are enabled (idle mode) */
	bool net_up;    /* invariant 5 */
	struct net_config nc; /* ns's configuration (re-initialised by knet_set_addr) */
	uint8_t *stage;       /* tx_hook: n_tx_stage frames of KNET_STAGE_BYTES */
	uint32_t *stage_free; /* tx_hook: stack of free staging frame indices */
	uint32_t n_stage_free;
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

/* Bytes of one staging frame (tx_hook): the largest Ethernet frame we build. */
#define KNET_STAGE_BYTES 1536u

/* A worker: one received frame from the mesh (frame writable and borrowed for the call:
 * TLS decrypts in place). Owning core. Returns 1 (work), or 0 when dropped (no address). */
int knet_input(struct knet *k, uint8_t *frame, size_t len);
/* Receive from pairs [cfg.pair, cfg.pair + n) from now on (the device's own steering
 * taking over from core 0's: each core then drains its own pair). Owning core, or before
 * its loop runs; no other core may poll the pairs added. 0 or -E_INVAL (out of range). */
MUST_CHECK int knet_set_rx_pairs(struct knet *k, uint16_t n);
/* ext_addr: take the address (host order; ip 0: none). Re-initialises the stack below
 * TCP when it changes (ARP cache and queued frames dropped). Owning core. */
void knet_set_addr(struct knet *k, uint32_t ip, uint32_t mask, uint32_t gw);
/* The steering core: send a copy of frame (borrowed, len bytes, a whole Ethernet frame a
 * worker built) on cfg.pair. 0, or -E_AGAIN / -E_INVAL (dropped, counted in fwd_drops). */
MUST_CHECK int knet_send_frame(struct knet *k, const uint8_t *frame, size_t len);

#endif
