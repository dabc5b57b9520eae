/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/virtio_net against the simulated device: MAC and feature
 * negotiation (no GUEST_CSUM ever, CSUM only on request), receive views and reposting,
 * runts, transmit by descriptor with completion, frame exhaustion, multiqueue setup
 * through the control queue, a hostile device, and RSS (VIRTIO_NET_F_RSS): negotiation
 * and the device's limits, the RSS_CONFIG body byte for byte and its bounds, the limits
 * vnet_rss_set enforces, a refused or unanswered command, and the queue a device that
 * follows the specification picks agreeing with net/rss for every flow. */
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
#include "net/rss.h"

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
/* The RSS limits in the device configuration for the next up() (QEMU's by default). */
static uint8_t rss_key_max;
static uint16_t rss_indir_max;
static uint32_t rss_types;
static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static int setup(void **state)
{
	(void)state;
	fake_reset();
	memset(devs, 0, sizeof devs);
	early_nq = 0;
	rss_key_max = 40;
	rss_indir_max = 128;
	rss_types = 0x1ff;
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
	fake_bar[FAKE_OFF_DEVCFG + 17] = rss_key_max;
	st_le16(&fake_bar[FAKE_OFF_DEVCFG + 18], rss_indir_max);
	st_le32(&fake_bar[FAKE_OFF_DEVCFG + 20], rss_types);
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

static const uint64_t MQ = BASE | VIRTIO_NET_F_CTRL_VQ | VIRTIO_NET_F_MQ;

static void test_rss_negotiation_and_limits(void **state)
{
	(void)state;
	uint16_t indir[4] = { 0, 1, 0, 1 };
	uint8_t key[40] = { 1 };
	struct vnet_rss r = { .hash_types = VNET_RSS_HASH_TCPV4, .indir = indir, .n_indir = 4, .n_tx = 2,
			      .key = key, .key_len = 40 };
	/* offered beside CTRL_VQ + MQ: negotiated, the limits read; HASH_REPORT never */
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS | VIRTIO_NET_F_HASH_REPORT, 9, 4, 2, false), 0);
	assert_true(vd.features & VIRTIO_NET_F_RSS);
	assert_false(vd.features & VIRTIO_NET_F_HASH_REPORT);
	assert_true(net.has_rss);
	assert_false(net.rss_on);
	assert_int_equal(net.rss_max_key, 40);
	assert_int_equal(net.rss_max_indir, 128);
	assert_int_equal(net.rss_hash_types, 0x1ff);
	assert_int_equal(fake_vio.mq_pairs_set, 2); /* pairs set as without RSS */
	assert_int_equal(fake_vio.n_rss_cmds, 0);   /* RSS only on request */

	/* not offered: nothing changes, and vnet_rss_set says so */
	setup(NULL);
	assert_int_equal(up(MQ, 9, 4, 2, false), 0);
	assert_false(vd.features & VIRTIO_NET_F_RSS);
	assert_false(net.has_rss);
	assert_int_equal(net.n_pairs, 2);
	assert_int_equal(vnet_rss_set(&net, &r), -E_NOSYS);
	assert_int_equal(fake_vio.n_rss_cmds, 0);
	/* offered without MQ (or without CTRL_VQ): not accepted */
	setup(NULL);
	assert_int_equal(up(BASE | VIRTIO_NET_F_CTRL_VQ | VIRTIO_NET_F_RSS, 9, 4, 2, false), 0);
	assert_false(vd.features & VIRTIO_NET_F_RSS);
	setup(NULL);
	assert_int_equal(up(BASE | VIRTIO_NET_F_MQ | VIRTIO_NET_F_RSS, 9, 4, 2, false), 0);
	assert_false(vd.features & VIRTIO_NET_F_RSS);
	/* one pair wanted: no control queue, so no RSS either */
	setup(NULL);
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS, 9, 4, 1, false), 0);
	assert_false(net.has_rss);
	assert_int_equal(vnet_rss_set(&net, &r), -E_NOSYS);
	/* unusable limits: counted, RSS unused, the device still comes up */
	setup(NULL);
	rss_key_max = 0;
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS, 9, 4, 2, false), 0);
	assert_false(net.has_rss);
	assert_int_equal(net.rejected[VNET_REJ_RSS], 1);
	assert_int_equal(net.n_pairs, 2);
	setup(NULL);
	rss_indir_max = 0;
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS, 9, 4, 2, false), 0);
	assert_false(net.has_rss);
	assert_int_equal(net.rejected[VNET_REJ_RSS], 1);
	/* a table length that is not a power of two rounds down; a huge one is capped */
	setup(NULL);
	rss_indir_max = 200;
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS, 9, 4, 2, false), 0);
	assert_int_equal(net.rss_max_indir, 128);
	setup(NULL);
	rss_indir_max = 65535;
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS, 9, 4, 2, false), 0);
	assert_int_equal(net.rss_max_indir, VNET_RSS_INDIR_MAX);
	setup(NULL);
	rss_indir_max = 1;
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS, 9, 4, 2, false), 0);
	assert_int_equal(net.rss_max_indir, 1);
}

