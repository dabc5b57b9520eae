/* SPDX-License-Identifier: MIT
 *
 * Input side of TCP: the segment parser (through the cursor; every rejection counted per
 * site), the listener (SYN cookies, admission, the cookie-validated final ACK that creates
 * the only state), and the RFC 9293 passive-side state machine with RFC 5961 checks,
 * NewReno ACK processing and in-order delivery straight from the frame; data beyond a
 * gap goes to the bounded hold pool (tcp.c) and is delivered from there once the gap
 * fills. Never buffers payload elsewhere, never trusts a length it has not bounded, never
 * asserts on packet contents.
 */
#include "lib/cursor.h"
#include "lib/err.h"
#include "net/csum.h"
#include "net/tcp/tcp_int.h"

int tcp_seg_parse(uint32_t src, uint32_t dst, uint8_t *seg, size_t len, struct tcp_seg *o,
		  struct tcp_stats *st)
{
	if (len < TCP_HDR_LEN || len > 65535u) {
		st->rx_short++;
		return -E_INVAL;
	}
	struct cur c = cur_make(seg, len);
	o->sport = cur_be16(&c);
	o->dport = cur_be16(&c);
	o->seq = cur_be32(&c);
	o->ack = cur_be32(&c);
	size_t hlen = (size_t)(cur_u8(&c) >> 4) * 4u;
	o->flags = (uint8_t)(cur_u8(&c) & 0x3fu); /* ECN bits ignored */
	o->wnd = cur_be16(&c);
	cur_skip(&c, 4); /* checksum (verified over the whole segment), urgent pointer */
	o->mss = 0;
	o->ws = TCP_WS_NONE;
	if (hlen < TCP_HDR_LEN || hlen > len || !cur_ok(&c)) {
		st->rx_bad_off++;
		return -E_INVAL;
	}
	struct cur opt = cur_sub(&c, hlen - TCP_HDR_LEN);
	while (cur_ok(&opt) && cur_left(&opt)) {
		uint8_t kind = cur_u8(&opt);
		if (kind == TCP_OPT_EOL)
			break;
		if (kind == TCP_OPT_NOP)
			continue;
		uint8_t olen = cur_u8(&opt);
		if (!cur_ok(&opt) || olen < 2 || (size_t)(olen - 2u) > cur_left(&opt)) {
			st->rx_bad_opt++;
			return -E_INVAL;
		}
		struct cur body = cur_sub(&opt, (size_t)olen - 2u);
		if (kind == TCP_OPT_MSS) {
			if (olen != 4) {
				st->rx_bad_opt++;
				return -E_INVAL;
			}
			o->mss = cur_be16(&body);
		} else if (kind == TCP_OPT_WS) {
			if (olen != 3) {
				st->rx_bad_opt++;
				return -E_INVAL;
			}
			uint8_t ws = cur_u8(&body);
			o->ws = ws > TCP_WS_MAX ? TCP_WS_MAX : ws; /* RFC 7323 2.3 */
		}
	}
	if (o->sport == 0 || o->dport == 0) {
		st->rx_bad_port++;
		return -E_INVAL;
	}
	uint32_t sum = net_csum_pseudo(src, dst, TCP_PROTO, (uint16_t)len);
	if (net_csum_fold(net_csum_add(sum, seg, len)) != 0) {
		st->rx_bad_csum++;
		return -E_INVAL;
	}
	o->data = seg + hlen;
	o->len = len - hlen;
	return 0;
}

/* ---- callbacks into the upper layer, with the block pinned ---- */

static void pin(struct tcp_cb *cb)
{
	cb->flags = (uint16_t)(cb->flags | TCP_F_BUSY);
}

/* true when the block was released during the callback: stop touching it. */
static bool unpin(struct tcp_stack *t, struct tcp_cb *cb)
{
	return tcp_cb_reap(t, cb);
}

/* ---- ACK processing ---- */

