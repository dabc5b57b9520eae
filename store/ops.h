/* SPDX-License-Identifier: MIT
 *
 * The storage protocol on the core mesh (kinds 0x0300-0x03ff): what data cores tell the
 * storage core (changes of persistent state, barriers) and what it answers (tickets
 * committed, the state to restore at boot, its lag). One record format serves both ways:
 * a change of state on the way in and a record of restored state on the way out. Wire
 * format only: constants, and encode/decode through lib/cursor, never struct overlays.
 * Decoding never trusts its input (the mesh carries only our own cores' bytes, but a bug
 * there must not become memory corruption here): fuzzed by tests/fuzz/fuzz_store_ops.c.
 *
 * A record: [kind u8][id_kind u8][qos u8][retain u8][state u8][msg_qos u8][pid u16]
 *           [skey u64][mkey u64][seq u64][id_len u16][topic_len u16][payload_len u32]
 *           [props_len u16][expiry_s u32][sub_id u32][id][topic][props][payload]
 *           (little-endian; STORE_REC_HDR = 50 bytes)
 * A record longer than one mesh message is cut: a HEAD message [total u32][first bytes],
 * then MORE messages with the rest, in order, nothing else in between from that source.
 */
#ifndef STORE_OPS_H
#define STORE_OPS_H

#include "lib/compiler.h"

enum store_kind {
	/* data core -> storage core */
	STORE_K_REC = 0x0300,          /* one record, whole */
	STORE_K_REC_HEAD = 0x0301,     /* [total u32] + the first bytes of a record */
	STORE_K_REC_MORE = 0x0302,     /* the next bytes of it */
	STORE_K_BARRIER = 0x0303,      /* [origin u32][ticket u32]: answer origin once every
					* record sent before this is committed */
	STORE_K_TLQ = 0x0304,          /* a telemetry query (struct store_tlq) */
	STORE_K_TLQ_MORE = 0x0305,     /* [slot u32]: the query's next rows may come */
	STORE_K_TLQ_CANCEL = 0x0306,   /* [slot u32]: its reader left: end it */
	/* storage core -> data core */
	STORE_K_DONE = 0x0380,         /* [ticket u32][ok u32] ...: tickets committed (ok 1)
					* or not stored (ok 0) */
	STORE_K_RESTORE_BEGIN = 0x0381,/* [key_base u64]: restore starts; the key generator */
	STORE_K_RESTORED = 0x0382,     /* a restored record, whole */
	STORE_K_RESTORED_HEAD = 0x0383,
	STORE_K_RESTORED_MORE = 0x0384,
	STORE_K_RESTORE_END = 0x0385,  /* [records u64]: everything was sent; serve */
	STORE_K_LAG = 0x0386,          /* [lagging u32]: commits slower than allowed, or not */
	STORE_K_OFF = 0x0387,          /* (empty): no usable disk and storage.required false:
					* serve from memory, record nothing */
	STORE_K_TLQ_ROWS = 0x0388,     /* [slot u32][n u32] then n x ([len u32][a TLOG record
					* with seq = its wall-clock ms]) */
	STORE_K_TLQ_END = 0x0389,      /* [slot u32][matched u64][flags u32: 1 truncated by the
					* limit, 2 failed, 4 cancelled]: the query ended */
};
#define STORE_KIND_FIRST 0x0300u
#define STORE_KIND_LAST 0x03ffu
#define STORE_KIND_TO_STORAGE_LAST 0x037fu /* 0x0300-0x037f in, 0x0380-0x03ff out */

/* Record kinds: the changes (the same meaning as mqtt/broker.h's events) and, on the way
 * out only, the revocation list. */
enum store_rec_kind {
	STORE_REC_SESS_PUT = 1, /* skey, id_kind, id */
	STORE_REC_SESS_DEL,     /* skey */
	STORE_REC_SUB_PUT,      /* skey, topic = filter, qos (with 5.0 options 0x04, 0x08) */
	STORE_REC_SUB_DEL,      /* skey, topic = filter */
	STORE_REC_MSG_PUT,      /* mkey, topic, payload, qos */
	STORE_REC_DLV_PUT,      /* skey, mkey, seq, qos, retain; restored: + state, pid and the
				 * message (topic, payload, msg_qos; none when RELEASED) */
	STORE_REC_DLV_SENT,     /* skey, mkey, pid */
	STORE_REC_DLV_REC,      /* skey, mkey */
	STORE_REC_DLV_DEL,      /* skey, mkey */
	STORE_REC_DLV_DONE,     /* skey, pid */
	STORE_REC_RX2_PUT,      /* skey, pid */
	STORE_REC_RX2_DEL,      /* skey, pid */
	STORE_REC_RET_PUT,      /* topic, payload, qos */
	STORE_REC_RET_DEL,      /* topic */
	STORE_REC_SEEN,         /* id_kind, id */
	STORE_REC_REVOKED,      /* restored only: id = a revoked certificate serial (id_kind 0)
				 * or identity (id_kind 1) */
	STORE_REC_TLOG,         /* a telemetry record (store/tlog.h): id_kind, id, topic, qos,
				 * payload; seq = the accepting core's monotonic ns */
	STORE_REC_REV_PUT,      /* a run-time revocation (the console): id_kind 0, id = a
				 * serial; id_kind 1, id = an identity */
	STORE_REC_REV_DEL,      /* its removal: the same fields */
	STORE_REC_ALLOW_PUT,    /* an identity added to the allowlist (the console): id */
	STORE_REC_ALLOW_DEL,    /* its removal: id */
	STORE_REC_ALLOWED,      /* restored only: id = an identity in the allowlist */
	STORE_REC__END
};

