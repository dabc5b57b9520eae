/* SPDX-License-Identifier: MIT
 *
 * Output side of TCP: builds segments directly in frames from the lower port (header,
 * options, payload copied from the upper layer's referenced bytes, checksum with the
 * pseudo-header), the send policy (windows, NewReno cwnd, sender SWS avoidance, FIN),
 * ACK policy (immediate at end of turn, delayed, merged), RFC 6298 RTO, zero-window
 * probing and the timer callback. Never keeps a frame, never blocks, never calls the
 * upper layer except credit() (a query) and closed() through tcp_cb_release.
 */
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "net/csum.h"
#include "net/tcp/tcp_int.h"


struct tx {
	uint32_t src, dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t wnd;
	uint16_t opt_mss; /* 0: none */
	uint8_t opt_ws;   /* TCP_WS_NONE: none */
	const struct tcp_cb *cb;
	uint32_t off;  /* payload offset from snd_una */
	uint32_t plen; /* in: wanted, clamped to the frame */
};

static void copy_payload(const struct tcp_stack *t, const struct tcp_cb *cb, uint32_t off,
			 uint8_t *dst, uint32_t len)
{
	uint32_t i = t->srefs[cb->sref_tail].next;
	for (;;) {
		const struct tcp_sref *r = &t->srefs[i];
		if (off < r->len) {
			uint32_t n = MIN(r->len - off, len);
			memcpy(dst, r->base + off, n);
			dst += n;
			len -= n;
			off = 0;
			if (!len)
				return;
		} else {
			off -= r->len;
		}
		i = r->next;
	}
}

/* Build and send one segment; returns 0 and the payload length actually sent in
 * x->plen (FIN dropped if the payload had to be cut), or -E_AGAIN. */
static int emit(struct tcp_stack *t, struct tx *x)
{
	size_t cap = 0;
	uint8_t *buf = t->port->tx_begin(t->port_ctx, &cap);
	if (!buf) {
		t->st.tx_no_frame++;
		return -E_AGAIN;
	}
	if (cap < TCP_MIN_FRAME) {
		/* A port bug (see port.h): never write a header that may not fit. */
		t->st.tx_no_frame++;
		if (t->port->tx_abort)
			t->port->tx_abort(t->port_ctx, buf);
		return -E_AGAIN;
	}
	size_t hlen = TCP_HDR_LEN + (x->opt_mss ? 4u : 0u) + (x->opt_ws != TCP_WS_NONE ? 4u : 0u);
	if (x->plen > cap - hlen) {
		x->plen = (uint32_t)(cap - hlen);
		x->flags = (uint8_t)(x->flags & ~TCP_FIN);
	}
	struct wcur w = wcur_make(buf, cap);
	wcur_be16(&w, x->sport);
	wcur_be16(&w, x->dport);
	wcur_be32(&w, x->seq);
	wcur_be32(&w, x->ack);
	wcur_u8(&w, (uint8_t)((hlen / 4u) << 4));
	wcur_u8(&w, x->flags);
	wcur_be16(&w, x->wnd);
	wcur_be16(&w, 0); /* checksum, filled below */
	wcur_be16(&w, 0); /* urgent pointer: never used */
	if (x->opt_mss) {
		wcur_u8(&w, TCP_OPT_MSS);
		wcur_u8(&w, 4);
		wcur_be16(&w, x->opt_mss);
	}
	if (x->opt_ws != TCP_WS_NONE) {
		wcur_u8(&w, TCP_OPT_NOP);
		wcur_u8(&w, TCP_OPT_WS);
		wcur_u8(&w, 3);
		wcur_u8(&w, x->opt_ws);
	}
	if (x->plen)
		copy_payload(t, x->cb, x->off, buf + hlen, x->plen);
	size_t len = hlen + x->plen;
	uint32_t sum = net_csum_pseudo(x->src, x->dst, TCP_PROTO, (uint16_t)len);
	sum = net_csum_add(sum, buf, len);
	uint16_t c = net_csum_fold(sum);
	buf[16] = (uint8_t)(c >> 8);
	buf[17] = (uint8_t)c;
	t->st.out_segs++;
	t->st.out_bytes += x->plen;
	if (t->port->tx_send(t->port_ctx, x->src, x->dst, buf, len))
		t->st.tx_no_frame++;
	return 0;
}

static uint32_t rcv_ws(const struct tcp_stack *t, const struct tcp_cb *cb)
{
	return (cb->flags & TCP_F_WS) ? t->cfg.rcv_wscale : 0u;
}

