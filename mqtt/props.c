/* SPDX-License-Identifier: MIT
 *
 * MQTT 5.0 property blocks (see props.h). Owns the wire rules of 2.2.2 only.
 * Invariants:
 *  1. Every byte read goes through a struct cur bounded by the Property Length, which is
 *     itself checked against the bytes left before the block is split off.
 *  2. A decoded view holds no pointer outside the block it was decoded from, and a
 *     list's [p, p + span) holds only whole, already validated properties, so the
 *     iterators re-walk it without re-validating (they still read through a cursor).
 *  3. The encoder checks the whole block fits before writing its first byte; its output
 *     decodes (for values the decoder accepts) to a view mqtt_props_equal to its input.
 * Nothing here allocates, keeps state between calls, or asserts on input.
 */
#include "mqtt/props.h"

#include "lib/err.h"
#include "lib/mem.h"

#define VBI_MAX 268435455u /* largest value four varint bytes hold */

struct prop_info {
	uint8_t type;  /* enum mqtt_prop_type */
	uint16_t pkts; /* MQTT_PK_* of the packets it may appear in */
};

#define PROPS_INFO_(name, id, t, k) [id] = { (uint8_t)(t), (uint16_t)(k) },
static const struct prop_info prop_tab[MQTT_PROP_ID_MAX + 1] = { MQTT_PROPS_TABLE(PROPS_INFO_) };
#undef PROPS_INFO_

#define PROPS_COUNT_(name, id, t, k) +1
STATIC_ASSERT(0 MQTT_PROPS_TABLE(PROPS_COUNT_) == MQTT_PROPS_N_IDS, "27 identifiers in 5.0");
#undef PROPS_COUNT_
STATIC_ASSERT(MQTT_PROPS__COUNT <= 16, "packet kinds fit prop_info.pkts");

enum mqtt_prop_type mqtt_prop_type(uint8_t id)
{
	return id <= MQTT_PROP_ID_MAX ? (enum mqtt_prop_type)prop_tab[id].type : MQTT_PT_NONE;
}

bool mqtt_prop_allowed(uint8_t id, enum mqtt_props_pkt k)
{
	return id <= MQTT_PROP_ID_MAX && (unsigned)k < MQTT_PROPS__COUNT &&
	       (prop_tab[id].pkts & (1u << k)) != 0;
}

enum mqtt_rc mqtt_props_rej_rc(enum mqtt_props_rej rej)
{
	/* 2.2.2.2 and 1.5: what cannot be parsed as the table says is malformed; a parsed
	 * value the rules forbid (twice, 0, not 0/1) is a protocol error. */
	return rej >= MQTT_PROPS_REJ_DUP ? MQTT_RC_PROTOCOL_ERROR : MQTT_RC_MALFORMED_PACKET;
}

/* ---- variable byte integers (1.5.5) -------------------------------------------------- */

/* 0, or -1 when the bytes end first, or -2 when longer than 4 bytes or not minimal. */
static int vbi_get(struct cur *c, uint32_t *v)
{
	uint32_t x = 0;
	for (unsigned i = 0; i < 4; i++) {
		uint8_t b = cur_u8(c);
		if (!cur_ok(c))
			return -1;
		x |= (uint32_t)(b & 0x7fu) << (7 * i);
		if (!(b & 0x80)) {
			if (i > 0 && b == 0)
				return -2; /* [MQTT-1.5.5-1] minimal encoding */
			*v = x;
			return 0;
		}
	}
	return -2;
}

/* ---- decoding ------------------------------------------------------------------------ */

#define REJ(site)                  \
	do {                       \
		*rej = (site);     \
		return -E_PROTO;   \
	} while (0)

static void list_add(struct mqtt_props_list *l, const uint8_t *start, const uint8_t *end)
{
	if (!l->n)
		l->p = start;
	l->span = (size_t)(end - l->p);
	l->len += (size_t)(end - start);
	l->n++;
}

