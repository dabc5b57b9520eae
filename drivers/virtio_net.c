/* SPDX-License-Identifier: MIT
 *
 * drivers/: virtio-net (see virtio_net.h). Owns queue pairs and the frame pool split
 * between them. Never copies packet data, never allocates per packet, never reads packet
 * contents beyond the virtio header it wrote itself; device-written lengths reach the
 * caller only after the virtqueue validated them against the posted frame.
 */
#include "drivers/virtio_net.h"
#include "drivers/drv_int.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"

#define CFG_MAC 0
#define CFG_STATUS 6
#define CFG_MAX_PAIRS 8
#define CFG_RSS_MAX_KEY 17    /* u8 rss_max_key_size */
#define CFG_RSS_MAX_INDIR 18  /* le16 rss_max_indirection_table_length */
#define CFG_RSS_HASH_TYPES 20 /* le32 supported_hash_types */
#define NET_S_LINK_UP 1u
#define CTRL_CLASS_MQ 4
#define CTRL_MQ_PAIRS_SET 0
#define CTRL_MQ_RSS_CONFIG 1
/* The control page: class and command at 0, the body from 2, the device's ack in the last
 * byte (a separate, device-writable descriptor). */
#define CTRL_PAGE 4096u
#define CTRL_ACK (CTRL_PAGE - 1u)
#define CTRL_BODY_MAX (CTRL_ACK - 2u)
#define HDR_F_NEEDS_CSUM 1u
#define ETH_MIN 14u

static uint8_t *frame(const struct vnet *n, uint32_t id)
{
	return (uint8_t *)n->cfg.frames + (size_t)id * n->cfg.frame_size;
}

static int post_rx(struct vnet *n, struct vnet_pair *pr, uint32_t id)
{
	struct vq_buf b = { n->vd->port->dma_phys(n->vd->port->ctx, frame(n, id)), n->cfg.frame_size, true };
	return vq_post(&pr->rx, &b, 1, frame(n, id));
}

static uint32_t frame_id(const struct vnet *n, const void *token)
{
	return (uint32_t)(((const uint8_t *)token - (const uint8_t *)n->cfg.frames) / n->cfg.frame_size);
}

STATIC_ASSERT(VNET_RSS_CMD_LEN(VNET_RSS_INDIR_MAX, 255) <= CTRL_BODY_MAX,
	      "the largest RSS command fits the control page");

/* Send the control command whose body (len bytes) the caller wrote at ctrl_buf + 2, and
 * wait (bounded) for its acknowledgement. A command that never completes stays posted:
 * the control queue is marked broken and refuses every later command. */
static int ctrl_send(struct vnet *n, uint8_t cls, uint8_t cmd, uint32_t len)
{
	struct vq_buf b[2];
	void *tok;
	uint32_t got = 0, spins;
	int err;

	if (n->ctrl_broken)
		return -E_IO;
	if (len > CTRL_BODY_MAX)
		return -E_INVAL;
	n->ctrl_buf[0] = cls;
	n->ctrl_buf[1] = cmd;
	n->ctrl_buf[CTRL_ACK] = 0xff;
	b[0] = (struct vq_buf){ n->ctrl_pa, 2 + len, false };
	b[1] = (struct vq_buf){ n->ctrl_pa + CTRL_ACK, 1, true };
	err = vq_post(&n->ctrl, b, 2, n->ctrl_buf);
	if (err)
		return err;
	vq_kick(&n->ctrl);
	for (spins = 0; spins < n->cfg.ctrl_spins; spins++) {
		err = vq_get_used(&n->ctrl, &tok, &got);
		if (err != -E_AGAIN)
			break;
	}
	if (err || got < 1 || n->ctrl_buf[CTRL_ACK] != 0) {
		n->rejected[VNET_REJ_CTRL]++;
		drv_logf(n->vd->port, "virtio-net: control command %u/%u failed (%s)", cls, cmd,
			 err ? "no completion" : "refused");
		if (err == -E_AGAIN) {
			n->ctrl_broken = true;
			return -E_TIMEOUT;
		}
		return err ? err : -E_IO;
	}
	return 0;
}