static void test_rss_encode(void **state)
{
	(void)state;
	uint16_t indir[4] = { 0, 1, 2, 0x0102 };
	uint8_t key[40], out[200], want[200];
	size_t len = 0;
	for (unsigned i = 0; i < sizeof key; i++)
		key[i] = (uint8_t)(0xa0 + i);
	struct vnet_rss r = { .hash_types = VNET_RSS_HASH_TCPV4 | VNET_RSS_HASH_IPV4, .indir = indir, .n_indir = 4,
			      .unclassified = 3, .n_tx = 0x0304, .key = key, .key_len = 40 };
	/* the body, written out by hand from the specification's layout */
	static const uint8_t head[] = { 3, 0, 0, 0, /* hash_types */ 3, 0, /* mask */ 3, 0, /* unclassified */
					0, 0, 1, 0, 2, 0, 2, 1, /* indirection_table */ 4, 3, /* max_tx_vq */
					40 /* hash_key_length */ };
	memcpy(want, head, sizeof head);
	memcpy(want + sizeof head, key, 40);
	assert_int_equal(VNET_RSS_CMD_LEN(4, 40), sizeof head + 40);
	assert_int_equal(vnet_rss_encode(&r, out, sizeof out, &len), 0);
	assert_int_equal(len, sizeof head + 40);
	assert_memory_equal(out, want, len);
	/* every capacity short of the body: refused, nothing written */
	for (size_t cap = 0; cap < sizeof head + 40; cap++) {
		memset(out, 0x5a, sizeof out);
		len = 7;
		assert_int_equal(vnet_rss_encode(&r, out, cap, &len), -E_RANGE);
		assert_int_equal(len, 7);
		for (size_t i = 0; i < sizeof out; i++)
			assert_int_equal(out[i], 0x5a);
	}
	assert_int_equal(vnet_rss_encode(&r, NULL, 1000, &len), -E_RANGE);
	assert_int_equal(vnet_rss_encode(&r, out, sizeof head + 40, &len), 0);
	/* malformed: each field's structural bound */
	struct vnet_rss b = r;
	b.n_indir = 3;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	b.n_indir = 0;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	b.n_indir = VNET_RSS_INDIR_MAX * 2;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	b = r;
	b.key_len = 0;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	b.key_len = 256;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	b = r;
	b.hash_types = 0;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	b = r;
	b.n_tx = 0;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	b = r;
	b.indir = NULL;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	b = r;
	b.key = NULL;
	assert_int_equal(vnet_rss_encode(&b, out, sizeof out, &len), -E_INVAL);
	/* the largest table the driver sends, with the longest key, fits the control page */
	static uint16_t big[VNET_RSS_INDIR_MAX];
	static uint8_t bigkey[255], bigout[4096];
	b = (struct vnet_rss){ .hash_types = 2, .indir = big, .n_indir = VNET_RSS_INDIR_MAX, .n_tx = 1, .key = bigkey,
			       .key_len = 255 };
	assert_int_equal(vnet_rss_encode(&b, bigout, 4096 - 3, &len), 0);
	assert_int_equal(len, VNET_RSS_CMD_LEN(VNET_RSS_INDIR_MAX, 255));
}

