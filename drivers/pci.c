/* SPDX-License-Identifier: MIT
 *
 * drivers/: PCI enumeration, BAR sizing, capability walk and MSI-X programming (see the
 * design note in pci.h). Config space is device input: it is read through the port,
 * validated, and never used as a pointer or loop bound before validation. Never
 * allocates, never recurses, never maps a BAR that failed validation.
 */
#include "drivers/pci.h"
#include "drivers/drv_int.h"
#include "lib/err.h"
#include "lib/mem.h"

#define CFG_ID 0x00
#define CFG_COMMAND 0x04
#define CFG_CLASS 0x08
#define CFG_HEADER 0x0c
#define CFG_BAR0 0x10
#define CFG_BUSES 0x18
#define CFG_SUBSYS 0x2c
#define CFG_CAP_PTR 0x34

#define CMD_IO (1u << 0)
#define CMD_MEM (1u << 1)
#define CMD_MASTER (1u << 2)
#define CMD_INTX_OFF (1u << 10)
#define STATUS_CAPS (1u << 4)

#define MSIX_ENABLE (1u << 15)
#define MSIX_FMASK (1u << 14)
#define MSIX_ENTRY_SIZE 16u

static uint32_t rd32(struct pci_bus *b, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
	return b->port->cfg_read32(b->port->ctx, bus, dev, fn, (uint16_t)(off & 0xffcu));
}

static void wr32(struct pci_bus *b, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off, uint32_t v)
{
	b->port->cfg_write32(b->port->ctx, bus, dev, fn, (uint16_t)(off & 0xffcu), v);
}

uint32_t pci_cfg_read32(struct pci_bus *b, const struct pci_dev *d, uint16_t off)
{
	return rd32(b, d->bus, d->dev, d->fn, off);
}

uint8_t pci_cfg_read8(struct pci_bus *b, const struct pci_dev *d, uint16_t off)
{
	return (uint8_t)(rd32(b, d->bus, d->dev, d->fn, off) >> ((off & 3u) * 8u));
}

void pci_cfg_write32(struct pci_bus *b, const struct pci_dev *d, uint16_t off, uint32_t v)
{
	wr32(b, d->bus, d->dev, d->fn, off, v);
}

static void reject(struct pci_bus *b, struct pci_dev *d, enum pci_reject site, const char *why)
{
	b->stats.rejected[site]++;
	if (d) {
		/* A rejected device keeps no usable BAR (invariant 2 holds only for good ones). */
		d->flags |= PCI_DEV_BAD;
		for (uint32_t i = 0; i < PCI_MAX_BARS; i++)
			d->bars[i].flags &= ~(uint32_t)PCI_BAR_OK;
		drv_logf(b->port, "pci %02x:%02x.%u %04x:%04x rejected: %s", d->bus, d->dev, d->fn,
			 d->vendor, d->device, why);
	} else {
		drv_logf(b->port, "pci: rejected: %s", why);
	}
}

int pci_bus_init(struct pci_bus *b, const struct drv_port *port, const struct pci_config *cfg)
{
	if (!b || !port || !cfg || !cfg->devs || cfg->max_devs == 0 || cfg->bus_end < cfg->bus_start ||
	    (cfg->n_forbidden && !cfg->forbidden) || cfg->max_caps > PCI_MAX_CAPS ||
	    !port->cfg_read32 || !port->cfg_write32)
		return -E_INVAL;
	const struct pci_window *w[2] = { &cfg->mem32, &cfg->mem64 };
	for (uint32_t i = 0; i < 2; i++)
		if (w[i]->len && (w[i]->pci_base + w[i]->len < w[i]->pci_base ||
				  w[i]->cpu_base + w[i]->len < w[i]->cpu_base))
			return -E_INVAL;
	memset(b, 0, sizeof *b);
	b->port = port;
	b->cfg = *cfg;
	if (b->cfg.max_caps == 0)
		b->cfg.max_caps = PCI_MAX_CAPS;
	return 0;
}

