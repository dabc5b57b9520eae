/* SPDX-License-Identifier: MIT
 *
 * Private to net/tcp/: the control block, the stack, and the helpers shared by tcp.c
 * (init, table, cookies, API), tcp_in.c (parsing and the state machine) and tcp_out.c
 * (segment building, retransmission, timers). Never included outside net/tcp/.
 *
 * Design note.
 *  States (passive side only; LISTEN and SYN-RECEIVED are stateless thanks to cookies,
 *  TIME-WAIT does not exist on this side, see the ADR in the report / docs/DECISIONS.md):
 *
 *    (listener) --SYN / admit--> SYN-ACK with cookie, no state
 *    (listener) --ACK with valid cookie / tcp_in_cookie_ack--> ESTABLISHED
 *    ESTABLISHED --FIN rcvd / in_fin--> CLOSE-WAIT --tcp_close--> LAST-ACK
 *    ESTABLISHED --tcp_close--> FIN-WAIT-1 --our FIN acked--> FIN-WAIT-2
 *    FIN-WAIT-1 --FIN rcvd--> CLOSING --our FIN acked--> (freed, NORMAL)
 *    FIN-WAIT-2 --FIN rcvd--> (freed, NORMAL: no TIME-WAIT)
 *    LAST-ACK --our FIN acked--> (freed, NORMAL)
 *    any --acceptable RST--> (freed, RESET);  --RTO exhausted--> (freed, TIMEOUT)
 *    FIN-WAIT-2 --fin_wait2_ms--> (freed, TIMEOUT); any --tcp_abort--> (freed, ABORT)
 *
 *  Invariants (checked by tcp_check_invariants):
 *   1. snd_una <= snd_nxt <= snd_max <= snd_end + 1 (serial order), and snd_max <= snd_end
 *      unless TCP_F_CLOSE (the FIN takes the sequence number snd_end).
 *   2. The send references of a control block hold exactly the unacknowledged data bytes
 *      snd_end - snd_una (minus nothing: bytes are released when acknowledged).
 *   3. Every control block not FREE is in the table exactly once, at a slot reachable
 *      from its home slot without crossing an empty slot; the table is at most half full.
 *   4. FREE control blocks are on the free list, own no references and no timer.
 *   5. TCP_F_RTO and TCP_F_PERSIST are never both set; when data or FIN is outstanding
 *      (snd_una != snd_max) one of them is set (persist when the peer's window is zero,
 *      then snd_max may exceed snd_nxt by the probe byte or the data sent before the
 *      window closed); in FIN-WAIT-2 TCP_F_RTO times the state out.
 *   6. n_sref_used equals the number of references linked from control blocks.
 *   7. Out-of-order hold: a slot is either on the free list (owner TCP_NIL) or owned by
 *      exactly one open control block; TCP_F_HOLD is set on a block iff it owns a slot;
 *      a block owns at most ooo_per_conn slots; every held slot starts beyond rcv_nxt
 *      or overlaps it (nothing wholly below rcv_nxt stays held after a delivery), holds
 *      1..ooo_slot_size bytes, and n_hold_used counts the owned slots. A FREE block owns
 *      none (release frees them before the block is reused).
 *
 *  Out-of-order hold slot life:  free --segment beyond a gap, within the window, under
 *  both caps / hold_put--> owned --gap filled, delivered in order / hold_drain--> free;
 *  owned --release, RST, FIN received, pool reset / hold_free_all--> free.
 */
#ifndef NET_TCP_TCP_INT_H
#define NET_TCP_TCP_INT_H

#include "lib/siphash.h"
#include "net/tcp/tcp.h"
#include "net/tcp/timer_wheel.h"
#include "net/tcp/wire_tcp.h"

#define TCP_NIL 0xffffffffu

enum tcp_state {
	TCPS_FREE = 0,
	TCPS_ESTABLISHED,
	TCPS_CLOSE_WAIT,
	TCPS_LAST_ACK,
	TCPS_FIN_WAIT_1,
	TCPS_FIN_WAIT_2,
	TCPS_CLOSING,
};