uint32_t tcp_rcv_window(struct tcp_stack *t, struct tcp_cb *cb, bool commit)
{
	uint32_t ws = rcv_ws(t, cb);
	uint32_t maxw = 65535u << ws;
	uint32_t credit = t->up->credit(t->up_ctx, tcp_cb_id(t, cb));
	uint32_t wnd = (MIN(credit, maxw) >> ws) << ws;
	uint32_t cur = seq_gt(cb->rcv_adv, cb->rcv_nxt) ? cb->rcv_adv - cb->rcv_nxt : 0;
	uint32_t step = MIN((uint32_t)cb->mss, maxw / 2u);
	/* Never move the right edge left; move it right only in useful steps (receiver SWS
	 * avoidance, RFC 9293 3.8.6.2.2). */
	if (wnd < cur || (cur && wnd - cur < step))
		wnd = MIN(((cur + (1u << ws) - 1u) >> ws) << ws, maxw);
	if (commit)
		cb->rcv_adv = cb->rcv_nxt + wnd;
	return wnd;
}

static void tx_for_cb(struct tcp_stack *t, struct tcp_cb *cb, struct tx *x, uint32_t seq, uint8_t flags)
{
	memset(x, 0, sizeof *x);
	x->src = t->cfg.local_ip;
	x->dst = cb->raddr;
	x->sport = cb->lport;
	x->dport = cb->rport;
	x->seq = seq;
	x->ack = cb->rcv_nxt;
	x->flags = flags;
	x->wnd = (uint16_t)(tcp_rcv_window(t, cb, true) >> rcv_ws(t, cb));
	x->opt_ws = TCP_WS_NONE;
	x->cb = cb;
}

/* Any segment we send carries the ACK: nothing is owed any more. */
static void ack_sent(struct tcp_stack *t, struct tcp_cb *cb)
{
	if (cb->flags & (TCP_F_ACK_NOW | TCP_F_DELACK | TCP_F_ACK_HALF))
		t->st.merged_acks++;
	cb->flags = (uint16_t)(cb->flags & ~(TCP_F_ACK_NOW | TCP_F_DELACK | TCP_F_ACK_HALF));
}

static uint32_t rto_cur_ms(const struct tcp_stack *t, const struct tcp_cb *cb)
{
	uint32_t r = (uint32_t)cb->rto_ms << MIN(cb->backoff, 16u);
	return MIN(r, t->cfg.rto_max_ms);
}

static void sched(struct tcp_stack *t, struct tcp_cb *cb)
{
	uint32_t id = tcp_cb_id(t, cb);
	uint32_t exp = cb->rto_at;
	if ((cb->flags & TCP_F_DELACK) && tcp_tw_armed(&t->wheel, id) && seq_lt(cb->tmr.expires, exp))
		exp = cb->tmr.expires;
	tcp_tw_insert(&t->wheel, id, exp);
}

void tcp_rto_restart(struct tcp_stack *t, struct tcp_cb *cb)
{
	cb->flags = (uint16_t)((cb->flags | TCP_F_RTO) & ~TCP_F_PERSIST);
	cb->rto_at = t->now_tick + tcp_ms_to_ticks(t, rto_cur_ms(t, cb));
	sched(t, cb);
}

void tcp_rto_stop(struct tcp_stack *t, struct tcp_cb *cb)
{
	cb->flags = (uint16_t)(cb->flags & ~(TCP_F_RTO | TCP_F_PERSIST));
	if (!(cb->flags & TCP_F_DELACK))
		tcp_tw_cancel(&t->wheel, tcp_cb_id(t, cb));
}

static void persist_arm(struct tcp_stack *t, struct tcp_cb *cb)
{
	uint32_t ms = MAX(rto_cur_ms(t, cb), t->cfg.persist_min_ms);
	cb->flags = (uint16_t)((cb->flags | TCP_F_PERSIST) & ~TCP_F_RTO);
	cb->rto_at = t->now_tick + tcp_ms_to_ticks(t, MIN(ms, t->cfg.rto_max_ms));
	sched(t, cb);
}

static bool can_send_data(const struct tcp_cb *cb)
{
	return cb->state == TCPS_ESTABLISHED || cb->state == TCPS_CLOSE_WAIT ||
	       cb->state == TCPS_FIN_WAIT_1 || cb->state == TCPS_LAST_ACK || cb->state == TCPS_CLOSING;
}

