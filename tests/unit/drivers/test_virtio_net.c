/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/virtio_net against the simulated device: MAC and feature
 * negotiation (no GUEST_CSUM ever, CSUM only on request), receive views and reposting,
 * runts, transmit by descriptor with completion, frame exhaustion, multiqueue setup
 * through the control queue, and a hostile device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "drivers/virtio_net.h"
#include "fake_dev.h"
#include "lib/bytes.h"
#include "lib/err.h"

#define FS 2048u
#define NF 32u
#define QS 8u

static struct pci_dev devs[2];
static struct pci_bus bus;
static struct virtio_dev vd;
static struct vnet net;
static uint8_t frames[NF * FS] __attribute__((aligned(4096)));
static uint32_t stack[NF];
static struct vq_slot slots[(2 * 4 + 1) * QS];
static uint16_t early_nq; /* fake_vio.num_queues_early for the next up() */
static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static int setup(void **state)
{
	(void)state;
	fake_reset();
	memset(devs, 0, sizeof devs);
	early_nq = 0;
	return 0;
}

static struct vnet_config config(uint16_t max_pairs, bool csum)
{
	struct vnet_config c = { .frames = frames, .n_frames = NF, .frame_size = FS, .frame_stack = stack,
				 .slots = slots, .n_slots = sizeof slots / sizeof slots[0], .queue_size = QS,
				 .max_pairs = max_pairs, .tx_csum = csum, .msix = true, .ctrl_spins = 1000,
				 .fallback_mac = { 2, 0, 0, 0, 0, 1 } };
	return c;
}

