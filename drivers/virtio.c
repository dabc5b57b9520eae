/* SPDX-License-Identifier: MIT
 *
 * drivers/: the virtio 1.x PCI transport (see virtio.h). Owns the device's status
 * register, feature negotiation and queue registration. Every capability is validated
 * against its BAR before it is mapped or used; the device is never trusted to report a
 * structure where it says. Never allocates except queue rings at init.
 */
#include "drivers/virtio.h"
#include "drivers/drv_int.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"

/* Vendor capability (virtio_pci_cap). */
#define CAP_LEN 2
#define CAP_TYPE 3
#define CAP_BAR 4
#define CAP_OFFSET 8
#define CAP_LENGTH 12
#define CAP_NOTIFY_MULT 16
enum { CFG_COMMON = 1, CFG_NOTIFY = 2, CFG_ISR = 3, CFG_DEVICE = 4 };

/* Common configuration structure. */
#define CC_DFSELECT 0
#define CC_DF 4
#define CC_GFSELECT 8
#define CC_GF 12
#define CC_MSIX 16
#define CC_NUMQ 18
#define CC_STATUS 20
#define CC_GEN 21
#define CC_Q_SELECT 22
#define CC_Q_SIZE 24
#define CC_Q_MSIX 26
#define CC_Q_ENABLE 28
#define CC_Q_NOFF 30
#define CC_Q_DESC 32
#define CC_Q_DRIVER 40
#define CC_Q_DEVICE 48
#define CC_MIN_LEN 56

#define ST_ACK 1u
#define ST_DRIVER 2u
#define ST_DRIVER_OK 4u
#define ST_FEATURES_OK 8u
#define ST_FAILED 128u

#define RESET_SPINS 1000000u
#define CFG_RETRIES 16u

static uint8_t rd8(struct virtio_dev *vd, uintptr_t a) { return vd->port->mmio_read8(vd->port->ctx, a); }
static uint16_t rd16(struct virtio_dev *vd, uintptr_t a) { return vd->port->mmio_read16(vd->port->ctx, a); }
static uint32_t rd32(struct virtio_dev *vd, uintptr_t a) { return vd->port->mmio_read32(vd->port->ctx, a); }
static void wr8(struct virtio_dev *vd, uintptr_t a, uint8_t v) { vd->port->mmio_write8(vd->port->ctx, a, v); }
static void wr16(struct virtio_dev *vd, uintptr_t a, uint16_t v) { vd->port->mmio_write16(vd->port->ctx, a, v); }
static void wr32(struct virtio_dev *vd, uintptr_t a, uint32_t v) { vd->port->mmio_write32(vd->port->ctx, a, v); }
static void wr64(struct virtio_dev *vd, uintptr_t a, uint64_t v)
{
	/* Two 32-bit halves, low first: allowed for 64-bit common-config fields. */
	wr32(vd, a, (uint32_t)v);
	wr32(vd, a + 4, (uint32_t)(v >> 32));
}

static void log_dev(struct virtio_dev *vd, const char *what)
{
	const struct pci_dev *d = vd->pci;
	drv_logf(vd->port, "virtio %02x:%02x.%u type %u: %s", d->bus, d->dev, d->fn, vd->device_type, what);
}

uint16_t virtio_pci_device_type(const struct pci_dev *d)
{
	if (d->vendor != VIRTIO_PCI_VENDOR || d->header_type != 0)
		return 0;
	if (d->device >= 0x1040 && d->device <= 0x107f)
		return (uint16_t)(d->device - 0x1040);
	if (d->device >= 0x1000 && d->device <= 0x103f)
		return d->subsys_id; /* transitional: the subsystem id names the type */
	return 0;
}

void virtio_fail(struct virtio_dev *vd, const char *why)
{
	if (vd->common)
		wr8(vd, vd->common + CC_STATUS, (uint8_t)(rd8(vd, vd->common + CC_STATUS) | ST_FAILED));
	vd->failed = true;
	log_dev(vd, why);
}

static int set_status(struct virtio_dev *vd, uint8_t bits)
{
	if (vd->failed)
		return -E_CLOSED;
	wr8(vd, vd->common + CC_STATUS, (uint8_t)(rd8(vd, vd->common + CC_STATUS) | bits));
	return 0;
}

