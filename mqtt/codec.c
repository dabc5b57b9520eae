/* SPDX-License-Identifier: MIT
 *
 * MQTT 3.1.1 codec (see codec.h). Owns the wire rules only: it must never keep state
 * between calls except in a caller's struct mqtt_framer, never read outside the given
 * buffer (all reads go through struct cur) and never trust a length it has not checked
 * against the bytes actually present.
 */
#include "mqtt/codec.h"

#include "lib/err.h"
#include "lib/mem.h"

/* ---- validation helpers -------------------------------------------------------------- */

bool mqtt_utf8_valid(const uint8_t *p, size_t len)
{
	size_t i = 0;
	while (i < len) {
		uint8_t c = p[i];
		uint32_t cp;
		size_t n;
		if (c == 0)
			return false; /* U+0000 [MQTT-1.5.3-2] */
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1fu;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0fu;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07u;
		} else {
			return false; /* continuation byte, overlong lead, or > U+10FFFF */
		}
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			uint8_t cc = p[i + k];
			if ((cc & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (cc & 0x3fu);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return false; /* overlong or out of range */
		if (cp >= 0xd800 && cp <= 0xdfff)
			return false; /* surrogate [MQTT-1.5.3-1] */
		i += n + 1;
	}
	return true;
}

bool mqtt_topic_valid(const uint8_t *p, size_t len)
{
	if (len == 0)
		return false; /* [MQTT-4.7.3-1] */
	for (size_t i = 0; i < len; i++)
		if (p[i] == '+' || p[i] == '#')
			return false; /* [MQTT-3.3.2-2] */
	return true;
}

bool mqtt_filter_match(const uint8_t *f, size_t fl, const uint8_t *t, size_t tl)
{
	size_t i = 0, j = 0;
	if (tl && t[0] == '$' && fl && (f[0] == '+' || f[0] == '#'))
		return false; /* [MQTT-4.7.2-1] */
	for (;;) {
		size_t fe = i, te = j;
		while (fe < fl && f[fe] != '/')
			fe++;
		if (fe - i == 1 && f[i] == '#')
			return true;
		if (j > tl)
			return false;
		while (te < tl && t[te] != '/')
			te++;
		bool plus = fe - i == 1 && f[i] == '+';
		if (!plus && (fe - i != te - j || (fe > i && memcmp(f + i, t + j, fe - i) != 0)))
			return false;
		bool fend = fe >= fl, tend = te >= tl;
		if (fend || tend) {
			if (fend && tend)
				return true;
			/* "a/#" matches "a" */
			return tend && !fend && fl - fe == 2 && f[fe + 1] == '#';
		}
		i = fe + 1;
		j = te + 1;
	}
}

bool mqtt_filter_valid(const uint8_t *p, size_t len)
{
	if (len == 0)
		return false; /* [MQTT-4.7.3-1] */
	size_t lvl_start = 0;
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '/') {
			lvl_start = i + 1;
			continue;
		}
		if (p[i] == '+' || p[i] == '#') {
			/* alone in its level [MQTT-4.7.1-2], [MQTT-4.7.1-3] */
			if (i != lvl_start || (i + 1 < len && p[i + 1] != '/'))
				return false;
			if (p[i] == '#' && i + 1 != len)
				return false; /* # must be last [MQTT-4.7.1-2] */
		}
	}
	return true;
}

/* ---- decoding ------------------------------------------------------------------------ */

int mqtt_fixed_header(const uint8_t *buf, size_t len, size_t *hdr_len, uint32_t *rem_len,
		      enum mqtt_rej *rej)
{
	uint32_t v = 0;
	*rej = MQTT_REJ_NONE;
	for (size_t i = 1; i <= 4; i++) {
		if (i >= len)
			return -E_NEED_MORE;
		uint8_t b = buf[i];
		v |= (uint32_t)(b & 0x7fu) << (7 * (i - 1));
		if (!(b & 0x80)) {
			/* minimal encoding: a multi-byte length never ends in a zero byte */
			if (i > 1 && b == 0) {
				*rej = MQTT_REJ_RLEN;
				return -E_PROTO;
			}
			*hdr_len = i + 1;
			*rem_len = v;
			return 0;
		}
	}
	*rej = MQTT_REJ_RLEN; /* a fifth length byte */
	return -E_PROTO;
}