/* The device's RSS limits (VIRTIO_NET_F_RSS negotiated, control queue present): device
 * input, so a key size or table length of 0 or an unreadable configuration means no RSS
 * (counted), never a failed initialisation. */
static void rss_limits(struct vnet *n)
{
	struct virtio_dev *vd = n->vd;
	uint8_t key, b2[2], b4[4];
	uint32_t indir, lim = VNET_RSS_INDIR_MAX;

	if (virtio_cfg_read(vd, CFG_RSS_MAX_KEY, &key, 1) || virtio_cfg_read(vd, CFG_RSS_MAX_INDIR, b2, 2) ||
	    virtio_cfg_read(vd, CFG_RSS_HASH_TYPES, b4, 4)) {
		n->rejected[VNET_REJ_RSS]++;
		drv_logf(vd->port, "virtio-net: RSS limits unreadable; RSS not used");
		return;
	}
	indir = ld_le16(b2);
	if (key == 0 || indir == 0) {
		n->rejected[VNET_REJ_RSS]++;
		drv_logf(vd->port, "virtio-net: RSS limits unusable (key %u B, table %u); RSS not used", key,
			 indir);
		return;
	}
	while (lim > indir)
		lim >>= 1;
	n->has_rss = true;
	n->rss_max_key = key;
	n->rss_max_indir = lim;
	n->rss_hash_types = ld_le32(b4);
	drv_logf(vd->port, "virtio-net: RSS: key up to %u B, indirection table up to %u entries (%u used at "
			   "most), hash types 0x%x", key, indir, lim, n->rss_hash_types);
}

static int check_cfg(const struct vnet_config *c)
{
	uint32_t need_slots;

	if (!c->frames || !c->frame_stack || !c->slots || c->frame_size < VNET_HDR_LEN + 1514 ||
	    c->max_pairs == 0 || c->max_pairs > VNET_MAX_PAIRS || c->queue_size == 0 || c->ctrl_spins == 0 ||
	    (c->queue_size & (c->queue_size - 1)) || c->n_frames < 2u * c->max_pairs)
		return -E_INVAL;
	need_slots = (2u * c->max_pairs + 1) * c->queue_size;
	return c->n_slots >= need_slots ? 0 : -E_INVAL;
}