/* Parse one property at b's position into *out; the identifier has been checked. */
static int decode_one(struct cur *b, uint8_t id, enum mqtt_props_pkt k, struct mqtt_props *out,
		      enum mqtt_props_rej *rej)
{
	enum mqtt_prop_type t = (enum mqtt_prop_type)prop_tab[id].type;
	const uint8_t *start = b->buf + b->pos - 1;
	uint32_t v = 0;
	struct mqtt_str s = { NULL, 0 }, s2 = { NULL, 0 };
	switch (t) {
	case MQTT_PT_BYTE:
		v = cur_u8(b);
		break;
	case MQTT_PT_U16:
		v = cur_be16(b);
		break;
	case MQTT_PT_U32:
		v = cur_be32(b);
		break;
	case MQTT_PT_VARINT: {
		int rc = vbi_get(b, &v);
		if (rc == -2)
			REJ(MQTT_PROPS_REJ_VARINT);
		break;
	}
	case MQTT_PT_UTF8:
	case MQTT_PT_BINARY:
		(void)mqtt_get_str(b, &s);
		break;
	case MQTT_PT_PAIR:
		if (mqtt_get_str(b, &s))
			(void)mqtt_get_str(b, &s2);
		break;
	case MQTT_PT_NONE:
	default:
		REJ(MQTT_PROPS_REJ_ID);
	}
	if (!cur_ok(b))
		REJ(MQTT_PROPS_REJ_SHORT);
	if ((t == MQTT_PT_UTF8 || t == MQTT_PT_PAIR) &&
	    (!mqtt_utf8_valid(s.p, s.len) || !mqtt_utf8_valid(s2.p, s2.len)))
		REJ(MQTT_PROPS_REJ_UTF8); /* 1.5.4, [MQTT-1.5.4-1..2] */

	uint64_t bit = MQTT_PROP_BIT(id);
	bool once = id != MQTT_PROP_USER && !(id == MQTT_PROP_SUB_ID && k == MQTT_PROPS_PUBLISH);
	if (once && (out->present & bit))
		REJ(MQTT_PROPS_REJ_DUP); /* "a Protocol Error to include ... more than once" */
	bool first = !(out->present & bit);
	out->present |= bit;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	switch ((enum mqtt_prop_id)id) {
	case MQTT_PROP_PAYLOAD_FORMAT:
		if (v > 1)
			REJ(MQTT_PROPS_REJ_BOOL); /* 3.3.2.3.2: 0 unspecified bytes, 1 UTF-8 */
		out->payload_format = v8;
		break;
	case MQTT_PROP_MESSAGE_EXPIRY:
		out->message_expiry_s = v;
		break;
	case MQTT_PROP_CONTENT_TYPE:
		out->content_type = s;
		break;
	case MQTT_PROP_RESPONSE_TOPIC:
		if (!mqtt_topic_valid(s.p, s.len))
			REJ(MQTT_PROPS_REJ_TOPIC); /* a Topic Name: [MQTT-3.3.2-14], [MQTT-3.1.3-11] */
		out->response_topic = s;
		break;
	case MQTT_PROP_CORRELATION_DATA:
		out->correlation_data = s;
		break;
	case MQTT_PROP_SUB_ID:
		if (v == 0)
			REJ(MQTT_PROPS_REJ_ZERO); /* 3.8.2.1.2: 1..268435455 */
		if (first)
			out->sub_id = v;
		list_add(&out->sub_ids, start, b->buf + b->pos);
		break;
	case MQTT_PROP_SESSION_EXPIRY:
		out->session_expiry_s = v;
		break;
	case MQTT_PROP_ASSIGNED_CLIENT_ID:
		out->assigned_client_id = s;
		break;
	case MQTT_PROP_SERVER_KEEPALIVE:
		out->server_keepalive_s = v16;
		break;
	case MQTT_PROP_AUTH_METHOD:
		out->auth_method = s;
		break;
	case MQTT_PROP_AUTH_DATA:
		out->auth_data = s;
		break;
	case MQTT_PROP_REQUEST_PROBLEM_INFO:
		if (v > 1)
			REJ(MQTT_PROPS_REJ_BOOL); /* 3.1.2.11.7 */
		out->request_problem_info = v8;
		break;
	case MQTT_PROP_WILL_DELAY:
		out->will_delay_s = v;
		break;
	case MQTT_PROP_REQUEST_RESPONSE_INFO:
		if (v > 1)
			REJ(MQTT_PROPS_REJ_BOOL); /* 3.1.2.11.6 */
		out->request_response_info = v8;
		break;
	case MQTT_PROP_RESPONSE_INFO:
		out->response_info = s;
		break;
	case MQTT_PROP_SERVER_REFERENCE:
		out->server_reference = s;
		break;
	case MQTT_PROP_REASON_STRING:
		out->reason_string = s;
		break;
	case MQTT_PROP_RECEIVE_MAX:
		if (v == 0)
			REJ(MQTT_PROPS_REJ_ZERO); /* 3.1.2.11.3, 3.2.2.3.3 */
		out->receive_max = v16;
		break;
	case MQTT_PROP_TOPIC_ALIAS_MAX:
		out->topic_alias_max = v16; /* any value; 0: no aliases */
		break;
	case MQTT_PROP_TOPIC_ALIAS:
		if (v == 0)
			REJ(MQTT_PROPS_REJ_ZERO); /* [MQTT-3.3.2-8] */
		out->topic_alias = v16;
		break;
	case MQTT_PROP_MAX_QOS:
		if (v > 1)
			REJ(MQTT_PROPS_REJ_BOOL); /* 3.2.2.3.4: absent means 2 */
		out->max_qos = v8;
		break;
	case MQTT_PROP_RETAIN_AVAILABLE:
		if (v > 1)
			REJ(MQTT_PROPS_REJ_BOOL); /* 3.2.2.3.5 */
		out->retain_available = v8;
		break;
	case MQTT_PROP_USER:
		list_add(&out->user, start, b->buf + b->pos);
		break;
	case MQTT_PROP_MAX_PACKET_SIZE:
		if (v == 0)
			REJ(MQTT_PROPS_REJ_ZERO); /* 3.1.2.11.4, 3.2.2.3.6 */
		out->max_packet_size = v;
		break;
	case MQTT_PROP_WILDCARD_SUB_AVAILABLE:
		if (v > 1)
			REJ(MQTT_PROPS_REJ_BOOL); /* 3.2.2.3.11 */
		out->wildcard_sub_available = v8;
		break;
	case MQTT_PROP_SUB_ID_AVAILABLE:
		if (v > 1)
			REJ(MQTT_PROPS_REJ_BOOL); /* 3.2.2.3.12 */
		out->sub_id_available = v8;
		break;
	case MQTT_PROP_SHARED_SUB_AVAILABLE:
		if (v > 1)
			REJ(MQTT_PROPS_REJ_BOOL); /* 3.2.2.3.13 */
		out->shared_sub_available = v8;
		break;
	default:
		REJ(MQTT_PROPS_REJ_ID);
	}
	return 0;
}