bool mqtt_get_str(struct cur *c, struct mqtt_str *s)
{
	uint16_t n = cur_be16(c);
	const uint8_t *p = cur_ptr(c, n);
	if (!cur_ok(c))
		return false;
	s->p = p;
	s->len = n;
	return true;
}

#define REJ(site)                  \
	do {                       \
		*rej = (site);     \
		return -E_PROTO;   \
	} while (0)

static int decode_connect(struct cur *c, struct mqtt_connect *k, enum mqtt_rej *rej)
{
	struct mqtt_str name;
	if (!mqtt_get_str(c, &name))
		REJ(MQTT_REJ_SHORT);
	/* MQTT 3.1 ("MQIsdp", level 3) is answered CONNACK 0x01 like any other level, so its
	 * clients stop instead of reconnecting in a loop; any other name closes. */
	bool v31 = name.len == 6 && memcmp(name.p, "MQIsdp", 6) == 0;
	if (!v31 && (name.len != 4 || memcmp(name.p, "MQTT", 4) != 0))
		REJ(MQTT_REJ_PROTO_NAME); /* [MQTT-3.1.2-1] */
	uint8_t level = cur_u8(c);
	uint8_t fl = cur_u8(c);
	k->keepalive_s = cur_be16(c);
	if (!cur_ok(c))
		REJ(MQTT_REJ_SHORT);
	if (level != 4 || v31)
		REJ(MQTT_REJ_PROTO_LEVEL); /* [MQTT-3.1.2-2] */
	if (fl & 0x01)
		REJ(MQTT_REJ_CONNECT_FLAGS); /* [MQTT-3.1.2-3] */
	k->clean = (fl & 0x02) != 0;
	k->will = (fl & 0x04) != 0;
	k->will_qos = (uint8_t)((fl >> 3) & 3);
	k->will_retain = (fl & 0x20) != 0;
	k->has_password = (fl & 0x40) != 0;
	k->has_username = (fl & 0x80) != 0;
	if (!k->will && (k->will_qos || k->will_retain))
		REJ(MQTT_REJ_CONNECT_FLAGS); /* [MQTT-3.1.2-11], -13, -15 */
	if (k->will_qos == 3)
		REJ(MQTT_REJ_CONNECT_FLAGS); /* [MQTT-3.1.2-14] */
	if (k->has_password && !k->has_username)
		REJ(MQTT_REJ_CONNECT_FLAGS); /* [MQTT-3.1.2-22] */
	if (!mqtt_get_str(c, &k->client_id))
		REJ(MQTT_REJ_SHORT);
	if (!mqtt_utf8_valid(k->client_id.p, k->client_id.len))
		REJ(MQTT_REJ_UTF8); /* [MQTT-3.1.3-4] */
	if (k->will) {
		if (!mqtt_get_str(c, &k->will_topic) || !mqtt_get_str(c, &k->will_msg))
			REJ(MQTT_REJ_SHORT);
		if (!mqtt_utf8_valid(k->will_topic.p, k->will_topic.len))
			REJ(MQTT_REJ_UTF8);
		if (!mqtt_topic_valid(k->will_topic.p, k->will_topic.len))
			REJ(MQTT_REJ_TOPIC);
	}
	if (k->has_username) {
		if (!mqtt_get_str(c, &k->username))
			REJ(MQTT_REJ_SHORT);
		if (!mqtt_utf8_valid(k->username.p, k->username.len))
			REJ(MQTT_REJ_UTF8); /* [MQTT-3.1.3-11] */
	}
	if (k->has_password && !mqtt_get_str(c, &k->password))
		REJ(MQTT_REJ_SHORT);
	if (cur_left(c))
		REJ(MQTT_REJ_TRAILING);
	if (k->client_id.len == 0 && !k->clean)
		REJ(MQTT_REJ_CLIENT_ID); /* [MQTT-3.1.3-8] */
	return 0;
}

