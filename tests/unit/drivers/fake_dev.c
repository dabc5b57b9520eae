/* SPDX-License-Identifier: MIT
 * Test fake for drivers/ (see fake_dev.h): platform ops over host memory, a PCI config
 * space, and a simulated virtio 1.x PCI device (common/notify/ISR/device structures in
 * one BAR, split rings read and written in "guest" memory that is identity-mapped). */
#include "fake_dev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/err.h"

struct fake_fn fake_fns[FAKE_MAX_FNS];
struct fake_virtio fake_vio;
uint8_t fake_bar[FAKE_BAR_SIZE] __attribute__((aligned(4096)));
uint32_t fake_log_lines;
char fake_last_log[200];
size_t fake_dma_used;

static uint8_t dma_arena[1u << 21] __attribute__((aligned(4096)));
static uint8_t scratch[0x10000] __attribute__((aligned(4096)));

/* ---- PCI config space -------------------------------------------------------------- */

static struct fake_fn *find_fn(uint8_t bus, uint8_t dev, uint8_t fn)
{
	for (unsigned i = 0; i < FAKE_MAX_FNS; i++) {
		struct fake_fn *f = &fake_fns[i];
		if (f->present && f->bus == bus && f->dev == dev && f->fn == fn)
			return f;
	}
	return NULL;
}

static uint32_t cfg_read32(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
	struct fake_fn *f = find_fn(bus, dev, fn);
	(void)ctx;
	if (off & 3 || off >= 4096)
		abort();
	if (!f || off >= 256)
		return f ? 0 : 0xffffffffu;
	return ld_le32(&f->cfg[off]);
}

static void cfg_write32(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off, uint32_t v)
{
	struct fake_fn *f = find_fn(bus, dev, fn);
	unsigned n_bars;
	(void)ctx;
	if (off & 3 || off >= 4096)
		abort();
	if (!f || off >= 256)
		return;
	f->n_cfg_writes++;
	n_bars = (f->cfg[0x0e] & 0x7f) == 1 ? 2 : 6;
	if (off == 0x00 || off == 0x08)
		return;
	if (off == 0x04) { /* status half is RW1C: ignore it here */
		st_le16(&f->cfg[4], (uint16_t)v);
		return;
	}
	if (off >= 0x10 && off < 0x10 + 4 * n_bars) {
		unsigned i = (off - 0x10) / 4;
		uint32_t old = ld_le32(&f->cfg[off]);
		st_le32(&f->cfg[off], (v & f->bar_wmask[i]) | (old & ~f->bar_wmask[i]));
		return;
	}
	st_le32(&f->cfg[off], v);
}

struct fake_fn *fake_add_fn(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t vendor, uint16_t device)
{
	for (unsigned i = 0; i < FAKE_MAX_FNS; i++) {
		struct fake_fn *f = &fake_fns[i];
		if (f->present)
			continue;
		memset(f, 0, sizeof *f);
		f->present = true;
		f->bus = bus;
		f->dev = dev;
		f->fn = fn;
		st_le16(&f->cfg[0], vendor);
		st_le16(&f->cfg[2], device);
		return f;
	}
	abort();
}

void fake_set_bar(struct fake_fn *f, unsigned i, uint64_t phys, uint64_t size, bool is64)
{
	uint64_t mask = ~(size - 1);
	st_le32(&f->cfg[0x10 + 4 * i], (uint32_t)phys | (is64 ? 4u : 0u));
	f->bar_wmask[i] = (uint32_t)mask & 0xfffffff0u;
	if (is64) {
		st_le32(&f->cfg[0x14 + 4 * i], (uint32_t)(phys >> 32));
		f->bar_wmask[i + 1] = (uint32_t)(mask >> 32);
	}
}

void fake_add_cap(struct fake_fn *f, uint8_t off, uint8_t id, const uint8_t *body, uint8_t len)
{
	uint8_t *link = &f->cfg[0x34];
	f->cfg[0x06] |= 0x10;
	for (unsigned guard = 0; *link && guard < 64; guard++)
		link = &f->cfg[*link + 1];
	*link = off;
	f->cfg[off] = id;
	f->cfg[off + 1] = 0;
	memcpy(&f->cfg[off + 2], body, len);
}

