/* SPDX-License-Identifier: MIT
 *
 * drivers/: virtio-blk (see virtio_blk.h). Owns the request headers and status bytes in
 * DMA memory; the caller owns data buffers. Never trusts a device-written status or
 * length: each completion is matched to a slot through the validated virtqueue, and its
 * status byte is checked against a sentinel and the three defined values.
 */
#include "drivers/virtio_blk.h"
#include "drivers/drv_int.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"

#define T_IN 0u
#define T_OUT 1u
#define T_FLUSH 4u
#define T_DISCARD 11u
#define T_WRITE_ZEROES 13u

#define S_OK 0u
#define S_IOERR 1u
#define S_UNSUPP 2u
#define S_SENTINEL 0xffu

#define AREA 64u
#define A_SEG 16u
#define A_STATUS 48u

#define CFG_CAPACITY 0
#define CFG_SIZE_MAX 8
#define CFG_BLK_SIZE 20
#define CFG_PHYS_EXP 24
#define CFG_OPT_IO 28
#define CFG_MAX_DISCARD 36
#define CFG_MAX_WZ 48

static int read_le(struct virtio_dev *vd, uint32_t off, uint32_t len, uint64_t *v)
{
	uint8_t b[8] = { 0 };
	int err = virtio_cfg_read(vd, off, b, len);
	*v = ld_le64(b);
	return err;
}

static int read_topology(struct vblk *v)
{
	struct virtio_dev *vd = v->vd;
	struct blk_topology *t = &v->blk.topo;
	uint64_t cap, x;
	uint32_t lbs = 512;
	int err;

	err = read_le(vd, CFG_CAPACITY, 8, &cap);
	if (err)
		return err;
	/* A change after this read moves the generation past cfg_gen: it is seen as pending. */
	v->cfg_gen = vd->cfg_gen;
	v->sectors = cap;
	if (vd->features & VIRTIO_BLK_F_BLK_SIZE) {
		err = read_le(vd, CFG_BLK_SIZE, 4, &x);
		if (err)
			return err;
		if (x < 512 || x > 65536 || (x & (x - 1)))
			goto bad;
		lbs = (uint32_t)x;
	}
	t->logical_block = lbs;
	t->physical_block = lbs;
	v->sectors_per_block = lbs / 512;
	t->capacity = cap / v->sectors_per_block;
	if (vd->features & VIRTIO_BLK_F_TOPOLOGY) {
		err = read_le(vd, CFG_PHYS_EXP, 1, &x);
		if (err)
			return err;
		if (x > 8)
			goto bad;
		t->physical_block = lbs << x;
		err = read_le(vd, CFG_OPT_IO, 4, &x);
		if (err)
			return err;
		t->optimal_io = x * lbs > (64u << 20) ? 0 : (uint32_t)(x * lbs);
	}
	v->size_max = 0;
	if (vd->features & VIRTIO_BLK_F_SIZE_MAX) {
		err = read_le(vd, CFG_SIZE_MAX, 4, &x);
		if (err)
			return err;
		v->size_max = (uint32_t)x;
	}
	t->read_only = (vd->features & VIRTIO_BLK_F_RO) != 0;
	t->flush = (vd->features & VIRTIO_BLK_F_FLUSH) != 0;
	t->max_discard = 0;
	if (vd->features & (VIRTIO_BLK_F_DISCARD | VIRTIO_BLK_F_WRITE_ZEROES)) {
		uint64_t d = 0, z = 0;
		if ((vd->features & VIRTIO_BLK_F_DISCARD) && (err = read_le(vd, CFG_MAX_DISCARD, 4, &d)))
			return err;
		if ((vd->features & VIRTIO_BLK_F_WRITE_ZEROES) && (err = read_le(vd, CFG_MAX_WZ, 4, &z)))
			return err;
		t->discard = d >= v->sectors_per_block;
		t->write_zeroes = z >= v->sectors_per_block;
		if (t->discard && t->write_zeroes)
			x = MIN(d, z);
		else
			x = t->discard ? d : z;
		t->max_discard = (uint32_t)(x / v->sectors_per_block);
	}
	return 0;
bad:
	v->rejected[VBLK_REJ_CONFIG]++;
	drv_logf(vd->port, "virtio-blk: block size or topology out of range");
	return -E_PROTO;
}