static int decode_publish(struct cur *c, uint8_t flags, struct mqtt_publish *p, enum mqtt_rej *rej)
{
	p->qos = (uint8_t)((flags >> 1) & 3);
	p->dup = (flags & 0x08) != 0;
	p->retain = (flags & 0x01) != 0;
	if (p->qos == 3)
		REJ(MQTT_REJ_QOS); /* [MQTT-3.3.1-4] */
	if (p->qos == 0 && p->dup)
		REJ(MQTT_REJ_QOS); /* [MQTT-3.3.1-2] */
	if (!mqtt_get_str(c, &p->topic))
		REJ(MQTT_REJ_SHORT);
	if (!mqtt_utf8_valid(p->topic.p, p->topic.len))
		REJ(MQTT_REJ_UTF8); /* [MQTT-3.3.2-1] */
	if (!mqtt_topic_valid(p->topic.p, p->topic.len))
		REJ(MQTT_REJ_TOPIC); /* [MQTT-3.3.2-2] */
	p->pid = 0;
	if (p->qos) {
		p->pid = cur_be16(c);
		if (!cur_ok(c))
			REJ(MQTT_REJ_SHORT);
		if (p->pid == 0)
			REJ(MQTT_REJ_PID); /* [MQTT-2.3.1-1] */
	}
	p->payload_len = cur_left(c);
	p->payload = c->buf + c->pos;
	return 0;
}

static int decode_filters(struct cur *c, bool with_qos, struct mqtt_filters *f,
			  enum mqtt_rej *rej)
{
	f->p = c->buf + c->pos;
	f->len = cur_left(c);
	f->with_qos = with_qos;
	f->n = 0;
	while (cur_left(c)) {
		struct mqtt_str s;
		if (!mqtt_get_str(c, &s))
			REJ(MQTT_REJ_SHORT);
		if (!mqtt_utf8_valid(s.p, s.len))
			REJ(MQTT_REJ_UTF8); /* [MQTT-1.5.3-1] */
		if (!mqtt_filter_valid(s.p, s.len))
			REJ(MQTT_REJ_FILTER); /* [MQTT-4.7.1-1..3] */
		if (with_qos) {
			uint8_t q = cur_u8(c);
			if (!cur_ok(c))
				REJ(MQTT_REJ_SHORT);
			if (q > 2)
				REJ(MQTT_REJ_SUB_QOS); /* [MQTT-3.8.3-4] */
		}
		if (f->n == UINT16_MAX)
			REJ(MQTT_REJ_TOO_BIG);
		f->n++;
	}
	if (f->n == 0)
		REJ(MQTT_REJ_EMPTY); /* [MQTT-3.8.3-3], [MQTT-3.10.3-2] */
	return 0;
}

bool mqtt_filters_next(struct mqtt_filters *it, struct mqtt_str *filter, uint8_t *qos)
{
	struct cur c = cur_make(it->p, it->len);
	if (!cur_left(&c))
		return false;
	if (!mqtt_get_str(&c, filter))
		return false;
	*qos = it->with_qos ? cur_u8(&c) : 0;
	if (!cur_ok(&c))
		return false;
	it->p += c.pos;
	it->len -= c.pos;
	return true;
}

