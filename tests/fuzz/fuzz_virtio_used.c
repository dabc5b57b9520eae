/* SPDX-License-Identifier: MIT
 * Fuzz target for drivers/virtqueue: the input is a script of driver and device actions on
 * one split queue (8 entries) of the simulated virtio device, where the device side writes
 * arbitrary used-ring contents (ids, lengths, index jumps). After every step: the
 * descriptor accounting holds, every completion names a chain we posted with a length
 * within what it let the device write (also on a lenient queue, which clamps), and a
 * broken queue stays broken. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/virtio.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "../unit/drivers/fake_dev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define QSZ 8

static struct pci_dev devs[2];
static struct pci_bus bus;
static struct virtio_dev vd;
static struct vq q;
static struct vq_slot slots[QSZ];
static uint8_t bufs[QSZ][256];
static struct {
	bool posted;
	uint32_t wlen;
	uint16_t n_desc;
} track[QSZ];

static bool bring_up(bool event_idx)
{
	struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
	fake_reset();
	fake_add_virtio(2, VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX, 1, QSZ, 2);
	fake_vio.auto_process = false;
	if (pci_bus_init(&bus, fake_port(), &pc) || pci_bus_scan(&bus) || virtio_pci_probe(&vd, &bus, &devs[0]) ||
	    virtio_negotiate(&vd, event_idx ? VIRTIO_F_EVENT_IDX : 0, 0) ||
	    virtio_queue_create(&vd, &q, 0, QSZ, slots, 0) || virtio_driver_ok(&vd))
		abort();
	memset(track, 0, sizeof track);
	return true;
}

static void check(void)
{
	uint32_t in_flight = 0, n_out = 0;
	for (unsigned i = 0; i < QSZ; i++)
		if (track[i].posted) {
			in_flight += track[i].n_desc;
			n_out++;
		}
	if (q.n_free + in_flight != QSZ || q.n_outstanding != n_out || !vq_check_invariants(&q))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pos = 1;
	bool was_broken = false;
	if (size < 1)
		return 0;
	bring_up(data[0] & 1);
	q.lenient_len = (data[0] & 2) != 0; /* virtio-scsi's mode: long lengths clamped */
	while (pos < size) {
		uint8_t op = data[pos++] % 7;
		switch (op) {
		case 0: { /* post a chain of 1..3 buffers, the last ones writable */
			unsigned slot = QSZ;
			struct vq_buf b[3];
			uint16_t n;
			uint32_t w = 0;
			int err;
			if (pos >= size)
				break;
			n = (uint16_t)(1 + data[pos] % 3);
			for (unsigned i = 0; i < QSZ; i++)
				if (!track[i].posted) {
					slot = i;
					break;
				}
			if (slot == QSZ)
				break;
			for (uint16_t i = 0; i < n; i++) {
				b[i].pa = (uint64_t)(uintptr_t)bufs[slot];
				b[i].len = (uint32_t)(data[pos] >> 2) + i;
				/* bit 6 puts a writable buffer first: an invalid chain, -E_INVAL */
				b[i].device_writes = i + 1 == n || (data[pos] & 0x80) || (i == 0 && (data[pos] & 0x40));
			}
			err = vq_post(&q, b, n, bufs[slot]);
			pos++;
			if (err == 0) {
				for (uint16_t i = 0; i < n; i++)
					w += b[i].device_writes ? b[i].len : 0;
				track[slot].posted = true;
				track[slot].wlen = w;
				track[slot].n_desc = n;
			} else if (err != -E_AGAIN && err != -E_INVAL && err != -E_CLOSED) {
				abort();
			}
			break;
		}
		case 1: { /* device consumes what is available */
			uint16_t head;
			for (unsigned i = 0; i < QSZ && fake_vq_pop(0, &head); i++)
				;
			break;
		}
		case 2: { /* device writes an arbitrary used entry and bumps its index */
			uint8_t *e;
			uint16_t bump;
			if (size - pos < 9)
				return 0;
			e = q.used + 4 + 8 * (fake_vio.q[0].used_idx & (QSZ - 1));
			memcpy(e, data + pos, 8);
			bump = (uint16_t)(1 + data[pos + 8] % 3);
			pos += 9;
			fake_vio.q[0].used_idx = (uint16_t)(fake_vio.q[0].used_idx + bump);
			st_le16(q.used + 2, fake_vio.q[0].used_idx);
			break;
		}
		case 3: /* driver takes completions */
			for (unsigned i = 0; i < 4; i++) {
				void *tok;
				uint32_t len;
				int err = vq_get_used(&q, &tok, &len);
				if (err == 0) {
					unsigned slot = (unsigned)(((uint8_t *)tok - &bufs[0][0]) / sizeof bufs[0]);
					if (slot >= QSZ || tok != bufs[slot] || !track[slot].posted || len > track[slot].wlen)
						abort();
					track[slot].posted = false;
				} else if (err != -E_AGAIN && err != -E_PROTO && err != -E_CLOSED) {
					abort();
				}
				if (err == -E_PROTO || err == -E_CLOSED) {
					if (!q.broken)
						abort();
					was_broken = true;
					break;
				}
			}
			break;
		case 4:
			(void)vq_kick(&q);
			break;
		case 5:
			if (pos < size && (data[pos++] & 1))
				(void)vq_cb_enable(&q);
			else
				vq_cb_disable(&q);
			break;
		case 6: /* device scribbles the used index itself */
			if (size - pos < 2)
				return 0;
			fake_vio.q[0].used_idx = ld_le16(data + pos);
			st_le16(q.used + 2, fake_vio.q[0].used_idx);
			pos += 2;
			break;
		}
		if (was_broken && !q.broken)
			abort();
		check();
	}
	return 0;
}