static void vcap(struct fake_fn *f, uint8_t off, uint8_t type, uint32_t boff, uint32_t blen, bool notify)
{
	uint8_t b[18] = { 0 };
	b[0] = notify ? 20 : 16;
	b[1] = type;
	b[2] = 4;
	st_le32(&b[6], boff);
	st_le32(&b[10], blen);
	if (notify)
		st_le32(&b[14], FAKE_NOTIFY_MULT);
	fake_add_cap(f, off, 0x09, b, notify ? 18 : 14);
}

struct fake_fn *fake_add_virtio(uint16_t type, uint64_t features, uint16_t num_queues, uint16_t qsize,
				uint16_t n_vectors)
{
	struct fake_fn *f = fake_add_fn(0, 1, 0, 0x1af4, (uint16_t)(0x1040 + type));
	uint8_t m[10];
	st_le16(&f->cfg[0x2e], type);
	f->cfg[0x0b] = 0x02;
	fake_set_bar(f, 4, FAKE_BAR_PHYS, FAKE_BAR_SIZE, true);
	vcap(f, 0x40, 1, FAKE_OFF_COMMON, 0x40, false);
	vcap(f, 0x50, 2, FAKE_OFF_NOTIFY, 0x1000, true);
	vcap(f, 0x64, 3, FAKE_OFF_ISR, 4, false);
	vcap(f, 0x74, 4, FAKE_OFF_DEVCFG, 0x100, false);
	st_le16(&m[0], (uint16_t)(n_vectors - 1));
	st_le32(&m[2], FAKE_OFF_MSIX | 4);
	st_le32(&m[6], FAKE_OFF_PBA | 4);
	fake_add_cap(f, 0x84, 0x11, m, sizeof m);
	memset(&fake_vio, 0, sizeof fake_vio);
	fake_vio.type = type;
	fake_vio.features = features;
	fake_vio.num_queues = num_queues;
	fake_vio.auto_process = true;
	for (unsigned i = 0; i < FAKE_MAX_Q; i++)
		fake_vio.q[i].max_size = fake_vio.q[i].size = i < num_queues ? qsize : 0;
	return f;
}

/* ---- virtio device: common config --------------------------------------------------- */

static struct fake_queue *selq(void)
{
	return fake_vio.q_select < FAKE_MAX_Q ? &fake_vio.q[fake_vio.q_select] : NULL;
}

static void sync_shadow(void)
{
	uint8_t *cc = &fake_bar[FAKE_OFF_COMMON];
	struct fake_queue *q = selq();
	uint32_t sel = ld_le32(cc + 0);
	st_le32(cc + 4, sel == 0 ? (uint32_t)fake_vio.features : sel == 1 ? (uint32_t)(fake_vio.features >> 32) : 0);
	st_le16(cc + 16, fake_vio.config_msix);
	st_le16(cc + 18, fake_vio.num_queues_early &&
				 (!(fake_vio.status & 8) || !((fake_vio.driver_features >> 22) & 1))
			 ? fake_vio.num_queues_early
			 : fake_vio.num_queues);
	cc[20] = fake_vio.status;
	cc[21] = fake_vio.gen;
	st_le16(cc + 22, fake_vio.q_select);
	st_le16(cc + 24, q ? q->size : 0);
	st_le16(cc + 26, q ? q->msix : 0xffff);
	st_le16(cc + 28, q ? q->enable : 0);
	st_le16(cc + 30, fake_vio.q_select);
	st_le64(cc + 32, q ? q->desc : 0);
	st_le64(cc + 40, q ? q->drv : 0);
	st_le64(cc + 48, q ? q->dev : 0);
}