int vnet_init(struct vnet *n, struct virtio_dev *vd, const struct vnet_config *cfg)
{
	uint64_t wanted = VIRTIO_F_EVENT_IDX | VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS |
			  VIRTIO_NET_F_CTRL_VQ | VIRTIO_NET_F_MQ;
	uint32_t slot = 0, per;
	void *va;
	int err;

	err = check_cfg(cfg);
	if (err)
		return err;
	memset(n, 0, sizeof *n);
	n->vd = vd;
	n->cfg = *cfg;
	if (vd->device_type != VIRTIO_ID_NET)
		return -E_INVAL;
	if (cfg->tx_csum)
		wanted |= VIRTIO_NET_F_CSUM;
	/* MQ and RSS depend on CTRL_VQ: never accept one without it. RSS only beside MQ (the
	 * driver reads max_virtqueue_pairs under MQ); never HASH_REPORT (a longer header). */
	if (!(virtio_offered(vd) & VIRTIO_NET_F_CTRL_VQ))
		wanted &= ~VIRTIO_NET_F_MQ;
	if ((virtio_offered(vd) & (VIRTIO_NET_F_CTRL_VQ | VIRTIO_NET_F_MQ)) == (VIRTIO_NET_F_CTRL_VQ | VIRTIO_NET_F_MQ))
		wanted |= VIRTIO_NET_F_RSS;
	err = virtio_negotiate(vd, wanted, 0);
	if (err)
		return err;

	if (vd->features & VIRTIO_NET_F_MAC) {
		err = virtio_cfg_read_bytes(vd, CFG_MAC, n->mac, 6);
		if (err)
			goto fail;
	} else {
		memcpy(n->mac, cfg->fallback_mac, 6);
	}

	n->n_pairs = 1;
	n->dev_max_pairs = 1;
	if ((vd->features & (VIRTIO_NET_F_MQ | VIRTIO_NET_F_CTRL_VQ)) == (VIRTIO_NET_F_MQ | VIRTIO_NET_F_CTRL_VQ)) {
		uint8_t b[2];
		uint16_t mp;
		err = virtio_cfg_read(vd, CFG_MAX_PAIRS, b, 2);
		if (err)
			goto fail;
		mp = ld_le16(b);
		if (mp < 1 || mp > 0x8000 || 2u * mp + 1 > vd->num_queues) {
			n->rejected[VNET_REJ_PAIRS]++;
			drv_logf(vd->port, "virtio-net: max_virtqueue_pairs %u out of range; one pair", mp);
		} else {
			n->dev_max_pairs = mp;
			n->n_pairs = (uint16_t)MIN(mp, cfg->max_pairs);
		}
	}

	per = cfg->n_frames / n->n_pairs;
	for (uint16_t p = 0; p < n->n_pairs; p++) {
		struct vnet_pair *pr = &n->pairs[p];
		uint16_t vec = cfg->msix ? p : VIRTIO_MSI_NO_VECTOR;
		err = virtio_queue_create(vd, &pr->rx, (uint16_t)(2 * p), cfg->queue_size, cfg->slots + slot, vec);
		if (err)
			goto fail;
		slot += cfg->queue_size;
		err = virtio_queue_create(vd, &pr->tx, (uint16_t)(2 * p + 1), cfg->queue_size, cfg->slots + slot, vec);
		if (err)
			goto fail;
		slot += cfg->queue_size;
		pr->rx_first = p * per;
		pr->n_rx = MIN(per / 2, (uint32_t)pr->rx.size);
		pr->tx_first = pr->rx_first + pr->n_rx;
		pr->n_tx = per - pr->n_rx;
		pr->free = cfg->frame_stack + pr->tx_first;
		for (uint32_t i = 0; i < pr->n_tx; i++)
			pr->free[i] = pr->tx_first + pr->n_tx - 1 - i;
		pr->n_free = pr->n_tx;
	}
	if (n->n_pairs > 1) {
		err = virtio_queue_create(vd, &n->ctrl, (uint16_t)(2 * n->dev_max_pairs), cfg->queue_size,
					  cfg->slots + slot, VIRTIO_MSI_NO_VECTOR);
		if (err)
			goto fail;
		err = vd->port->dma_alloc(vd->port->ctx, CTRL_PAGE, &va, &n->ctrl_pa);
		if (err)
			goto fail;
		n->ctrl_buf = va;
		n->has_ctrl = true;
		if (vd->features & VIRTIO_NET_F_RSS)
			rss_limits(n);
	}
	if (cfg->msix) {
		err = virtio_config_vector(vd, n->n_pairs);
		if (err)
			goto fail;
	}
	err = virtio_driver_ok(vd);
	if (err)
		goto fail;
	if (n->has_ctrl) {
		st_le16(n->ctrl_buf + 2, n->n_pairs);
		err = ctrl_send(n, CTRL_CLASS_MQ, CTRL_MQ_PAIRS_SET, 2);
		if (err)
			goto fail;
	}
	for (uint16_t p = 0; p < n->n_pairs; p++) {
		struct vnet_pair *pr = &n->pairs[p];
		for (uint32_t i = 0; i < pr->n_rx; i++) {
			err = post_rx(n, pr, pr->rx_first + i);
			if (err)
				goto fail;
		}
		vq_kick(&pr->rx);
	}
	drv_logf(vd->port, "virtio-net: %02x:%02x:%02x:%02x:%02x:%02x, %u queue pair(s), features 0x%llx",
		 n->mac[0], n->mac[1], n->mac[2], n->mac[3], n->mac[4], n->mac[5], n->n_pairs,
		 (unsigned long long)vd->features);
	return 0;
fail:
	virtio_fail(vd, "virtio-net initialisation failed");
	return err;
}

static struct vnet_pair *pair(struct vnet *n, uint16_t p)
{
	return p < n->n_pairs ? &n->pairs[p] : NULL;
}