static void test_rss_set_limits_and_failures(void **state)
{
	(void)state;
	uint16_t indir[8] = { 0, 1, 2, 3, 0, 1, 2, 3 };
	uint8_t key[40];
	for (unsigned i = 0; i < sizeof key; i++)
		key[i] = (uint8_t)(0x6d + 3 * i);
	struct vnet_rss r = { .hash_types = VNET_RSS_HASH_TCPV4, .indir = indir, .n_indir = 8, .unclassified = 0,
			      .n_tx = 4, .key = key, .key_len = 40 };
	rss_types = VNET_RSS_HASH_IPV4 | VNET_RSS_HASH_TCPV4;
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS, 9, 4, 4, false), 0);
	assert_int_equal(net.n_pairs, 4);
	/* outside the device's limits or the active pairs: refused before anything is sent */
	struct vnet_rss b = r;
	b.hash_types = VNET_RSS_HASH_UDPV4 | VNET_RSS_HASH_TCPV4;
	assert_int_equal(vnet_rss_set(&net, &b), -E_RANGE);
	b = r;
	b.key_len = 41;
	assert_int_equal(vnet_rss_set(&net, &b), -E_RANGE);
	b = r;
	b.n_indir = 256; /* over the device's 128 (the array is never read) */
	assert_int_equal(vnet_rss_set(&net, &b), -E_RANGE);
	b = r;
	b.n_tx = 5;
	assert_int_equal(vnet_rss_set(&net, &b), -E_RANGE);
	b = r;
	b.n_tx = 2; /* entries 2 and 3 name pairs the device would not use */
	assert_int_equal(vnet_rss_set(&net, &b), -E_RANGE);
	b = r;
	b.unclassified = 4;
	assert_int_equal(vnet_rss_set(&net, &b), -E_RANGE);
	b = r;
	b.n_indir = 6;
	assert_int_equal(vnet_rss_set(&net, &b), -E_INVAL);
	b = r;
	b.hash_types = 0;
	assert_int_equal(vnet_rss_set(&net, &b), -E_INVAL);
	assert_int_equal(fake_vio.n_rss_cmds, 0);
	assert_false(net.rss_on);
	/* accepted: the device holds exactly what was asked; the key left the control page */
	assert_int_equal(vnet_rss_set(&net, &r), 0);
	assert_true(net.rss_on);
	assert_int_equal(net.rss_n_indir, 8);
	assert_true(fake_vio.rss_on);
	assert_int_equal(fake_vio.rss_cmd_len, VNET_RSS_CMD_LEN(8, 40));
	assert_int_equal(fake_vio.rss_hash_types, VNET_RSS_HASH_TCPV4);
	assert_int_equal(fake_vio.rss_n_indir, 8);
	assert_int_equal(fake_vio.rss_unclassified, 0);
	assert_int_equal(fake_vio.rss_max_tx, 4);
	assert_memory_equal(fake_vio.rss_indir, indir, sizeof indir);
	assert_int_equal(fake_vio.rss_key_len, 40);
	assert_memory_equal(fake_vio.rss_key, key, 40);
	for (unsigned i = 2; i < 4095; i++)
		assert_int_equal(net.ctrl_buf[i], 0);
	/* refused by the device: -E_IO, counted, the key wiped all the same */
	fake_vio.rss_refuse = true;
	net.rss_on = false;
	assert_int_equal(vnet_rss_set(&net, &r), -E_IO);
	assert_false(net.rss_on);
	assert_int_equal(net.rejected[VNET_REJ_CTRL], 1);
	for (unsigned i = 2; i < 4095; i++)
		assert_int_equal(net.ctrl_buf[i], 0);
	/* never answered: bounded wait, then the control queue refuses every later command */
	fake_vio.rss_refuse = false;
	fake_vio.auto_process = false;
	assert_int_equal(vnet_rss_set(&net, &r), -E_TIMEOUT);
	assert_true(net.ctrl_broken);
	assert_int_equal(vnet_rss_set(&net, &r), -E_IO);
	assert_int_equal(net.rejected[VNET_REJ_CTRL], 2);
}