static void common_write(uint32_t off)
{
	uint8_t *cc = &fake_bar[FAKE_OFF_COMMON];
	struct fake_queue *q = selq();
	uint32_t sel;
	switch (off) {
	case 12:
		sel = ld_le32(cc + 8);
		if (sel == 0)
			fake_vio.driver_features = (fake_vio.driver_features & ~0xffffffffull) | ld_le32(cc + 12);
		else if (sel == 1)
			fake_vio.driver_features = (fake_vio.driver_features & 0xffffffffull) |
						   (uint64_t)ld_le32(cc + 12) << 32;
		break;
	case 16:
		fake_vio.config_msix = fake_vio.no_vectors ? 0xffff : ld_le16(cc + 16);
		break;
	case 20: {
		uint8_t v = cc[20];
		if (v == 0) {
			fake_vio.status = 0;
			for (unsigned i = 0; i < FAKE_MAX_Q; i++) {
				uint16_t mx = fake_vio.q[i].max_size;
				memset(&fake_vio.q[i], 0, sizeof fake_vio.q[i]);
				fake_vio.q[i].max_size = mx;
				fake_vio.q[i].size = mx;
			}
			break;
		}
		if ((v & 8) && !(fake_vio.status & 8) &&
		    (fake_vio.refuse_features_ok || (fake_vio.driver_features & ~fake_vio.features)))
			v &= (uint8_t)~8;
		fake_vio.status = v;
		break;
	}
	case 22:
		fake_vio.q_select = ld_le16(cc + 22);
		break;
	case 24:
		if (q)
			q->size = ld_le16(cc + 24);
		break;
	case 26:
		if (q)
			q->msix = fake_vio.no_vectors ? 0xffff : ld_le16(cc + 26);
		break;
	case 28:
		if (q)
			q->enable = ld_le16(cc + 28);
		break;
	case 32: case 36:
		if (q)
			q->desc = ld_le64(cc + 32);
		break;
	case 40: case 44:
		if (q)
			q->drv = ld_le64(cc + 40);
		break;
	case 48: case 52:
		if (q)
			q->dev = ld_le64(cc + 48);
		break;
	default:
		break;
	}
}

static uint64_t bar_access(uintptr_t va, unsigned width, bool write, uint64_t v)
{
	uintptr_t base = (uintptr_t)fake_bar;
	uint32_t off;
	if (va >= (uintptr_t)scratch && va + width <= (uintptr_t)scratch + sizeof scratch) {
		uint8_t *p = (uint8_t *)va;
		if (write) {
			for (unsigned i = 0; i < width; i++)
				p[i] = (uint8_t)(v >> (8 * i));
			return 0;
		}
		v = 0;
		for (unsigned i = 0; i < width; i++)
			v |= (uint64_t)p[i] << (8 * i);
		return v;
	}
	if (va < base || va + width > base + FAKE_BAR_SIZE || (va & (width - 1)))
		abort(); /* the driver touched something it never mapped, or misaligned */
	off = (uint32_t)(va - base);
	if (!write) {
		if (off < FAKE_OFF_COMMON + 0x40)
			sync_shadow();
		if (off >= FAKE_OFF_DEVCFG && off < FAKE_OFF_DEVCFG + 0x100) {
			fake_vio.n_devcfg_reads++;
			if (fake_vio.devcfg_read_hook)
				fake_vio.devcfg_read_hook(off - FAKE_OFF_DEVCFG);
		}
		if (off == FAKE_OFF_ISR) {
			uint8_t isr = fake_vio.isr;
			fake_vio.isr = 0;
			return isr;
		}
		v = 0;
		for (unsigned i = 0; i < width; i++)
			v |= (uint64_t)fake_bar[off + i] << (8 * i);
		return v;
	}
	if (off < FAKE_OFF_COMMON + 0x40)
		sync_shadow();
	for (unsigned i = 0; i < width; i++)
		fake_bar[off + i] = (uint8_t)(v >> (8 * i));
	if (off < FAKE_OFF_COMMON + 0x40) {
		common_write(off);
	} else if (off >= FAKE_OFF_NOTIFY && off < FAKE_OFF_NOTIFY + 0x1000) {
		uint16_t qi = (uint16_t)((off - FAKE_OFF_NOTIFY) / FAKE_NOTIFY_MULT);
		if (qi < FAKE_MAX_Q) {
			fake_vio.q[qi].n_notify++;
			if (fake_vio.auto_process)
				fake_process(qi);
		}
	}
	return 0;
}