int mqtt_props_decode(struct cur *c, enum mqtt_props_pkt k, struct mqtt_props *out,
		      enum mqtt_props_rej *rej)
{
	uint32_t plen;
	memset(out, 0, sizeof *out);
	*rej = MQTT_PROPS_REJ_NONE;
	if ((unsigned)k >= MQTT_PROPS__COUNT)
		REJ(MQTT_PROPS_REJ_PACKET);
	if (vbi_get(c, &plen) != 0 || plen > cur_left(c))
		REJ(MQTT_PROPS_REJ_LEN); /* 2.2.2.1 */
	struct cur b = cur_sub(c, plen);
	while (cur_left(&b)) {
		/* The identifier is a varint (2.2.2.2); every 5.0 one fits in its first byte, so
		 * a continuation bit or an unlisted value is an unknown identifier. */
		uint8_t id = cur_u8(&b);
		if (mqtt_prop_type(id) == MQTT_PT_NONE)
			REJ(MQTT_PROPS_REJ_ID);
		if (!mqtt_prop_allowed(id, k))
			REJ(MQTT_PROPS_REJ_PACKET);
		int rc = decode_one(&b, id, k, out, rej);
		if (rc)
			return rc;
	}
	if ((out->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_DATA)) &&
	    !(out->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD)))
		REJ(MQTT_PROPS_REJ_AUTH_DATA); /* 3.1.2.11.10 */
	return 0;
}

/* Walk a decoded list to its next property with identifier `want`. The list holds only
 * whole properties the decoder accepted (invariant 2). */