/* Validate one vendor capability and, if good, map its window. Returns 0 and the
 * virtual address, or -E_INVAL (counted). */
static int map_cap(struct virtio_dev *vd, uint8_t cap, uint32_t min_len, uintptr_t *va, uint64_t *len,
		   uint32_t *cap_bytes)
{
	struct pci_dev *d = vd->pci;
	uint32_t dw0 = pci_cfg_read32(vd->bus, d, cap);
	uint32_t clen = (dw0 >> 16) & 0xffu;
	uint32_t bar = pci_cfg_read8(vd->bus, d, (uint16_t)(cap + CAP_BAR));
	uint32_t off = pci_cfg_read32(vd->bus, d, (uint16_t)(cap + CAP_OFFSET));
	uint32_t length = pci_cfg_read32(vd->bus, d, (uint16_t)(cap + CAP_LENGTH));
	uintptr_t base;

	/* Aligned offsets only: registers are accessed at their natural width, and an
	 * unaligned device-memory access faults on some architectures. */
	if (clen < 16 || (uint32_t)cap + clen > 256 || length < min_len || (off & 3u) ||
	    !pci_bar_contains(d, bar, off, length) || pci_bar_map(vd->bus, d, bar, &base)) {
		vd->rejected[VIRTIO_REJ_CAP]++;
		log_dev(vd, "ignoring a malformed virtio capability");
		return -E_INVAL;
	}
	*va = base + off;
	*len = length;
	*cap_bytes = clen;
	return 0;
}

int virtio_pci_probe(struct virtio_dev *vd, struct pci_bus *bus, struct pci_dev *d)
{
	uint32_t it = 0, spins;
	uint8_t cap;
	uint64_t len;
	uint32_t clen;
	int err;

	memset(vd, 0, sizeof *vd);
	vd->port = bus->port;
	vd->bus = bus;
	vd->pci = d;
	vd->device_type = virtio_pci_device_type(d);
	if (!vd->device_type || (d->flags & PCI_DEV_BAD))
		return -E_INVAL;

	while ((cap = pci_dev_find_cap(d, PCI_CAP_VENDOR, &it)) != 0) {
		uint8_t type = pci_cfg_read8(bus, d, (uint16_t)(cap + CAP_TYPE));
		uintptr_t va;
		/* The first valid structure of each type wins (later ones are alternatives). */
		switch (type) {
		case CFG_COMMON:
			if (!vd->common && map_cap(vd, cap, CC_MIN_LEN, &va, &len, &clen) == 0)
				vd->common = va;
			break;
		case CFG_NOTIFY:
			if (!vd->notify && map_cap(vd, cap, 2, &va, &len, &clen) == 0) {
				if (clen < 20) {
					vd->rejected[VIRTIO_REJ_CAP]++;
					log_dev(vd, "notify capability too short");
					break;
				}
				vd->notify = va;
				vd->notify_len = len;
				vd->notify_mult = pci_cfg_read32(bus, d, (uint16_t)(cap + CAP_NOTIFY_MULT));
			}
			break;
		case CFG_ISR:
			if (!vd->isr && map_cap(vd, cap, 1, &va, &len, &clen) == 0)
				vd->isr = va;
			break;
		case CFG_DEVICE:
			if (!vd->devcfg && map_cap(vd, cap, 1, &va, &len, &clen) == 0) {
				vd->devcfg = va;
				vd->devcfg_len = len > 4096 ? 4096 : (uint32_t)len;
			}
			break;
		default:
			break;
		}
	}
	if (!vd->common || !vd->notify || !vd->isr) {
		vd->rejected[VIRTIO_REJ_LEGACY]++;
		vd->failed = true;
		log_dev(vd, vd->common ? "refused: notify or ISR structure missing"
				       : "refused: legacy-only device (no virtio 1.x capabilities)");
		return vd->common ? -E_INVAL : -E_NOSYS;
	}
	err = pci_dev_enable(bus, d);
	if (err)
		return err;
	/* Reset, then wait for the device to report it (status reads 0). */
	wr8(vd, vd->common + CC_STATUS, 0);
	for (spins = 0; spins < RESET_SPINS && rd8(vd, vd->common + CC_STATUS) != 0; spins++)
		;
	if (spins == RESET_SPINS) {
		virtio_fail(vd, "reset never completed");
		return -E_TIMEOUT;
	}
	wr8(vd, vd->common + CC_STATUS, ST_ACK);
	wr8(vd, vd->common + CC_STATUS, ST_ACK | ST_DRIVER);
	vd->num_queues = rd16(vd, vd->common + CC_NUMQ);
	return 0;
}