static uint8_t m_rd8(void *c, uintptr_t a) { (void)c; return (uint8_t)bar_access(a, 1, false, 0); }
static uint16_t m_rd16(void *c, uintptr_t a) { (void)c; return (uint16_t)bar_access(a, 2, false, 0); }
static uint32_t m_rd32(void *c, uintptr_t a) { (void)c; return (uint32_t)bar_access(a, 4, false, 0); }
static uint64_t m_rd64(void *c, uintptr_t a) { (void)c; return bar_access(a, 8, false, 0); }
static void m_wr8(void *c, uintptr_t a, uint8_t v) { (void)c; bar_access(a, 1, true, v); }
static void m_wr16(void *c, uintptr_t a, uint16_t v) { (void)c; bar_access(a, 2, true, v); }
static void m_wr32(void *c, uintptr_t a, uint32_t v) { (void)c; bar_access(a, 4, true, v); }
static void m_wr64(void *c, uintptr_t a, uint64_t v) { (void)c; bar_access(a, 8, true, v); }

static int map_bar(void *ctx, uint64_t phys, uint64_t len, uintptr_t *va)
{
	(void)ctx;
	if (phys >= FAKE_BAR_PHYS && phys - FAKE_BAR_PHYS + len <= FAKE_BAR_SIZE) {
		*va = (uintptr_t)fake_bar + (uintptr_t)(phys - FAKE_BAR_PHYS);
		return 0;
	}
	if (len <= sizeof scratch) {
		*va = (uintptr_t)scratch;
		return 0;
	}
	return -E_NOMEM;
}

static int dma_alloc(void *ctx, size_t len, void **va, uint64_t *pa)
{
	size_t n = (len + 4095) & ~(size_t)4095;
	(void)ctx;
	if (n > sizeof dma_arena - fake_dma_used)
		return -E_NOMEM;
	*va = &dma_arena[fake_dma_used];
	memset(*va, 0, n);
	*pa = (uint64_t)(uintptr_t)*va;
	fake_dma_used += n;
	return 0;
}

static uint64_t dma_phys(void *ctx, const void *va)
{
	(void)ctx;
	return (uint64_t)(uintptr_t)va;
}

static void barrier(void *ctx)
{
	(void)ctx;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	fake_log_lines++;
	snprintf(fake_last_log, sizeof fake_last_log, "%s", line);
	if (getenv("FAKE_VERBOSE"))
		fprintf(stderr, "  [drv] %s\n", line);
}

static const struct drv_port port = {
	.ctx = NULL,
	.cfg_read32 = cfg_read32,
	.cfg_write32 = cfg_write32,
	.map_bar = map_bar,
	.mmio_read8 = m_rd8,
	.mmio_read16 = m_rd16,
	.mmio_read32 = m_rd32,
	.mmio_read64 = m_rd64,
	.mmio_write8 = m_wr8,
	.mmio_write16 = m_wr16,
	.mmio_write32 = m_wr32,
	.mmio_write64 = m_wr64,
	.dma_alloc = dma_alloc,
	.dma_phys = dma_phys,
	.mb = barrier,
	.rmb = barrier,
	.wmb = barrier,
	.log = log_line,
};

const struct drv_port *fake_port(void)
{
	return &port;
}

void fake_reset(void)
{
	memset(fake_fns, 0, sizeof fake_fns);
	memset(&fake_vio, 0, sizeof fake_vio);
	memset(fake_bar, 0, sizeof fake_bar);
	fake_log_lines = 0;
	fake_last_log[0] = 0;
	fake_dma_used = 0;
}