int mqtt_decode(const uint8_t *buf, size_t len, struct mqtt_packet *out, enum mqtt_rej *rej)
{
	size_t hl;
	uint32_t rl;
	int rc = mqtt_fixed_header(buf, len, &hl, &rl, rej);
	memset(out, 0, sizeof *out);
	if (rc == -E_NEED_MORE)
		REJ(MQTT_REJ_RLEN);
	if (rc)
		return rc;
	if ((size_t)rl != len - hl)
		REJ(MQTT_REJ_RLEN); /* the length lies */
	out->type = (uint8_t)(buf[0] >> 4);
	out->flags = (uint8_t)(buf[0] & 0x0f);
	struct cur c = cur_make(buf + hl, rl);
	/* Fixed-header flags: reserved values are fixed per type [MQTT-2.2.2-1], [MQTT-2.2.2-2]. */
	switch (out->type) {
	case MQTT_CONNECT:
		if (out->flags)
			REJ(MQTT_REJ_FLAGS);
		return decode_connect(&c, &out->u.connect, rej);
	case MQTT_PUBLISH:
		rc = decode_publish(&c, out->flags, &out->u.publish, rej);
		out->pid = out->u.publish.pid;
		return rc;
	case MQTT_PUBACK:
	case MQTT_PUBREC:
	case MQTT_PUBREL:
	case MQTT_PUBCOMP:
		if (out->flags != (out->type == MQTT_PUBREL ? 2 : 0))
			REJ(MQTT_REJ_FLAGS); /* [MQTT-3.6.1-1] for PUBREL */
		if (rl != 2)
			REJ(rl < 2 ? MQTT_REJ_SHORT : MQTT_REJ_TRAILING);
		out->pid = cur_be16(&c);
		if (out->pid == 0)
			REJ(MQTT_REJ_PID);
		return 0;
	case MQTT_SUBSCRIBE:
	case MQTT_UNSUBSCRIBE:
		if (out->flags != 2)
			REJ(MQTT_REJ_FLAGS); /* [MQTT-3.8.1-1], [MQTT-3.10.1-1] */
		out->pid = cur_be16(&c);
		if (!cur_ok(&c))
			REJ(MQTT_REJ_SHORT);
		if (out->pid == 0)
			REJ(MQTT_REJ_PID); /* [MQTT-2.3.1-1] */
		return decode_filters(&c, out->type == MQTT_SUBSCRIBE, &out->u.filters, rej);
	case MQTT_PINGREQ:
	case MQTT_DISCONNECT:
		if (out->flags)
			REJ(MQTT_REJ_FLAGS);
		if (rl)
			REJ(MQTT_REJ_TRAILING);
		return 0;
	default:
		REJ(MQTT_REJ_TYPE); /* 0, 15 and server-to-client types */
	}
}

/* ---- encoding ------------------------------------------------------------------------ */

size_t mqtt_vbi_size(size_t n)
{
	return n < 128 ? 1 : n < 16384 ? 2 : n < 2097152 ? 3 : 4;
}

void mqtt_vbi_put(struct wcur *w, size_t n)
{
	do {
		uint8_t b = (uint8_t)(n & 0x7f);
		n >>= 7;
		wcur_u8(w, n ? (uint8_t)(b | 0x80) : b);
	} while (n);
}

static int fin(struct wcur *w)
{
	return wcur_ok(w) ? 0 : -E_OVERFLOW;
}

/* Check that the whole packet fits before writing anything, so a failure leaves no half
 * packet behind (the wcur error flag is still set for the caller). */
static bool room(struct wcur *w, size_t body)
{
	if (body > MQTT_MAX_REMAINING || w->err || wcur_left(w) < 1 + mqtt_vbi_size(body) + body) {
		w->err = true;
		return false;
	}
	return true;
}

int mqtt_encode_connack(struct wcur *w, bool session_present, uint8_t rc)
{
	if (!room(w, 2))
		return -E_OVERFLOW;
	wcur_u8(w, MQTT_CONNACK << 4);
	wcur_u8(w, 2);
	wcur_u8(w, session_present ? 1 : 0);
	wcur_u8(w, rc);
	return fin(w);
}

size_t mqtt_publish_size(uint16_t topic_len, size_t payload_len, uint8_t qos)
{
	size_t body = 2u + topic_len + (qos ? 2u : 0u);
	if (payload_len > MQTT_MAX_REMAINING - body)
		return 0;
	body += payload_len;
	return 1 + mqtt_vbi_size(body) + body;
}

int mqtt_encode_publish(struct wcur *w, const uint8_t *topic, uint16_t topic_len,
			const uint8_t *payload, size_t payload_len, uint8_t qos, bool dup,
			bool retain, uint16_t pid)
{
	size_t total = mqtt_publish_size(topic_len, payload_len, qos);
	if (qos > 2 || total == 0 || !room(w, total - 1 - mqtt_vbi_size(total)) ||
	    wcur_left(w) < total) {
		w->err = true;
		return -E_OVERFLOW;
	}
	size_t body = 2u + topic_len + (qos ? 2u : 0u) + payload_len;
	wcur_u8(w, (uint8_t)(MQTT_PUBLISH << 4 | (dup ? 8 : 0) | qos << 1 | (retain ? 1 : 0)));
	mqtt_vbi_put(w, body);
	wcur_be16(w, topic_len);
	wcur_bytes(w, topic, topic_len);
	if (qos)
		wcur_be16(w, pid);
	wcur_bytes(w, payload, payload_len);
	return fin(w);
}