/* A TCP/IPv4 frame (Ethernet, 20-byte IP header, TCP ports) from src:sport to dst:dport. */
static uint32_t tcp_frame(uint8_t *f, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto,
			  uint16_t frag)
{
	memset(f, 0, 60);
	memset(f, 0xff, 6);
	f[12] = 0x08;
	f[14] = 0x45;
	st_be16(f + 16, 46);
	st_be16(f + 20, frag);
	f[22] = 64;
	f[23] = proto;
	st_be32(f + 26, src);
	st_be32(f + 30, dst);
	st_be16(f + 34, sport);
	st_be16(f + 36, dport);
	return 60;
}

/* The device programmed from a net/rss steering object puts every flow on the pair of the
 * worker net/rss names; anything that is not TCP/IPv4 lands on the unclassified pair 0. A
 * 1024-entry software table is shrunk to the device's 128 first (the production size). */
static void test_rss_device_agrees_with_net_rss(void **state)
{
	(void)state;
	static uint16_t table[1024];
	struct rss_steer steer;
	uint8_t key[RSS_KEY_LEN], f[60];
	struct vnet_frame vf;
	uint32_t n_indir, seen[4] = { 0 };
	for (unsigned i = 0; i < sizeof key; i++)
		key[i] = (uint8_t)(i * 37 + 11);
	struct rss_config rc = { .key = key, .n_workers = 4, .n_indir = 1024, .indir = table };
	assert_int_equal(rss_steer_init(&steer, &rc), 0);
	assert_int_equal(up(MQ | VIRTIO_NET_F_RSS, 9, 4, 4, false), 0);
	assert_int_equal(rss_steer_shrink(&steer, net.rss_max_indir), 0);
	const struct vnet_rss r = { .hash_types = VNET_RSS_HASH_TCPV4, .indir = rss_steer_indir(&steer, &n_indir),
				    .n_indir = n_indir, .unclassified = 0, .n_tx = net.n_pairs, .key = steer.key,
				    .key_len = RSS_KEY_LEN };
	assert_int_equal(n_indir, 128);
	assert_int_equal(vnet_rss_set(&net, &r), 0);
	for (uint32_t i = 0; i < 200; i++) {
		uint32_t src = 0x0a4e0001u + (i % 7), dst = 0x0a4e0002u;
		uint16_t sport = (uint16_t)(40000 + 131 * i), dport = 8883;
		uint32_t len = tcp_frame(f, src, dst, sport, dport, 6, 0);
		uint16_t p = fake_net_rss_pair(f, len);
		assert_int_equal(p, rss_steer_flow(&steer, src, dst, sport, dport));
		assert_true(fake_net_inject((uint16_t)(2 * p), f, len));
		assert_int_equal(vnet_rx_poll(&net, p, &vf), 0);
		assert_int_equal(vnet_rx_release(&net, p, vf.id), 0);
		seen[p]++;
	}
	for (unsigned p = 0; p < 4; p++)
		assert_true(seen[p] > 0);
	/* not TCP, or a fragment: the unclassified pair */
	uint32_t len = tcp_frame(f, 0x0a4e0001u, 0x0a4e0002u, 1, 2, 17, 0);
	assert_int_equal(fake_net_rss_pair(f, len), 0);
	len = tcp_frame(f, 0x0a4e0001u, 0x0a4e0002u, 1, 2, 6, 0x2000);
	assert_int_equal(fake_net_rss_pair(f, len), 0);
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
		cmocka_unit_test_setup(test_rss_negotiation_and_limits, setup),
		cmocka_unit_test_setup(test_rss_encode, setup),
		cmocka_unit_test_setup(test_rss_set_limits_and_failures, setup),
		cmocka_unit_test_setup(test_rss_device_agrees_with_net_rss, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
