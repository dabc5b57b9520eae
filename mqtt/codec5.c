/* SPDX-License-Identifier: MIT
 *
 * MQTT 5.0 packet codec (see codec5.h). Owns the variable headers and payloads of
 * OASIS MQTT 5.0 chapter 3; property blocks are props.c's, the fixed header and the
 * string checks codec.c's. Invariants:
 *  1. Every byte read goes through a struct cur bounded by the packet's remaining length,
 *     itself checked equal to the bytes given before anything else is read.
 *  2. A decoded view holds no pointer outside the packet, and a filter list holds only
 *     entries already validated, so mqtt5_filters_next re-walks it without re-checking
 *     (it still reads through a cursor and stops at anything odd).
 *  3. An encoder computes the whole packet's size first and writes nothing unless all of
 *     it fits; what a client encoder writes decodes to a view mqtt5_packet_equal to its
 *     input when the input is one mqtt5_decode accepts.
 * Nothing here allocates, keeps state between calls, or asserts on input.
 */
#include "mqtt/codec5.h"

#include "lib/err.h"
#include "lib/mem.h"

/* ---- rejections ---------------------------------------------------------------------- */

enum mqtt_rc mqtt5_rej_rc(const struct mqtt5_rej_info *info)
{
	switch (info->site) {
	case MQTT5_REJ_NONE:
		return MQTT_RC_SUCCESS;
	case MQTT5_REJ_PROPS:
	case MQTT5_REJ_WILL_PROPS:
		return mqtt_props_rej_rc(info->props);
	case MQTT5_REJ_PROTO_NAME:
	case MQTT5_REJ_PROTO_LEVEL:
		return MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION; /* [MQTT-3.1.2-2] */
	case MQTT5_REJ_TOO_MANY:
		return MQTT_RC_IMPLEMENTATION_SPECIFIC; /* well formed, beyond our counters */
	/* Could not be parsed (4.13.1: Malformed Packet). */
	case MQTT5_REJ_RLEN:
	case MQTT5_REJ_TYPE:
	case MQTT5_REJ_FLAGS:
	case MQTT5_REJ_SHORT:
	case MQTT5_REJ_TRAILING:
	case MQTT5_REJ_UTF8:
	case MQTT5_REJ_CONNECT_FLAGS:
	case MQTT5_REJ_QOS:
	case MQTT5_REJ_SUB_RESERVED:
		return MQTT_RC_MALFORMED_PACKET;
	/* Parsed, but holds what the protocol forbids (4.13.1: Protocol Error). */
	case MQTT5_REJ_DIRECTION:
	case MQTT5_REJ_TOPIC:
	case MQTT5_REJ_TOPIC_EMPTY:
	case MQTT5_REJ_SUB_ID:
	case MQTT5_REJ_PID:
	case MQTT5_REJ_REASON:
	case MQTT5_REJ_FILTER:
	case MQTT5_REJ_EMPTY:
	case MQTT5_REJ_SUB_QOS:
	case MQTT5_REJ_RETAIN_HANDLING:
	case MQTT5_REJ_SHARE:
	case MQTT5_REJ_SHARE_NO_LOCAL:
	case MQTT5_REJ_AUTH_METHOD:
	case MQTT5_REJ__COUNT:
	default:
		return MQTT_RC_PROTOCOL_ERROR;
	}
}

/* ---- reason codes each packet may carry (tables of 3.4.2.1 .. 3.15.2.1) --------------- */

static const uint8_t rc_puback[] = { 0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99 };
static const uint8_t rc_pubrel[] = { 0x00, 0x92 }; /* PUBREL and PUBCOMP */
/* DISCONNECT codes a client may send ("Sent by: Client" or "Client or Server"). */
static const uint8_t rc_disconnect[] = { 0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x90,
					 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99 };
static const uint8_t rc_auth[] = { 0x00, 0x18, 0x19 };

static bool rc_in(uint8_t rc, const uint8_t *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == rc)
			return true;
	return false;
}

/* ---- decoding ------------------------------------------------------------------------ */

#define REJ(s)                          \
	do {                            \
		rej->site = (s);        \
		return -E_PROTO;        \
	} while (0)

static int get_props(struct cur *c, enum mqtt_props_pkt k, struct mqtt_props *p,
		     enum mqtt5_rej site, struct mqtt5_rej_info *rej)
{
	if (mqtt_props_decode(c, k, p, &rej->props) != 0)
		REJ(site);
	return 0;
}