static int up(uint64_t features, uint16_t nq, uint16_t dev_pairs, uint16_t max_pairs, bool csum)
{
	struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
	struct vnet_config c = config(max_pairs, csum);
	fake_add_virtio(1, features, nq, 256, 8);
	fake_vio.num_queues_early = early_nq;
	memcpy(&fake_bar[FAKE_OFF_DEVCFG], mac, 6);
	st_le16(&fake_bar[FAKE_OFF_DEVCFG + 8], dev_pairs);
	assert_int_equal(pci_bus_init(&bus, fake_port(), &pc), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(virtio_pci_probe(&vd, &bus, &devs[0]), 0);
	return vnet_init(&net, &vd, &c);
}

static const uint64_t BASE = VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX | VIRTIO_NET_F_MAC |
			     VIRTIO_NET_F_CSUM | VIRTIO_NET_F_GUEST_CSUM | VIRTIO_NET_F_MRG_RXBUF;

static void test_init_mac_and_features(void **state)
{
	(void)state;
	assert_int_equal(up(BASE, 2, 1, 1, false), 0);
	assert_memory_equal(net.mac, mac, 6);
	assert_int_equal(net.n_pairs, 1);
	assert_false(vd.features & VIRTIO_NET_F_GUEST_CSUM);
	assert_false(vd.features & VIRTIO_NET_F_MRG_RXBUF);
	assert_false(vd.features & VIRTIO_NET_F_CSUM);
	assert_true(vd.features & VIRTIO_F_EVENT_IDX);
	assert_int_equal(fake_vio.status & 4, 4);
	assert_int_equal(net.pairs[0].n_rx, QS);
	assert_int_equal(net.pairs[0].n_tx, NF - QS);
	assert_int_equal(net.pairs[0].rx.n_outstanding, QS);
	assert_int_equal(fake_vio.q[0].msix, 0);
	assert_int_equal(fake_vio.config_msix, 1);

	setup(NULL);
	assert_int_equal(up(BASE, 2, 1, 1, true), 0);
	assert_true(vd.features & VIRTIO_NET_F_CSUM);
	assert_false(vd.features & VIRTIO_NET_F_GUEST_CSUM);

	setup(NULL);
	assert_int_equal(up(VIRTIO_F_VERSION_1, 2, 1, 1, false), 0);
	assert_int_equal(net.mac[0], 2); /* no MAC feature: the configured fallback */
}

static void test_bad_config_rejected(void **state)
{
	(void)state;
	struct vnet_config c = config(1, false);
	c.frame_size = 1500;
	assert_int_equal(vnet_init(&net, &vd, &c), -E_INVAL);
	c = config(1, false);
	c.n_slots = 2;
	assert_int_equal(vnet_init(&net, &vd, &c), -E_INVAL);
	c = config(VNET_MAX_PAIRS + 1, false);
	assert_int_equal(vnet_init(&net, &vd, &c), -E_INVAL);
}

static void test_receive_views_and_runts(void **state)
{
	(void)state;
	uint8_t pkt[60];
	struct vnet_frame f;
	for (unsigned i = 0; i < sizeof pkt; i++)
		pkt[i] = (uint8_t)i;
	assert_int_equal(up(BASE, 2, 1, 1, false), 0);
	assert_int_equal(vnet_rx_poll(&net, 0, &f), -E_AGAIN);
	assert_true(fake_net_inject(0, pkt, sizeof pkt));
	assert_true(fake_net_inject(0, pkt, 5)); /* runt */
	assert_true(fake_net_inject(0, pkt, 20));
	assert_int_equal(vnet_rx_poll(&net, 0, &f), 0);
	assert_int_equal(f.len, 60);
	assert_memory_equal(f.data, pkt, 60);
	assert_int_equal(f.cap, FS - VNET_HDR_LEN);
	assert_int_equal(vnet_rx_release(&net, 0, f.id), 0);
	assert_int_equal(vnet_rx_poll(&net, 0, &f), 0);
	assert_int_equal(f.len, 20);
	assert_int_equal(net.rejected[VNET_REJ_RUNT], 1);
	assert_int_equal(vnet_rx_release(&net, 0, f.id), 0);
	assert_int_equal(vnet_rx_release(&net, 0, NF - 1), -E_INVAL); /* a tx frame */
	assert_int_equal(net.pairs[0].rx.n_outstanding, QS);
	vnet_flush(&net, 0);
	/* the pool keeps cycling: far more packets than frames */
	for (unsigned i = 0; i < 100; i++) {
		assert_true(fake_net_inject(0, pkt, 60));
		assert_int_equal(vnet_rx_poll(&net, 0, &f), 0);
		assert_int_equal(vnet_rx_release(&net, 0, f.id), 0);
	}
	assert_int_equal(net.pairs[0].rx_packets, 102);
}

static void test_transmit_and_completion(void **state)
{
	(void)state;
	struct vnet_frame f;
	uint32_t n = 0;
	assert_int_equal(up(BASE, 2, 1, 1, true), 0);
	assert_int_equal(vnet_tx_alloc(&net, 0, &f), 0);
	memset(f.data, 0xab, 64);
	assert_int_equal(vnet_tx_send(&net, 0, f.id, 64, NULL), 0);
	vnet_flush(&net, 0);
	assert_int_equal(fake_vio.n_tx, 1);
	assert_int_equal(fake_vio.last_tx_len, 64);
	assert_int_equal(fake_vio.last_tx[63], 0xab);
	assert_int_equal(vnet_tx_reap(&net, 0), 1);
	/* checksum request: header carries NEEDS_CSUM and offsets */
	assert_int_equal(vnet_tx_alloc(&net, 0, &f), 0);
	struct vnet_tx_csum cs = { 34, 16 };
	assert_int_equal(vnet_tx_send(&net, 0, f.id, 60, &cs), 0);
	assert_int_equal(*(f.data - VNET_HDR_LEN), 1);
	assert_int_equal(ld_le16(f.data - VNET_HDR_LEN + 6), 34);
	struct vnet_tx_csum bad = { 50, 16 };
	assert_int_equal(vnet_tx_alloc(&net, 0, &f), 0);
	assert_int_equal(vnet_tx_send(&net, 0, f.id, 60, &bad), -E_INVAL);
	assert_int_equal(vnet_tx_send(&net, 0, f.id, FS, NULL), -E_INVAL);
	assert_int_equal(vnet_tx_send(&net, 0, 0, 60, NULL), -E_INVAL); /* an rx frame */
	assert_int_equal(vnet_tx_cancel(&net, 0, f.id), 0);
	vnet_flush(&net, 0);
	assert_int_equal(vnet_tx_reap(&net, 0), 1);
	/* exhaust: the device holds everything */
	fake_vio.auto_process = false;
	while (vnet_tx_alloc(&net, 0, &f) == 0) {
		int err = vnet_tx_send(&net, 0, f.id, 60, NULL);
		if (err) {
			assert_int_equal(err, -E_AGAIN); /* queue full before frames ran out */
			assert_int_equal(vnet_tx_cancel(&net, 0, f.id), 0);
			break;
		}
		n++;
	}
	assert_int_equal(n, QS);
	fake_process(1);
	assert_int_equal(vnet_tx_alloc(&net, 0, &f), 0); /* reaps on demand */
	assert_int_equal(vnet_tx_cancel(&net, 0, f.id), 0);
}

static void test_multiqueue_pairs(void **state)
{
	(void)state;
	struct vnet_frame f;
	uint8_t pkt[64] = { 1 };
	uint64_t feats = BASE | VIRTIO_NET_F_CTRL_VQ | VIRTIO_NET_F_MQ;
	assert_int_equal(up(feats, 9, 4, 2, false), 0);
	assert_int_equal(net.n_pairs, 2);
	assert_int_equal(fake_vio.mq_pairs_set, 2);
	assert_true(net.has_ctrl);
	assert_int_equal(net.ctrl.index, 8);
	assert_int_equal(fake_vio.q[2].enable, 1);
	assert_int_equal(fake_vio.q[3].msix, 1);
	assert_int_equal(fake_vio.q[4].enable, 0);
	assert_true(fake_net_inject(2, pkt, 64));
	assert_int_equal(vnet_rx_poll(&net, 0, &f), -E_AGAIN);
	assert_int_equal(vnet_rx_poll(&net, 1, &f), 0);
	assert_true(f.id >= NF / 2);
	assert_int_equal(vnet_rx_release(&net, 0, f.id), -E_INVAL); /* wrong pair */
	assert_int_equal(vnet_rx_release(&net, 1, f.id), 0);
	assert_int_equal(vnet_rx_poll(&net, 2, &f), -E_INVAL);

	/* device asks for more pairs than it has queues: refused, one pair */
	setup(NULL);
	assert_int_equal(up(feats, 5, 4, 4, false), 0);
	assert_int_equal(net.n_pairs, 1);
	assert_int_equal(net.rejected[VNET_REJ_PAIRS], 1);
	setup(NULL);
	assert_int_equal(up(feats, 9, 0, 4, false), 0);
	assert_int_equal(net.n_pairs, 1);
	assert_int_equal(net.rejected[VNET_REJ_PAIRS], 1);
	/* a control queue that never answers: bounded wait, init fails */
	setup(NULL);
	{
		struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
		struct vnet_config c = config(2, false);
		fake_add_virtio(1, feats, 9, 256, 8);
		st_le16(&fake_bar[FAKE_OFF_DEVCFG + 8], 4);
		fake_vio.auto_process = false;
		assert_int_equal(pci_bus_init(&bus, fake_port(), &pc), 0);
		assert_int_equal(pci_bus_scan(&bus), 0);
		assert_int_equal(virtio_pci_probe(&vd, &bus, &devs[0]), 0);
		assert_int_equal(vnet_init(&net, &vd, &c), -E_TIMEOUT);
		assert_int_equal(net.rejected[VNET_REJ_CTRL], 1);
		assert_true(fake_vio.status & 128);
	}
	/* QEMU: num_queues shows one pair + control until MQ is negotiated */
	setup(NULL);
	early_nq = 3;
	assert_int_equal(up(feats, 9, 4, 4, false), 0);
	assert_int_equal(net.n_pairs, 4);
	assert_int_equal(fake_vio.mq_pairs_set, 4);
	assert_int_equal(net.rejected[VNET_REJ_PAIRS], 0);
	assert_int_equal(net.ctrl.index, 8);
	early_nq = 0;
	/* MQ offered without its prerequisite CTRL_VQ: not accepted */
	setup(NULL);
	assert_int_equal(up(BASE | VIRTIO_NET_F_MQ, 9, 4, 4, false), 0);
	assert_false(vd.features & VIRTIO_NET_F_MQ);
	assert_int_equal(net.n_pairs, 1);
}

static void test_hostile_receive_length(void **state)
{
	(void)state;
	struct vnet_frame f;
	uint16_t head;
	assert_int_equal(up(BASE, 2, 1, 1, false), 0);
	assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, head, FS + 1);
	assert_int_equal(vnet_rx_poll(&net, 0, &f), -E_PROTO);
	assert_null(f.data);
	assert_int_equal(net.rejected[VNET_REJ_QUEUE], 1);
	assert_int_equal(net.pairs[0].rx.stats.rejected[VQ_REJ_LEN], 1);
	assert_int_equal(vnet_rx_poll(&net, 0, &f), -E_CLOSED);
}

