/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/virtio (PCI transport) and drivers/virtqueue against the
 * simulated device of fake_dev.c: negotiation (legacy-only devices refused), queue setup,
 * round trips, EVENT_IDX suppression both ways, and a hostile device whose used ring
 * carries out-of-range ids, ids not outstanding, oversize lengths and index jumps; the
 * QEMU behaviours (used lengths counting data-out on lenient queues, num_queues growing
 * after feature negotiation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "drivers/virtio.h"
#include "fake_dev.h"
#include "lib/bytes.h"
#include "lib/err.h"

static struct pci_dev devs[4];
static struct pci_bus bus;
static struct virtio_dev vd;
static struct vq q;
static struct vq_slot slots[8];
static uint8_t bufs[8][64];

static int setup(void **state)
{
	(void)state;
	fake_reset();
	memset(devs, 0, sizeof devs);
	return 0;
}

static int scan_probe(void)
{
	struct pci_config cfg = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 4 };
	assert_int_equal(pci_bus_init(&bus, fake_port(), &cfg), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(bus.n_devs, 1);
	return virtio_pci_probe(&vd, &bus, &devs[0]);
}

/* A generic device (type 2, queues not auto-processed) up to DRIVER_OK with queue 0. */
static void bring_up(uint64_t offered, uint64_t wanted)
{
	fake_add_virtio(2, offered, 1, 8, 4);
	fake_vio.auto_process = false;
	assert_int_equal(scan_probe(), 0);
	assert_int_equal(virtio_negotiate(&vd, wanted, 0), 0);
	assert_int_equal(virtio_queue_create(&vd, &q, 0, 8, slots, 0), 0);
	assert_int_equal(virtio_driver_ok(&vd), 0);
}

static int post_w(unsigned i, uint32_t len)
{
	struct vq_buf b = { (uint64_t)(uintptr_t)bufs[i], len, true };
	return vq_post(&q, &b, 1, bufs[i]);
}

static void test_negotiation_and_queue_setup(void **state)
{
	(void)state;
	uint64_t offered = VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX | VIRTIO_F_RING_PACKED | (1ull << 9);
	bring_up(offered, VIRTIO_F_EVENT_IDX | VIRTIO_F_RING_PACKED | (1ull << 9));
	assert_int_equal(vd.device_type, 2);
	assert_true(vd.features == (VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX | (1ull << 9)));
	assert_true(fake_vio.driver_features == vd.features);
	assert_int_equal(fake_vio.status, 1 | 2 | 8 | 4);
	assert_int_equal(fake_vio.q[0].enable, 1);
	assert_int_equal(fake_vio.q[0].size, 8);
	assert_true(fake_vio.q[0].desc == q.desc_pa);
	assert_true(fake_vio.q[0].drv == q.avail_pa);
	assert_true(fake_vio.q[0].dev == q.used_pa);
	assert_true(q.event_idx);
	assert_true(devs[0].flags & PCI_DEV_ENABLED);
}

static void test_queue_size_capped_to_config(void **state)
{
	(void)state;
	static struct vq_slot s4[4];
	fake_add_virtio(2, VIRTIO_F_VERSION_1, 2, 256, 4);
	assert_int_equal(scan_probe(), 0);
	assert_int_equal(virtio_negotiate(&vd, 0, 0), 0);
	assert_int_equal(virtio_queue_create(&vd, &q, 0, 4, s4, VIRTIO_MSI_NO_VECTOR), 0);
	assert_int_equal(q.size, 4);
	assert_int_equal(fake_vio.q[0].size, 4);
	assert_int_equal(virtio_queue_create(&vd, &q, 5, 4, s4, 0), -E_NOENT);
}

static void test_legacy_only_device_is_refused(void **state)
{
	(void)state;
	fake_add_virtio(2, 1ull << 9, 1, 8, 4); /* modern caps but no VERSION_1 */
	assert_int_equal(scan_probe(), 0);
	assert_int_equal(virtio_negotiate(&vd, 1ull << 9, 0), -E_NOSYS);
	assert_int_equal(vd.rejected[VIRTIO_REJ_LEGACY], 1);
	assert_true(fake_vio.status & 128);
	assert_non_null(strstr(fake_last_log, "legacy-only"));
	assert_int_equal(virtio_queue_create(&vd, &q, 0, 8, slots, 0), -E_CLOSED);

	/* a transitional device with no modern capabilities at all */
	setup(NULL);
	struct fake_fn *f = fake_add_fn(0, 1, 0, 0x1af4, 0x1001);
	st_le16(&f->cfg[0x2e], 2);
	assert_int_equal(scan_probe(), -E_NOSYS);
	assert_int_equal(vd.rejected[VIRTIO_REJ_LEGACY], 1);
	assert_non_null(strstr(fake_last_log, "legacy-only"));
}

static void test_feature_refusals(void **state)
{
	(void)state;
	fake_add_virtio(2, VIRTIO_F_VERSION_1, 1, 8, 4);
	assert_int_equal(scan_probe(), 0);
	assert_int_equal(virtio_negotiate(&vd, 0, 1ull << 9), -E_NOSYS);
	assert_int_equal(vd.rejected[VIRTIO_REJ_FEATURES], 1);

	setup(NULL);
	fake_add_virtio(2, VIRTIO_F_VERSION_1, 1, 8, 4);
	fake_vio.refuse_features_ok = true;
	assert_int_equal(scan_probe(), 0);
	assert_int_equal(virtio_negotiate(&vd, 0, 0), -E_PROTO);
	assert_true(fake_vio.status & 128);
}

static void test_malformed_capabilities(void **state)
{
	(void)state;
	/* common structure pointing past the end of its BAR: ignored and counted */
	struct fake_fn *f = fake_add_virtio(2, VIRTIO_F_VERSION_1, 1, 8, 4);
	st_le32(&f->cfg[0x40 + 8], FAKE_BAR_SIZE - 8);
	assert_int_equal(scan_probe(), -E_NOSYS);
	assert_int_equal(vd.rejected[VIRTIO_REJ_CAP], 1);

	/* BAR index beyond the table */
	setup(NULL);
	f = fake_add_virtio(2, VIRTIO_F_VERSION_1, 1, 8, 4);
	f->cfg[0x64 + 4] = 9;
	assert_int_equal(scan_probe(), -E_INVAL);
	assert_int_equal(vd.rejected[VIRTIO_REJ_CAP], 1);

	/* notify multiplier that puts queue 1 outside the notify structure */
	setup(NULL);
	f = fake_add_virtio(2, VIRTIO_F_VERSION_1, 2, 8, 4);
	st_le32(&f->cfg[0x50 + 16], 0x10000);
	assert_int_equal(scan_probe(), 0);
	assert_int_equal(virtio_negotiate(&vd, 0, 0), 0);
	assert_int_equal(virtio_queue_create(&vd, &q, 1, 8, slots, 0), -E_PROTO);
	assert_int_equal(vd.rejected[VIRTIO_REJ_QUEUE], 1);
}

static void test_device_config_reads(void **state)
{
	(void)state;
	uint8_t out[8];
	uint64_t v;
	fake_add_virtio(2, VIRTIO_F_VERSION_1, 1, 8, 4);
	st_le64(&fake_bar[FAKE_OFF_DEVCFG], 0x1122334455667788ull);
	assert_int_equal(scan_probe(), 0);
	assert_int_equal(virtio_cfg_read(&vd, 0, out, 8), 0);
	v = ld_le64(out);
	assert_true(v == 0x1122334455667788ull);
	assert_int_equal(virtio_cfg_read(&vd, 1, out, 3), 0);
	assert_int_equal(out[0], 0x77);
	assert_int_equal(virtio_cfg_read(&vd, 0xfc, out, 8), -E_RANGE);
	assert_int_equal(virtio_cfg_read(&vd, 0xffffffffu, out, 2), -E_RANGE);
}

static void test_round_trip_and_chains(void **state)
{
	(void)state;
	uint16_t head;
	void *tok;
	uint32_t len;
	struct vq_buf chain[3] = {
		{ (uint64_t)(uintptr_t)bufs[0], 16, false },
		{ (uint64_t)(uintptr_t)bufs[1], 32, true },
		{ (uint64_t)(uintptr_t)bufs[2], 1, true },
	};
	struct vq_buf bad[2] = { chain[1], chain[0] };
	bring_up(VIRTIO_F_VERSION_1, 0);
	assert_int_equal(vq_get_used(&q, &tok, &len), -E_AGAIN);
	assert_int_equal(vq_post(&q, chain, 3, bufs[0]), 0);
	assert_int_equal(q.n_free, 5);
	assert_int_equal(vq_post(&q, bad, 2, NULL), -E_INVAL);
	assert_true(vq_kick(&q));
	assert_int_equal(fake_vio.q[0].n_notify, 1);
	assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, head, 33);
	assert_true(vq_has_used(&q));
	assert_int_equal(vq_get_used(&q, &tok, &len), 0);
	assert_ptr_equal(tok, bufs[0]);
	assert_int_equal(len, 33);
	assert_int_equal(q.n_free, 8);
	assert_int_equal(q.n_outstanding, 0);
	/* fill the table, then one more is refused */
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(post_w(i, 64), 0);
	assert_int_equal(post_w(0, 64), -E_AGAIN);
	/* complete out of order */
	for (unsigned i = 0; i < 8; i++)
		assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, 5, 1);
	fake_vq_push(0, 2, 2);
	assert_int_equal(vq_get_used(&q, &tok, &len), 0);
	assert_ptr_equal(tok, bufs[5]);
	assert_int_equal(vq_get_used(&q, &tok, &len), 0);
	assert_ptr_equal(tok, bufs[2]);
	assert_int_equal(q.n_free, 2);
	assert_true(vq_check_invariants(&q));
	assert_int_equal(post_w(5, 64), 0);
	{
		struct vq_buf nine[9];
		memset(nine, 0, sizeof nine);
		assert_int_equal(vq_post(&q, nine, 9, NULL), -E_INVAL);
	}
}