static int vblk_submit(void *impl, struct blk_req *r)
{
	struct vblk *v = impl;
	const struct blk_topology *t = &v->blk.topo;
	struct vq_buf b[3];
	uint16_t n = 0, slot;
	uint32_t type;
	uint64_t len = (uint64_t)r->n_blocks * t->logical_block;
	uint8_t *h;
	uint64_t pa;
	int err;

	switch (r->op) {
	case BLK_READ: type = T_IN; break;
	case BLK_WRITE: type = T_OUT; break;
	case BLK_FLUSH: type = T_FLUSH; break;
	case BLK_DISCARD: type = T_DISCARD; break;
	case BLK_WRITE_ZEROES: type = T_WRITE_ZEROES; break;
	default: return -E_INVAL;
	}
	if (r->op != BLK_FLUSH) {
		if (r->n_blocks == 0 || r->lba > t->capacity || r->n_blocks > t->capacity - r->lba)
			return -E_RANGE;
	}
	if ((r->op == BLK_READ || r->op == BLK_WRITE) &&
	    (!r->buf || len > UINT32_MAX || (v->size_max && len > v->size_max)))
		return -E_INVAL;
	if (r->op != BLK_READ && r->op != BLK_FLUSH && r->op != BLK_WRITE && r->n_blocks > t->max_discard)
		return -E_RANGE;
	if ((r->op == BLK_FLUSH && !t->flush) || (r->op == BLK_DISCARD && !t->discard) ||
	    (r->op == BLK_WRITE_ZEROES && !t->write_zeroes))
		return -E_NOSYS;
	if (t->read_only && r->op != BLK_READ && r->op != BLK_FLUSH)
		return -E_PERM;
	if (v->n_free == 0)
		return -E_AGAIN;

	slot = v->free[--v->n_free];
	h = v->hdrs + (size_t)slot * AREA;
	pa = v->hdrs_pa + (uint64_t)slot * AREA;
	st_le32(h, type);
	st_le32(h + 4, 0);
	st_le64(h + 8, (r->op == BLK_READ || r->op == BLK_WRITE) ? r->lba * v->sectors_per_block : 0);
	h[A_STATUS] = S_SENTINEL;
	b[n++] = (struct vq_buf){ pa, 16, false };
	if (r->op == BLK_READ || r->op == BLK_WRITE) {
		uint64_t dpa = v->vd->port->dma_phys(v->vd->port->ctx, r->buf);
		b[n++] = (struct vq_buf){ dpa, (uint32_t)len, r->op == BLK_READ };
	} else if (r->op != BLK_FLUSH) {
		st_le64(h + A_SEG, r->lba * v->sectors_per_block);
		st_le32(h + A_SEG + 8, r->n_blocks * v->sectors_per_block);
		st_le32(h + A_SEG + 12, 0); /* no unmap flag: zeroes stay allocated */
		b[n++] = (struct vq_buf){ pa + A_SEG, 16, false };
	}
	b[n++] = (struct vq_buf){ pa + A_STATUS, 1, true };
	v->inflight[slot] = r;
	err = vq_post(&v->q, b, n, &v->inflight[slot]);
	if (err) {
		v->inflight[slot] = NULL;
		v->free[v->n_free++] = slot;
		if (err == -E_PROTO)
			v->rejected[VBLK_REJ_QUEUE]++;
		return err;
	}
	return 0;
}

static void vblk_kick(void *impl)
{
	struct vblk *v = impl;
	vq_kick(&v->q);
}

static int vblk_poll(void *impl, struct blk_req **done)
{
	struct vblk *v = impl;
	struct blk_req *r;
	void *tok;
	uint32_t len;
	uint16_t slot = 0;
	uint8_t st;
	int err;

	*done = NULL;
	err = vq_get_used(&v->q, &tok, &len);
	if (err) {
		if (err == -E_PROTO)
			v->rejected[VBLK_REJ_QUEUE]++;
		return err;
	}
	slot = (uint16_t)((struct blk_req **)tok - v->inflight);
	r = v->inflight[slot];
	v->inflight[slot] = NULL;
	v->free[v->n_free++] = slot;
	st = v->hdrs[(size_t)slot * AREA + A_STATUS];
	if (st == S_OK)
		r->status = 0;
	else if (st == S_IOERR)
		r->status = -E_IO;
	else if (st == S_UNSUPP)
		r->status = -E_NOSYS;
	else {
		v->rejected[VBLK_REJ_STATUS]++;
		r->status = -E_PROTO;
	}
	if (r->status == 0 && r->op == BLK_READ && len < (uint64_t)r->n_blocks * v->blk.topo.logical_block + 1) {
		v->rejected[VBLK_REJ_SHORT]++;
		r->status = -E_IO;
	}
	*done = r;
	return 0;
}

