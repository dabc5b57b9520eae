/* SPDX-License-Identifier: MIT
 *
 * store/ops.h: encoding, decoding and validation of storage records, and the reassembly
 * of records cut into mesh-sized parts. Pure functions over caller buffers; nothing here
 * allocates, and decoding reads only through the cursor.
 */
#include "store/ops.h"

#include "lib/bytes.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

size_t store_rec_size(const struct store_rec *r)
{
	return STORE_REC_HDR + (size_t)r->id_len + r->topic_len + (size_t)r->payload_len + r->props_len;
}

/* The per-kind rules of store_rec_decode. */
static bool rec_valid(const struct store_rec *r)
{
	/* a subscription's qos carries its MQTT 5.0 options too (No Local 0x04, Retain As
	 * Published 0x08) */
	bool qos_ok = r->kind == STORE_REC_SUB_PUT ? (r->qos & 3u) <= 2 && r->qos <= 0x0fu : r->qos <= 2;
	if (r->kind < STORE_REC_SESS_PUT || r->kind >= STORE_REC__END || r->id_kind > 1 || !qos_ok ||
	    r->retain > 1 || r->state > STORE_DLV_RELEASED || r->msg_qos > 2 || r->id_len > 255)
		return false;
	bool id = r->id_len > 0, topic = r->topic_len > 0;
	switch (r->kind) {
	case STORE_REC_SESS_PUT: return r->skey && id;
	case STORE_REC_SESS_DEL: return r->skey;
	case STORE_REC_SUB_PUT: return r->skey && topic && r->sub_id <= STORE_SUB_ID_MAX;
	case STORE_REC_SUB_DEL: return r->skey && topic;
	case STORE_REC_MSG_PUT: return r->mkey && topic;
	case STORE_REC_DLV_PUT:
		if (!r->skey || !r->mkey || !r->seq || (r->qos != 1 && r->qos != 2))
			return false;
		if (r->state != STORE_DLV_QUEUED && !r->pid)
			return false;
		return r->state == STORE_DLV_RELEASED ? r->qos == 2 : true;
	case STORE_REC_DLV_SENT: return r->skey && r->mkey && r->pid;
	case STORE_REC_DLV_REC:
	case STORE_REC_DLV_DEL: return r->skey && r->mkey;
	case STORE_REC_DLV_DONE:
	case STORE_REC_RX2_PUT:
	case STORE_REC_RX2_DEL: return r->skey && r->pid;
	case STORE_REC_RET_PUT: return topic && r->payload_len;
	case STORE_REC_RET_DEL: return topic;
	case STORE_REC_SEEN:
	case STORE_REC_REVOKED:
	case STORE_REC_REV_PUT:
	case STORE_REC_REV_DEL:
	case STORE_REC_ALLOW_PUT:
	case STORE_REC_ALLOW_DEL:
	case STORE_REC_ALLOWED: return id;
	case STORE_REC_TLOG: return id && topic;
	default: return false;
	}
}

int store_rec_encode(const struct store_rec *r, uint8_t *out, size_t len)
{
	if (!rec_valid(r) || (r->id_len && !r->id) || (r->topic_len && !r->topic) ||
	    (r->payload_len && !r->payload) || (r->props_len && !r->props))
		return -E_INVAL;
	size_t need = store_rec_size(r);
	if (len < need)
		return -E_OVERFLOW;
	struct wcur w = wcur_make(out, need);
	wcur_u8(&w, r->kind);
	wcur_u8(&w, r->id_kind);
	wcur_u8(&w, r->qos);
	wcur_u8(&w, r->retain);
	wcur_u8(&w, r->state);
	wcur_u8(&w, r->msg_qos);
	wcur_le16(&w, r->pid);
	wcur_le64(&w, r->skey);
	wcur_le64(&w, r->mkey);
	wcur_le64(&w, r->seq);
	wcur_le16(&w, r->id_len);
	wcur_le16(&w, r->topic_len);
	wcur_le32(&w, r->payload_len);
	wcur_le16(&w, r->props_len);
	wcur_le32(&w, r->expiry_s);
	wcur_le32(&w, r->sub_id);
	wcur_bytes(&w, r->id, r->id_len);
	wcur_bytes(&w, r->topic, r->topic_len);
	wcur_bytes(&w, r->props, r->props_len);
	wcur_bytes(&w, r->payload, r->payload_len);
	return wcur_ok(&w) && w.pos == need ? 0 : -E_OVERFLOW;
}