static void test_event_idx_driver_to_device(void **state)
{
	(void)state;
	uint16_t head;
	bring_up(VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX, VIRTIO_F_EVENT_IDX);
	assert_int_equal(post_w(0, 8), 0);
	assert_true(vq_kick(&q));            /* device idle at avail_event 0: notify */
	assert_int_equal(post_w(1, 8), 0);
	assert_false(vq_kick(&q));           /* device has not caught up: suppressed */
	assert_false(vq_kick(&q));           /* nothing new */
	assert_int_equal(fake_vio.q[0].n_notify, 1);
	assert_true(fake_vq_pop(0, &head));
	assert_true(fake_vq_pop(0, &head));  /* device now asks at index 2 */
	assert_int_equal(post_w(2, 8), 0);
	assert_true(vq_kick(&q));
	assert_int_equal(fake_vio.q[0].n_notify, 2);
	assert_int_equal(q.stats.n_kicks, 2);
	assert_int_equal(q.stats.n_kicks_suppressed, 1);
}

static void test_event_idx_device_to_driver(void **state)
{
	(void)state;
	uint16_t head;
	void *tok;
	uint32_t len;
	bring_up(VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX, VIRTIO_F_EVENT_IDX);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(post_w(i, 8), 0);
	vq_kick(&q);
	for (unsigned i = 0; i < 4; i++)
		assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, 0, 1); /* used_event 0: interrupt */
	assert_int_equal(fake_vio.q[0].n_irq, 1);
	vq_cb_disable(&q);     /* polling mode */
	fake_vq_push(0, 1, 1);
	assert_int_equal(fake_vio.q[0].n_irq, 1);
	assert_int_equal(vq_get_used(&q, &tok, &len), 0);
	assert_int_equal(vq_get_used(&q, &tok, &len), 0);
	fake_vq_push(0, 2, 1);
	assert_int_equal(fake_vio.q[0].n_irq, 1);
	assert_true(vq_cb_enable(&q)); /* one pending: poll before sleeping */
	assert_int_equal(vq_get_used(&q, &tok, &len), 0);
	assert_false(vq_cb_enable(&q));
	fake_vq_push(0, 3, 1);
	assert_int_equal(fake_vio.q[0].n_irq, 2);
}