static int queue_err(struct vnet *n, int err)
{
	if (err == -E_PROTO)
		n->rejected[VNET_REJ_QUEUE]++;
	return err;
}

int vnet_rx_poll(struct vnet *n, uint16_t p, struct vnet_frame *f)
{
	struct vnet_pair *pr = pair(n, p);
	void *tok;
	uint32_t len;

	memset(f, 0, sizeof *f);
	if (!pr)
		return -E_INVAL;
	/* Bounded: each pass consumes one used entry, at most the queue size. */
	for (uint32_t k = 0; k <= pr->rx.size; k++) {
		int err = vq_get_used(&pr->rx, &tok, &len);
		uint32_t id;
		if (err)
			return queue_err(n, err);
		id = frame_id(n, tok);
		if (len < VNET_HDR_LEN + ETH_MIN) {
			n->rejected[VNET_REJ_RUNT]++;
			err = post_rx(n, pr, id);
			if (err)
				return err;
			continue;
		}
		f->data = frame(n, id) + VNET_HDR_LEN;
		f->len = len - VNET_HDR_LEN;
		f->cap = n->cfg.frame_size - VNET_HDR_LEN;
		f->id = id;
		pr->rx_packets++;
		return 0;
	}
	return -E_AGAIN;
}

int vnet_rx_release(struct vnet *n, uint16_t p, uint32_t id)
{
	struct vnet_pair *pr = pair(n, p);

	if (!pr || id < pr->rx_first || id - pr->rx_first >= pr->n_rx)
		return -E_INVAL;
	return post_rx(n, pr, id);
}

int vnet_tx_reap(struct vnet *n, uint16_t p)
{
	struct vnet_pair *pr = pair(n, p);
	int count = 0;
	void *tok;
	uint32_t len;

	if (!pr)
		return -E_INVAL;
	for (;;) {
		int err = vq_get_used(&pr->tx, &tok, &len);
		if (err == -E_AGAIN)
			return count;
		if (err)
			return queue_err(n, err);
		/* Cannot overflow: ids come back only for frames we posted (invariant 1). */
		pr->free[pr->n_free++] = frame_id(n, tok);
		count++;
	}
}

int vnet_tx_alloc(struct vnet *n, uint16_t p, struct vnet_frame *f)
{
	struct vnet_pair *pr = pair(n, p);
	uint32_t id;

	memset(f, 0, sizeof *f);
	if (!pr)
		return -E_INVAL;
	if (pr->n_free == 0) {
		int err = vnet_tx_reap(n, p);
		if (err < 0)
			return err;
		if (pr->n_free == 0)
			return -E_AGAIN;
	}
	id = pr->free[--pr->n_free];
	f->data = frame(n, id) + VNET_HDR_LEN;
	f->cap = n->cfg.frame_size - VNET_HDR_LEN;
	f->id = id;
	return 0;
}

static bool tx_id_ok(const struct vnet_pair *pr, uint32_t id)
{
	return id >= pr->tx_first && id - pr->tx_first < pr->n_tx;
}

int vnet_tx_cancel(struct vnet *n, uint16_t p, uint32_t id)
{
	struct vnet_pair *pr = pair(n, p);

	if (!pr || !tx_id_ok(pr, id) || pr->n_free >= pr->n_tx)
		return -E_INVAL;
	pr->free[pr->n_free++] = id;
	return 0;
}

int vnet_tx_send(struct vnet *n, uint16_t p, uint32_t id, uint32_t len, const struct vnet_tx_csum *csum)
{
	struct vnet_pair *pr = pair(n, p);
	struct vq_buf b;
	uint8_t *h;
	int err;

	if (!pr || !tx_id_ok(pr, id) || len == 0 || len > n->cfg.frame_size - VNET_HDR_LEN)
		return -E_INVAL;
	if (csum && (!(n->vd->features & VIRTIO_NET_F_CSUM) || (uint32_t)csum->csum_start + csum->csum_offset + 2 > len))
		return -E_INVAL;
	h = frame(n, id);
	memset(h, 0, VNET_HDR_LEN);
	if (csum) {
		h[0] = HDR_F_NEEDS_CSUM;
		st_le16(h + 6, csum->csum_start);
		st_le16(h + 8, csum->csum_offset);
	}
	b = (struct vq_buf){ n->vd->port->dma_phys(n->vd->port->ctx, h), VNET_HDR_LEN + len, false };
	err = vq_post(&pr->tx, &b, 1, h);
	if (err)
		return queue_err(n, err);
	pr->tx_packets++;
	return 0;
}