/* ---- virtio device: rings ------------------------------------------------------------ */

static uint8_t *gpa(uint64_t pa) { return (uint8_t *)(uintptr_t)pa; }
static bool event_idx(void) { return (fake_vio.driver_features >> 29) & 1; }

bool fake_vq_pop(uint16_t qi, uint16_t *head)
{
	struct fake_queue *q = &fake_vio.q[qi];
	uint8_t *avail = gpa(q->drv);
	uint16_t idx;
	if (!q->enable || !q->size)
		return false;
	idx = ld_le16(avail + 2);
	if (idx == q->last_avail)
		return false;
	*head = ld_le16(avail + 4 + 2 * (q->last_avail & (q->size - 1)));
	q->last_avail++;
	if (event_idx() && !fake_vio.no_event_write)
		st_le16(gpa(q->dev) + 4 + 8 * q->size, q->last_avail);
	return true;
}

void fake_vq_push(uint16_t qi, uint32_t id, uint32_t len)
{
	struct fake_queue *q = &fake_vio.q[qi];
	uint8_t *used = gpa(q->dev), *avail = gpa(q->drv);
	uint16_t old = q->used_idx, now = (uint16_t)(old + 1);
	uint8_t *e = used + 4 + 8 * (old & (q->size - 1));
	bool irq;
	st_le32(e, id);
	st_le32(e + 4, len);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	q->used_idx = now;
	st_le16(used + 2, now);
	if (event_idx()) {
		uint16_t ev = ld_le16(avail + 4 + 2 * q->size);
		irq = (uint16_t)(now - ev - 1) < (uint16_t)(now - old);
	} else {
		irq = !(ld_le16(avail) & 1);
	}
	if (irq) {
		q->n_irq++;
		fake_vio.isr |= 1;
	}
}

struct seg {
	uint8_t *p;
	uint32_t len;
	bool w;
};

static unsigned walk(uint16_t qi, uint16_t head, struct seg *s, unsigned max)
{
	struct fake_queue *q = &fake_vio.q[qi];
	unsigned n = 0;
	uint16_t d = head;
	for (;;) {
		uint8_t *desc = gpa(q->desc) + 16 * (d & (q->size - 1));
		uint16_t flags = ld_le16(desc + 12);
		if (n == max)
			abort();
		s[n].p = gpa(ld_le64(desc));
		s[n].len = ld_le32(desc + 8);
		s[n].w = flags & 2;
		n++;
		if (!(flags & 1))
			return n;
		d = ld_le16(desc + 14);
	}
}

/* Copy the device-readable bytes of a chain into buf; returns the count. */
static uint32_t gather(const struct seg *s, unsigned n, uint8_t *buf, uint32_t max)
{
	uint32_t k = 0;
	for (unsigned i = 0; i < n; i++)
		for (uint32_t j = 0; !s[i].w && j < s[i].len && k < max; j++)
			buf[k++] = s[i].p[j];
	return k;
}

/* Write into the device-writable part of a chain at offset off. */
static void scatter(const struct seg *s, unsigned n, uint32_t off, const uint8_t *src, uint32_t len)
{
	uint32_t pos = 0;
	for (unsigned i = 0; i < n && len; i++) {
		if (!s[i].w)
			continue;
		for (uint32_t j = 0; j < s[i].len && len; j++, pos++) {
			if (pos >= off) {
				s[i].p[j] = *src++;
				len--;
			}
		}
	}
}

static uint32_t wlen(const struct seg *s, unsigned n)
{
	uint32_t t = 0;
	for (unsigned i = 0; i < n; i++)
		t += s[i].w ? s[i].len : 0;
	return t;
}

static uint8_t rbuf[70000];

/* The control queue follows the receive/transmit pairs: index 2 * max_virtqueue_pairs
 * with VIRTIO_NET_F_MQ, else 2. */
static bool net_is_ctrl(uint16_t qi)
{
	bool mq = (fake_vio.driver_features >> 22) & 1;
	return qi == (mq ? 2u * ld_le16(&fake_bar[FAKE_OFF_DEVCFG + 8]) : 2u);
}