static const struct blk_ops vblk_ops = { vblk_submit, vblk_kick, vblk_poll };

int vblk_init(struct vblk *v, struct virtio_dev *vd, const struct vblk_config *cfg)
{
	uint64_t wanted = VIRTIO_F_EVENT_IDX | VIRTIO_BLK_F_SIZE_MAX | VIRTIO_BLK_F_RO | VIRTIO_BLK_F_BLK_SIZE |
			  VIRTIO_BLK_F_FLUSH | VIRTIO_BLK_F_TOPOLOGY | VIRTIO_BLK_F_DISCARD |
			  VIRTIO_BLK_F_WRITE_ZEROES;
	void *va;
	int err;

	if (!cfg->slots || cfg->queue_size == 0 || cfg->queue_size > VBLK_MAX_INFLIGHT ||
	    (cfg->queue_size & (cfg->queue_size - 1)) || vd->device_type != VIRTIO_ID_BLOCK)
		return -E_INVAL;
	memset(v, 0, sizeof *v);
	v->vd = vd;
	err = virtio_negotiate(vd, wanted, 0);
	if (err)
		return err;
	err = read_topology(v);
	if (err)
		goto fail;
	err = virtio_queue_create(vd, &v->q, 0, cfg->queue_size, cfg->slots, cfg->msix);
	if (err)
		goto fail;
	if (v->q.size > VBLK_MAX_INFLIGHT) { /* capped by queue_size: cannot happen */
		err = -E_RANGE;
		goto fail;
	}
	err = vd->port->dma_alloc(vd->port->ctx, (size_t)v->q.size * AREA, &va, &v->hdrs_pa);
	if (err)
		goto fail;
	v->hdrs = va;
	if (cfg->config_irq) {
		/* Before DRIVER_OK, so no change can be signalled without the vector. */
		v->cfg_irq = virtio_config_vector(vd, cfg->config_msix) == 0;
		if (!v->cfg_irq)
			drv_logf(vd->port, "virtio-blk: configuration vector refused; changes are polled");
	}
	for (uint16_t i = 0; i < v->q.size; i++)
		v->free[i] = (uint16_t)(v->q.size - 1 - i);
	v->n_free = v->q.size;
	v->blk.ops = &vblk_ops;
	v->blk.impl = v;
	err = virtio_driver_ok(vd);
	if (err)
		goto fail;
	drv_logf(vd->port, "virtio-blk: %llu blocks of %u bytes (physical %u), features 0x%llx",
		 (unsigned long long)v->blk.topo.capacity, v->blk.topo.logical_block, v->blk.topo.physical_block,
		 (unsigned long long)vd->features);
	return 0;
fail:
	virtio_fail(vd, "virtio-blk initialisation failed");
	return err;
}

bool vblk_config_pending(struct vblk *v)
{
	return !v->vd->failed && virtio_cfg_generation(v->vd) != v->cfg_gen;
}

int vblk_config_changed(struct vblk *v, struct vblk_cap_event *ev)
{
	uint64_t cap;
	int err;

	ev->what = VBLK_CAP_SAME;
	ev->old_sectors = ev->new_sectors = v->sectors;
	if (v->vd->failed)
		return -E_CLOSED;
	err = read_le(v->vd, CFG_CAPACITY, 8, &cap);
	if (err)
		return err; /* cfg_gen unchanged: still pending */
	v->cfg_gen = v->vd->cfg_gen;
	ev->new_sectors = cap;
	if (cap == v->sectors)
		return 0; /* another field changed */
	v->sectors = cap;
	v->blk.topo.capacity = cap / v->sectors_per_block;
	if (cap > ev->old_sectors) {
		ev->what = VBLK_CAP_GREW;
		v->n_grew++;
		return 0;
	}
	ev->what = VBLK_CAP_SHRANK;
	v->n_shrank++;
	return -E_RANGE;
}
