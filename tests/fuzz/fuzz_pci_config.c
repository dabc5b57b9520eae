/* SPDX-License-Identifier: MIT
 * Fuzz target for drivers/pci (and the virtio capability parser on top): the input is up
 * to four PCI functions, each a location byte, six BAR write masks and a 256-byte
 * configuration header. After enumeration: counts within bounds; every usable BAR a
 * naturally aligned power of two outside the forbidden ranges and overlapping no other;
 * capabilities distinct, dword-aligned and above the header; then MSI-X and virtio probing
 * on every accepted function must fail cleanly or succeed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/virtio.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "../unit/drivers/fake_dev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FN_BYTES (1 + 24 + 256)

static struct pci_dev devs[6];
static struct pci_bus bus;
static const struct pci_range forbidden[] = { { 0, 0x80000000ull }, { 0x100000000ull, 0x40000000ull } };

static void check_dev(const struct pci_dev *d)
{
	if (d->n_caps > PCI_MAX_CAPS || d->n_bars > PCI_MAX_BARS)
		abort();
	for (unsigned i = 0; i < d->n_caps; i++) {
		if (d->caps[i].off < 0x40 || (d->caps[i].off & 3))
			abort();
		for (unsigned k = 0; k < i; k++)
			if (d->caps[k].off == d->caps[i].off)
				abort();
	}
	for (unsigned i = 0; i < d->n_bars; i++) {
		const struct pci_bar *b = &d->bars[i];
		if (!(b->flags & PCI_BAR_OK))
			continue;
		if ((d->flags & PCI_DEV_BAD) || b->len == 0 || (b->len & (b->len - 1)) || (b->phys & (b->len - 1)) ||
		    b->phys + b->len < b->phys)
			abort();
		for (unsigned f = 0; f < 2 && !(b->flags & PCI_BAR_IO); f++)
			if (b->phys < forbidden[f].base + forbidden[f].len && forbidden[f].base < b->phys + b->len)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pci_config pc = { .bus_start = 0, .bus_end = 3, .devs = devs, .max_devs = 6,
				 .forbidden = forbidden, .n_forbidden = 2, .max_caps = 16 };
	size_t n = size / FN_BYTES;
	int err;

	fake_reset();
	if (n > 4)
		n = 4;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = data + i * FN_BYTES;
		struct fake_fn *f = fake_add_fn((uint8_t)((p[0] >> 5) & 3), (uint8_t)(p[0] & 31), 0, 0, 0);
		for (unsigned k = 0; k < 6; k++)
			f->bar_wmask[k] = ld_le32(p + 1 + 4 * k);
		memcpy(f->cfg, p + 25, 256);
		f->cfg[0x0e] &= 0x7f; /* single-function: keeps the image small */
	}
	if (pci_bus_init(&bus, fake_port(), &pc))
		abort();
	err = pci_bus_scan(&bus);
	if (err && err != -E_NOMEM)
		abort();
	if (bus.n_devs > 6)
		abort();
	for (uint32_t i = 0; i < bus.n_devs; i++)
		check_dev(&devs[i]);
	for (uint32_t i = 0; i < bus.n_devs; i++) {
		struct pci_dev *d = &devs[i];
		struct pci_msix m;
		struct virtio_dev vd;
		if (d->flags & PCI_DEV_BAD)
			continue;
		if (pci_msix_init(&bus, d, &m) == 0) {
			if (m.n_entries == 0 || m.n_entries > 2048)
				abort();
			if (pci_msix_set(&bus, &m, 0, 0xfee00000u, 0x30))
				abort(); /* entry 0 always exists */
		}
		if (virtio_pci_device_type(d) && virtio_pci_probe(&vd, &bus, d) == 0) {
			struct vq q;
			static struct vq_slot slots[4];
			uint8_t c[8];
			int e1 = virtio_negotiate(&vd, VIRTIO_F_EVENT_IDX, 0), e2 = 0, e3;
			if (e1 == 0)
				e2 = virtio_queue_create(&vd, &q, 0, 4, slots, 0);
			e3 = virtio_cfg_read(&vd, 0, c, sizeof c);
			if (e1 > 0 || e2 > 0 || e3 > 0)
				abort();
		}
	}
	return 0;
}