/* VIRTIO_NET_CTRL_MQ_RSS_CONFIG's body: taken (true) only when well formed and within the
 * configuration's limits; a refusal leaves the previous configuration. */
static bool net_rss_config(const uint8_t *b, uint32_t len)
{
	const uint8_t *cfg = &fake_bar[FAKE_OFF_DEVCFG];
	uint32_t n, pairs = ld_le16(cfg + 8), max_indir = ld_le16(cfg + 18), max_key = cfg[17];
	uint16_t max_tx;
	uint8_t key_len;
	fake_vio.n_rss_cmds++;
	if (fake_vio.rss_refuse || !((fake_vio.driver_features >> 60) & 1) || len < 8)
		return false;
	n = (uint32_t)ld_le16(b + 4) + 1;
	if ((n & (n - 1)) || n > max_indir || n > 2048 || ld_le16(b + 6) >= pairs || len < 8 + 2 * n + 3)
		return false;
	max_tx = ld_le16(b + 8 + 2 * n);
	key_len = b[8 + 2 * n + 2];
	if (max_tx == 0 || max_tx > pairs || key_len == 0 || key_len > max_key || len != 8 + 2 * n + 3 + key_len)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (ld_le16(b + 8 + 2 * i) >= max_tx)
			return false;
	fake_vio.rss_hash_types = ld_le32(b);
	fake_vio.rss_n_indir = (uint16_t)n;
	fake_vio.rss_unclassified = ld_le16(b + 6);
	for (uint32_t i = 0; i < n; i++)
		fake_vio.rss_indir[i] = ld_le16(b + 8 + 2 * i);
	fake_vio.rss_max_tx = max_tx;
	fake_vio.rss_key_len = key_len;
	memcpy(fake_vio.rss_key, b + 8 + 2 * n + 3, key_len);
	fake_vio.rss_cmd_len = len;
	fake_vio.rss_on = true;
	return true;
}

uint16_t fake_net_rss_pair(const uint8_t *f, uint32_t len)
{
	uint8_t in[12];
	uint32_t hash = 0, ihl;
	if (!fake_vio.rss_on || !(fake_vio.rss_hash_types & 2u) || len < 14 + 20 || f[12] != 0x08 || f[13] != 0 ||
	    (f[14] >> 4) != 4 || f[23] != 6 || (ld_be16(f + 20) & 0x3fffu))
		return fake_vio.rss_unclassified;
	ihl = (f[14] & 15u) * 4u;
	if (ihl < 20 || len < 14 + ihl + 4)
		return fake_vio.rss_unclassified;
	memcpy(in, f + 26, 8);            /* source and destination address */
	memcpy(in + 8, f + 14 + ihl, 4);  /* source and destination port */
	/* For each set input bit (most significant first), XOR in the 32 key bits that start
	 * at the same bit position. */
	for (uint32_t bit = 0; bit < 96; bit++) {
		if (!((in[bit / 8] >> (7 - bit % 8)) & 1))
			continue;
		uint32_t w = 0;
		for (uint32_t k = 0; k < 32; k++) {
			uint32_t kb = bit + k;
			w = w << 1 | (kb / 8 < fake_vio.rss_key_len ? (fake_vio.rss_key[kb / 8] >> (7 - kb % 8)) & 1u : 0u);
		}
		hash ^= w;
	}
	return fake_vio.rss_indir[hash & (fake_vio.rss_n_indir - 1u)];
}