static void test_no_event_idx_flags(void **state)
{
	(void)state;
	uint16_t head;
	bring_up(VIRTIO_F_VERSION_1, 0);
	assert_int_equal(post_w(0, 8), 0);
	assert_int_equal(post_w(1, 8), 0);
	st_le16(q.used, 1); /* device: VIRTQ_USED_F_NO_NOTIFY */
	assert_false(vq_kick(&q));
	st_le16(q.used, 0);
	assert_true(fake_vq_pop(0, &head));
	assert_true(fake_vq_pop(0, &head));
	vq_cb_disable(&q);
	fake_vq_push(0, 0, 1);
	assert_int_equal(fake_vio.q[0].n_irq, 0);
	assert_true(vq_cb_enable(&q));
	fake_vq_push(0, 1, 1);
	assert_int_equal(fake_vio.q[0].n_irq, 1);
}

/* Hostile used ring: each case posts two buffers, lets the device pop them, writes one
 * crafted used entry (or index) and expects -E_PROTO once, the site counted, the queue
 * broken afterwards, and nothing touched. */
static void test_hostile_used_entries(void **state)
{
	(void)state;
	static const struct {
		uint32_t id, len;
		uint16_t idx_bump; /* 0: normal push */
		enum vq_reject site;
	} cases[] = {
		{ 8, 1, 0, VQ_REJ_ID_RANGE },
		{ 0xffffffffu, 1, 0, VQ_REJ_ID_RANGE },
		{ 5, 1, 0, VQ_REJ_ID_IDLE },     /* never posted */
		{ 0, 65, 0, VQ_REJ_LEN },        /* posted 64 */
		{ 1, 0xffffffffu, 0, VQ_REJ_LEN },
		{ 0, 1, 3, VQ_REJ_IDX_JUMP },    /* 3 entries with 2 outstanding */
		{ 0, 1, 0x8000, VQ_REJ_IDX_JUMP },
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint16_t head;
		void *tok;
		uint32_t len;
		setup(NULL);
		bring_up(VIRTIO_F_VERSION_1, 0);
		assert_int_equal(post_w(0, 64), 0);
		assert_int_equal(post_w(1, 64), 0);
		vq_kick(&q);
		assert_true(fake_vq_pop(0, &head));
		assert_true(fake_vq_pop(0, &head));
		if (cases[i].idx_bump) {
			fake_vio.q[0].used_idx = (uint16_t)(cases[i].idx_bump - 1);
			fake_vq_push(0, cases[i].id, cases[i].len);
		} else {
			fake_vq_push(0, cases[i].id, cases[i].len);
		}
		assert_int_equal(vq_get_used(&q, &tok, &len), -E_PROTO);
		assert_null(tok);
		assert_int_equal(q.stats.rejected[cases[i].site], 1);
		assert_true(q.broken);
		assert_int_equal(vq_get_used(&q, &tok, &len), -E_CLOSED);
		assert_int_equal(post_w(2, 64), -E_CLOSED);
		assert_int_equal(q.n_outstanding, 2);
		assert_true(vq_check_invariants(&q));
	}
}