void tcp_output(struct tcp_stack *t, struct tcp_cb *cb, bool force_ack)
{
	bool sent = false;
	if (cb->state == TCPS_FREE || (cb->flags & TCP_F_DEAD))
		return;
	while (can_send_data(cb)) {
		uint32_t used = cb->snd_nxt - cb->snd_una;
		uint32_t avail = seq_lt(cb->snd_nxt, cb->snd_end) ? cb->snd_end - cb->snd_nxt : 0;
		uint32_t wnd = MIN(cb->snd_wnd, cb->cwnd);
		uint32_t usable = wnd > used ? wnd - used : 0;
		uint32_t len = MIN(MIN(avail, usable), (uint32_t)cb->mss);
		bool fin = (cb->flags & TCP_F_CLOSE) && seq_leq(cb->snd_nxt, cb->snd_end) &&
			   cb->snd_nxt + len == cb->snd_end;
		if (!len && !fin)
			break;
		/* Sender SWS avoidance: no window-limited runt while data is in flight. */
		if (len < avail && len < cb->mss && used > 0)
			break;
		struct tx x;
		tx_for_cb(t, cb, &x, cb->snd_nxt, (uint8_t)(TCP_ACK | (fin ? TCP_FIN : 0) |
							    (len == avail && len ? TCP_PSH : 0)));
		x.off = used;
		x.plen = len;
		if (emit(t, &x)) {
			if (!(cb->flags & (TCP_F_RTO | TCP_F_PERSIST)))
				tcp_rto_restart(t, cb); /* retry from the timer */
			break;
		}
		len = x.plen;
		fin = x.flags & TCP_FIN;
		sent = true;
		ack_sent(t, cb);
		if (len && cb->snd_nxt == cb->snd_max && !(cb->flags & TCP_F_RTT)) {
			cb->flags = (uint16_t)(cb->flags | TCP_F_RTT);
			cb->rtt_seq = cb->snd_nxt;
			cb->rtt_ts = (uint16_t)t->now_ms;
		}
		if (cb->snd_nxt != cb->snd_max)
			t->st.retransmits++;
		cb->snd_nxt += len + (fin ? 1u : 0u);
		if (seq_gt(cb->snd_nxt, cb->snd_max))
			cb->snd_max = cb->snd_nxt;
		if (!(cb->flags & TCP_F_RTO))
			tcp_rto_restart(t, cb); /* RFC 6298 5.1 */
	}
	if (!sent && force_ack)
		tcp_out_ack(t, cb);
	/* Zero window with data waiting and nothing in flight: probe (RFC 9293 3.8.6.1). */
	if (can_send_data(cb) && cb->snd_wnd == 0 && seq_lt(cb->snd_nxt, cb->snd_end) &&
	    !(cb->flags & (TCP_F_RTO | TCP_F_PERSIST)))
		persist_arm(t, cb);
}

void tcp_out_ack(struct tcp_stack *t, struct tcp_cb *cb)
{
	struct tx x;
	if (cb->state == TCPS_FREE)
		return;
	tx_for_cb(t, cb, &x, cb->snd_nxt, TCP_ACK);
	if (emit(t, &x) == 0) {
		t->st.pure_acks++;
		cb->flags = (uint16_t)(cb->flags & ~(TCP_F_ACK_NOW | TCP_F_DELACK | TCP_F_ACK_HALF));
	}
}

static uint32_t retransmit_len(struct tcp_stack *t, struct tcp_cb *cb)
{
	uint32_t data = seq_lt(cb->snd_una, cb->snd_end) ? cb->snd_end - cb->snd_una : 0;
	uint32_t sent = cb->snd_max - cb->snd_una;
	uint32_t len = MIN(MIN(data, sent), (uint32_t)cb->mss);
	bool fin = (cb->flags & TCP_F_CLOSE) && seq_gt(cb->snd_max, cb->snd_end) &&
		   cb->snd_una + len == cb->snd_end;
	if (!len && !fin)
		return 0;
	struct tx x;
	tx_for_cb(t, cb, &x, cb->snd_una, (uint8_t)(TCP_ACK | (fin ? TCP_FIN : 0)));
	x.off = 0;
	x.plen = len;
	if (emit(t, &x))
		return 0;
	ack_sent(t, cb);
	t->st.retransmits++;
	cb->flags = (uint16_t)(cb->flags & ~TCP_F_RTT); /* Karn: never time a retransmission */
	return x.plen + ((x.flags & TCP_FIN) ? 1u : 0u);
}