static bool list_next(struct mqtt_props_list *it, uint8_t want, struct cur *val)
{
	struct cur c = cur_make(it->p, it->p ? it->span : 0);
	while (it->n && cur_left(&c)) {
		uint8_t id = cur_u8(&c);
		size_t vstart = c.pos;
		uint32_t v;
		struct mqtt_str s;
		switch (mqtt_prop_type(id)) {
		case MQTT_PT_BYTE:
			cur_skip(&c, 1);
			break;
		case MQTT_PT_U16:
			cur_skip(&c, 2);
			break;
		case MQTT_PT_U32:
			cur_skip(&c, 4);
			break;
		case MQTT_PT_VARINT:
			(void)vbi_get(&c, &v);
			break;
		case MQTT_PT_PAIR:
			(void)mqtt_get_str(&c, &s);
			FALLTHROUGH;
		case MQTT_PT_UTF8:
		case MQTT_PT_BINARY:
			(void)mqtt_get_str(&c, &s);
			break;
		case MQTT_PT_NONE:
		default:
			return false;
		}
		if (!cur_ok(&c))
			return false;
		if (id == want) {
			*val = cur_make(c.buf + vstart, c.pos - vstart);
			it->n--;
			it->p += c.pos;
			it->span -= c.pos;
			it->len -= c.pos - vstart + 1;
			if (!it->n) {
				it->p = NULL;
				it->span = 0;
			}
			return true;
		}
	}
	return false;
}

bool mqtt_props_user_next(struct mqtt_props_list *it, struct mqtt_str *key, struct mqtt_str *val)
{
	struct cur v;
	if (!list_next(it, MQTT_PROP_USER, &v))
		return false;
	return mqtt_get_str(&v, key) && mqtt_get_str(&v, val);
}

bool mqtt_props_sub_id_next(struct mqtt_props_list *it, uint32_t *id)
{
	struct cur v;
	if (!list_next(it, MQTT_PROP_SUB_ID, &v))
		return false;
	return vbi_get(&v, id) == 0;
}

bool mqtt_props_fit(const struct mqtt_props *p, enum mqtt_props_pkt k)
{
	uint64_t present = p->present;
	if (p->user.n)
		present |= MQTT_PROP_BIT(MQTT_PROP_USER);
	if (p->sub_ids.n)
		present |= MQTT_PROP_BIT(MQTT_PROP_SUB_ID);
	for (uint8_t id = 0; id <= MQTT_PROP_ID_MAX; id++)
		if ((present & MQTT_PROP_BIT(id)) && !mqtt_prop_allowed(id, k))
			return false;
	if (p->sub_ids.n > 1 && k != MQTT_PROPS_PUBLISH)
		return false;
	return (present >> (MQTT_PROP_ID_MAX + 1)) == 0;
}

/* ---- encoding ------------------------------------------------------------------------ */

/* The string or binary view of a singular property of that type. */
static const struct mqtt_str *str_of(const struct mqtt_props *p, uint8_t id)
{
	switch ((enum mqtt_prop_id)id) {
	case MQTT_PROP_CONTENT_TYPE: return &p->content_type;
	case MQTT_PROP_RESPONSE_TOPIC: return &p->response_topic;
	case MQTT_PROP_CORRELATION_DATA: return &p->correlation_data;
	case MQTT_PROP_ASSIGNED_CLIENT_ID: return &p->assigned_client_id;
	case MQTT_PROP_AUTH_METHOD: return &p->auth_method;
	case MQTT_PROP_AUTH_DATA: return &p->auth_data;
	case MQTT_PROP_RESPONSE_INFO: return &p->response_info;
	case MQTT_PROP_SERVER_REFERENCE: return &p->server_reference;
	case MQTT_PROP_REASON_STRING: return &p->reason_string;
	default: return NULL;
	}
}

