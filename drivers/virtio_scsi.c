/* SPDX-License-Identifier: MIT
 *
 * drivers/: virtio-scsi for one LUN (see virtio_scsi.h). Owns the request, response and
 * parameter-list headers in DMA memory. Responses, sense data and READ CAPACITY data are
 * device input: parsed through cursors, bounded by what the device claims and what we
 * posted, never used as pointers or loop bounds.
 */
#include "drivers/virtio_scsi.h"
#include "drivers/drv_int.h"
#include "lib/bytes.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

#define CFG_SENSE_SIZE 20
#define CFG_CDB_SIZE 24

#define AREA 256u
#define A_REQ 0u      /* lun 8, id 8, attr/prio/crn 3, cdb */
#define A_PARAM 56u   /* UNMAP parameter list (24) or READ CAPACITY data (32) */
#define A_RESP 128u   /* sense_len 4, residual 4, qualifier 2, status 1, response 1, sense */
#define REQ_HDR 19u
#define RESP_HDR 12u
#define MAX_CDB 32u
#define MAX_SENSE 96u

#define OP_TUR 0x00
#define OP_UNMAP 0x42
#define OP_READ16 0x88
#define OP_WRITE16 0x8a
#define OP_SYNC10 0x35 /* not (16): QEMU's scsi-hd refuses it; LBA 0 + 0 blocks = all */
#define OP_SAI16 0x9e
#define SA_READ_CAP16 0x10

#define SCSI_GOOD 0
#define SCSI_CHECK 2
#define KEY_UNIT_ATTENTION 6
#define RESP_MAX_DEFINED 9 /* VIRTIO_SCSI_S_OK .. VIRTIO_SCSI_S_FAILURE */

int vscsi_sense_decode(const uint8_t *sense, uint32_t len, struct vscsi_sense *out)
{
	struct cur c = cur_make(sense, len);
	uint8_t code = cur_u8(&c) & 0x7f;

	memset(out, 0, sizeof *out);
	if (code == 0x70 || code == 0x71) {
		cur_skip(&c, 1);
		out->key = cur_u8(&c) & 0x0f;
		cur_skip(&c, 9);
		out->asc = cur_u8(&c);
		out->ascq = cur_u8(&c);
	} else if (code == 0x72 || code == 0x73) {
		out->key = cur_u8(&c) & 0x0f;
		out->asc = cur_u8(&c);
		out->ascq = cur_u8(&c);
	} else {
		return -E_PROTO;
	}
	if (!cur_ok(&c)) {
		memset(out, 0, sizeof *out);
		return -E_PROTO;
	}
	return 0;
}

static uint8_t *area(struct vscsi *v, uint16_t slot) { return v->areas + (size_t)slot * AREA; }
static uint64_t area_pa(struct vscsi *v, uint16_t slot) { return v->areas_pa + (uint64_t)slot * AREA; }

/* Fill the request header and CDB of slot; the CDB is zero beyond what the op sets. */
static uint8_t *prep(struct vscsi *v, uint16_t slot, uint8_t opcode)
{
	uint8_t *a = area(v, slot);
	memset(a, 0, AREA);
	memcpy(a + A_REQ, v->lun, 8);
	st_le64(a + A_REQ + 8, slot);
	a[A_REQ + REQ_HDR] = opcode;
	return a + A_REQ + REQ_HDR;
}

static int post(struct vscsi *v, uint16_t slot, const struct vq_buf *data_out, const struct vq_buf *data_in)
{
	struct vq_buf b[3];
	uint16_t n = 0;
	uint64_t pa = area_pa(v, slot);

	b[n++] = (struct vq_buf){ pa + A_REQ, REQ_HDR + v->cdb_size, false };
	if (data_out)
		b[n++] = *data_out;
	b[n++] = (struct vq_buf){ pa + A_RESP, RESP_HDR + v->sense_size, true };
	if (data_in)
		b[n++] = *data_in;
	return vq_post(&v->q, b, n, &v->inflight[slot]);
}