static void test_hostile_duplicate_completion(void **state)
{
	(void)state;
	uint16_t head;
	void *tok;
	uint32_t len;
	bring_up(VIRTIO_F_VERSION_1, 0);
	assert_int_equal(post_w(0, 64), 0);
	assert_int_equal(post_w(1, 64), 0);
	assert_true(fake_vq_pop(0, &head));
	assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, 0, 10);
	fake_vq_push(0, 0, 10); /* the same id twice */
	assert_int_equal(vq_get_used(&q, &tok, &len), 0);
	assert_int_equal(vq_get_used(&q, &tok, &len), -E_PROTO);
	assert_int_equal(q.stats.rejected[VQ_REJ_ID_IDLE], 1);
}

static void test_isr_ack(void **state)
{
	(void)state;
	uint16_t head;
	bring_up(VIRTIO_F_VERSION_1, 0);
	assert_int_equal(virtio_isr_ack(&vd), 0);
	assert_int_equal(post_w(0, 8), 0);
	assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, head, 1);
	assert_int_equal(virtio_isr_ack(&vd), 1); /* queue interrupt */
	assert_int_equal(virtio_isr_ack(&vd), 0); /* reading cleared it */
	fake_vio.isr = 2;
	assert_int_equal(virtio_isr_ack(&vd), 2); /* configuration change */
}

/* 70,000 completions: the 16-bit indices and the EVENT_IDX arithmetic wrap. With
 * interrupts on, each completion interrupts once; with them off, none does. */
static void test_event_idx_wraps(void **state)
{
	(void)state;
	uint16_t head;
	void *tok;
	uint32_t len, irq0;
	bring_up(VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX, VIRTIO_F_EVENT_IDX);
	for (uint32_t i = 0; i < 70000; i++) {
		bool on = (i / 1000) % 2 == 0;
		if (i % 1000 == 0) {
			if (on)
				assert_false(vq_cb_enable(&q));
			else
				vq_cb_disable(&q);
		}
		irq0 = fake_vio.q[0].n_irq;
		assert_int_equal(post_w(i % 8, 64), 0);
		(void)vq_kick(&q);
		assert_true(fake_vq_pop(0, &head));
		fake_vq_push(0, head, 3);
		assert_int_equal(fake_vio.q[0].n_irq - irq0, on ? 1 : 0);
		assert_int_equal(vq_get_used(&q, &tok, &len), 0);
		assert_ptr_equal(tok, bufs[i % 8]);
	}
	assert_int_equal(fake_vio.q[0].n_notify, 70000);
	assert_true(vq_check_invariants(&q));
}