/* ---- capabilities ------------------------------------------------------------------ */

static void walk_caps(struct pci_bus *b, struct pci_dev *d)
{
	uint32_t visited[2] = { 0, 0 }; /* one bit per dword of the 256-byte header */
	uint32_t ptr = pci_cfg_read8(b, d, CFG_CAP_PTR) & 0xfcu;

	d->n_caps = 0;
	/* Terminates: every iteration marks a new bit of 64 or returns. */
	while (ptr != 0) {
		uint32_t slot = ptr >> 2, dw;
		if (ptr < 0x40) {
			reject(b, d, PCI_REJ_CAP_PTR, "capability pointer into the header");
			goto bad;
		}
		if (visited[slot >> 5] & (1u << (slot & 31))) {
			reject(b, d, PCI_REJ_CAP_LOOP, "capability list loops");
			goto bad;
		}
		if (d->n_caps >= b->cfg.max_caps) {
			reject(b, d, PCI_REJ_CAP_COUNT, "too many capabilities");
			goto bad;
		}
		visited[slot >> 5] |= 1u << (slot & 31);
		dw = rd32(b, d->bus, d->dev, d->fn, (uint16_t)ptr);
		d->caps[d->n_caps].id = (uint8_t)dw;
		d->caps[d->n_caps].off = (uint8_t)ptr;
		d->n_caps++;
		ptr = (dw >> 8) & 0xfcu;
	}
	return;
bad:
	d->n_caps = 0;
}

uint8_t pci_dev_find_cap(const struct pci_dev *d, uint8_t id, uint32_t *iter)
{
	for (uint32_t i = *iter; i < d->n_caps && i < PCI_MAX_CAPS; i++) {
		if (d->caps[i].id == id) {
			*iter = i + 1;
			return d->caps[i].off;
		}
	}
	*iter = d->n_caps;
	return 0;
}

/* ---- BARs -------------------------------------------------------------------------- */

static bool overlaps(uint64_t a, uint64_t alen, uint64_t c, uint64_t clen)
{
	return a < c + clen && c < a + alen;
}

static bool overlaps_other_bar(const struct pci_bus *b, const struct pci_dev *self, uint32_t self_bar,
			       uint64_t base, uint64_t len, bool io)
{
	/* self is already counted in n_devs (probe_fn), so its earlier BARs are checked too. */
	for (uint32_t i = 0; i < b->n_devs && i < b->cfg.max_devs; i++) {
		const struct pci_dev *o = &b->cfg.devs[i];
		for (uint32_t k = 0; k < o->n_bars && k < PCI_MAX_BARS; k++) {
			const struct pci_bar *bar = &o->bars[k];
			if (o == self && k == self_bar)
				continue;
			if (!(bar->flags & PCI_BAR_OK) || !!(bar->flags & PCI_BAR_IO) != io)
				continue;
			if (overlaps(base, len, bar->phys, bar->len))
				return true;
		}
	}
	return false;
}

static void check_bar(struct pci_bus *b, struct pci_dev *d, uint32_t i)
{
	struct pci_bar *bar = &d->bars[i];
	bool io = (bar->flags & PCI_BAR_IO) != 0;

	if (bar->phys == 0) {
		b->stats.n_unassigned_bars++;
		return;
	}
	if ((bar->phys & (bar->len - 1)) != 0 || bar->phys + bar->len < bar->phys) {
		reject(b, d, PCI_REJ_BAR_ALIGN, "BAR base misaligned or wraps");
		return;
	}
	if (!io) {
		for (uint32_t k = 0; k < b->cfg.n_forbidden; k++) {
			const struct pci_range *r = &b->cfg.forbidden[k];
			if (r->len && overlaps(bar->phys, bar->len, r->base, r->len)) {
				reject(b, d, PCI_REJ_BAR_FORBID, "BAR overlaps a forbidden range");
				return;
			}
		}
	}
	if (overlaps_other_bar(b, d, i, bar->phys, bar->len, io)) {
		reject(b, d, PCI_REJ_BAR_OVERLAP, "BAR overlaps another BAR");
		return;
	}
	bar->flags |= PCI_BAR_OK;
}