int mqtt_encode_ack(struct wcur *w, enum mqtt_type type, uint16_t pid)
{
	if (!room(w, 2))
		return -E_OVERFLOW;
	wcur_u8(w, (uint8_t)((unsigned)type << 4 | (type == MQTT_PUBREL ? 2u : 0u)));
	wcur_u8(w, 2);
	wcur_be16(w, pid);
	return fin(w);
}

int mqtt_encode_suback(struct wcur *w, uint16_t pid, const uint8_t *codes, size_t n)
{
	if (!room(w, 2 + n))
		return -E_OVERFLOW;
	wcur_u8(w, MQTT_SUBACK << 4);
	mqtt_vbi_put(w, 2 + n);
	wcur_be16(w, pid);
	wcur_bytes(w, codes, n);
	return fin(w);
}

int mqtt_encode_pingresp(struct wcur *w)
{
	return mqtt_encode_simple(w, MQTT_PINGRESP);
}

int mqtt_encode_simple(struct wcur *w, enum mqtt_type type)
{
	if (!room(w, 0))
		return -E_OVERFLOW;
	wcur_u8(w, (uint8_t)((unsigned)type << 4));
	wcur_u8(w, 0);
	return fin(w);
}

static void put_str(struct wcur *w, const void *p, size_t n)
{
	if (n > UINT16_MAX) {
		w->err = true;
		return;
	}
	wcur_be16(w, (uint16_t)n);
	wcur_bytes(w, p, n);
}

int mqtt_encode_connect(struct wcur *w, const struct mqtt_connect_args *a)
{
	const char *cid = a->client_id ? a->client_id : "";
	size_t body = 10 + 2 + strlen(cid);
	uint8_t fl = a->clean ? 0x02 : 0;
	if (a->will_topic) {
		body += 4 + strlen(a->will_topic) + a->will_msg_len;
		fl = (uint8_t)(fl | 0x04 | (a->will_qos & 3) << 3 | (a->will_retain ? 0x20 : 0));
	}
	if (a->username) {
		body += 2 + strlen(a->username);
		fl |= 0x80;
	}
	if (a->password) {
		body += 2u + a->password_len;
		fl |= 0x40;
	}
	if (!room(w, body))
		return -E_OVERFLOW;
	wcur_u8(w, MQTT_CONNECT << 4);
	mqtt_vbi_put(w, body);
	put_str(w, "MQTT", 4);
	wcur_u8(w, 4);
	wcur_u8(w, fl);
	wcur_be16(w, a->keepalive_s);
	put_str(w, cid, strlen(cid));
	if (a->will_topic) {
		put_str(w, a->will_topic, strlen(a->will_topic));
		put_str(w, a->will_msg, a->will_msg_len);
	}
	if (a->username)
		put_str(w, a->username, strlen(a->username));
	if (a->password)
		put_str(w, a->password, a->password_len);
	return fin(w);
}

int mqtt_encode_subscribe(struct wcur *w, uint16_t pid, const char *const *filters,
			  const uint8_t *qos, size_t n)
{
	size_t body = 2;
	for (size_t i = 0; i < n; i++)
		body += 2 + strlen(filters[i]) + (qos ? 1u : 0u);
	if (!room(w, body))
		return -E_OVERFLOW;
	wcur_u8(w, (uint8_t)((qos ? MQTT_SUBSCRIBE : MQTT_UNSUBSCRIBE) << 4 | 2));
	mqtt_vbi_put(w, body);
	wcur_be16(w, pid);
	for (size_t i = 0; i < n; i++) {
		put_str(w, filters[i], strlen(filters[i]));
		if (qos)
			wcur_u8(w, qos[i]);
	}
	return fin(w);
}

/* ---- framer -------------------------------------------------------------------------- */

/* A reassembly block: taken when a packet is split across chunks, given back when it has
 * been consumed. While the fixed header itself is incomplete, need is 0 and data holds up
 * to 5 header bytes; once it is known the block is replaced by one of exactly need bytes. */
struct mqtt_reasm {
	uint32_t need;  /* whole packet size, or 0 while the header is incomplete */
	uint32_t have;  /* bytes of it in data */
	uint8_t ready;  /* data holds a packet returned by the last call */
	uint8_t data[];
};

#define REASM_HDR_MAX 5u