/* Lenient queues (virtio-scsi under QEMU): a used length counting the readable part too
 * is clamped to the writable part and counted; beyond the whole chain it still breaks.
 * A strict queue breaks on the same entry. */
static void test_lenient_used_length(void **state)
{
	(void)state;
	static const struct {
		bool lenient;
		uint32_t used;
		int err;
		uint32_t len;
	} cases[] = {
		{ true, 48, 0, 32 },  /* 16 read + 32 written: clamped */
		{ true, 32, 0, 32 },
		{ true, 20, 0, 20 },
		{ true, 49, -E_PROTO, 0 },           /* more than the whole chain */
		{ true, 0xffffffffu, -E_PROTO, 0 },
		{ false, 48, -E_PROTO, 0 },
		{ false, 33, -E_PROTO, 0 },
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct vq_buf chain[2] = {
			{ (uint64_t)(uintptr_t)bufs[0], 16, false },
			{ (uint64_t)(uintptr_t)bufs[1], 32, true },
		};
		uint16_t head;
		void *tok;
		uint32_t len;
		setup(NULL);
		bring_up(VIRTIO_F_VERSION_1, 0);
		q.lenient_len = cases[i].lenient;
		assert_int_equal(vq_post(&q, chain, 2, bufs[0]), 0);
		vq_kick(&q);
		assert_true(fake_vq_pop(0, &head));
		fake_vq_push(0, head, cases[i].used);
		assert_int_equal(vq_get_used(&q, &tok, &len), cases[i].err);
		assert_int_equal(len, cases[i].len);
		assert_int_equal(q.broken, cases[i].err != 0);
		assert_int_equal(q.stats.rejected[VQ_REJ_LEN], cases[i].err != 0);
		assert_int_equal(q.stats.n_len_clamped, cases[i].err == 0 && cases[i].used > 32);
		if (cases[i].err == 0) {
			assert_ptr_equal(tok, bufs[0]);
			assert_int_equal(q.n_free, 8);
			/* the slot's bounds were reset: a write-only chain gets no read allowance */
			assert_int_equal(post_w(2, 8), 0);
			vq_kick(&q);
			assert_true(fake_vq_pop(0, &head));
			fake_vq_push(0, head, 9);
			assert_int_equal(vq_get_used(&q, &tok, &len), -E_PROTO);
		}
		assert_true(vq_check_invariants(&q));
	}
}

/* QEMU's virtio-net shows one pair + control in num_queues until MQ is negotiated:
 * the count is read again after FEATURES_OK. */
static void test_num_queues_reread_after_features(void **state)
{
	(void)state;
	const uint64_t mq = 1ull << 22, ctrl = 1ull << 17;
	for (unsigned with_mq = 0; with_mq < 2; with_mq++) {
		setup(NULL);
		fake_add_virtio(1, VIRTIO_F_VERSION_1 | mq | ctrl, 9, 8, 4);
		fake_vio.num_queues_early = 3;
		fake_vio.auto_process = false;
		assert_int_equal(scan_probe(), 0);
		assert_int_equal(vd.num_queues, 3);
		assert_int_equal(virtio_negotiate(&vd, with_mq ? mq | ctrl : ctrl, 0), 0);
		assert_int_equal(vd.num_queues, with_mq ? 9 : 3);
		assert_int_equal(virtio_queue_create(&vd, &q, 7, 8, slots, 0), with_mq ? 0 : -E_NOENT);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_negotiation_and_queue_setup, setup),
		cmocka_unit_test_setup(test_queue_size_capped_to_config, setup),
		cmocka_unit_test_setup(test_legacy_only_device_is_refused, setup),
		cmocka_unit_test_setup(test_feature_refusals, setup),
		cmocka_unit_test_setup(test_malformed_capabilities, setup),
		cmocka_unit_test_setup(test_device_config_reads, setup),
		cmocka_unit_test_setup(test_round_trip_and_chains, setup),
		cmocka_unit_test_setup(test_event_idx_driver_to_device, setup),
		cmocka_unit_test_setup(test_event_idx_device_to_driver, setup),
		cmocka_unit_test_setup(test_no_event_idx_flags, setup),
		cmocka_unit_test_setup(test_hostile_used_entries, setup),
		cmocka_unit_test_setup(test_hostile_duplicate_completion, setup),
		cmocka_unit_test_setup(test_isr_ack, setup),
		cmocka_unit_test_setup(test_event_idx_wraps, setup),
		cmocka_unit_test_setup(test_lenient_used_length, setup),
		cmocka_unit_test_setup(test_num_queues_reread_after_features, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