void tcp_out_retransmit(struct tcp_stack *t, struct tcp_cb *cb)
{
	(void)retransmit_len(t, cb);
}

void tcp_out_rst_cb(struct tcp_stack *t, struct tcp_cb *cb)
{
	struct tx x;
	tx_for_cb(t, cb, &x, cb->snd_max, TCP_RST | TCP_ACK);
	x.wnd = 0;
	if (emit(t, &x) == 0)
		t->st.rst_sent++;
}

void tcp_out_rst_reply(struct tcp_stack *t, uint32_t src, uint32_t dst, const struct tcp_seg *s)
{
	if (s->flags & TCP_RST)
		return;
	if (!tcp_bucket_take(t, &t->rst_tb, t->cfg.rst_per_s, t->cfg.rst_burst)) {
		t->st.rst_limited++;
		return;
	}
	struct tx x;
	memset(&x, 0, sizeof x);
	x.src = dst;
	x.dst = src;
	x.sport = s->dport;
	x.dport = s->sport;
	x.opt_ws = TCP_WS_NONE;
	if (s->flags & TCP_ACK) {
		x.seq = s->ack;
		x.flags = TCP_RST;
	} else {
		uint32_t seglen = (uint32_t)s->len + ((s->flags & TCP_SYN) ? 1u : 0u) +
				  ((s->flags & TCP_FIN) ? 1u : 0u);
		x.ack = s->seq + seglen;
		x.flags = TCP_RST | TCP_ACK;
	}
	if (emit(t, &x) == 0)
		t->st.rst_sent++;
}

void tcp_out_challenge(struct tcp_stack *t, struct tcp_cb *cb)
{
	if (!tcp_bucket_take(t, &t->chal_tb, t->cfg.challenge_per_s, t->cfg.challenge_burst)) {
		t->st.challenge_limited++;
		return;
	}
	t->st.challenge_acks++;
	tcp_out_ack(t, cb);
}

void tcp_out_synack(struct tcp_stack *t, uint32_t src, uint32_t dst, const struct tcp_seg *s,
		    uint32_t iss, uint16_t mss, bool ws)
{
	(void)mss; /* the cookie carries the peer's MSS; we advertise ours */
	struct tx x;
	memset(&x, 0, sizeof x);
	x.src = dst;
	x.dst = src;
	x.sport = s->dport;
	x.dport = s->sport;
	x.seq = iss;
	x.ack = s->seq + 1;
	x.flags = TCP_SYN | TCP_ACK;
	x.wnd = t->cfg.syn_wnd;
	x.opt_mss = t->cfg.mss;
	x.opt_ws = ws ? t->cfg.rcv_wscale : TCP_WS_NONE;
	if (emit(t, &x) == 0)
		t->st.syn_cookie_sent++;
	else
		t->st.syn_dropped_no_frame++;
}

void tcp_ack_owed(struct tcp_stack *t, struct tcp_cb *cb, bool now)
{
	if (now) {
		cb->flags = (uint16_t)(cb->flags | TCP_F_ACK_NOW);
		if (cb->flags & TCP_F_PENDING)
			return;
		if (t->n_pending < t->cfg.max_pending_acks) {
			t->pending[t->n_pending++] = tcp_cb_id(t, cb);
			cb->flags = (uint16_t)(cb->flags | TCP_F_PENDING);
		} else {
			t->st.pending_full++;
			tcp_out_ack(t, cb);
		}
		return;
	}
	uint32_t id = tcp_cb_id(t, cb);
	uint32_t at = t->now_tick + tcp_ms_to_ticks(t, t->cfg.delack_ms);
	cb->flags = (uint16_t)(cb->flags | TCP_F_DELACK);
	if (!tcp_tw_armed(&t->wheel, id) || seq_gt(cb->tmr.expires, at))
		tcp_tw_insert(&t->wheel, id, at);
}