/* A naturally aligned block of len bytes from window w (used: bytes already given), as a
 * PCI bus address; 0 when it has no room. */
static uint64_t window_take(const struct pci_window *w, uint64_t *used, uint64_t len, bool below_4g)
{
	if (w->len == 0 || len == 0 || len > w->len)
		return 0;
	uint64_t at = w->pci_base + *used;
	at = (at + len - 1) & ~(len - 1);
	if (at < w->pci_base || at - w->pci_base > w->len - len)
		return 0;
	if (below_4g && (at > 0xffffffffull || at + len - 1 > 0xffffffffull))
		return 0;
	*used = at - w->pci_base + len;
	return at;
}

/* Give an unassigned memory BAR an address (invariant 4) and write it; returns the CPU
 * address, or 0 when no window has room (the BAR stays unassigned). */
static uint64_t assign_bar(struct pci_bus *b, struct pci_dev *d, uint32_t i, uint32_t orig, uint64_t len)
{
	struct pci_bar *bar = &d->bars[i];
	const struct pci_window *w = NULL;
	uint64_t pci = 0;
	if (d->bus != b->cfg.bus_start)
		return 0; /* behind a bridge */
	if ((bar->flags & PCI_BAR_64) && b->cfg.mem64.len) {
		w = &b->cfg.mem64;
		pci = window_take(w, &b->mem64_used, len, false);
	}
	if (!pci && b->cfg.mem32.len) {
		w = &b->cfg.mem32;
		pci = window_take(w, &b->mem32_used, len, true);
	}
	if (!pci)
		return 0;
	uint16_t off = (uint16_t)(CFG_BAR0 + 4 * i);
	pci_cfg_write32(b, d, off, (orig & 0xfu) | (uint32_t)(pci & 0xfffffff0u));
	if (bar->flags & PCI_BAR_64)
		pci_cfg_write32(b, d, (uint16_t)(off + 4), (uint32_t)(pci >> 32));
	b->stats.n_assigned_bars++;
	return w->cpu_base + (pci - w->pci_base);
}

/* Size BAR i (and i+1 for a 64-bit BAR); returns the number of slots consumed. Decoding
 * is off while this runs. */
static uint32_t size_bar(struct pci_bus *b, struct pci_dev *d, uint32_t i)
{
	uint16_t off = (uint16_t)(CFG_BAR0 + 4 * i);
	struct pci_bar *bar = &d->bars[i];
	uint32_t orig = pci_cfg_read32(b, d, off), sz, orig_hi = 0, sz_hi = 0xffffffffu;
	uint64_t mask, base;
	uint32_t used = 1;

	pci_cfg_write32(b, d, off, 0xffffffffu);
	sz = pci_cfg_read32(b, d, off);
	pci_cfg_write32(b, d, off, orig);

	if (orig & 1u) {
		bar->flags = PCI_BAR_IO;
		mask = sz & 0xfffffffcu;
		if (mask == 0)
			return 1; /* not implemented */
		if ((mask & 0xffff0000u) == 0)
			mask |= 0xffff0000u; /* 16-bit I/O decoder */
		mask |= 0xffffffff00000000ull;
		base = orig & 0xfffffffcu;
	} else {
		uint32_t type = (orig >> 1) & 3u;
		if (orig & 8u)
			bar->flags |= PCI_BAR_PREFETCH;
		if (type == 2) {
			if (i + 1 >= d->n_bars) {
				reject(b, d, PCI_REJ_BAR_64_LAST, "64-bit BAR in the last slot");
				return 1;
			}
			orig_hi = pci_cfg_read32(b, d, (uint16_t)(off + 4));
			pci_cfg_write32(b, d, (uint16_t)(off + 4), 0xffffffffu);
			sz_hi = pci_cfg_read32(b, d, (uint16_t)(off + 4));
			pci_cfg_write32(b, d, (uint16_t)(off + 4), orig_hi);
			bar->flags |= PCI_BAR_64;
			d->bars[i + 1].flags = PCI_BAR_UPPER;
			used = 2;
		} else if (type != 0) {
			reject(b, d, PCI_REJ_BAR_SIZE, "reserved BAR type");
			return 1;
		}
		mask = (uint64_t)sz_hi << 32 | (sz & 0xfffffff0u);
		if ((sz & 0xfffffff0u) == 0 && (type != 2 || sz_hi == 0))
			return used; /* not implemented */
		base = (uint64_t)orig_hi << 32 | (orig & 0xfffffff0u);
	}
	/* ~mask must be 2^k - 1: the writable bits are one contiguous run from the top. */
	if (((~mask) & (~mask + 1)) != 0 || ~mask == UINT64_MAX) {
		reject(b, d, PCI_REJ_BAR_SIZE, "BAR size is not a power of two");
		bar->flags = 0;
		return used;
	}
	bar->len = ~mask + 1;
	bar->phys = base;
	if (base == 0 && !(bar->flags & PCI_BAR_IO))
		bar->phys = assign_bar(b, d, i, orig, bar->len);
	check_bar(b, d, i);
	return used;
}