/* A delivery's state as stored (and restored). */
enum store_dlv_state { STORE_DLV_QUEUED = 0, STORE_DLV_SENT = 1, STORE_DLV_RELEASED = 2 };

#define STORE_REC_HDR 50u
#define STORE_SUB_ID_MAX 268435455u /* the largest MQTT 5.0 Subscription Identifier */
#define STORE_PART_HDR 4u   /* HEAD: total u32 */
#define STORE_DONE_ENT 8u   /* DONE: ticket u32, ok u32 */

struct store_rec {
	uint8_t kind;       /* enum store_rec_kind */
	uint8_t id_kind;    /* 0 device, 1 service */
	uint8_t qos;        /* 0..2 */
	uint8_t retain;     /* 0..1 */
	uint8_t state;      /* enum store_dlv_state */
	uint8_t msg_qos;    /* 0..2 */
	uint16_t pid;
	uint64_t skey, mkey, seq;
	const uint8_t *id;  /* borrowed (decode: points into the input) */
	uint16_t id_len;    /* <= 255 */
	const uint8_t *topic;
	uint16_t topic_len;
	const uint8_t *payload;
	uint32_t payload_len;
	const uint8_t *props; /* MSG_PUT, RET_PUT, and restored DLV_PUT: MQTT 5.0 properties */
	uint16_t props_len;
	uint32_t expiry_s;    /* the same records: Message Expiry Interval left, 0: never;
			       * SESS_PUT: its Session Expiry Interval (0 or UINT32_MAX: never) */
	uint32_t sub_id;      /* SUB_PUT: its Subscription Identifier (MQTT 5.0), 0: none */
};

/* A telemetry query (STORE_K_TLQ): [slot u32][limit u32][since i64][until i64][id_len u8]
 * [topic_len u8][id][topic]; times in Unix ms (0: open), topic a valid filter or empty. */
struct store_tlq {
	uint32_t slot, limit;
	int64_t since_ms, until_ms;
	const uint8_t *id;     /* borrowed; id_len 0: any publisher */
	uint8_t id_len;
	const uint8_t *topic;  /* borrowed; topic_len 0: any topic */
	uint8_t topic_len;
};
#define STORE_TLQ_HDR 26u
#define STORE_TLQ_END_LEN 16u
#define STORE_TLQ_ROWS_HDR 8u
enum { STORE_TLQ_TRUNCATED = 1u, STORE_TLQ_FAILED = 2u, STORE_TLQ_CANCELLED = 4u };
/* Encode into out: the bytes written, or 0 (out too small, limit 0). */
size_t store_tlq_encode(const struct store_tlq *q, uint8_t *out, size_t cap);
/* 0, or -E_INVAL (lengths that do not add up, limit 0, since after until). */
MUST_CHECK int store_tlq_decode(const uint8_t *in, size_t len, struct store_tlq *out /* out */);
/* The next row of a ROWS message: *off starts at STORE_TLQ_ROWS_HDR. 1 and *r (pointers into
 * in), 0 at the end, -E_INVAL (a row that does not decode as a TLOG record). */
int store_tlq_rows_next(const uint8_t *in, size_t len, size_t *off, struct store_rec *r /* out */);

/* Bytes the encoded record takes (no validation). */
size_t store_rec_size(const struct store_rec *r);
/* Encode r (validated as decode would) into out. 0, -E_INVAL (r breaks a rule), or
 * -E_OVERFLOW (out too small). */
MUST_CHECK int store_rec_encode(const struct store_rec *r, uint8_t *out, size_t len);
/* Decode and validate one whole record (len exactly its size); pointers borrow in. 0 or
 * -E_INVAL. The rules: kind known; id_kind, qos, retain, state, msg_qos in range; the
 * lengths add up to len; id at most 255 bytes; and per kind the fields it needs are
 * non-zero (keys, the id of SESS_PUT/SEEN/REVOKED, the filter or topic where one is
 * named, the pid of SENT/DONE/RX2 records). */
MUST_CHECK int store_rec_decode(const uint8_t *in, size_t len, struct store_rec *out /* out */);

/* Reassembly of records cut into parts, one per source core. */
struct store_asm {
	uint8_t *buf;       /* linked: cap bytes */
	uint32_t cap, have, total;
};
/* A HEAD, MORE or whole message of a source: 0 and the record (rec, rec_len: borrowing buf or data)
 * when a record is complete, -E_NEED_MORE while parts are missing, -E_INVAL for a part
 * that does not fit the record in progress (which is then dropped). */
MUST_CHECK int store_asm_feed(struct store_asm *a, uint16_t kind, const uint8_t *data, uint32_t len,
			      uint16_t whole_kind, const uint8_t **rec /* out */, uint32_t *rec_len /* out */);

#endif