void tcp_rtt_sample(struct tcp_stack *t, struct tcp_cb *cb, uint32_t r)
{
	r = MIN(MAX(r, 1u), 8191u);
	uint32_t srtt8 = cb->srtt8, rttvar4 = cb->rttvar4;
	if (!srtt8) {
		srtt8 = r << 3;
		rttvar4 = r << 1;
	} else {
		uint32_t srtt = srtt8 >> 3;
		uint32_t d = srtt > r ? srtt - r : r - srtt;
		rttvar4 = rttvar4 - (rttvar4 >> 2) + d;
		srtt8 = srtt8 - (srtt8 >> 3) + r;
	}
	srtt8 = MIN(srtt8, 65535u);
	rttvar4 = MIN(rttvar4, 65535u);
	cb->srtt8 = (uint16_t)srtt8;
	cb->rttvar4 = (uint16_t)rttvar4;
	uint32_t rto = (srtt8 >> 3) + MAX(t->cfg.tick_ms, rttvar4);
	rto = MAX(rto, t->cfg.rto_min_ms);
	rto = MIN(rto, t->cfg.rto_max_ms);
	cb->rto_ms = (uint16_t)rto;
}

static void persist_fire(struct tcp_stack *t, struct tcp_cb *cb);

static void rto_fire(struct tcp_stack *t, struct tcp_cb *cb)
{
	if (cb->state == TCPS_FIN_WAIT_2) {
		t->st.timeouts++;
		tcp_out_rst_cb(t, cb);
		tcp_cb_release(t, cb, TCP_CLOSE_TIMEOUT, true);
		return;
	}
	t->st.rto_expired++;
	cb->backoff++;
	if (cb->backoff > t->cfg.max_retries) {
		t->st.timeouts++;
		tcp_out_rst_cb(t, cb);
		tcp_cb_release(t, cb, TCP_CLOSE_TIMEOUT, true);
		return;
	}
	uint32_t flight = cb->snd_max - cb->snd_una;
	if (cb->backoff == 1)
		cb->ssthresh = MAX(flight / 2u, 2u * cb->mss); /* RFC 5681 (4) */
	cb->cwnd = cb->mss;
	cb->flags = (uint16_t)(cb->flags & ~(TCP_F_RECOVERY | TCP_F_RTT));
	cb->dupacks = 0;
	cb->recover = cb->snd_max - 1u; /* RFC 6582 section 3.2 step 4 */
	tcp_rto_restart(t, cb);
	if (cb->snd_una == cb->snd_max) {
		/* Nothing was in flight: a send was refused by the port; try again. */
		tcp_output(t, cb, false);
		return;
	}
	if (cb->snd_wnd == 0 && seq_lt(cb->snd_una, cb->snd_end)) {
		/* The peer closed its window on data in flight: probe instead of counting
		 * retries, so a live peer with a full buffer is never timed out. */
		cb->snd_nxt = cb->snd_una;
		cb->backoff = 0;
		persist_fire(t, cb);
		return;
	}
	/* Go back N: one segment now, the rest as ACKs reopen cwnd. */
	uint32_t n = retransmit_len(t, cb);
	cb->snd_nxt = cb->snd_una + n;
}

static void persist_fire(struct tcp_stack *t, struct tcp_cb *cb)
{
	if (cb->snd_wnd > 0 || !seq_lt(cb->snd_una, cb->snd_end)) {
		cb->flags = (uint16_t)(cb->flags & ~TCP_F_PERSIST);
		tcp_output(t, cb, false);
		return;
	}
	struct tx x;
	tx_for_cb(t, cb, &x, cb->snd_una, TCP_ACK);
	x.off = 0;
	x.plen = 1;
	if (emit(t, &x) == 0) {
		t->st.persist_probes++;
		ack_sent(t, cb);
		if (x.plen && seq_gt(cb->snd_una + 1u, cb->snd_max))
			cb->snd_max = cb->snd_una + 1u;
	}
	if (cb->backoff < 15)
		cb->backoff++;
	persist_arm(t, cb);
}

void tcp_timer_fire(void *ctx, uint32_t idx)
{
	struct tcp_stack *t = ctx;
	struct tcp_cb *cb = &t->cbs[idx];
	if (cb->state == TCPS_FREE)
		return;
	if (cb->flags & TCP_F_DELACK) {
		cb->flags = (uint16_t)(cb->flags & ~TCP_F_DELACK);
		t->st.delayed_acks++;
		tcp_output(t, cb, true);
	}
	if (cb->state == TCPS_FREE || !(cb->flags & (TCP_F_RTO | TCP_F_PERSIST)))
		return;
	if (seq_lt(t->now_tick, cb->rto_at)) {
		if (!tcp_tw_armed(&t->wheel, idx))
			tcp_tw_insert(&t->wheel, idx, cb->rto_at);
		return;
	}
	if (cb->flags & TCP_F_PERSIST)
		persist_fire(t, cb);
	else
		rto_fire(t, cb);
}