static void size_bars(struct pci_bus *b, struct pci_dev *d)
{
	uint32_t cmd = pci_cfg_read32(b, d, CFG_COMMAND) & 0xffffu;

	/* Decoding off while sizing so the all-ones probe never claims addresses. The status
	 * half is written as zero: its bits are write-one-to-clear. */
	pci_cfg_write32(b, d, CFG_COMMAND, cmd & ~(CMD_IO | CMD_MEM));
	for (uint32_t i = 0; i < d->n_bars && !(d->flags & PCI_DEV_BAD);)
		i += size_bar(b, d, i);
	pci_cfg_write32(b, d, CFG_COMMAND, cmd);
}

/* ---- enumeration ------------------------------------------------------------------- */

struct bus_queue {
	uint8_t q[PCI_MAX_BUS_QUEUE];
	uint32_t head, tail;
	uint32_t seen[8]; /* one bit per bus number */
};

static void queue_bus(struct pci_bus *b, struct bus_queue *q, struct pci_dev *bridge, uint32_t bus)
{
	if (bus < b->cfg.bus_start || bus > b->cfg.bus_end || (q->seen[bus >> 5] & (1u << (bus & 31)))) {
		reject(b, bridge, PCI_REJ_BUS_RANGE, "bridge secondary bus outside window or seen");
		return;
	}
	if (q->tail - q->head >= PCI_MAX_BUS_QUEUE) {
		reject(b, bridge, PCI_REJ_BUS_QUEUE, "too many bridges pending");
		return;
	}
	q->seen[bus >> 5] |= 1u << (bus & 31);
	q->q[q->tail++ % PCI_MAX_BUS_QUEUE] = (uint8_t)bus;
}