static bool ack_new(struct tcp_stack *t, struct tcp_cb *cb, uint32_t ack)
{
	uint32_t acked = ack - cb->snd_una;
	uint32_t data_acked = 0;
	if (seq_lt(cb->snd_una, cb->snd_end))
		data_acked = (seq_lt(ack, cb->snd_end) ? ack : cb->snd_end) - cb->snd_una;
	bool fin_acked = (cb->flags & TCP_F_CLOSE) && seq_gt(ack, cb->snd_end);
	tcp_sref_consume(t, cb, data_acked);
	cb->snd_una = ack;
	if (seq_lt(cb->snd_nxt, ack))
		cb->snd_nxt = ack;
	if ((cb->flags & TCP_F_RTT) && seq_gt(ack, cb->rtt_seq)) {
		tcp_rtt_sample(t, cb, (uint16_t)((uint16_t)t->now_ms - cb->rtt_ts));
		cb->flags = (uint16_t)(cb->flags & ~TCP_F_RTT);
	}
	if (!(cb->flags & TCP_F_PERSIST))
		cb->backoff = 0;
	if (cb->flags & TCP_F_RECOVERY) {
		if (seq_gt(ack, cb->recover)) {
			/* Full ACK: leave fast recovery (RFC 6582 3.2 step 3, option 1). */
			uint32_t flight = cb->snd_max - cb->snd_una;
			cb->cwnd = MIN(cb->ssthresh, MAX(flight, (uint32_t)cb->mss) + cb->mss);
			cb->flags = (uint16_t)(cb->flags & ~TCP_F_RECOVERY);
			cb->dupacks = 0;
		} else {
			/* Partial ACK: retransmit the next hole, deflate by what was acked. */
			t->st.partial_acks++;
			tcp_out_retransmit(t, cb);
			cb->cwnd = cb->cwnd > acked ? cb->cwnd - acked : 0;
			if (acked >= cb->mss)
				cb->cwnd += cb->mss;
			cb->cwnd = MAX(cb->cwnd, (uint32_t)cb->mss);
		}
	} else {
		cb->dupacks = 0;
		if (cb->cwnd < cb->ssthresh)
			cb->cwnd += MIN(acked, (uint32_t)cb->mss);
		else
			cb->cwnd += MAX(1u, (uint32_t)cb->mss * cb->mss / cb->cwnd);
		cb->cwnd = MIN(cb->cwnd, 0x40000000u);
	}
	if (cb->snd_una == cb->snd_max) {
		if (!(cb->flags & TCP_F_PERSIST))
			tcp_rto_stop(t, cb); /* RFC 6298 5.2 */
	} else {
		tcp_rto_restart(t, cb); /* 5.3 */
	}
	if (data_acked && t->up->sent) {
		pin(cb);
		t->up->sent(t->up_ctx, tcp_cb_id(t, cb), data_acked);
		if (unpin(t, cb))
			return false;
	}
	if (fin_acked) {
		if (cb->state == TCPS_FIN_WAIT_1) {
			cb->state = TCPS_FIN_WAIT_2;
			cb->flags = (uint16_t)((cb->flags | TCP_F_RTO) & ~TCP_F_PERSIST);
			cb->rto_at = t->now_tick + tcp_ms_to_ticks(t, t->cfg.fin_wait2_ms);
			tcp_tw_insert(&t->wheel, tcp_cb_id(t, cb), cb->rto_at);
		} else if (cb->state == TCPS_CLOSING || cb->state == TCPS_LAST_ACK) {
			tcp_cb_release(t, cb, TCP_CLOSE_NORMAL, true);
			return false;
		}
	}
	return true;
}

static void ack_dup(struct tcp_stack *t, struct tcp_cb *cb, uint32_t ack)
{
	if (cb->dupacks < 255)
		cb->dupacks++;
	if (!(cb->flags & TCP_F_RECOVERY)) {
		if (cb->dupacks == 3 && seq_gt(ack, cb->recover)) {
			/* Fast retransmit, enter fast recovery (RFC 6582 3.2 step 2). */
			uint32_t flight = cb->snd_max - cb->snd_una;
			t->st.fast_retransmits++;
			cb->ssthresh = MAX(flight / 2u, 2u * cb->mss);
			cb->recover = cb->snd_max - 1u;
			tcp_out_retransmit(t, cb);
			cb->cwnd = cb->ssthresh + 3u * cb->mss;
			cb->flags = (uint16_t)(cb->flags | TCP_F_RECOVERY);
			tcp_rto_restart(t, cb);
		}
	} else if (cb->dupacks > 3) {
		cb->cwnd = MIN(cb->cwnd + cb->mss, 0x40000000u); /* inflate */
	}
}

/* ---- the state machine for an existing connection ---- */