static uint32_t do_net(uint16_t qi, const struct seg *s, unsigned n)
{
	uint32_t len;
	if (net_is_ctrl(qi)) {
		uint8_t ok = 1;
		len = gather(s, n, rbuf, sizeof rbuf);
		if (len >= 4 && rbuf[0] == 4 && rbuf[1] == 0) {
			fake_vio.mq_pairs_set = ld_le16(&rbuf[2]);
			ok = 0;
		}
		if (len >= 2 && rbuf[0] == 4 && rbuf[1] == 1)
			ok = net_rss_config(rbuf + 2, len - 2) ? 0 : 1;
		scatter(s, n, 0, &ok, 1);
		return 1;
	}
	len = gather(s, n, rbuf, sizeof rbuf);
	if (len >= 12) {
		fake_vio.last_tx_len = len - 12 > sizeof fake_vio.last_tx ? sizeof fake_vio.last_tx : len - 12;
		memcpy(fake_vio.last_tx, rbuf + 12, fake_vio.last_tx_len);
	}
	fake_vio.n_tx++;
	return 0;
}

static uint32_t do_blk(const struct seg *s, unsigned n)
{
	uint32_t rl = gather(s, n, rbuf, sizeof rbuf), wl = wlen(s, n);
	uint32_t type = ld_le32(rbuf);
	uint64_t sector = ld_le64(rbuf + 8);
	uint8_t st = 0;
	uint32_t data = 0;
	if (rl < 16 || wl < 1)
		abort();
	switch (type) {
	case 0: /* IN */
		data = wl - 1;
		if (data % 512 || sector + data / 512 > FAKE_DISK_SECTORS)
			st = 1, data = 0;
		else
			scatter(s, n, 0, &fake_vio.disk[sector * 512], data);
		break;
	case 1: /* OUT */
		if ((rl - 16) % 512 || sector + (rl - 16) / 512 > FAKE_DISK_SECTORS)
			st = 1;
		else
			memcpy(&fake_vio.disk[sector * 512], rbuf + 16, rl - 16);
		break;
	case 4:
		fake_vio.n_flush++;
		break;
	case 11: case 13:
		for (uint32_t k = 16; k + 16 <= rl; k += 16) {
			uint64_t sec = ld_le64(rbuf + k);
			uint32_t cnt = ld_le32(rbuf + k + 8);
			if (sec + cnt > FAKE_DISK_SECTORS) {
				st = 1;
				break;
			}
			memset(&fake_vio.disk[sec * 512], 0, (size_t)cnt * 512);
		}
		if (type == 11)
			fake_vio.n_discard++;
		else
			fake_vio.n_wzero++;
		break;
	default:
		st = 2;
	}
	scatter(s, n, wl - 1, &st, 1); /* the status byte ends the chain */
	return data + 1;
}

static uint32_t do_rng(const struct seg *s, unsigned n)
{
	uint32_t wl = wlen(s, n);
	for (uint32_t i = 0; i < wl; i++) {
		uint8_t b = (uint8_t)(0xa5 ^ (fake_vio.n_rng_bytes + i));
		scatter(s, n, i, &b, 1);
	}
	fake_vio.n_rng_bytes += wl;
	return wl;
}

