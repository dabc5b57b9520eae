/* SPDX-License-Identifier: MIT
 *
 * Server-side TCP (passive open only) for one core: SYN cookies, RFC 9293 passive state
 * machine, RFC 6298 RTO, NewReno, RFC 5961, window scaling, delayed/merged ACKs, zero
 * window probing. In-order data is handed up as a mutable view into the frame (the upper
 * layer may decrypt in place there), sent data stays in the upper layer until acknowledged. The one copy of received payload is the bounded
 * out-of-order hold (a per-stack slot pool from the config, used only while a gap exists,
 * capped per connection). TCP never allocates and never copies payload otherwise except
 * into the outgoing frame. A failed SYN cookie is dropped silently (never an RST). Upper-layer callbacks run from
 * tcp_input and tcp_poll; tcp_send/tcp_close/tcp_window_update call only credit(), and
 * tcp_abort calls closed() before it returns (later when inside that connection's own
 * callback). Never call tcp_input or tcp_poll from a callback.
 *
 * Calling context: everything is core-local (one stack per core, no locking).
 */
#ifndef NET_TCP_TCP_H
#define NET_TCP_TCP_H

#include "lib/compiler.h"
#include "net/tcp/port.h"

struct tcp_stack; /* opaque; lives in caller-provided memory */

#define TCP_MAX_LISTEN 8

/* Every size, timeout and limit. tcp_config_default() fills sensible values; the caller
 * overrides them from the configuration file (tcp_stack_mem_size checks the ranges). */
struct tcp_config {
	uint32_t local_ip;         /* host order: source of connection segments (stateless
	                            * replies use the received segment's destination) */
	uint16_t ports[TCP_MAX_LISTEN];
	uint32_t n_ports;
	uint32_t max_conns;        /* control blocks; the table has exactly 2x slots */
	uint32_t max_send_refs;    /* references to unacknowledged upper-layer data */
	uint32_t max_pending_acks; /* connections with an ACK owed at the end of a loop turn */
	uint16_t mss;              /* our receive MSS (advertised) */
	uint8_t rcv_wscale;        /* window scale we offer (0..14) */
	uint8_t init_cwnd_segs;    /* RFC 6928 initial window, in segments */
	uint16_t syn_wnd;          /* window in our SYN-ACK (unscaled; no state exists yet) */
	uint32_t tick_ms;          /* timer wheel granularity */
	uint32_t rto_init_ms, rto_min_ms, rto_max_ms;
	uint32_t max_retries;      /* RTO expirations before the connection is dropped */
	uint32_t delack_ms;        /* delayed ACK */
	uint32_t persist_min_ms;   /* first zero-window probe */
	uint32_t fin_wait2_ms;     /* bound on FIN-WAIT-2 (peer never sends FIN) */
	uint32_t cookie_period_ms; /* SYN cookie key rotation; a cookie lives 1..2 periods */
	uint32_t rst_per_s, rst_burst;                 /* RSTs to closed ports */
	uint32_t challenge_per_s, challenge_burst;     /* RFC 5961 challenge ACKs */
	uint32_t n_refused;        /* slots remembering refused SYN flows */
	uint32_t refused_ms;       /* how long a refused flow is remembered */
	/* Out-of-order hold: a per-stack pool of slots, each keeping one segment received
	 * beyond a gap (in the stack's memory, used only while a gap exists). 0 slots
	 * disables it (out-of-order data is then dropped and the peer resends it). */
	uint32_t ooo_slots;        /* slots in the pool */
	uint32_t ooo_per_conn;     /* at most this many slots per connection */
	uint16_t ooo_slot_size;    /* payload bytes per slot (a longer segment is cut) */
};

enum tcp_close_reason {
	TCP_CLOSE_NORMAL = 0,  /* FIN both ways, all data acknowledged */
	TCP_CLOSE_RESET = 1,   /* peer sent an acceptable RST */
	TCP_CLOSE_TIMEOUT = 2, /* retransmissions or FIN-WAIT-2 exhausted */
	TCP_CLOSE_ABORT = 3,   /* tcp_abort() */
	TCP_CLOSE_REFUSED = 4, /* accept() refused the connection */
};

/* Upper-layer callbacks; conn is an index in [0, max_conns), valid from accept() until
 * closed() returns. Callbacks may call tcp_send/tcp_close/tcp_abort/tcp_window_update on
 * the same or another connection; the control block is never freed under a callback. */
struct tcp_upper_ops {
	/* SYN time, before any state exists: false drops the SYN silently and remembers the
	 * flow for refused_ms (admission control). Optional (NULL admits every SYN). */
	bool (*admit)(void *ctx, uint32_t src_ip, uint16_t src_port, uint16_t dst_port);
	/* Final ACK of the handshake arrived with a valid cookie: 0 to accept; negative
	 * refuses (RST sent, closed() is not called). */
	int (*accept)(void *ctx, uint32_t conn, uint32_t src_ip, uint16_t src_port, uint16_t dst_port);
	/* In-order data (borrowed view, valid for the call). Return how many bytes were
	 * consumed (<= len); the rest is dropped and the peer retransmits it. len == 0 and
	 * data == NULL means the peer sent FIN. The view is mutable: it lies in the received
	 * frame (recycled after tcp_input returns) or in a hold slot TCP owns, and nothing
	 * reads the consumed bytes again, so the upper layer may overwrite them (in-place
	 * decryption). It must leave the unconsumed bytes unchanged: a hold slot delivers
	 * them again. */
	size_t (*recv)(void *ctx, uint32_t conn, uint8_t *data, size_t len);
	/* Bytes the upper layer can take now: the advertised receive window. A query: it
	 * must not call back into TCP. */
	uint32_t (*credit)(void *ctx, uint32_t conn);
	/* acked bytes of the sent stream are acknowledged: the upper layer may free them.
	 * Optional. */
	void (*sent)(void *ctx, uint32_t conn, size_t acked);
	/* The connection is gone; unacknowledged data may be freed; conn may be reused. */
	void (*closed)(void *ctx, uint32_t conn, enum tcp_close_reason reason);
};