static int decode_connect(struct cur *c, struct mqtt5_connect *k, struct mqtt5_rej_info *rej)
{
	struct mqtt_str name;
	if (!mqtt_get_str(c, &name))
		REJ(MQTT5_REJ_SHORT);
	if (name.len != 4 || memcmp(name.p, "MQTT", 4) != 0)
		REJ(MQTT5_REJ_PROTO_NAME); /* [MQTT-3.1.2-1] */
	uint8_t level = cur_u8(c);
	uint8_t fl = cur_u8(c);
	k->keepalive_s = cur_be16(c);
	if (!cur_ok(c))
		REJ(MQTT5_REJ_SHORT);
	if (level != MQTT5_LEVEL)
		REJ(MQTT5_REJ_PROTO_LEVEL); /* [MQTT-3.1.2-2] */
	if (fl & 0x01)
		REJ(MQTT5_REJ_CONNECT_FLAGS); /* [MQTT-3.1.2-3] */
	k->clean_start = (fl & 0x02) != 0;
	k->will = (fl & 0x04) != 0;
	k->will_qos = (uint8_t)((fl >> 3) & 3);
	k->will_retain = (fl & 0x20) != 0;
	k->has_password = (fl & 0x40) != 0; /* 5.0: independent of the user name 3.1.2.9 */
	k->has_username = (fl & 0x80) != 0;
	if (!k->will && (k->will_qos || k->will_retain))
		REJ(MQTT5_REJ_CONNECT_FLAGS); /* [MQTT-3.1.2-11], [MQTT-3.1.2-13] */
	if (k->will_qos == 3)
		REJ(MQTT5_REJ_CONNECT_FLAGS); /* [MQTT-3.1.2-12] */
	int rc = get_props(c, MQTT_PROPS_CONNECT, &k->props, MQTT5_REJ_PROPS, rej);
	if (rc)
		return rc;
	if (!mqtt_get_str(c, &k->client_id))
		REJ(MQTT5_REJ_SHORT);
	if (!mqtt_utf8_valid(k->client_id.p, k->client_id.len))
		REJ(MQTT5_REJ_UTF8); /* [MQTT-3.1.3-4] */
	if (k->will) {
		rc = get_props(c, MQTT_PROPS_WILL, &k->will_props, MQTT5_REJ_WILL_PROPS, rej);
		if (rc)
			return rc;
		if (!mqtt_get_str(c, &k->will_topic) || !mqtt_get_str(c, &k->will_payload))
			REJ(MQTT5_REJ_SHORT);
		if (!mqtt_utf8_valid(k->will_topic.p, k->will_topic.len))
			REJ(MQTT5_REJ_UTF8); /* [MQTT-3.1.3-11] */
		if (!mqtt_topic_valid(k->will_topic.p, k->will_topic.len))
			REJ(MQTT5_REJ_TOPIC);
	}
	if (k->has_username) {
		if (!mqtt_get_str(c, &k->username))
			REJ(MQTT5_REJ_SHORT);
		if (!mqtt_utf8_valid(k->username.p, k->username.len))
			REJ(MQTT5_REJ_UTF8); /* [MQTT-3.1.3-12] */
	}
	if (k->has_password && !mqtt_get_str(c, &k->password))
		REJ(MQTT5_REJ_SHORT);
	if (cur_left(c))
		REJ(MQTT5_REJ_TRAILING);
	return 0;
}

static int decode_publish(struct cur *c, uint8_t flags, struct mqtt5_publish *p,
			  struct mqtt5_rej_info *rej)
{
	p->qos = (uint8_t)((flags >> 1) & 3);
	p->dup = (flags & 0x08) != 0;
	p->retain = (flags & 0x01) != 0;
	if (p->qos == 3)
		REJ(MQTT5_REJ_QOS); /* [MQTT-3.3.1-4] */
	if (p->qos == 0 && p->dup)
		REJ(MQTT5_REJ_QOS); /* [MQTT-3.3.1-2] */
	if (!mqtt_get_str(c, &p->topic))
		REJ(MQTT5_REJ_SHORT);
	if (!mqtt_utf8_valid(p->topic.p, p->topic.len))
		REJ(MQTT5_REJ_UTF8); /* [MQTT-3.3.2-1] */
	if (p->topic.len && !mqtt_topic_valid(p->topic.p, p->topic.len))
		REJ(MQTT5_REJ_TOPIC); /* [MQTT-3.3.2-2] */
	if (p->qos) {
		p->pid = cur_be16(c);
		if (!cur_ok(c))
			REJ(MQTT5_REJ_SHORT);
		if (p->pid == 0)
			REJ(MQTT5_REJ_PID); /* [MQTT-2.2.1-3] */
	}
	int rc = get_props(c, MQTT_PROPS_PUBLISH, &p->props, MQTT5_REJ_PROPS, rej);
	if (rc)
		return rc;
	if (p->topic.len == 0 && !(p->props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS)))
		REJ(MQTT5_REJ_TOPIC_EMPTY); /* 3.3.2.1 */
	if (p->props.sub_ids.n)
		REJ(MQTT5_REJ_SUB_ID); /* [MQTT-3.3.4-6] */
	p->payload_len = cur_left(c);
	p->payload = c->buf + c->pos;
	return 0;
}