/* The address marks a failed framer; never allocated, written or freed. */
static struct mqtt_reasm framer_failed;

static size_t reasm_size(const struct mqtt_reasm *r)
{
	return sizeof *r + (r->need ? r->need : REASM_HDR_MAX);
}

static struct mqtt_reasm *reasm_new(const struct mqtt_alloc *a, uint32_t need)
{
	struct mqtt_reasm *r = a->alloc(a->ctx, sizeof *r + (need ? need : REASM_HDR_MAX));
	if (r) {
		r->need = need;
		r->have = 0;
		r->ready = 0;
	}
	return r;
}

void mqtt_framer_reset(struct mqtt_framer *f, const struct mqtt_alloc *a)
{
	if (f->r && f->r != &framer_failed)
		a->free(a->ctx, f->r, reasm_size(f->r));
	f->r = NULL;
}

bool mqtt_framer_busy(const struct mqtt_framer *f)
{
	return f->r && f->r != &framer_failed;
}

static int framer_fail(struct mqtt_framer *f, const struct mqtt_alloc *a, int err)
{
	mqtt_framer_reset(f, a);
	f->r = &framer_failed;
	return err;
}

int mqtt_framer_next(struct mqtt_framer *f, struct cur *in, uint32_t max_packet,
		     const struct mqtt_alloc *a, const uint8_t **pkt, size_t *pkt_len,
		     enum mqtt_rej *rej)
{
	size_t hl;
	uint32_t rl;
	int rc;
	*rej = MQTT_REJ_NONE;
	if (f->r == &framer_failed)
		return -E_CLOSED;
	if (f->r && f->r->ready)
		mqtt_framer_reset(f, a); /* the packet returned last time has been consumed */
	if (!cur_ok(in))
		return -E_INVAL;
	if (!f->r) {
		/* Fast path: a whole packet in the chunk is returned in place. */
		const uint8_t *p = in->buf + in->pos;
		size_t left = cur_left(in);
		if (left == 0)
			return -E_NEED_MORE;
		rc = mqtt_fixed_header(p, left, &hl, &rl, rej);
		if (rc == -E_PROTO)
			return framer_fail(f, a, rc);
		if (rc == 0) {
			if ((uint64_t)hl + rl > max_packet) {
				*rej = MQTT_REJ_TOO_BIG;
				return framer_fail(f, a, -E_RANGE);
			}
			if (hl + rl <= left) {
				*pkt = p;
				*pkt_len = hl + rl;
				cur_skip(in, hl + rl);
				return 0;
			}
			/* header whole, body split: one block of the packet's exact size */
			f->r = reasm_new(a, (uint32_t)(hl + rl));
			if (!f->r)
				return framer_fail(f, a, -E_NOMEM);
		} else {
			f->r = reasm_new(a, 0); /* the header itself is split */
			if (!f->r)
				return framer_fail(f, a, -E_NOMEM);
		}
	}
	/* Slow path: gather a split header, then the body, into a block of exact size. */
	while (f->r->need == 0) {
		struct mqtt_reasm *h = f->r;
		if (!cur_left(in))
			return -E_NEED_MORE;
		h->data[h->have++] = cur_u8(in);
		rc = mqtt_fixed_header(h->data, h->have, &hl, &rl, rej);
		if (rc == -E_NEED_MORE)
			continue;
		if (rc)
			return framer_fail(f, a, rc);
		if ((uint64_t)hl + rl > max_packet) {
			*rej = MQTT_REJ_TOO_BIG;
			return framer_fail(f, a, -E_RANGE);
		}
		struct mqtt_reasm *r = reasm_new(a, (uint32_t)(hl + rl));
		if (!r)
			return framer_fail(f, a, -E_NOMEM);
		memcpy(r->data, h->data, hl);
		r->have = (uint32_t)hl;
		mqtt_framer_reset(f, a);
		f->r = r;
	}
	struct mqtt_reasm *r = f->r;
	size_t take = MIN(cur_left(in), (size_t)(r->need - r->have));
	cur_bytes(in, r->data + r->have, take);
	r->have += (uint32_t)take;
	if (r->have < r->need)
		return -E_NEED_MORE;
	r->ready = 1;
	*pkt = r->data;
	*pkt_len = r->need;
	return 0;
}