/* The integer value of a singular integer property. */
static uint32_t int_of(const struct mqtt_props *p, uint8_t id)
{
	switch ((enum mqtt_prop_id)id) {
	case MQTT_PROP_PAYLOAD_FORMAT: return p->payload_format;
	case MQTT_PROP_MESSAGE_EXPIRY: return p->message_expiry_s;
	case MQTT_PROP_SESSION_EXPIRY: return p->session_expiry_s;
	case MQTT_PROP_SERVER_KEEPALIVE: return p->server_keepalive_s;
	case MQTT_PROP_REQUEST_PROBLEM_INFO: return p->request_problem_info;
	case MQTT_PROP_WILL_DELAY: return p->will_delay_s;
	case MQTT_PROP_REQUEST_RESPONSE_INFO: return p->request_response_info;
	case MQTT_PROP_RECEIVE_MAX: return p->receive_max;
	case MQTT_PROP_TOPIC_ALIAS_MAX: return p->topic_alias_max;
	case MQTT_PROP_TOPIC_ALIAS: return p->topic_alias;
	case MQTT_PROP_MAX_QOS: return p->max_qos;
	case MQTT_PROP_RETAIN_AVAILABLE: return p->retain_available;
	case MQTT_PROP_MAX_PACKET_SIZE: return p->max_packet_size;
	case MQTT_PROP_WILDCARD_SUB_AVAILABLE: return p->wildcard_sub_available;
	case MQTT_PROP_SUB_ID_AVAILABLE: return p->sub_id_available;
	case MQTT_PROP_SHARED_SUB_AVAILABLE: return p->shared_sub_available;
	default: return 0;
	}
}

/* Bytes of the Subscription Identifiers p writes. */
static size_t sub_ids_len(const struct mqtt_props *p)
{
	if (!p->sub_ids.n)
		return 0;
	if (p->sub_ids.p)
		return p->sub_ids.len;
	size_t n = 0;
	for (uint32_t i = 0; p->sub_id_vals && i < p->sub_ids.n; i++)
		n += 1 + mqtt_vbi_size(MIN(p->sub_id_vals[i], VBI_MAX));
	return n;
}

/* Bytes of the properties alone (no Property Length), or SIZE_MAX when too many. */
static size_t body_len(const struct mqtt_props *p)
{
	size_t n = 0;
	for (uint8_t id = 1; id <= MQTT_PROP_ID_MAX; id++) {
		if (id == MQTT_PROP_USER) {
			n += p->user.n ? p->user.len : 0;
			continue;
		}
		if (id == MQTT_PROP_SUB_ID) {
			n += sub_ids_len(p);
			continue;
		}
		if (!(p->present & MQTT_PROP_BIT(id)))
			continue;
		switch (mqtt_prop_type(id)) {
		case MQTT_PT_BYTE: n += 2; break;
		case MQTT_PT_U16: n += 3; break;
		case MQTT_PT_U32: n += 5; break;
		case MQTT_PT_UTF8:
		case MQTT_PT_BINARY: n += 3u + str_of(p, id)->len; break;
		case MQTT_PT_VARINT:
		case MQTT_PT_PAIR:
		case MQTT_PT_NONE:
		default: break; /* the lists above; unknown bits are never written */
		}
	}
	return n > VBI_MAX ? SIZE_MAX : n;
}

size_t mqtt_props_len(const struct mqtt_props *p)
{
	size_t n = body_len(p);
	return n == SIZE_MAX ? 0 : mqtt_vbi_size(n) + n;
}

/* Copy the properties of a decoded list with identifier `id`, each verbatim. */
static void put_list(struct wcur *w, const struct mqtt_props_list *l, uint8_t id)
{
	if (l->span == l->len) {
		wcur_bytes(w, l->p, l->len); /* contiguous: one copy */
		return;
	}
	struct mqtt_props_list it = *l;
	struct cur v;
	while (list_next(&it, id, &v)) {
		wcur_u8(w, id);
		wcur_bytes(w, v.buf, v.len);
	}
}

static void put_str(struct wcur *w, const struct mqtt_str *s)
{
	wcur_be16(w, s->len);
	wcur_bytes(w, s->p, s->len);
}