uint64_t virtio_offered(struct virtio_dev *vd)
{
	uint32_t lo, hi;

	if (vd->failed)
		return 0;
	wr32(vd, vd->common + CC_DFSELECT, 0);
	lo = rd32(vd, vd->common + CC_DF);
	wr32(vd, vd->common + CC_DFSELECT, 1);
	hi = rd32(vd, vd->common + CC_DF);
	vd->offered = (uint64_t)hi << 32 | lo;
	return vd->offered;
}

int virtio_negotiate(struct virtio_dev *vd, uint64_t wanted, uint64_t required)
{
	uint64_t accept;

	if (vd->failed)
		return -E_CLOSED;
	(void)virtio_offered(vd);
	if (!(vd->offered & VIRTIO_F_VERSION_1)) {
		vd->rejected[VIRTIO_REJ_LEGACY]++;
		virtio_fail(vd, "refused: legacy-only device (VIRTIO_F_VERSION_1 not offered)");
		return -E_NOSYS;
	}
	required |= VIRTIO_F_VERSION_1;
	if ((vd->offered & required) != required) {
		vd->rejected[VIRTIO_REJ_FEATURES]++;
		drv_logf(vd->port, "virtio type %u: missing features 0x%llx", vd->device_type,
			 (unsigned long long)(required & ~vd->offered));
		virtio_fail(vd, "refused: required features not offered");
		return -E_NOSYS;
	}
	/* ACCESS_PLATFORM: the device wants platform DMA translation; ours is the identity
	 * (no IOMMU is programmed), so physical addresses are right either way. */
	accept = vd->offered & (wanted | VIRTIO_F_VERSION_1 | VIRTIO_F_ACCESS_PLATFORM);
	accept &= ~VIRTIO_F_RING_PACKED;
	wr32(vd, vd->common + CC_GFSELECT, 0);
	wr32(vd, vd->common + CC_GF, (uint32_t)accept);
	wr32(vd, vd->common + CC_GFSELECT, 1);
	wr32(vd, vd->common + CC_GF, (uint32_t)(accept >> 32));
	if (set_status(vd, ST_FEATURES_OK))
		return -E_CLOSED;
	if (!(rd8(vd, vd->common + CC_STATUS) & ST_FEATURES_OK)) {
		vd->rejected[VIRTIO_REJ_FEATURES]++;
		virtio_fail(vd, "device refused FEATURES_OK");
		return -E_PROTO;
	}
	vd->features = accept;
	/* Re-read the queue count: a device may expose more queues once features are
	 * settled (QEMU's virtio-net shows one pair + control until MQ is negotiated). */
	vd->num_queues = rd16(vd, vd->common + CC_NUMQ);
	return 0;
}

int virtio_queue_create(struct virtio_dev *vd, struct vq *q, uint16_t index, uint16_t max_size,
			struct vq_slot *slots, uint16_t msix)
{
	uint16_t size, noff;
	uint64_t notify_off;
	size_t bytes;
	void *va;
	uint64_t pa;
	int err;