/* Reason code and properties that may both be omitted: none left means reason 0 and no
 * properties, one byte the reason alone when `reason_alone` (acks, DISCONNECT), more the
 * reason then a property block filling the rest. */
static int decode_reason(struct cur *c, enum mqtt_props_pkt k, bool reason_alone,
			 struct mqtt5_reason *r, struct mqtt5_rej_info *rej)
{
	if (!cur_left(c))
		return 0;
	r->reason = cur_u8(c);
	if (!cur_left(c)) {
		if (!reason_alone)
			REJ(MQTT5_REJ_SHORT); /* AUTH: the Property Length must follow */
		return 0;
	}
	int rc = get_props(c, k, &r->props, MQTT5_REJ_PROPS, rej);
	if (rc)
		return rc;
	if (cur_left(c))
		REJ(MQTT5_REJ_TRAILING);
	return 0;
}

/* 1 shared and well formed, 0 not shared, -1 shared and malformed. */
int mqtt5_share_split(const uint8_t *p, uint16_t len, struct mqtt_str *share,
		      struct mqtt_str *match)
{
	static const char pre[] = "$share/";
	const size_t pl = sizeof pre - 1;
	share->p = NULL;
	share->len = 0;
	match->p = p;
	match->len = len;
	if (len < pl || memcmp(p, pre, pl) != 0)
		return 0;
	size_t i = pl;
	while (i < len && p[i] != '/') {
		if (p[i] == '+' || p[i] == '#')
			return -1; /* [MQTT-4.8.2-2] */
		i++;
	}
	if (i == pl || i >= len)
		return -1; /* empty ShareName, or no '/' after it [MQTT-4.8.2-1], -2 */
	const uint8_t *f = p + i + 1;
	size_t fl = len - i - 1;
	if (!mqtt_filter_valid(f, fl))
		return -1; /* a Topic Filter must follow [MQTT-4.8.2-2] */
	share->p = p + pl;
	share->len = (uint16_t)(i - pl);
	match->p = f;
	match->len = (uint16_t)fl;
	return 1;
}

static int decode_filters(struct cur *c, bool with_opts, struct mqtt5_filters *f,
			  struct mqtt5_rej_info *rej)
{
	f->p = c->buf + c->pos;
	f->len = cur_left(c);
	f->with_opts = with_opts;
	f->n = 0;
	while (cur_left(c)) {
		struct mqtt_str s, share, match;
		if (!mqtt_get_str(c, &s))
			REJ(MQTT5_REJ_SHORT);
		if (!mqtt_utf8_valid(s.p, s.len))
			REJ(MQTT5_REJ_UTF8); /* [MQTT-3.8.3-1], [MQTT-3.10.3-1] */
		if (!mqtt_filter_valid(s.p, s.len))
			REJ(MQTT5_REJ_FILTER); /* 4.7.1 */
		int shared = mqtt5_share_split(s.p, s.len, &share, &match);
		if (shared < 0)
			REJ(MQTT5_REJ_SHARE);
		if (with_opts) {
			uint8_t o = cur_u8(c);
			if (!cur_ok(c))
				REJ(MQTT5_REJ_SHORT);
			if (o & MQTT5_SUB_RESERVED)
				REJ(MQTT5_REJ_SUB_RESERVED); /* [MQTT-3.8.3-5] */
			if ((o & MQTT5_SUB_QOS_MASK) == 3)
				REJ(MQTT5_REJ_SUB_QOS); /* 3.8.3.1 */
			if ((o & MQTT5_SUB_RH_MASK) >> MQTT5_SUB_RH_SHIFT == 3)
				REJ(MQTT5_REJ_RETAIN_HANDLING); /* 3.8.3.1 */
			if (shared && (o & MQTT5_SUB_NO_LOCAL))
				REJ(MQTT5_REJ_SHARE_NO_LOCAL); /* [MQTT-3.8.3-4] */
		}
		if (f->n == UINT16_MAX)
			REJ(MQTT5_REJ_TOO_MANY);
		f->n++;
	}
	if (f->n == 0)
		REJ(MQTT5_REJ_EMPTY); /* [MQTT-3.8.3-2], [MQTT-3.10.3-2] */
	return 0;
}