void vnet_flush(struct vnet *n, uint16_t p)
{
	struct vnet_pair *pr = pair(n, p);

	if (!pr)
		return;
	vq_kick(&pr->rx);
	vq_kick(&pr->tx);
}

bool vnet_irq_enable(struct vnet *n, uint16_t p)
{
	struct vnet_pair *pr = pair(n, p);
	bool pending;

	if (!pr)
		return false;
	pending = vq_cb_enable(&pr->rx);
	/* Not short-circuited: both queues must have interrupts re-armed. */
	pending = vq_cb_enable(&pr->tx) || pending;
	return pending;
}

void vnet_irq_disable(struct vnet *n, uint16_t p)
{
	struct vnet_pair *pr = pair(n, p);

	if (!pr)
		return;
	vq_cb_disable(&pr->rx);
	vq_cb_disable(&pr->tx);
}

int vnet_rss_encode(const struct vnet_rss *r, uint8_t *out, size_t cap, size_t *len)
{
	uint8_t *p = out;
	size_t need;

	if (!r->indir || !r->key || r->hash_types == 0 || r->n_tx == 0 || r->n_indir == 0 ||
	    r->n_indir > VNET_RSS_INDIR_MAX || (r->n_indir & (r->n_indir - 1)) != 0 || r->key_len == 0 ||
	    r->key_len > 255)
		return -E_INVAL;
	need = VNET_RSS_CMD_LEN(r->n_indir, r->key_len);
	if (!out || need > cap)
		return -E_RANGE;
	st_le32(p, r->hash_types);
	st_le16(p + 4, (uint16_t)(r->n_indir - 1));
	st_le16(p + 6, r->unclassified);
	p += 8;
	for (uint32_t i = 0; i < r->n_indir; i++, p += 2)
		st_le16(p, r->indir[i]);
	st_le16(p, r->n_tx);
	p[2] = (uint8_t)r->key_len;
	memcpy(p + 3, r->key, r->key_len);
	*len = need;
	return 0;
}

int vnet_rss_set(struct vnet *n, const struct vnet_rss *r)
{
	size_t len = 0;
	int err;

	if (!n->has_rss || !n->has_ctrl)
		return -E_NOSYS;
	if (!r->indir || !r->key)
		return -E_INVAL;
	/* The device's limits; every queue named must be one the driver uses (the device
	 * enables max_tx_vq pairs). */
	if (r->hash_types & ~n->rss_hash_types || r->n_indir > n->rss_max_indir || r->key_len > n->rss_max_key ||
	    r->n_tx > n->n_pairs || r->unclassified >= r->n_tx)
		return -E_RANGE;
	for (uint32_t i = 0; i < r->n_indir; i++)
		if (r->indir[i] >= r->n_tx)
			return -E_RANGE;
	err = vnet_rss_encode(r, n->ctrl_buf + 2, CTRL_BODY_MAX, &len);
	if (err)
		return err;
	err = ctrl_send(n, CTRL_CLASS_MQ, CTRL_MQ_RSS_CONFIG, (uint32_t)len);
	/* The key is a secret (it decides which core a crafted flow lands on). A command that
	 * never completed is still the device's to read: its page is left alone. */
	if (err != -E_TIMEOUT)
		mem_wipe(n->ctrl_buf + 2, len);
	if (err)
		return err;
	n->rss_on = true;
	n->rss_n_indir = r->n_indir;
	return 0;
}

bool vnet_link_up(struct vnet *n)
{
	uint8_t b[2];

	if (!(n->vd->features & VIRTIO_NET_F_STATUS))
		return true;
	if (virtio_cfg_read(n->vd, CFG_STATUS, b, 2))
		return false;
	return (ld_le16(b) & NET_S_LINK_UP) != 0;
}