	if (vd->failed)
		return -E_CLOSED;
	if (index >= vd->num_queues || max_size == 0 || (max_size & (max_size - 1)))
		return index >= vd->num_queues ? -E_NOENT : -E_INVAL;
	wr16(vd, vd->common + CC_Q_SELECT, index);
	size = rd16(vd, vd->common + CC_Q_SIZE);
	if (size == 0)
		return -E_NOENT;
	if ((size & (size - 1)) || size > VQ_MAX_SIZE) {
		vd->rejected[VIRTIO_REJ_QUEUE]++;
		log_dev(vd, "queue size not a power of two");
		return -E_PROTO;
	}
	if (size > max_size) {
		size = max_size;
		wr16(vd, vd->common + CC_Q_SIZE, size);
	}
	noff = rd16(vd, vd->common + CC_Q_NOFF);
	notify_off = (uint64_t)noff * vd->notify_mult;
	if ((notify_off & 1u) || notify_off > vd->notify_len || vd->notify_len - notify_off < 2) {
		vd->rejected[VIRTIO_REJ_QUEUE]++;
		log_dev(vd, "queue notify offset outside the notify structure");
		return -E_PROTO;
	}
	bytes = vq_ring_bytes(size);
	err = vd->port->dma_alloc(vd->port->ctx, bytes, &va, &pa);
	if (err)
		return err;
	err = vq_init(q, vd->port, index, size, va, pa, bytes, slots,
		      (vd->features & VIRTIO_F_EVENT_IDX) != 0);
	if (err)
		return err;
	q->notify_va = vd->notify + (uintptr_t)notify_off;
	wr64(vd, vd->common + CC_Q_DESC, q->desc_pa);
	wr64(vd, vd->common + CC_Q_DRIVER, q->avail_pa);
	wr64(vd, vd->common + CC_Q_DEVICE, q->used_pa);
	wr16(vd, vd->common + CC_Q_MSIX, msix);
	if (rd16(vd, vd->common + CC_Q_MSIX) != msix) {
		log_dev(vd, "device could not bind a queue vector");
		return -E_NOMEM;
	}
	wr16(vd, vd->common + CC_Q_ENABLE, 1);
	return 0;
}

int virtio_driver_ok(struct virtio_dev *vd)
{
	return set_status(vd, ST_DRIVER_OK);
}

uint8_t virtio_isr_ack(struct virtio_dev *vd)
{
	return rd8(vd, vd->isr);
}

uint8_t virtio_cfg_generation(struct virtio_dev *vd)
{
	return rd8(vd, vd->common + CC_GEN);
}

int virtio_config_vector(struct virtio_dev *vd, uint16_t msix)
{
	if (vd->failed)
		return -E_CLOSED;
	wr16(vd, vd->common + CC_MSIX, msix);
	return rd16(vd, vd->common + CC_MSIX) == msix ? 0 : -E_NOMEM;
}

/* Copy device configuration, retrying while config_generation moves. bytewise: one
 * 8-bit access per byte (byte arrays); otherwise each aligned chunk at its natural width
 * (scalar fields). */
static int cfg_read(struct virtio_dev *vd, uint32_t off, void *out, uint32_t len, bool bytewise)
{
	uint8_t *o = out;

	if (!vd->devcfg || off > vd->devcfg_len || len > vd->devcfg_len - off) {
		vd->rejected[VIRTIO_REJ_CFG]++;
		memset(out, 0, len);
		return -E_RANGE;
	}
	for (uint32_t tries = 0; tries < CFG_RETRIES; tries++) {
		uint8_t gen = rd8(vd, vd->common + CC_GEN);
		uint32_t i = 0;
		while (i < len) {
			uintptr_t a = vd->devcfg + off + i;
			if (!bytewise && ((off + i) & 3u) == 0 && len - i >= 4) {
				st_le32(o + i, rd32(vd, a));
				i += 4;
			} else if (!bytewise && ((off + i) & 1u) == 0 && len - i >= 2) {
				st_le16(o + i, rd16(vd, a));
				i += 2;
			} else {
				o[i] = rd8(vd, a);
				i += 1;
			}
		}
		if (rd8(vd, vd->common + CC_GEN) == gen) {
			vd->cfg_gen = gen;
			return 0;
		}
	}
	vd->rejected[VIRTIO_REJ_CFG]++;
	log_dev(vd, "device configuration never stable");
	return -E_AGAIN;
}

int virtio_cfg_read(struct virtio_dev *vd, uint32_t off, void *out, uint32_t len)
{
	return cfg_read(vd, off, out, len, false);
}

int virtio_cfg_read_bytes(struct virtio_dev *vd, uint32_t off, void *out, uint32_t len)
{
	return cfg_read(vd, off, out, len, true);
}

int virtio_cfg_write8(struct virtio_dev *vd, uint32_t off, uint8_t v)
{
	if (!vd->devcfg || off >= vd->devcfg_len)
		return -E_RANGE;
	wr8(vd, vd->devcfg + off, v);
	return 0;
}