int store_rec_decode(const uint8_t *in, size_t len, struct store_rec *out)
{
	memset(out, 0, sizeof *out);
	struct cur c = cur_make(in, len);
	out->kind = cur_u8(&c);
	out->id_kind = cur_u8(&c);
	out->qos = cur_u8(&c);
	out->retain = cur_u8(&c);
	out->state = cur_u8(&c);
	out->msg_qos = cur_u8(&c);
	out->pid = cur_le16(&c);
	out->skey = cur_le64(&c);
	out->mkey = cur_le64(&c);
	out->seq = cur_le64(&c);
	out->id_len = cur_le16(&c);
	out->topic_len = cur_le16(&c);
	out->payload_len = cur_le32(&c);
	out->props_len = cur_le16(&c);
	out->expiry_s = cur_le32(&c);
	out->sub_id = cur_le32(&c);
	if (!cur_ok(&c) ||
	    cur_left(&c) != (size_t)out->id_len + out->topic_len + (size_t)out->payload_len + out->props_len)
		return -E_INVAL;
	out->id = out->id_len ? cur_ptr(&c, out->id_len) : NULL;
	out->topic = out->topic_len ? cur_ptr(&c, out->topic_len) : NULL;
	out->props = out->props_len ? cur_ptr(&c, out->props_len) : NULL;
	out->payload = out->payload_len ? cur_ptr(&c, out->payload_len) : NULL;
	if (!cur_done(&c) || !rec_valid(out))
		return -E_INVAL;
	return 0;
}

int store_asm_feed(struct store_asm *a, uint16_t kind, const uint8_t *data, uint32_t len, uint16_t whole_kind,
		   const uint8_t **rec, uint32_t *rec_len)
{
	if (kind == whole_kind) {
		a->total = a->have = 0; /* a whole record ends any unfinished one (not in order) */
		*rec = data;
		*rec_len = len;
		return 0;
	}
	if (kind == (uint16_t)(whole_kind + 1u)) { /* HEAD */
		if (len < STORE_PART_HDR) {
			a->total = a->have = 0;
			return -E_INVAL;
		}
		struct cur c = cur_make(data, len);
		uint32_t total = cur_le32(&c);
		uint32_t first = len - STORE_PART_HDR;
		if (total > a->cap || first > total || total < STORE_REC_HDR) {
			a->total = a->have = 0;
			return -E_INVAL;
		}
		memcpy(a->buf, data + STORE_PART_HDR, first);
		a->have = first;
		a->total = total;
	} else if (kind == (uint16_t)(whole_kind + 2u)) { /* MORE */
		if (!a->total || len > a->total - a->have) {
			a->total = a->have = 0;
			return -E_INVAL;
		}
		memcpy(a->buf + a->have, data, len);
		a->have += len;
	} else {
		return -E_INVAL;
	}
	/* Invariant: have < total while a record is in assembly, both 0 otherwise. */
	if (a->have < a->total)
		return -E_NEED_MORE;
	*rec = a->buf;
	*rec_len = a->total;
	a->total = a->have = 0;
	return 0;
}

/* ---- telemetry queries ---------------------------------------------------------------------- */

size_t store_tlq_encode(const struct store_tlq *q, uint8_t *out, size_t cap)
{
	size_t need = STORE_TLQ_HDR + (size_t)q->id_len + q->topic_len;
	if (!q->limit || cap < need || (q->id_len && !q->id) || (q->topic_len && !q->topic))
		return 0;
	struct wcur w = wcur_make(out, need);
	wcur_le32(&w, q->slot);
	wcur_le32(&w, q->limit);
	wcur_le64(&w, (uint64_t)q->since_ms);
	wcur_le64(&w, (uint64_t)q->until_ms);
	wcur_u8(&w, q->id_len);
	wcur_u8(&w, q->topic_len);
	wcur_bytes(&w, q->id, q->id_len);
	wcur_bytes(&w, q->topic, q->topic_len);
	return wcur_ok(&w) ? need : 0;
}

int store_tlq_decode(const uint8_t *in, size_t len, struct store_tlq *out)
{
	struct cur c = cur_make(in, len);
	memset(out, 0, sizeof *out);
	out->slot = cur_le32(&c);
	out->limit = cur_le32(&c);
	out->since_ms = (int64_t)cur_le64(&c);
	out->until_ms = (int64_t)cur_le64(&c);
	out->id_len = cur_u8(&c);
	out->topic_len = cur_u8(&c);
	out->id = out->id_len ? cur_ptr(&c, out->id_len) : NULL;
	out->topic = out->topic_len ? cur_ptr(&c, out->topic_len) : NULL;
	if (!cur_ok(&c) || cur_left(&c) || !out->limit || out->since_ms < 0 || out->until_ms < 0 ||
	    (out->since_ms && out->until_ms && out->since_ms > out->until_ms))
		return -E_INVAL;
	return 0;
}

int store_tlq_rows_next(const uint8_t *in, size_t len, size_t *off, struct store_rec *r)
{
	if (*off >= len)
		return 0;
	if (len - *off < 4u)
		return -E_INVAL;
	uint32_t n = ld_le32(in + *off);
	if (n > len - *off - 4u || store_rec_decode(in + *off + 4u, n, r) != 0 || r->kind != STORE_REC_TLOG)
		return -E_INVAL;
	*off += 4u + n;
	return 1;
}