bool mqtt5_filters_next(struct mqtt5_filters *it, struct mqtt5_sub *sub)
{
	struct cur c = cur_make(it->p, it->p ? it->len : 0);
	if (!cur_left(&c))
		return false;
	memset(sub, 0, sizeof *sub);
	if (!mqtt_get_str(&c, &sub->filter))
		return false;
	uint8_t o = it->with_opts ? cur_u8(&c) : 0;
	if (!cur_ok(&c) || mqtt5_share_split(sub->filter.p, sub->filter.len, &sub->share,
					     &sub->match) < 0)
		return false;
	sub->qos = o & MQTT5_SUB_QOS_MASK;
	sub->no_local = (o & MQTT5_SUB_NO_LOCAL) != 0;
	sub->retain_as_published = (o & MQTT5_SUB_RAP) != 0;
	sub->retain_handling = (uint8_t)((o & MQTT5_SUB_RH_MASK) >> MQTT5_SUB_RH_SHIFT);
	it->p += c.pos;
	it->len -= c.pos;
	return true;
}

uint8_t mqtt5_sub_opts(const struct mqtt5_sub *s)
{
	return (uint8_t)((s->qos & MQTT5_SUB_QOS_MASK) | (s->no_local ? MQTT5_SUB_NO_LOCAL : 0) |
			 (s->retain_as_published ? MQTT5_SUB_RAP : 0) |
			 ((s->retain_handling & 3u) << MQTT5_SUB_RH_SHIFT));
}

int mqtt5_decode(const uint8_t *buf, size_t len, struct mqtt5_packet *out,
		 struct mqtt5_rej_info *rej)
{
	size_t hl;
	uint32_t rl;
	enum mqtt_rej r3;
	memset(out, 0, sizeof *out);
	rej->site = MQTT5_REJ_NONE;
	rej->props = MQTT_PROPS_REJ_NONE;
	rej->type = 0;
	if (mqtt_fixed_header(buf, len, &hl, &rl, &r3) != 0)
		REJ(MQTT5_REJ_RLEN); /* incomplete (a whole packet was promised) or malformed */
	if ((size_t)rl != len - hl)
		REJ(MQTT5_REJ_RLEN); /* the length lies */
	out->type = (uint8_t)(buf[0] >> 4);
	out->flags = (uint8_t)(buf[0] & 0x0f);
	rej->type = out->type;
	struct cur c = cur_make(buf + hl, rl);
	int rc;
	/* Fixed-header flags are fixed per type but for PUBLISH [MQTT-2.1.3-1]. */
	switch (out->type) {
	case MQTT_CONNECT:
		if (out->flags)
			REJ(MQTT5_REJ_FLAGS);
		return decode_connect(&c, &out->u.connect, rej);
	case MQTT_PUBLISH:
		rc = decode_publish(&c, out->flags, &out->u.publish, rej);
		out->pid = out->u.publish.pid;
		return rc;
	case MQTT_PUBACK:
	case MQTT_PUBREC:
	case MQTT_PUBREL:
	case MQTT_PUBCOMP: {
		if (out->flags != (out->type == MQTT_PUBREL ? 2 : 0))
			REJ(MQTT5_REJ_FLAGS); /* [MQTT-3.6.1-1] for PUBREL */
		out->pid = cur_be16(&c);
		if (!cur_ok(&c))
			REJ(MQTT5_REJ_SHORT);
		if (out->pid == 0)
			REJ(MQTT5_REJ_PID);
		rc = decode_reason(&c, MQTT_PROPS_PUBACK, true, &out->u.reason, rej);
		if (rc)
			return rc;
		bool rel = out->type == MQTT_PUBREL || out->type == MQTT_PUBCOMP;
		if (rel ? !rc_in(out->u.reason.reason, rc_pubrel, sizeof rc_pubrel)
			: !rc_in(out->u.reason.reason, rc_puback, sizeof rc_puback))
			REJ(MQTT5_REJ_REASON); /* 3.4.2.1, 3.5.2.1, 3.6.2.1, 3.7.2.1 */
		return 0;
	}
	case MQTT_SUBSCRIBE:
	case MQTT_UNSUBSCRIBE: {
		bool sub = out->type == MQTT_SUBSCRIBE;
		if (out->flags != 2)
			REJ(MQTT5_REJ_FLAGS); /* [MQTT-3.8.1-1], [MQTT-3.10.1-1] */
		out->pid = cur_be16(&c);
		if (!cur_ok(&c))
			REJ(MQTT5_REJ_SHORT);
		if (out->pid == 0)
			REJ(MQTT5_REJ_PID);
		rc = get_props(&c, sub ? MQTT_PROPS_SUBSCRIBE : MQTT_PROPS_UNSUBSCRIBE,
			       &out->u.sub.props, MQTT5_REJ_PROPS, rej);
		if (rc)
			return rc;
		return decode_filters(&c, sub, &out->u.sub.filters, rej);
	}
	case MQTT_PINGREQ:
		if (out->flags)
			REJ(MQTT5_REJ_FLAGS);
		if (rl)
			REJ(MQTT5_REJ_TRAILING);
		return 0;
	case MQTT_DISCONNECT:
	case MQTT5_AUTH: {
		bool disc = out->type == MQTT_DISCONNECT;
		if (out->flags)
			REJ(MQTT5_REJ_FLAGS);
		rc = decode_reason(&c, disc ? MQTT_PROPS_DISCONNECT : MQTT_PROPS_AUTH, disc,
				   &out->u.reason, rej);
		if (rc)
			return rc;
		uint8_t why = out->u.reason.reason;
		if (disc ? !rc_in(why, rc_disconnect, sizeof rc_disconnect)
			 : !rc_in(why, rc_auth, sizeof rc_auth))
			REJ(MQTT5_REJ_REASON); /* 3.14.2.1, 3.15.2.1 */
		/* Continue or re-authenticate names its method 3.15.2.2.2; a bare Success
		 * (remaining length 0) cannot, and is the caller's to refuse from a client. */
		if (!disc && why != MQTT_RC_SUCCESS &&
		    !(out->u.reason.props.present & MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD)))
			REJ(MQTT5_REJ_AUTH_METHOD);
		return 0;
	}
	case MQTT_CONNACK:
	case MQTT_SUBACK:
	case MQTT_UNSUBACK:
	case MQTT_PINGRESP:
		REJ(MQTT5_REJ_DIRECTION);
	default:
		REJ(MQTT5_REJ_TYPE); /* 0 */
	}
}