static uint32_t do_scsi(const struct seg *s, unsigned n)
{
	/* Request/response sizes follow the device configuration the driver read. */
	const uint32_t SCSI_REQ = 19 + ld_le32(&fake_bar[FAKE_OFF_DEVCFG + 24]);
	const uint32_t SCSI_RESP = 12 + ld_le32(&fake_bar[FAKE_OFF_DEVCFG + 20]);
	uint32_t rl = gather(s, n, rbuf, sizeof rbuf), wl = wlen(s, n);
	uint8_t resp[12 + 256] = { 0 };
	const uint8_t *cdb = rbuf + 19;
	uint32_t din = 0;
	uint64_t lba;
	uint32_t cnt;
	if (SCSI_REQ < 35 || SCSI_REQ > 19 + 64 || SCSI_RESP > sizeof resp || rl < SCSI_REQ || wl < SCSI_RESP)
		return 0; /* not what this fake understands: a response-less completion */
	if (fake_vio.scsi_pending_ua) {
		fake_vio.scsi_pending_ua--;
		resp[10] = 2; /* CHECK CONDITION */
		st_le32(resp, 18);
		resp[12] = 0x70;
		resp[14] = 6; /* UNIT ATTENTION */
		resp[19] = 10;
		resp[24] = 0x29;
		scatter(s, n, 0, resp, SCSI_RESP);
		return SCSI_RESP;
	}
	lba = ld_be64(cdb + 2);
	cnt = ld_be32(cdb + 10);
	fake_vio.scsi_last_opcode = cdb[0];
	if (cdb[0] == 0x91 && fake_vio.scsi_no_sync16)
		cdb = (const uint8_t *)"\xff"; /* refused below like any unknown opcode */
	switch (cdb[0]) {
	case 0x88: /* READ(16) */
		if (lba + cnt > FAKE_DISK_SECTORS || cnt * 512 > wl - SCSI_RESP) {
			resp[10] = 2;
			break;
		}
		din = cnt * 512;
		scatter(s, n, SCSI_RESP, &fake_vio.disk[lba * 512], din);
		break;
	case 0x8a: /* WRITE(16) */
		if (lba + cnt > FAKE_DISK_SECTORS || cnt * 512 != rl - SCSI_REQ) {
			resp[10] = 2;
			break;
		}
		memcpy(&fake_vio.disk[lba * 512], rbuf + SCSI_REQ, cnt * 512);
		break;
	case 0x35: case 0x91:
		fake_vio.n_flush++;
		break;
	case 0x42: { /* UNMAP */
		const uint8_t *p = rbuf + SCSI_REQ;
		uint32_t bd = ld_be16(p + 2);
		for (uint32_t k = 0; k + 16 <= bd && SCSI_REQ + 8 + k + 16 <= rl; k += 16) {
			uint64_t l = ld_be64(p + 8 + k);
			uint32_t c = ld_be32(p + 16 + k);
			if (l + c <= FAKE_DISK_SECTORS)
				memset(&fake_vio.disk[l * 512], 0, (size_t)c * 512);
		}
		fake_vio.n_discard++;
		break;
	}
	case 0x9e: { /* READ CAPACITY(16) */
		uint8_t rc[32] = { 0 };
		st_be64(rc, FAKE_DISK_SECTORS - 1);
		st_be32(rc + 8, 512);
		rc[13] = 3;
		rc[14] = 0x80;
		din = 32;
		scatter(s, n, SCSI_RESP, rc, din);
		break;
	}
	case 0x00:
		break;
	default:
		resp[10] = 2;
		st_le32(resp, 18);
		resp[12] = 0x70;
		resp[14] = 5; /* ILLEGAL REQUEST */
		resp[24] = 0x20;
	}
	scatter(s, n, 0, resp, SCSI_RESP);
	return SCSI_RESP + din + (fake_vio.scsi_len_counts_out ? rl - SCSI_REQ : 0);
}

void fake_process(uint16_t qi)
{
	uint16_t head;
	struct seg s[64];
	if (fake_vio.type == 1 && qi % 2 == 0 && !net_is_ctrl(qi))
		return; /* receive queues fill only on fake_net_inject */
	if (fake_vio.type == 8 && qi < 2)
		return;
	while (fake_vq_pop(qi, &head)) {
		unsigned n = walk(qi, head, s, 64);
		uint32_t len = 0;
		switch (fake_vio.type) {
		case 1: len = do_net(qi, s, n); break;
		case 2: len = do_blk(s, n); break;
		case 4: len = do_rng(s, n); break;
		case 8: len = do_scsi(s, n); break;
		default: break;
		}
		fake_vq_push(qi, head, len);
	}
}

bool fake_net_inject(uint16_t qi, const uint8_t *frame, uint32_t len)
{
	uint16_t head;
	struct seg s[64];
	uint8_t hdr[12] = { 0 };
	unsigned n;
	if (!fake_vq_pop(qi, &head))
		return false;
	n = walk(qi, head, s, 64);
	if (wlen(s, n) < 12 + len)
		abort();
	hdr[10] = 1; /* num_buffers */
	scatter(s, n, 0, hdr, 12);
	scatter(s, n, 12, frame, len);
	fake_vq_push(qi, head, 12 + len);
	return true;
}