static int probe_fn(struct pci_bus *b, struct bus_queue *q, uint8_t bus, uint8_t dev, uint8_t fn, uint32_t id)
{
	struct pci_dev *d;
	uint32_t v, status;

	if (b->n_devs >= b->cfg.max_devs) {
		reject(b, NULL, PCI_REJ_DEV_FULL, "device array full");
		return -E_NOMEM;
	}
	d = &b->cfg.devs[b->n_devs];
	memset(d, 0, sizeof *d);
	d->bus = bus;
	d->dev = dev;
	d->fn = fn;
	d->vendor = (uint16_t)id;
	d->device = (uint16_t)(id >> 16);
	v = pci_cfg_read32(b, d, CFG_CLASS);
	d->revision = (uint8_t)v;
	d->prog_if = (uint8_t)(v >> 8);
	d->subclass = (uint8_t)(v >> 16);
	d->class_code = (uint8_t)(v >> 24);
	d->header_type = (uint8_t)(pci_cfg_read8(b, d, CFG_HEADER + 2) & 0x7fu);
	status = pci_cfg_read32(b, d, CFG_COMMAND) >> 16;

	switch (d->header_type) {
	case 0:
		d->n_bars = 6;
		v = pci_cfg_read32(b, d, CFG_SUBSYS);
		d->subsys_vendor = (uint16_t)v;
		d->subsys_id = (uint16_t)(v >> 16);
		break;
	case 1:
		d->n_bars = 2;
		d->flags |= PCI_DEV_BRIDGE;
		break;
	default:
		reject(b, d, PCI_REJ_HEADER, "unknown header type");
		b->n_devs++;
		return 0;
	}
	b->n_devs++; /* visible to the overlap check of its own BARs */
	if (status & STATUS_CAPS)
		walk_caps(b, d);
	size_bars(b, d);
	if (d->flags & PCI_DEV_BRIDGE) {
		uint32_t buses = pci_cfg_read32(b, d, CFG_BUSES);
		queue_bus(b, q, d, (buses >> 8) & 0xffu);
	}
	return 0;
}

int pci_bus_scan(struct pci_bus *b)
{
	struct bus_queue q;

	memset(&q, 0, sizeof q);
	b->n_devs = 0;
	q.seen[b->cfg.bus_start >> 5] |= 1u << (b->cfg.bus_start & 31);
	q.q[q.tail++] = b->cfg.bus_start;
	/* Bounded: each bus number enters the queue at most once (seen bitmap). */
	while (q.head != q.tail) {
		uint8_t bus = q.q[q.head++ % PCI_MAX_BUS_QUEUE];
		for (uint8_t dev = 0; dev < 32; dev++) {
			uint32_t id = rd32(b, bus, dev, 0, CFG_ID);
			uint8_t n_fn;
			if ((id & 0xffffu) == 0xffffu || (id & 0xffffu) == 0)
				continue;
			n_fn = (rd32(b, bus, dev, 0, CFG_HEADER) & 0x00800000u) ? 8 : 1;
			for (uint8_t fn = 0; fn < n_fn; fn++) {
				int err;
				if (fn)
					id = rd32(b, bus, dev, fn, CFG_ID);
				if ((id & 0xffffu) == 0xffffu || (id & 0xffffu) == 0)
					continue;
				err = probe_fn(b, &q, bus, dev, fn, id);
				if (err)
					return err;
			}
		}
	}
	return 0;
}

int pci_dev_enable(struct pci_bus *b, struct pci_dev *d)
{
	uint32_t cmd;

	if (d->flags & PCI_DEV_BAD)
		return -E_PERM;
	cmd = pci_cfg_read32(b, d, CFG_COMMAND) & 0xffffu;
	pci_cfg_write32(b, d, CFG_COMMAND, cmd | CMD_MEM | CMD_MASTER | CMD_INTX_OFF);
	d->flags |= PCI_DEV_ENABLED;
	return 0;
}

bool pci_bar_contains(const struct pci_dev *d, uint32_t bar, uint64_t off, uint64_t len)
{
	const struct pci_bar *p;

	if (bar >= d->n_bars || bar >= PCI_MAX_BARS)
		return false;
	p = &d->bars[bar];
	if ((p->flags & (PCI_BAR_OK | PCI_BAR_IO | PCI_BAR_UPPER)) != PCI_BAR_OK)
		return false;
	return off <= p->len && len <= p->len - off;
}

int pci_bar_map(struct pci_bus *b, struct pci_dev *d, uint32_t bar, uintptr_t *va)
{
	struct pci_bar *p;
	int err;

	if ((d->flags & PCI_DEV_BAD) || !pci_bar_contains(d, bar, 0, 0) || !b->port->map_bar)
		return -E_INVAL;
	p = &d->bars[bar];
	if (!p->va) {
		err = b->port->map_bar(b->port->ctx, p->phys, p->len, &p->va);
		if (err)
			return err;
	}
	*va = p->va;
	return 0;
}