enum {
	TCP_F_ACK_NOW = 1u << 0,  /* ACK owed at the end of this loop turn (on the pending list) */
	TCP_F_DELACK = 1u << 1,   /* delayed ACK armed */
	TCP_F_ACK_HALF = 1u << 2, /* one segment received and not yet acknowledged */
	TCP_F_RTT = 1u << 3,      /* timing rtt_seq */
	TCP_F_RECOVERY = 1u << 4, /* NewReno fast recovery */
	TCP_F_CLOSE = 1u << 5,    /* upper layer closed: FIN at snd_end */
	TCP_F_RTO = 1u << 6,      /* rto_at is the retransmission (or FIN-WAIT-2) deadline */
	TCP_F_PERSIST = 1u << 7,  /* rto_at is the next zero-window probe */
	TCP_F_WS = 1u << 8,       /* window scaling in effect */
	TCP_F_DEAD = 1u << 9,     /* release requested while busy */
	TCP_F_PENDING = 1u << 10, /* on the pending-ACK list */
	TCP_F_BUSY = 1u << 11,    /* an upper-layer callback for this block is running */
	TCP_F_REASON_SHIFT = 12,  /* 3 bits: close reason when TCP_F_DEAD (7: released
	                           * without closed(), the refused accept) */
	TCP_F_HOLD = 1u << 15,    /* owns out-of-order hold slots (invariant 7) */
};

#define TCP_REASON_SILENT 7u

/* 96 bytes: the per-connection budget of docs/ARCHITECTURE.md (Memory). Sequence numbers
 * are absolute 32-bit values. */
struct tcp_cb {
	struct tcp_tw_node tmr; /* the one timer slot */
	uint32_t raddr;
	uint16_t rport, lport;
	uint32_t snd_una, snd_nxt, snd_max, snd_end;
	uint32_t snd_wl1, snd_wl2;
	uint32_t snd_wnd;   /* bytes, already scaled */
	uint32_t rcv_nxt;
	uint32_t rcv_adv;   /* right edge of the window we advertised */
	uint32_t cwnd, ssthresh, recover;
	uint32_t rtt_seq;
	uint32_t rto_at;    /* tick of the RTO / persist / FIN-WAIT-2 deadline */
	uint32_t sref_tail; /* circular list of references (tail->next is the head); free list link when FREE */
	uint16_t rtt_ts;    /* low 16 bits of now_ms when rtt_seq was sent */
	uint16_t srtt8;     /* smoothed RTT, ms << 3; 0 before the first sample */
	uint16_t rttvar4;   /* ms << 2 */
	uint16_t rto_ms;
	uint16_t mss;       /* send MSS */
	uint8_t state;
	uint8_t snd_wscale;
	uint8_t dupacks;
	uint8_t backoff;
	uint16_t flags;
};
STATIC_ASSERT(sizeof(struct tcp_cb) <= 96, "TCP control block over its 96-byte budget");

/* A reference to upper-layer bytes not yet acknowledged (16 bytes). */
struct tcp_sref {
	const uint8_t *base;
	uint32_t len;
	uint32_t next;
};

/* One out-of-order hold slot (16 bytes; its payload is ooo_slot_size bytes at
 * hold_data + index * ooo_slot_size). */
struct tcp_hold {
	uint32_t owner; /* control block index, TCP_NIL when free */
	uint32_t seq;   /* sequence number of data[off] */
	uint16_t off, len;
	uint16_t fin;   /* the segment's FIN follows the held bytes */
	uint16_t pad;
	/* free-list link lives in seq while free */
};

struct tcp_refused {
	uint32_t hash;
	uint32_t until_tick;
};

struct tcp_bucket {
	uint64_t last_ms;
	uint32_t tokens;
};

struct tcp_stack {
	struct tcp_config cfg;
	const struct tcp_port_ops *port;
	void *port_ctx;
	const struct tcp_upper_ops *up;
	void *up_ctx;
	struct tcp_cb *cbs;
	uint32_t free_head, n_open;
	uint32_t *table;
	uint32_t n_slots;
	struct tcp_sref *srefs;
	uint32_t sref_free, n_sref_used;
	uint32_t *pending;
	uint32_t n_pending;
	struct tcp_refused *refused;
	struct tcp_hold *holds;
	uint8_t *hold_data;
	uint32_t hold_free, n_hold_used;
	struct siphash_key table_key;
	struct siphash_key cookie_key[2];
	uint32_t cookie_epoch;
	struct tcp_bucket rst_tb, chal_tb;
	uint64_t now_ms;
	uint32_t now_tick;
	struct tcp_stats st;
	struct tcp_tw_wheel wheel;
};

/* Serial-number comparisons (RFC 1982 style). */
static inline bool seq_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static inline bool seq_leq(uint32_t a, uint32_t b) { return (int32_t)(a - b) <= 0; }
static inline bool seq_gt(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }
static inline bool seq_geq(uint32_t a, uint32_t b) { return (int32_t)(a - b) >= 0; }

static inline uint32_t tcp_cb_id(const struct tcp_stack *t, const struct tcp_cb *cb)
{
	return (uint32_t)(cb - t->cbs);
}