static void test_irq_and_link(void **state)
{
	(void)state;
	uint8_t pkt[60] = { 0 };
	struct vnet_frame f;
	uint32_t irq;
	assert_int_equal(up(BASE | VIRTIO_NET_F_STATUS, 2, 1, 1, false), 0);
	st_le16(&fake_bar[FAKE_OFF_DEVCFG + 6], 1);
	assert_true(vnet_link_up(&net));
	st_le16(&fake_bar[FAKE_OFF_DEVCFG + 6], 0);
	assert_false(vnet_link_up(&net));
	vnet_irq_disable(&net, 0);
	irq = fake_vio.q[0].n_irq;
	assert_true(fake_net_inject(0, pkt, 60));
	assert_int_equal(fake_vio.q[0].n_irq, irq); /* polling: no interrupt */
	assert_true(vnet_irq_enable(&net, 0));     /* but work is pending */
	assert_int_equal(vnet_rx_poll(&net, 0, &f), 0);
	assert_int_equal(vnet_rx_release(&net, 0, f.id), 0);
	assert_false(vnet_irq_enable(&net, 0));
	assert_true(fake_net_inject(0, pkt, 60));
	assert_int_equal(fake_vio.q[0].n_irq, irq + 1);

	setup(NULL);
	assert_int_equal(up(BASE, 2, 1, 1, false), 0);
	assert_true(vnet_link_up(&net)); /* no STATUS feature: assumed up */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_init_mac_and_features, setup),
		cmocka_unit_test_setup(test_bad_config_rejected, setup),
		cmocka_unit_test_setup(test_receive_views_and_runts, setup),
		cmocka_unit_test_setup(test_transmit_and_completion, setup),
		cmocka_unit_test_setup(test_multiqueue_pairs, setup),
		cmocka_unit_test_setup(test_hostile_receive_length, setup),
		cmocka_unit_test_setup(test_irq_and_link, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