/* ---- MSI-X ------------------------------------------------------------------------- */

static void msix_ctrl(struct pci_bus *b, struct pci_msix *m, uint32_t set, uint32_t clear)
{
	uint32_t dw = pci_cfg_read32(b, m->dev, m->cap);
	uint32_t ctrl = ((dw >> 16) | set) & ~clear & 0xffffu;
	pci_cfg_write32(b, m->dev, m->cap, (dw & 0xffffu) | ctrl << 16);
}

int pci_msix_init(struct pci_bus *b, struct pci_dev *d, struct pci_msix *m)
{
	uint32_t it = 0, dw, tbl, pba, n;
	uintptr_t va;
	uint8_t cap;
	int err;

	memset(m, 0, sizeof *m);
	if (d->flags & PCI_DEV_BAD)
		return -E_PERM;
	cap = pci_dev_find_cap(d, PCI_CAP_MSIX, &it);
	if (!cap)
		return -E_NOENT;
	dw = pci_cfg_read32(b, d, cap);
	n = ((dw >> 16) & 0x7ffu) + 1;
	tbl = pci_cfg_read32(b, d, (uint16_t)(cap + 4));
	pba = pci_cfg_read32(b, d, (uint16_t)(cap + 8));
	if (!pci_bar_contains(d, tbl & 7u, tbl & ~7u, (uint64_t)n * MSIX_ENTRY_SIZE) ||
	    !pci_bar_contains(d, pba & 7u, pba & ~7u, (uint64_t)(n + 63) / 64 * 8)) {
		b->stats.rejected[PCI_REJ_MSIX_BAR]++;
		drv_logf(b->port, "pci %02x:%02x.%u rejected: MSI-X table outside a usable BAR", d->bus,
			 d->dev, d->fn);
		return -E_INVAL;
	}
	err = pci_bar_map(b, d, tbl & 7u, &va);
	if (err)
		return err;
	m->dev = d;
	m->cap = cap;
	m->n_entries = (uint16_t)n;
	m->table = va + (tbl & ~7u);
	/* Enabled with the function masked: no entry fires until pci_msix_enable. */
	msix_ctrl(b, m, MSIX_ENABLE | MSIX_FMASK, 0);
	for (uint32_t i = 0; i < n; i++)
		b->port->mmio_write32(b->port->ctx, m->table + (uintptr_t)i * MSIX_ENTRY_SIZE + 12, 1);
	return 0;
}

int pci_msix_mask(struct pci_bus *b, struct pci_msix *m, uint16_t entry, bool masked)
{
	if (entry >= m->n_entries) {
		b->stats.rejected[PCI_REJ_MSIX_SIZE]++;
		return -E_RANGE;
	}
	b->port->mmio_write32(b->port->ctx, m->table + (uintptr_t)entry * MSIX_ENTRY_SIZE + 12,
			      masked ? 1u : 0u);
	return 0;
}

int pci_msix_set(struct pci_bus *b, struct pci_msix *m, uint16_t entry, uint64_t addr, uint32_t data)
{
	uintptr_t e = m->table + (uintptr_t)entry * MSIX_ENTRY_SIZE;
	int err = pci_msix_mask(b, m, entry, true);

	if (err)
		return err;
	/* Masked while the message changes, so the device never sends a half-written one. */
	b->port->mmio_write32(b->port->ctx, e + 0, (uint32_t)addr);
	b->port->mmio_write32(b->port->ctx, e + 4, (uint32_t)(addr >> 32));
	b->port->mmio_write32(b->port->ctx, e + 8, data);
	return pci_msix_mask(b, m, entry, false);
}

void pci_msix_enable(struct pci_bus *b, struct pci_msix *m)
{
	msix_ctrl(b, m, MSIX_ENABLE, MSIX_FMASK);
}
