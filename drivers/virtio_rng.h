/* SPDX-License-Identifier: MIT
 *
 * virtio-rng driver (virtio 1.2 section 5.4): one request queue that the device fills
 * with entropy, feeding the kernel CSPRNG's reseed. It owns one DMA buffer and copies each
 * completion out to the caller, then wipes it; it must never hand out bytes the device
 * did not claim to have written, and never treats device bytes as anything but input to
 * be mixed (the CSPRNG never trusts one source alone).
 *
 * States: IDLE -(vrng_request)-> PENDING -(vrng_poll returns bytes)-> IDLE.
 */
#ifndef DRIVERS_VIRTIO_RNG_H
#define DRIVERS_VIRTIO_RNG_H

#include "drivers/virtio.h"

#define VRNG_MAX_REQUEST 4096u

struct vrng {
	struct virtio_dev *vd; /* linked */
	struct vq q;
	uint8_t *buf;          /* DMA */
	uint64_t buf_pa;
	uint32_t request_len;
	bool pending;
	uint64_t n_bytes;
	uint32_t n_empty;      /* completions carrying no bytes */
};

/* Bring a probed virtio-rng device to DRIVER_OK. slots: linked, >= 1 entry (the queue is
 * capped to one entry). request_len: 1..VRNG_MAX_REQUEST bytes per request. */
int vrng_init(struct vrng *r, struct virtio_dev *vd, struct vq_slot *slots, uint32_t request_len) MUST_CHECK;
/* Ask the device for request_len bytes (no-op while a request is pending). */
int vrng_request(struct vrng *r) MUST_CHECK;
/* If the request completed: copy up to max bytes into out (*got set), wipe the DMA
 * buffer. -E_AGAIN while pending or idle. */
int vrng_poll(struct vrng *r, uint8_t *out /* out */, uint32_t max, uint32_t *got /* out */) MUST_CHECK;
/* Boot-time helper: request and spin (bounded by max_spins polls) until len bytes came.
 * -E_TIMEOUT if the device is too slow. */
int vrng_read(struct vrng *r, uint8_t *out /* out */, uint32_t len, uint32_t max_spins) MUST_CHECK;

#endif