static void conn_input(struct tcp_stack *t, struct tcp_cb *cb, const struct tcp_seg *s)
{
	uint32_t id = tcp_cb_id(t, cb);
	uint32_t seglen = (uint32_t)s->len + ((s->flags & TCP_SYN) ? 1u : 0u) + ((s->flags & TCP_FIN) ? 1u : 0u);
	uint32_t wnd = seq_gt(cb->rcv_adv, cb->rcv_nxt) ? cb->rcv_adv - cb->rcv_nxt : 0;

	/* RFC 5961 4.2: a SYN on a synchronized connection gets a challenge ACK, whatever
	 * its sequence number. */
	if (s->flags & TCP_SYN) {
		tcp_out_challenge(t, cb);
		return;
	}
	/* Sequence acceptability (RFC 9293 3.10.7.4); with a zero window an in-sequence
	 * segment is still taken for its ACK and RST (data is trimmed below). */
	bool ok;
	if (wnd == 0)
		ok = s->seq == cb->rcv_nxt;
	else if (seglen == 0)
		ok = seq_geq(s->seq, cb->rcv_nxt) && seq_lt(s->seq, cb->rcv_nxt + wnd);
	else
		ok = (seq_geq(s->seq, cb->rcv_nxt) && seq_lt(s->seq, cb->rcv_nxt + wnd)) ||
		     (seq_geq(s->seq + seglen - 1u, cb->rcv_nxt) && seq_lt(s->seq + seglen - 1u, cb->rcv_nxt + wnd));
	if (!ok) {
		t->st.rx_out_of_window++;
		if (!(s->flags & TCP_RST))
			tcp_ack_owed(t, cb, true);
		return;
	}
	/* RFC 5961 3.2: only an exact RST resets; one elsewhere in the window is challenged. */
	if (s->flags & TCP_RST) {
		if (s->seq == cb->rcv_nxt) {
			t->st.rst_accepted++;
			tcp_cb_release(t, cb, TCP_CLOSE_RESET, true);
		} else {
			tcp_out_challenge(t, cb);
		}
		return;
	}
	if (!(s->flags & TCP_ACK))
		return;
	/* RFC 5961 5.2: an ACK outside [SND.UNA - MAX.SND.WND, SND.NXT] is challenged. */
	uint32_t max_wnd = MAX(cb->snd_wnd, 65535u);
	if (seq_gt(s->ack, cb->snd_max) || seq_lt(s->ack, cb->snd_una - max_wnd)) {
		t->st.rx_bad_ack++;
		tcp_out_challenge(t, cb);
		return;
	}
	uint32_t swnd = (uint32_t)s->wnd << ((cb->flags & TCP_F_WS) ? cb->snd_wscale : 0u);
	bool is_new = seq_gt(s->ack, cb->snd_una);
	bool is_dup = !is_new && s->ack == cb->snd_una && s->len == 0 && !(s->flags & TCP_FIN) &&
		      swnd == cb->snd_wnd && cb->snd_max != cb->snd_una && !(cb->flags & TCP_F_PERSIST);
	if (seq_lt(cb->snd_wl1, s->seq) || (cb->snd_wl1 == s->seq && seq_leq(cb->snd_wl2, s->ack))) {
		cb->snd_wnd = swnd;
		cb->snd_wl1 = s->seq;
		cb->snd_wl2 = s->ack;
		if (swnd && (cb->flags & TCP_F_PERSIST)) {
			cb->backoff = 0;
			tcp_rto_stop(t, cb);
			if (cb->snd_una != cb->snd_max)
				tcp_rto_restart(t, cb); /* the probe byte is in flight */
		}
	}
	if (is_new) {
		if (!ack_new(t, cb, s->ack))
			return;
	} else if (is_dup) {
		ack_dup(t, cb, s->ack);
	}

	/* Data and FIN (only while the peer may still send). */
	if (cb->state == TCPS_ESTABLISHED || cb->state == TCPS_FIN_WAIT_1 || cb->state == TCPS_FIN_WAIT_2) {
		uint8_t *data = s->data; /* mutable for recv(): see tcp_input */
		size_t dlen = s->len;
		uint32_t seq = s->seq;
		bool fin = s->flags & TCP_FIN;
		wnd = seq_gt(cb->rcv_adv, cb->rcv_nxt) ? cb->rcv_adv - cb->rcv_nxt : 0;
		if (seq_lt(seq, cb->rcv_nxt)) {
			uint32_t skip = cb->rcv_nxt - seq;
			if (skip > dlen) {
				skip = (uint32_t)dlen;
				fin = false; /* a FIN we already have */
			}
			data += skip;
			dlen -= skip;
			seq += skip;
		}
		if (dlen > wnd) {
			t->st.rx_trimmed++;
			dlen = wnd;
			fin = false;
			tcp_ack_owed(t, cb, true); /* tell the peer where the window ends */
		}
		if (seq != cb->rcv_nxt) {
			/* Beyond a gap: keep it in the hold pool when there is room (only the
			 * part inside the window we advertised), and send a duplicate ACK at
			 * once (RFC 5681 4.2) so the peer's fast retransmit fills the hole. */
			if (dlen || fin) {
				t->st.rx_ooo++;
				uint32_t room = seq_lt(seq, cb->rcv_adv) ? cb->rcv_adv - seq : 0;
				if (dlen > room) {
					dlen = room;
					fin = false;
				}
				(void)tcp_hold_put(t, cb, seq, data, (uint32_t)dlen, fin);
				tcp_out_ack(t, cb);
			}
			dlen = 0;
			fin = false;
		}
		/* Deliver in order: the segment, then whatever held data now continues the
		 * stream (slot is the hold slot being delivered, TCP_NIL for the segment). */
		uint32_t slot = TCP_NIL;
		for (;;) {
			bool partial = false;
			if (dlen) {
				pin(cb);
				size_t used = t->up->recv(t->up_ctx, id, data, dlen);
				if (unpin(t, cb))
					return;
				used = MIN(used, dlen);
				cb->rcv_nxt += (uint32_t)used;
				if (used < dlen) {
					t->st.rx_trimmed++;
					partial = true;
					fin = false;
					tcp_ack_owed(t, cb, true);
				} else if (slot != TCP_NIL || (cb->flags & TCP_F_ACK_HALF)) {
					/* a filled gap is acknowledged at once (RFC 5681 4.2),
					 * otherwise every second segment */
					tcp_ack_owed(t, cb, true);
				} else {
					cb->flags = (uint16_t)(cb->flags | TCP_F_ACK_HALF);
					tcp_ack_owed(t, cb, false);
				}
			}
			if (slot != TCP_NIL) {
				struct tcp_hold *h = &t->holds[slot];
				if (h->owner == id && seq_gt(h->seq + h->len, cb->rcv_nxt)) {
					uint32_t adv = cb->rcv_nxt - h->seq; /* keep the rest held */
					h->seq += adv;
					h->off = (uint16_t)(h->off + adv);
					h->len = (uint16_t)(h->len - adv);
				} else if (h->owner == id) {
					tcp_hold_free(t, cb, slot);
				}
			}
			if (fin) {
				cb->rcv_nxt++;
				tcp_hold_free_all(t, cb); /* nothing follows a FIN */
				tcp_ack_owed(t, cb, true);
				pin(cb);
				(void)t->up->recv(t->up_ctx, id, NULL, 0);
				if (unpin(t, cb))
					return;
				if (cb->state == TCPS_ESTABLISHED) {
					cb->state = TCPS_CLOSE_WAIT;
				} else if (cb->state == TCPS_FIN_WAIT_1) {
					cb->state = TCPS_CLOSING;
				} else if (cb->state == TCPS_FIN_WAIT_2) {
					/* No TIME-WAIT on the server side: acknowledge and forget. */
					tcp_out_ack(t, cb);
					tcp_cb_release(t, cb, TCP_CLOSE_NORMAL, true);
					return;
				}
				break;
			}
			if (partial) {
				/* the reader stopped inside the stream: still let go of held
				 * data it has now moved past (invariant 7) */
				(void)tcp_hold_next(t, cb);
				break;
			}
			if (!(cb->flags & TCP_F_HOLD))
				break;
			slot = tcp_hold_next(t, cb);
			if (slot == TCP_NIL)
				break;
			const struct tcp_hold *h = &t->holds[slot];
			uint32_t skip = cb->rcv_nxt - h->seq;
			data = tcp_hold_view(t, slot) + skip;
			dlen = (size_t)h->len - skip;
			fin = h->fin;
			t->st.ooo_released++;
		}
	}
	tcp_output(t, cb, false);
}