int mqtt_props_write(struct wcur *w, const struct mqtt_props *p)
{
	size_t n = body_len(p);
	if (n == SIZE_MAX || w->err || wcur_left(w) < mqtt_vbi_size(n) + n) {
		w->err = true;
		return -E_OVERFLOW;
	}
	mqtt_vbi_put(w, (uint32_t)n);
	for (uint8_t id = 1; id <= MQTT_PROP_ID_MAX; id++) {
		if (id == MQTT_PROP_USER) {
			if (p->user.n)
				put_list(w, &p->user, id);
			continue;
		}
		if (id == MQTT_PROP_SUB_ID) {
			if (p->sub_ids.n && p->sub_ids.p) {
				put_list(w, &p->sub_ids, id);
			} else {
				for (uint32_t i = 0; p->sub_id_vals && i < p->sub_ids.n; i++) {
					wcur_u8(w, id);
					mqtt_vbi_put(w, MIN(p->sub_id_vals[i], VBI_MAX));
				}
			}
			continue;
		}
		if (!(p->present & MQTT_PROP_BIT(id)))
			continue;
		enum mqtt_prop_type t = mqtt_prop_type(id);
		if (t == MQTT_PT_NONE)
			continue;
		wcur_u8(w, id);
		switch (t) {
		case MQTT_PT_BYTE: wcur_u8(w, (uint8_t)int_of(p, id)); break;
		case MQTT_PT_U16: wcur_be16(w, (uint16_t)int_of(p, id)); break;
		case MQTT_PT_U32: wcur_be32(w, int_of(p, id)); break;
		case MQTT_PT_UTF8:
		case MQTT_PT_BINARY: put_str(w, str_of(p, id)); break;
		case MQTT_PT_VARINT:
		case MQTT_PT_PAIR:
		case MQTT_PT_NONE:
		default: break;
		}
	}
	return wcur_ok(w) ? 0 : -E_OVERFLOW;
}

/* ---- comparison ---------------------------------------------------------------------- */

static bool str_eq(const struct mqtt_str *a, const struct mqtt_str *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* The i-th walk step over either form of Subscription Identifiers. */
struct sub_walk {
	struct mqtt_props_list it;
	const uint32_t *vals;
	uint32_t i, n;
};

static bool sub_walk_next(struct sub_walk *s, uint32_t *v)
{
	if (s->i >= s->n)
		return false;
	s->i++;
	if (s->it.p)
		return mqtt_props_sub_id_next(&s->it, v);
	if (!s->vals)
		return false;
	*v = s->vals[s->i - 1];
	return true;
}

bool mqtt_props_equal(const struct mqtt_props *a, const struct mqtt_props *b)
{
	uint64_t lists = MQTT_PROP_BIT(MQTT_PROP_USER) | MQTT_PROP_BIT(MQTT_PROP_SUB_ID);
	if ((a->present & ~lists) != (b->present & ~lists))
		return false;
	if (a->user.n != b->user.n || a->sub_ids.n != b->sub_ids.n)
		return false;
	for (uint8_t id = 1; id <= MQTT_PROP_ID_MAX; id++) {
		if (!(a->present & MQTT_PROP_BIT(id)) || (lists & MQTT_PROP_BIT(id)))
			continue;
		enum mqtt_prop_type t = mqtt_prop_type(id);
		if (t == MQTT_PT_UTF8 || t == MQTT_PT_BINARY) {
			if (!str_eq(str_of(a, id), str_of(b, id)))
				return false;
		} else if (int_of(a, id) != int_of(b, id)) {
			return false;
		}
	}
	struct mqtt_props_list ua = a->user, ub = b->user;
	struct mqtt_str ka, va, kb, vb;
	for (uint32_t i = 0; i < a->user.n; i++) {
		if (!mqtt_props_user_next(&ua, &ka, &va) || !mqtt_props_user_next(&ub, &kb, &vb))
			return false;
		if (!str_eq(&ka, &kb) || !str_eq(&va, &vb))
			return false;
	}
	struct sub_walk sa = { a->sub_ids, a->sub_id_vals, 0, a->sub_ids.n };
	struct sub_walk sb = { b->sub_ids, b->sub_id_vals, 0, b->sub_ids.n };
	uint32_t x, y;
	for (uint32_t i = 0; i < a->sub_ids.n; i++) {
		if (!sub_walk_next(&sa, &x) || !sub_walk_next(&sb, &y) || x != y)
			return false;
	}
	/* the first identifier's copy, where both views carry it */
	if ((a->present & b->present & MQTT_PROP_BIT(MQTT_PROP_SUB_ID)) && a->sub_id != b->sub_id)
		return false;
	return true;
}
