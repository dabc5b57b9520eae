/* SPDX-License-Identifier: MIT
 *
 * drivers/: virtio-rng (see virtio_rng.h). Owns one DMA buffer; copies out only the
 * validated number of bytes the device wrote, then wipes the buffer so entropy does not
 * linger in device-visible memory.
 */
#include "drivers/virtio_rng.h"
#include "drivers/drv_int.h"
#include "lib/err.h"
#include "lib/mem.h"

int vrng_init(struct vrng *r, struct virtio_dev *vd, struct vq_slot *slots, uint32_t request_len)
{
	void *va;
	int err;

	if (!slots || request_len == 0 || request_len > VRNG_MAX_REQUEST || vd->device_type != VIRTIO_ID_RNG)
		return -E_INVAL;
	memset(r, 0, sizeof *r);
	r->vd = vd;
	r->request_len = request_len;
	err = virtio_negotiate(vd, VIRTIO_F_EVENT_IDX, 0);
	if (err)
		return err;
	err = virtio_queue_create(vd, &r->q, 0, 1, slots, VIRTIO_MSI_NO_VECTOR);
	if (err)
		goto fail;
	err = vd->port->dma_alloc(vd->port->ctx, request_len, &va, &r->buf_pa);
	if (err)
		goto fail;
	r->buf = va;
	err = virtio_driver_ok(vd);
	if (err)
		goto fail;
	return 0;
fail:
	virtio_fail(vd, "virtio-rng initialisation failed");
	return err;
}

int vrng_request(struct vrng *r)
{
	struct vq_buf b = { r->buf_pa, r->request_len, true };
	int err;

	if (r->pending)
		return 0;
	err = vq_post(&r->q, &b, 1, r->buf);
	if (err)
		return err;
	r->pending = true;
	vq_kick(&r->q);
	return 0;
}

int vrng_poll(struct vrng *r, uint8_t *out, uint32_t max, uint32_t *got)
{
	void *tok;
	uint32_t len, n;
	int err;

	*got = 0;
	if (!r->pending)
		return -E_AGAIN;
	err = vq_get_used(&r->q, &tok, &len);
	if (err)
		return err;
	r->pending = false;
	n = MIN(len, max); /* len <= request_len: validated by the queue */
	memcpy(out, r->buf, n);
	mem_wipe(r->buf, r->request_len);
	if (len == 0)
		r->n_empty++;
	r->n_bytes += n;
	*got = n;
	return 0;
}

int vrng_read(struct vrng *r, uint8_t *out, uint32_t len, uint32_t max_spins)
{
	uint32_t have = 0, spins = 0;

	while (have < len) {
		uint32_t got;
		int err = vrng_request(r);
		if (err)
			return err;
		err = vrng_poll(r, out + have, len - have, &got);
		if (err == -E_AGAIN) {
			if (++spins >= max_spins)
				return -E_TIMEOUT;
			continue;
		}
		if (err)
			return err;
		have += got;
		if (got == 0 && ++spins >= max_spins)
			return -E_TIMEOUT;
	}
	return 0;
}