/* ---- the listener: no state until a valid cookie comes back ---- */

static void listen_input(struct tcp_stack *t, uint32_t src, uint32_t dst, const struct tcp_seg *s)
{
	if (s->flags & TCP_RST) {
		t->st.rx_no_conn++;
		return;
	}
	if (s->flags & TCP_SYN) {
		if (s->flags & (TCP_ACK | TCP_FIN)) {
			t->st.rx_bad_flags++;
			if (s->flags & TCP_ACK)
				tcp_out_rst_reply(t, src, dst, s);
			return;
		}
		uint32_t h = tcp_tuple_hash(t, src, s->sport, s->dport);
		if (tcp_refused_seen(t, h)) {
			t->st.syn_remembered++;
			return;
		}
		if (t->n_open >= t->cfg.max_conns) {
			t->st.conn_table_full++;
			return;
		}
		if (t->up->admit && !t->up->admit(t->up_ctx, src, s->sport, s->dport)) {
			t->st.syn_refused++;
			tcp_refused_add(t, h);
			return;
		}
		uint16_t mss;
		uint32_t iss = tcp_cookie_make(t, src, dst, s->sport, s->dport, s->seq, s->mss, s->ws, &mss);
		tcp_out_synack(t, src, dst, s, iss, mss, s->ws != TCP_WS_NONE);
		return;
	}
	if (!(s->flags & TCP_ACK)) {
		t->st.rx_no_conn++;
		return;
	}
	uint16_t mss;
	uint8_t ws;
	int rc = tcp_cookie_check(t, src, dst, s->sport, s->dport, s->seq - 1u, s->ack - 1u, &mss, &ws);
	if (rc) {
		/* Dropped silently and counted, never answered with RST: a segment of a
		 * handshake in flight that overtook the final ACK (data beyond ISN + 1
		 * cannot validate, the cookie binds the peer's ISN) looks exactly like a
		 * stale or forged ACK, and an RST with seq = SEG.ACK would be acceptable to
		 * the peer and kill the connection the delayed final ACK is about to open.
		 * A stale peer times out instead (as with Linux in SYN-cookie mode). */
		if (rc == -E_TIMEOUT)
			t->st.cookie_expired++;
		else
			t->st.cookie_bad++;
		return;
	}
	if (t->n_open >= t->cfg.max_conns) {
		t->st.conn_table_full++;
		tcp_out_rst_reply(t, src, dst, s);
		return;
	}
	struct tcp_cb *cb = tcp_cb_alloc(t, src, s->sport, s->dport);
	if (!cb) {
		t->st.conn_table_full++;
		return;
	}
	uint32_t iss = s->ack - 1u;
	cb->state = TCPS_ESTABLISHED;
	cb->snd_una = cb->snd_nxt = cb->snd_max = cb->snd_end = s->ack;
	cb->rcv_nxt = s->seq;
	cb->rcv_adv = s->seq + t->cfg.syn_wnd;
	cb->mss = mss;
	if (ws != TCP_WS_NONE) {
		cb->flags = (uint16_t)(cb->flags | TCP_F_WS);
		cb->snd_wscale = ws;
	}
	cb->snd_wnd = (uint32_t)s->wnd << ((cb->flags & TCP_F_WS) ? cb->snd_wscale : 0u);
	cb->snd_wl1 = s->seq;
	cb->snd_wl2 = s->ack;
	cb->cwnd = (uint32_t)t->cfg.init_cwnd_segs * mss;
	cb->ssthresh = 0x40000000u;
	cb->recover = iss;
	cb->rto_ms = (uint16_t)t->cfg.rto_init_ms;
	uint32_t id = tcp_cb_id(t, cb);
	pin(cb);
	rc = t->up->accept(t->up_ctx, id, src, s->sport, s->dport);
	if (rc) {
		t->st.accept_refused++;
		tcp_out_rst_cb(t, cb);
		cb->flags = (uint16_t)(cb->flags & ~TCP_F_BUSY);
		tcp_cb_release(t, cb, TCP_CLOSE_REFUSED, false);
		return;
	}
	if (unpin(t, cb))
		return;
	conn_input(t, cb, s);
}