/* Decode slot's response into a status for a transfer of xfer bytes (0: none). */
static int finish(struct vscsi *v, uint16_t slot, uint32_t used_len, uint32_t xfer, uint32_t *sense)
{
	const uint8_t *a = area(v, slot) + A_RESP;
	struct cur c = cur_make(a, RESP_HDR + v->sense_size);
	uint32_t sense_len = cur_le32(&c), residual = cur_le32(&c);
	uint8_t status, response;

	cur_skip(&c, 2);
	status = cur_u8(&c);
	response = cur_u8(&c);
	*sense = 0;
	if (used_len < RESP_HDR) {
		v->rejected[VSCSI_REJ_RESPONSE]++;
		return -E_PROTO;
	}
	if (response != 0) {
		if (response > RESP_MAX_DEFINED) {
			v->rejected[VSCSI_REJ_RESPONSE]++;
			return -E_PROTO;
		}
		return -E_IO;
	}
	if (status == SCSI_CHECK) {
		struct vscsi_sense s;
		uint32_t n = MIN(sense_len, v->sense_size);
		n = MIN(n, used_len - RESP_HDR);
		if (vscsi_sense_decode(cur_ptr(&c, n), n, &s) == 0)
			*sense = (uint32_t)s.key << 16 | (uint32_t)s.asc << 8 | s.ascq;
		else
			v->rejected[VSCSI_REJ_SENSE]++;
		return -E_IO;
	}
	if (status != SCSI_GOOD)
		return -E_IO; /* BUSY, RESERVATION CONFLICT, TASK SET FULL, ... */
	if (residual > xfer) {
		v->rejected[VSCSI_REJ_RESIDUAL]++;
		return -E_PROTO;
	}
	/* The residual is the transfer's own account of short data; the used length is only
	 * required to cover the response header (the queue already bounded it above). */
	return residual != 0 ? -E_IO : 0;
}

static int take_slot(struct vscsi *v, uint16_t *slot)
{
	if (v->n_free == 0 || v->n_free > VSCSI_MAX_INFLIGHT) /* the second: invariant 1 */
		return -E_AGAIN;
	*slot = v->free[--v->n_free];
	return 0;
}

static void put_slot(struct vscsi *v, uint16_t slot)
{
	v->inflight[slot] = NULL;
	v->free[v->n_free++] = slot;
}

static int vscsi_submit(void *impl, struct blk_req *r)
{
	struct vscsi *v = impl;
	const struct blk_topology *t = &v->blk.topo;
	uint64_t len = (uint64_t)r->n_blocks * t->logical_block;
	struct vq_buf data;
	uint16_t slot = 0;
	uint8_t *cdb, *a;
	int err;

	switch (r->op) {
	case BLK_READ:
	case BLK_WRITE:
		if (!r->buf || len > UINT32_MAX)
			return -E_INVAL;
		FALLTHROUGH;
	case BLK_DISCARD:
		if (r->n_blocks == 0 || r->lba > t->capacity || r->n_blocks > t->capacity - r->lba)
			return -E_RANGE;
		if (r->op == BLK_DISCARD && !t->discard)
			return -E_NOSYS;
		if (r->op == BLK_DISCARD && r->n_blocks > t->max_discard)
			return -E_RANGE;
		break;
	case BLK_FLUSH:
		break;
	case BLK_WRITE_ZEROES:
		return -E_NOSYS;
	default:
		return -E_INVAL;
	}
	err = take_slot(v, &slot);
	if (err)
		return err;
	a = area(v, slot);
	switch (r->op) {
	case BLK_READ:
	case BLK_WRITE:
		cdb = prep(v, slot, r->op == BLK_READ ? OP_READ16 : OP_WRITE16);
		st_be64(cdb + 2, r->lba);
		st_be32(cdb + 10, r->n_blocks);
		data = (struct vq_buf){ v->vd->port->dma_phys(v->vd->port->ctx, r->buf), (uint32_t)len, r->op == BLK_READ };
		err = post(v, slot, r->op == BLK_WRITE ? &data : NULL, r->op == BLK_READ ? &data : NULL);
		break;
	case BLK_DISCARD:
		cdb = prep(v, slot, OP_UNMAP);
		st_be16(cdb + 7, 24);
		st_be16(a + A_PARAM, 22);
		st_be16(a + A_PARAM + 2, 16);
		st_be64(a + A_PARAM + 8, r->lba);
		st_be32(a + A_PARAM + 16, r->n_blocks);
		data = (struct vq_buf){ area_pa(v, slot) + A_PARAM, 24, false };
		err = post(v, slot, &data, NULL);
		break;
	default: /* FLUSH: the whole medium */
		(void)prep(v, slot, OP_SYNC10); /* LBA and block count stay 0: the whole medium */
		err = post(v, slot, NULL, NULL);
		break;
	}
	if (err) {
		put_slot(v, slot);
		if (err == -E_PROTO)
			v->rejected[VSCSI_REJ_QUEUE]++;
		return err;
	}
	v->inflight[slot] = r;
	return 0;
}