int mqtt5_connect_level(const uint8_t *buf, size_t len, uint8_t *level)
{
	size_t hl;
	uint32_t rl;
	enum mqtt_rej r3;
	struct mqtt_str name;
	if (mqtt_fixed_header(buf, len, &hl, &rl, &r3) != 0 || (size_t)rl != len - hl ||
	    buf[0] != MQTT_CONNECT << 4)
		return -E_PROTO;
	struct cur c = cur_make(buf + hl, rl);
	if (!mqtt_get_str(&c, &name))
		return -E_PROTO;
	bool ok = (name.len == 4 && memcmp(name.p, "MQTT", 4) == 0) ||
		  (name.len == 6 && memcmp(name.p, "MQIsdp", 6) == 0);
	uint8_t v = cur_u8(&c);
	if (!ok || !cur_ok(&c))
		return -E_PROTO;
	*level = v;
	return 0;
}

/* ---- comparison ---------------------------------------------------------------------- */

static bool str_eq(const struct mqtt_str *a, const struct mqtt_str *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static bool filters_eq(const struct mqtt5_filters *a, const struct mqtt5_filters *b)
{
	if (a->n != b->n || a->with_opts != b->with_opts)
		return false;
	struct mqtt5_filters ia = *a, ib = *b;
	struct mqtt5_sub sa, sb;
	for (uint16_t i = 0; i < a->n; i++) {
		if (!mqtt5_filters_next(&ia, &sa) || !mqtt5_filters_next(&ib, &sb))
			return false;
		if (!str_eq(&sa.filter, &sb.filter) || mqtt5_sub_opts(&sa) != mqtt5_sub_opts(&sb))
			return false;
	}
	return true;
}

bool mqtt5_packet_equal(const struct mqtt5_packet *a, const struct mqtt5_packet *b)
{
	if (a->type != b->type || a->flags != b->flags || a->pid != b->pid)
		return false;
	switch (a->type) {
	case MQTT_CONNECT: {
		const struct mqtt5_connect *x = &a->u.connect, *y = &b->u.connect;
		return x->keepalive_s == y->keepalive_s && x->will_qos == y->will_qos &&
		       x->clean_start == y->clean_start && x->will == y->will &&
		       x->will_retain == y->will_retain && x->has_username == y->has_username &&
		       x->has_password == y->has_password && str_eq(&x->client_id, &y->client_id) &&
		       str_eq(&x->will_topic, &y->will_topic) &&
		       str_eq(&x->will_payload, &y->will_payload) &&
		       str_eq(&x->username, &y->username) && str_eq(&x->password, &y->password) &&
		       mqtt_props_equal(&x->props, &y->props) &&
		       mqtt_props_equal(&x->will_props, &y->will_props);
	}
	case MQTT_PUBLISH: {
		const struct mqtt5_publish *x = &a->u.publish, *y = &b->u.publish;
		return x->qos == y->qos && x->dup == y->dup && x->retain == y->retain &&
		       x->pid == y->pid && str_eq(&x->topic, &y->topic) &&
		       x->payload_len == y->payload_len &&
		       (x->payload_len == 0 || memcmp(x->payload, y->payload, x->payload_len) == 0) &&
		       mqtt_props_equal(&x->props, &y->props);
	}
	case MQTT_PUBACK:
	case MQTT_PUBREC:
	case MQTT_PUBREL:
	case MQTT_PUBCOMP:
	case MQTT_DISCONNECT:
	case MQTT5_AUTH:
		return a->u.reason.reason == b->u.reason.reason &&
		       mqtt_props_equal(&a->u.reason.props, &b->u.reason.props);
	case MQTT_SUBSCRIBE:
	case MQTT_UNSUBSCRIBE:
		return filters_eq(&a->u.sub.filters, &b->u.sub.filters) &&
		       mqtt_props_equal(&a->u.sub.props, &b->u.sub.props);
	default:
		return true;
	}
}

/* ---- encoding ------------------------------------------------------------------------ */

static const struct mqtt_props no_props; /* an empty block: one zero byte */

static void put_str(struct wcur *w, const struct mqtt_str *s)
{
	wcur_be16(w, s->len);
	wcur_bytes(w, s->p, s->len);
}

/* Checked size arithmetic: adds b to *acc, false once past the remaining-length limit. */
static bool add(size_t *acc, size_t b)
{
	if (b > MQTT_MAX_REMAINING || *acc > MQTT_MAX_REMAINING - b)
		return false;
	*acc += b;
	return true;
}

/* Bytes of p's block (Property Length included); 0 when too large or not allowed in k. */
static size_t props_size(const struct mqtt_props *p, enum mqtt_props_pkt k)
{
	if (!p)
		return 1;
	if (!mqtt_props_fit(p, k))
		return 0;
	return mqtt_props_len(p);
}

static bool props_empty(const struct mqtt_props *p)
{
	return !p || mqtt_props_len(p) == 1;
}

static size_t total_of(size_t body)
{
	return body > MQTT_MAX_REMAINING ? 0 : 1 + mqtt_vbi_size(body) + body;
}

/* Is there room for the whole packet? Sets w->err when not, so nothing is written. */
static int room(struct wcur *w, size_t body)
{
	if (w->err || body > MQTT_MAX_REMAINING || wcur_left(w) < total_of(body)) {
		w->err = true;
		return -E_OVERFLOW;
	}
	return 0;
}

static void put_hdr(struct wcur *w, uint8_t first, size_t body)
{
	wcur_u8(w, first);
	mqtt_vbi_put(w, body);
}

static int fin(struct wcur *w)
{
	return wcur_ok(w) ? 0 : -E_OVERFLOW;
}

/* Body sizes, or SIZE_MAX when an argument cannot be encoded (-E_INVAL). */
#define BAD SIZE_MAX

static size_t connack_body(const struct mqtt_props *props)
{
	size_t ps = props_size(props, MQTT_PROPS_CONNACK);
	size_t body = 2;
	return ps && add(&body, ps) ? body : BAD;
}

size_t mqtt5_connack_size(const struct mqtt_props *props)
{
	size_t b = connack_body(props);
	return b == BAD ? 0 : total_of(b);
}

int mqtt5_encode_connack(struct wcur *w, bool session_present, uint8_t reason,
			 const struct mqtt_props *props)
{
	size_t body = connack_body(props);
	if (body == BAD)
		return -E_INVAL;
	if (room(w, body))
		return -E_OVERFLOW;
	put_hdr(w, MQTT_CONNACK << 4, body);
	wcur_u8(w, session_present ? 1 : 0);
	wcur_u8(w, reason);
	if (mqtt_props_write(w, props ? props : &no_props))
		return -E_OVERFLOW;
	return fin(w);
}

static size_t publish_body(const struct mqtt5_publish *p)
{
	size_t ps = props_size(&p->props, MQTT_PROPS_PUBLISH);
	size_t body = 2u + p->topic.len + (p->qos ? 2u : 0u);
	if (p->qos > 2 || !ps || !add(&body, ps) || !add(&body, p->payload_len))
		return BAD;
	return body;
}

size_t mqtt5_publish_size(const struct mqtt5_publish *p)
{
	size_t b = publish_body(p);
	return b == BAD ? 0 : total_of(b);
}

int mqtt5_encode_publish(struct wcur *w, const struct mqtt5_publish *p)
{
	size_t body = publish_body(p);
	if (body == BAD)
		return -E_INVAL;
	if (room(w, body))
		return -E_OVERFLOW;
	put_hdr(w, (uint8_t)(MQTT_PUBLISH << 4 | (p->dup ? 8 : 0) | p->qos << 1 | (p->retain ? 1 : 0)),
		body);
	put_str(w, &p->topic);
	if (p->qos)
		wcur_be16(w, p->pid);
	if (mqtt_props_write(w, &p->props))
		return -E_OVERFLOW;
	wcur_bytes(w, p->payload, p->payload_len);
	return fin(w);
}

/* Reason code and properties that may be omitted: `fixed` bytes before them. */
static size_t reason_body(size_t fixed, uint8_t reason, const struct mqtt_props *props,
			  enum mqtt_props_pkt k, bool reason_alone)
{
	size_t body = fixed;
	if (props_empty(props) && (reason == 0 || reason_alone))
		return body + (reason ? 1u : 0u);
	size_t ps = props_size(props, k);
	return ps && add(&body, 1 + ps) ? body : BAD;
}

static int put_reason(struct wcur *w, size_t body, size_t fixed, uint8_t reason,
		      const struct mqtt_props *props)
{
	if (body == fixed)
		return fin(w);
	wcur_u8(w, reason);
	if (body > fixed + 1 && mqtt_props_write(w, props ? props : &no_props))
		return -E_OVERFLOW;
	return fin(w);
}

size_t mqtt5_ack_size(uint8_t reason, const struct mqtt_props *props)
{
	size_t b = reason_body(2, reason, props, MQTT_PROPS_PUBACK, true);
	return b == BAD ? 0 : total_of(b);
}

int mqtt5_encode_ack(struct wcur *w, enum mqtt_type type, uint16_t pid, uint8_t reason,
		     const struct mqtt_props *props)
{
	if (type < MQTT_PUBACK || type > MQTT_PUBCOMP)
		return -E_INVAL;
	size_t body = reason_body(2, reason, props, MQTT_PROPS_PUBACK, true);
	if (body == BAD)
		return -E_INVAL;
	if (room(w, body))
		return -E_OVERFLOW;
	put_hdr(w, (uint8_t)((unsigned)type << 4 | (type == MQTT_PUBREL ? 2u : 0u)), body);
	wcur_be16(w, pid);
	return put_reason(w, body, 2, reason, props);
}

size_t mqtt5_disconnect_size(uint8_t reason, const struct mqtt_props *props)
{
	size_t b = reason_body(0, reason, props, MQTT_PROPS_DISCONNECT, true);
	return b == BAD ? 0 : total_of(b);
}

int mqtt5_encode_disconnect(struct wcur *w, uint8_t reason, const struct mqtt_props *props)
{
	size_t body = reason_body(0, reason, props, MQTT_PROPS_DISCONNECT, true);
	if (body == BAD)
		return -E_INVAL;
	if (room(w, body))
		return -E_OVERFLOW;
	put_hdr(w, MQTT_DISCONNECT << 4, body);
	return put_reason(w, body, 0, reason, props);
}

int mqtt5_encode_auth(struct wcur *w, uint8_t reason, const struct mqtt_props *props)
{
	size_t body = reason_body(0, reason, props, MQTT_PROPS_AUTH, false);
	if (body == BAD)
		return -E_INVAL;
	if (room(w, body))
		return -E_OVERFLOW;
	put_hdr(w, MQTT5_AUTH << 4, body);
	return put_reason(w, body, 0, reason, props);
}

static size_t suback_body(const struct mqtt_props *props, enum mqtt_props_pkt k, size_t n)
{
	size_t ps = props_size(props, k);
	size_t body = 2;
	return ps && add(&body, ps) && add(&body, n) ? body : BAD;
}

size_t mqtt5_suback_size(const struct mqtt_props *props, size_t n)
{
	/* SUBACK and UNSUBACK allow the same properties (Reason String, User Property) */
	size_t b = suback_body(props, MQTT_PROPS_SUBACK, n);
	return b == BAD ? 0 : total_of(b);
}

static int encode_xack(struct wcur *w, enum mqtt_type type, enum mqtt_props_pkt k, uint16_t pid,
		       const struct mqtt_props *props, const uint8_t *codes, size_t n)
{
	size_t body = suback_body(props, k, n);
	if (body == BAD)
		return -E_INVAL;
	if (room(w, body))
		return -E_OVERFLOW;
	put_hdr(w, (uint8_t)((unsigned)type << 4), body);
	wcur_be16(w, pid);
	if (mqtt_props_write(w, props ? props : &no_props))
		return -E_OVERFLOW;
	wcur_bytes(w, codes, n);
	return fin(w);
}

int mqtt5_encode_suback(struct wcur *w, uint16_t pid, const struct mqtt_props *props,
			const uint8_t *codes, size_t n)
{
	return encode_xack(w, MQTT_SUBACK, MQTT_PROPS_SUBACK, pid, props, codes, n);
}

int mqtt5_encode_unsuback(struct wcur *w, uint16_t pid, const struct mqtt_props *props,
			  const uint8_t *codes, size_t n)
{
	return encode_xack(w, MQTT_UNSUBACK, MQTT_PROPS_UNSUBACK, pid, props, codes, n);
}

/* ---- client-side encoders ------------------------------------------------------------ */

static bool add_str(size_t *acc, const struct mqtt_str *s)
{
	return add(acc, 2u + s->len);
}

int mqtt5_encode_connect(struct wcur *w, const struct mqtt5_connect *k)
{
	size_t body = 10; /* name (6), level, flags, keep alive */
	size_t ps = props_size(&k->props, MQTT_PROPS_CONNECT);
	size_t wps = k->will ? props_size(&k->will_props, MQTT_PROPS_WILL) : 0;
	if (!ps || (k->will && (!wps || k->will_qos > 2)))
		return -E_INVAL;
	bool ok = add(&body, ps) && add_str(&body, &k->client_id);
	if (k->will)
		ok = ok && add(&body, wps) && add_str(&body, &k->will_topic) &&
		     add_str(&body, &k->will_payload);
	if (k->has_username)
		ok = ok && add_str(&body, &k->username);
	if (k->has_password)
		ok = ok && add_str(&body, &k->password);
	if (!ok)
		return -E_INVAL;
	if (room(w, body))
		return -E_OVERFLOW;
	uint8_t fl = (uint8_t)((k->clean_start ? 0x02 : 0) | (k->has_password ? 0x40 : 0) |
			       (k->has_username ? 0x80 : 0));
	if (k->will)
		fl = (uint8_t)(fl | 0x04 | k->will_qos << 3 | (k->will_retain ? 0x20 : 0));
	static const struct mqtt_str name = { (const uint8_t *)"MQTT", 4 };
	put_hdr(w, MQTT_CONNECT << 4, body);
	put_str(w, &name);
	wcur_u8(w, MQTT5_LEVEL);
	wcur_u8(w, fl);
	wcur_be16(w, k->keepalive_s);
	if (mqtt_props_write(w, &k->props))
		return -E_OVERFLOW;
	put_str(w, &k->client_id);
	if (k->will) {
		if (mqtt_props_write(w, &k->will_props))
			return -E_OVERFLOW;
		put_str(w, &k->will_topic);
		put_str(w, &k->will_payload);
	}
	if (k->has_username)
		put_str(w, &k->username);
	if (k->has_password)
		put_str(w, &k->password);
	return fin(w);
}

static int encode_subs(struct wcur *w, bool sub, uint16_t pid, const struct mqtt_props *props,
		       const struct mqtt5_sub *subs, const struct mqtt_str *filters, size_t n)
{
	size_t ps = props_size(props, sub ? MQTT_PROPS_SUBSCRIBE : MQTT_PROPS_UNSUBSCRIBE);
	size_t body = 2;
	if (!ps || !add(&body, ps))
		return -E_INVAL;
	for (size_t i = 0; i < n; i++)
		if (!add_str(&body, sub ? &subs[i].filter : &filters[i]) ||
		    !add(&body, sub ? 1u : 0u))
			return -E_INVAL;
	if (room(w, body))
		return -E_OVERFLOW;
	put_hdr(w, (uint8_t)((sub ? MQTT_SUBSCRIBE : MQTT_UNSUBSCRIBE) << 4 | 2), body);
	wcur_be16(w, pid);
	if (mqtt_props_write(w, props ? props : &no_props))
		return -E_OVERFLOW;
	for (size_t i = 0; i < n; i++) {
		put_str(w, sub ? &subs[i].filter : &filters[i]);
		if (sub)
			wcur_u8(w, mqtt5_sub_opts(&subs[i]));
	}
	return fin(w);
}

int mqtt5_encode_subscribe(struct wcur *w, uint16_t pid, const struct mqtt_props *props,
			   const struct mqtt5_sub *subs, size_t n)
{
	return encode_subs(w, true, pid, props, subs, NULL, n);
}

int mqtt5_encode_unsubscribe(struct wcur *w, uint16_t pid, const struct mqtt_props *props,
			     const struct mqtt_str *filters, size_t n)
{
	return encode_subs(w, false, pid, props, NULL, filters, n);
}