void tcp_input(struct tcp_stack *t, uint32_t src, uint32_t dst, uint8_t *seg, size_t len)
{
	struct tcp_seg s;
	tcp_clock(t);
	t->st.in_segs++;
	if (tcp_seg_parse(src, dst, seg, len, &s, &t->st))
		return;
	t->st.in_bytes += s.len;
	struct tcp_cb *cb = tcp_table_find(t, src, s.sport, s.dport);
	if (cb) {
		conn_input(t, cb, &s);
		return;
	}
	if (!tcp_listening(t, s.dport)) {
		t->st.rx_no_conn++;
		tcp_out_rst_reply(t, src, dst, &s);
		return;
	}
	listen_input(t, src, dst, &s);
}

void tcp_input_in_frame(struct tcp_stack *t, uint32_t src, uint32_t dst, uint8_t *frame,
			size_t frame_len, const uint8_t *seg, size_t len)
{
	/* Compared as integers: seg may (through a caller's bug) point into another object. */
	uintptr_t f = (uintptr_t)frame, s = (uintptr_t)seg;
	if (!frame || s < f || s - f > frame_len || len > frame_len - (s - f)) {
		t->st.rx_not_in_frame++;
		return;
	}
	tcp_input(t, src, dst, frame + (s - f), len);
}
