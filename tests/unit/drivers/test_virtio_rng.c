/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/virtio_rng against the simulated device: entropy requests,
 * wiping of the DMA buffer, empty completions and a device that lies about lengths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "drivers/virtio_rng.h"
#include "fake_dev.h"
#include "lib/err.h"

static struct pci_dev devs[2];
static struct pci_bus bus;
static struct virtio_dev vd;
static struct vrng rng;
static struct vq_slot slots[4];

static int setup(void **state)
{
	(void)state;
	fake_reset();
	memset(devs, 0, sizeof devs);
	return 0;
}

static void probe(uint16_t type, uint16_t nq)
{
	struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
	fake_add_virtio(type, VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX, nq, 16, 4);
	assert_int_equal(pci_bus_init(&bus, fake_port(), &pc), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(virtio_pci_probe(&vd, &bus, &devs[0]), 0);
}

static void test_rng(void **state)
{
	(void)state;
	uint8_t out[100];
	probe(2, 1);
	assert_int_equal(vrng_init(&rng, &vd, slots, 64), -E_INVAL); /* not an rng */
	setup(NULL);
	probe(4, 1);
	assert_int_equal(vrng_init(&rng, &vd, slots, 0), -E_INVAL);
	assert_int_equal(vrng_init(&rng, &vd, slots, VRNG_MAX_REQUEST + 1), -E_INVAL);
	assert_int_equal(vrng_init(&rng, &vd, slots, 64), 0);
	assert_int_equal(rng.q.size, 1);
	assert_int_equal(vrng_read(&rng, out, sizeof out, 10), 0);
	for (unsigned i = 0; i < sizeof out; i++)
		assert_int_equal(out[i], (uint8_t)(0xa5 ^ i));
	for (unsigned i = 0; i < 64; i++)
		assert_int_equal(rng.buf[i], 0); /* wiped */
	assert_int_equal(rng.n_bytes, 100);
}

static void test_rng_hostile(void **state)
{
	(void)state;
	uint8_t out[16];
	uint32_t got;
	uint16_t head;
	probe(4, 1);
	assert_int_equal(vrng_init(&rng, &vd, slots, 16), 0);
	fake_vio.auto_process = false;
	/* empty completions: counted, bounded */
	assert_int_equal(vrng_request(&rng), 0);
	assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, head, 0);
	assert_int_equal(vrng_poll(&rng, out, sizeof out, &got), 0);
	assert_int_equal(got, 0);
	assert_int_equal(rng.n_empty, 1);
	assert_int_equal(vrng_read(&rng, out, sizeof out, 5), -E_TIMEOUT);
	/* more bytes than posted */
	assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, head, 17);
	assert_int_equal(vrng_poll(&rng, out, sizeof out, &got), -E_PROTO);
	assert_int_equal(got, 0);
	assert_int_equal(rng.q.stats.rejected[VQ_REJ_LEN], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_rng, setup),
		cmocka_unit_test_setup(test_rng_hostile, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