static void vscsi_kick(void *impl)
{
	struct vscsi *v = impl;
	vq_kick(&v->q);
}

static int vscsi_poll(void *impl, struct blk_req **done)
{
	struct vscsi *v = impl;
	struct blk_req *r;
	void *tok;
	uint32_t len, xfer;
	uint16_t slot = 0;
	int err;

	*done = NULL;
	err = vq_get_used(&v->q, &tok, &len);
	if (err) {
		if (err == -E_PROTO)
			v->rejected[VSCSI_REJ_QUEUE]++;
		return err;
	}
	slot = (uint16_t)((struct blk_req **)tok - v->inflight);
	r = v->inflight[slot];
	xfer = (r->op == BLK_READ || r->op == BLK_WRITE) ? r->n_blocks * v->blk.topo.logical_block : 0;
	r->status = finish(v, slot, len, xfer, &r->sense);
	put_slot(v, slot);
	*done = r;
	return 0;
}

static const struct blk_ops vscsi_ops = { vscsi_submit, vscsi_kick, vscsi_poll };

/* Run one internal command synchronously (init only, before the slot stack exists: it
 * uses slot 0), bounded by spins polls; on success copy din_len bytes of data-in to
 * din_out. */
static int exec_sync(struct vscsi *v, uint8_t opcode, uint8_t *din_out, uint32_t din_len, uint32_t spins,
		     uint32_t *sense)
{
	struct vq_buf din;
	uint8_t *cdb;
	void *tok;
	uint32_t len = 0;
	int err;

	cdb = prep(v, 0, opcode);
	if (opcode == OP_SAI16) {
		cdb[1] = SA_READ_CAP16;
		st_be32(cdb + 10, din_len);
	}
	din = (struct vq_buf){ area_pa(v, 0) + A_PARAM, din_len, true };
	err = post(v, 0, NULL, din_len ? &din : NULL);
	if (err)
		return err;
	vq_kick(&v->q);
	for (uint32_t i = 0; i < spins; i++) {
		err = vq_get_used(&v->q, &tok, &len);
		if (err != -E_AGAIN)
			break;
	}
	if (err) /* -E_AGAIN: slot 0 stays posted; init fails, the device is never used */
		return err == -E_AGAIN ? -E_TIMEOUT : err;
	err = finish(v, 0, len, din_len, sense);
	if (err == 0 && din_len)
		memcpy(din_out, area(v, 0) + A_PARAM, din_len);
	return err;
}