/* tcp.c */
void tcp_clock(struct tcp_stack *t);
uint32_t tcp_ms_to_ticks(const struct tcp_stack *t, uint32_t ms);
uint32_t tcp_tuple_hash(const struct tcp_stack *t, uint32_t raddr, uint16_t rport, uint16_t lport);
struct tcp_cb *tcp_table_find(struct tcp_stack *t, uint32_t raddr, uint16_t rport, uint16_t lport);
struct tcp_cb *tcp_cb_alloc(struct tcp_stack *t, uint32_t raddr, uint16_t rport, uint16_t lport);
/* Release now (or mark TCP_F_DEAD when busy); notify selects the closed() callback. */
void tcp_cb_release(struct tcp_stack *t, struct tcp_cb *cb, enum tcp_close_reason reason, bool notify);
/* Called after a callback returns: performs a release requested during it. */
bool tcp_cb_reap(struct tcp_stack *t, struct tcp_cb *cb);
bool tcp_bucket_take(struct tcp_stack *t, struct tcp_bucket *b, uint32_t rate, uint32_t burst);
bool tcp_listening(const struct tcp_stack *t, uint16_t port);
/* Free references covering n acknowledged bytes. */
void tcp_sref_consume(struct tcp_stack *t, struct tcp_cb *cb, uint32_t n);
/* Out-of-order hold (tcp.c). Keep [seq, seq + len) (+ FIN) for later; false when not
 * held (counted). */
bool tcp_hold_put(struct tcp_stack *t, struct tcp_cb *cb, uint32_t seq, const uint8_t *data,
		  uint32_t len, bool fin);
/* The held slot that continues the stream at rcv_nxt (freeing slots wholly below it on
 * the way), or TCP_NIL. */
uint32_t tcp_hold_next(struct tcp_stack *t, struct tcp_cb *cb);
void tcp_hold_free(struct tcp_stack *t, struct tcp_cb *cb, uint32_t slot);
void tcp_hold_free_all(struct tcp_stack *t, struct tcp_cb *cb);
/* The first unconsumed byte of a held slot (TCP's memory: delivered as a mutable view). */
uint8_t *tcp_hold_view(const struct tcp_stack *t, uint32_t slot);
/* SYN cookies. */
uint32_t tcp_cookie_make(struct tcp_stack *t, uint32_t saddr, uint32_t daddr, uint16_t sport,
			 uint16_t dport, uint32_t irs, uint16_t peer_mss, uint8_t peer_ws, uint16_t *mss /* out */);
/* 0 and the decoded MSS / window scale (TCP_WS_NONE if none), or -E_INVAL / -E_TIMEOUT. */
MUST_CHECK int tcp_cookie_check(struct tcp_stack *t, uint32_t saddr, uint32_t daddr, uint16_t sport,
				uint16_t dport, uint32_t irs, uint32_t cookie, uint16_t *mss /* out */,
				uint8_t *ws /* out */);
bool tcp_refused_seen(struct tcp_stack *t, uint32_t hash);
void tcp_refused_add(struct tcp_stack *t, uint32_t hash);

/* tcp_out.c */
/* Send what the windows allow (data, FIN); a pure ACK if nothing went and force_ack. */
void tcp_output(struct tcp_stack *t, struct tcp_cb *cb, bool force_ack);
void tcp_out_ack(struct tcp_stack *t, struct tcp_cb *cb);
/* Retransmit one segment from snd_una (fast retransmit, partial ACK, probe). */
void tcp_out_retransmit(struct tcp_stack *t, struct tcp_cb *cb);
void tcp_out_rst_cb(struct tcp_stack *t, struct tcp_cb *cb);
/* RST answering a segment with no connection (rate-limited). */
void tcp_out_rst_reply(struct tcp_stack *t, uint32_t src, uint32_t dst, const struct tcp_seg *s);
/* RFC 5961 challenge ACK (rate-limited). */
void tcp_out_challenge(struct tcp_stack *t, struct tcp_cb *cb);
void tcp_out_synack(struct tcp_stack *t, uint32_t src, uint32_t dst, const struct tcp_seg *s,
		    uint32_t iss, uint16_t mss, bool ws);
/* An ACK is owed: now (end of loop turn) or delayed. */
void tcp_ack_owed(struct tcp_stack *t, struct tcp_cb *cb, bool now);
void tcp_rto_restart(struct tcp_stack *t, struct tcp_cb *cb);
void tcp_rto_stop(struct tcp_stack *t, struct tcp_cb *cb);
void tcp_timer_fire(void *ctx, uint32_t idx);
void tcp_rtt_sample(struct tcp_stack *t, struct tcp_cb *cb, uint32_t rtt_ms);
uint32_t tcp_rcv_window(struct tcp_stack *t, struct tcp_cb *cb, bool commit);

/* tcp_in.c */
MUST_CHECK int tcp_seg_parse(uint32_t src, uint32_t dst, uint8_t *seg, size_t len,
			     struct tcp_seg *out /* out */, struct tcp_stats *st);

#endif