/* A piece of upper-layer data to send (borrowed until sent() acknowledges it). */
struct tcp_iov {
	const uint8_t *base;
	size_t len;
};

struct tcp_stats {
	uint64_t in_segs, out_segs, in_bytes, out_bytes;
	/* rejections per site */
	uint64_t rx_short, rx_bad_off, rx_bad_opt, rx_bad_csum, rx_bad_port, rx_bad_flags;
	uint64_t rx_no_conn, rx_out_of_window, rx_bad_ack, rx_ooo, rx_trimmed, rx_not_in_frame;
	uint64_t syn_cookie_sent, cookie_bad, cookie_expired, syn_refused, syn_remembered;
	uint64_t conn_table_full, accept_refused, syn_dropped_no_frame;
	uint64_t rst_sent, rst_limited, challenge_acks, challenge_limited, rst_accepted;
	uint64_t retransmits, rto_expired, fast_retransmits, partial_acks, persist_probes;
	uint64_t delayed_acks, merged_acks, pure_acks, pending_full, tx_no_frame;
	uint64_t sref_exhausted, timeouts, conns_opened, conns_closed;
	/* out-of-order hold: segments held, released in order, dropped because the pool
	 * or the per-connection cap was exhausted, duplicates of held data, holds freed
	 * unused (connection closed, RST, FIN) */
	uint64_t ooo_held, ooo_released, ooo_pool_full, ooo_conn_full, ooo_dup, ooo_discarded;
};

/* Defaults (RFC values where they exist). */
void tcp_config_default(struct tcp_config *cfg /* out */);
/* Bytes of memory tcp_stack_init needs for cfg (0 if cfg is invalid). Align to 8. */
size_t tcp_stack_mem_size(const struct tcp_config *cfg);
/* Carve the stack out of mem (linked: must outlive the stack; aligned to 8). cfg is
 * copied; lower/upper ops linked. -E_INVAL on a bad configuration, -E_NOMEM when mem_len
 * is too small. */
MUST_CHECK int tcp_stack_init(struct tcp_stack **out, void *mem, size_t mem_len,
			      const struct tcp_config *cfg, const struct tcp_port_ops *port,
			      void *port_ctx, const struct tcp_upper_ops *upper, void *upper_ctx);
/* The local address changed (DHCP). */
void tcp_stack_set_local_ip(struct tcp_stack *t, uint32_t ip);

/* One received segment (borrowed, mutable view into the frame; addresses host order). The
 * frame must be the caller's to overwrite: recv() may change the payload in place (the
 * checksum has been verified by then), so it must not be read again as the received
 * segment after this call (a capture taps it before). */
void tcp_input(struct tcp_stack *t, uint32_t src_ip, uint32_t dst_ip, uint8_t *seg, size_t len);
/* The same for a caller that got seg as a read-only view (net/'s tcp_input hook) of a
 * frame it owns: frame/frame_len (borrowed, mutable) is that whole received frame, and the
 * mutable view of seg is found by its offset in it. A seg not wholly inside the frame is
 * counted (rx_not_in_frame) and dropped. */
void tcp_input_in_frame(struct tcp_stack *t, uint32_t src_ip, uint32_t dst_ip, uint8_t *frame,
			size_t frame_len, const uint8_t *seg, size_t len);
/* End of a loop turn: run expired timers, then send the ACKs still owed (those not merged
 * into data sent during the turn). */
void tcp_poll(struct tcp_stack *t);

/* Queue data (references kept until sent() acknowledges the bytes; the caller keeps the
 * bytes unchanged until then) and transmit what the windows allow, carrying any pending
 * ACK. Contiguous pieces are merged into one reference. -E_CLOSED after close/abort or
 * in a closed state, -E_NOMEM when the reference pool is exhausted (nothing queued). */
MUST_CHECK int tcp_send(struct tcp_stack *t, uint32_t conn, const struct tcp_iov *iov, size_t n_iov);
/* No more data from us: FIN after the queued data. */
MUST_CHECK int tcp_close(struct tcp_stack *t, uint32_t conn);
/* Reset now; closed(TCP_CLOSE_ABORT) follows (from the next tcp_poll/tcp_input, or at
 * once when not inside a callback of this connection). */
void tcp_abort(struct tcp_stack *t, uint32_t conn);
/* The upper layer's credit grew: advertise it (window update) if it matters. */
void tcp_window_update(struct tcp_stack *t, uint32_t conn);

const struct tcp_stats *tcp_stats(const struct tcp_stack *t);
/* Open connections and send references in use right now (leak checks, telemetry). */
uint32_t tcp_conn_count(const struct tcp_stack *t);
uint32_t tcp_sref_count(const struct tcp_stack *t);
/* Out-of-order hold slots in use right now (0 whenever no connection has a gap). */
uint32_t tcp_hold_count(const struct tcp_stack *t);
/* Sizes for measurement: control block and table slot in bytes; bytes of the
 * out-of-order hold pool for cfg (metadata and payload). */
size_t tcp_cb_size(void);
size_t tcp_slot_size(void);
size_t tcp_hold_pool_size(const struct tcp_config *cfg);
/* Check every invariant of tcp_int.h (O(n)); 0 or -E_CORRUPT. Tests and fuzzing. */
MUST_CHECK int tcp_check_invariants(const struct tcp_stack *t);

#endif