static int read_capacity(struct vscsi *v, uint32_t spins)
{
	struct blk_topology *t = &v->blk.topo;
	uint32_t sense = 0, lbs;
	uint64_t last;
	uint8_t b13, b14, data[32];
	struct cur c;
	int err = -E_IO;

	/* A fresh LUN reports UNIT ATTENTION (power on / reset) once or twice: retry. */
	for (uint32_t tries = 0; tries < 4; tries++) {
		err = exec_sync(v, OP_TUR, NULL, 0, spins, &sense);
		if (err != -E_IO || (sense >> 16) != KEY_UNIT_ATTENTION)
			break;
	}
	if (err)
		return err;
	err = exec_sync(v, OP_SAI16, data, sizeof data, spins, &sense);
	if (err)
		return err;
	c = cur_make(data, sizeof data);
	last = cur_be64(&c);
	lbs = cur_be32(&c);
	cur_skip(&c, 1);
	b13 = cur_u8(&c);
	b14 = cur_u8(&c);
	if (!cur_ok(&c) || lbs < 512 || lbs > 65536 || (lbs & (lbs - 1)) || last == UINT64_MAX || (b13 & 0x0f) > 8) {
		v->rejected[VSCSI_REJ_CONFIG]++;
		drv_logf(v->vd->port, "virtio-scsi: READ CAPACITY(16) data out of range");
		return -E_PROTO;
	}
	t->capacity = last + 1;
	t->logical_block = lbs;
	t->physical_block = lbs << (b13 & 0x0f);
	t->optimal_io = 0;
	t->flush = true;
	t->discard = (b14 & 0x80) != 0; /* LBPME: logical block provisioning enabled */
	t->max_discard = t->discard ? VSCSI_MAX_UNMAP : 0;
	t->write_zeroes = false;
	t->read_only = false;
	return 0;
}

int vscsi_init(struct vscsi *v, struct virtio_dev *vd, const struct vscsi_config *cfg)
{
	uint8_t b[4];
	void *va;
	int err;

	if (!cfg->slots || cfg->queue_size == 0 || cfg->queue_size > VSCSI_MAX_INFLIGHT ||
	    (cfg->queue_size & (cfg->queue_size - 1)) || cfg->lun >= 16384 || cfg->init_spins == 0 ||
	    vd->device_type != VIRTIO_ID_SCSI)
		return -E_INVAL;
	memset(v, 0, sizeof *v);
	v->vd = vd;
	v->lun[0] = 1;
	v->lun[1] = cfg->target;
	v->lun[2] = (uint8_t)(0x40 | (cfg->lun >> 8));
	v->lun[3] = (uint8_t)cfg->lun;
	err = virtio_negotiate(vd, VIRTIO_F_EVENT_IDX, 0);
	if (err)
		return err;
	err = virtio_cfg_read(vd, CFG_SENSE_SIZE, b, 4);
	if (err)
		goto fail;
	v->sense_size = ld_le32(b);
	err = virtio_cfg_read(vd, CFG_CDB_SIZE, b, 4);
	if (err)
		goto fail;
	v->cdb_size = ld_le32(b);
	if (v->cdb_size < 16 || v->cdb_size > MAX_CDB || v->sense_size > MAX_SENSE) {
		v->rejected[VSCSI_REJ_CONFIG]++;
		err = -E_PROTO;
		goto fail;
	}
	err = virtio_queue_create(vd, &v->q, 2, cfg->queue_size, cfg->slots, cfg->msix);
	if (err)
		goto fail;
	/* QEMU reports used.len = data-out + response + data-in bytes; finish() never reads
	 * past RESP_HDR + sense_size, so a clamped length loses nothing. */
	v->q.lenient_len = true;
	if (v->q.size > VSCSI_MAX_INFLIGHT) { /* capped by queue_size: cannot happen */
		err = -E_RANGE;
		goto fail;
	}
	err = vd->port->dma_alloc(vd->port->ctx, (size_t)v->q.size * AREA, &va, &v->areas_pa);
	if (err)
		goto fail;
	v->areas = va;
	v->blk.ops = &vscsi_ops;
	v->blk.impl = v;
	err = virtio_driver_ok(vd);
	if (err)
		goto fail;
	err = read_capacity(v, cfg->init_spins);
	if (err)
		goto fail;
	for (uint16_t i = 0; i < v->q.size; i++)
		v->free[i] = (uint16_t)(v->q.size - 1 - i);
	v->n_free = v->q.size;
	drv_logf(vd->port, "virtio-scsi: target %u lun %u: %llu blocks of %u bytes (physical %u)%s", cfg->target,
		 cfg->lun, (unsigned long long)v->blk.topo.capacity, v->blk.topo.logical_block,
		 v->blk.topo.physical_block, v->blk.topo.discard ? ", unmap" : "");
	return 0;
fail:
	virtio_fail(vd, "virtio-scsi initialisation failed");
	return err;
}
