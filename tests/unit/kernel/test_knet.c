/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/knet (virtio-net pair <-> net_stack <-> tcp_stack <-> an echo
 * upper layer, tests/support/tcp_echo.h) against the simulated virtio-net device of tests/unit/drivers/fake_dev.c:
 * configuration rejection, ARP and ICMP echo replies leaving through the driver, a TCP
 * handshake (SYN cookie) and bytes echoed back, RST for a closed port, a foreign frame
 * pointer refused, and no transmit or receive frame lost at the end of every test.
 * Multicore modes: a worker (no pair, frames through knet_input, transmit through the
 * hook from staging frames, address from knet_set_addr: nothing before it, ARP, ICMP and
 * a TCP handshake after it, hook refusals counted with no staging frame lost, the
 * address withdrawn and changed) and the steering core (rx_steer takes frames before the
 * stack, knet_send_frame puts a worker's frame on the wire, the address hook fires). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "../drivers/fake_dev.h"
#include "drivers/virtio_net.h"
#include "kernel/knet.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "tests/support/tcp_echo.h"

#define FS 2048u
#define NF 64u
#define QS 16u
#define OUR_IP 0x0a000002u  /* 10.0.0.2 */
#define PEER_IP 0x0a000001u /* 10.0.0.1 */

static struct pci_dev devs[2];
static struct pci_bus bus;
static struct virtio_dev vd;
static struct vnet net;
static uint8_t frames[NF * FS] __attribute__((aligned(4096)));
static uint32_t fstack[NF];
static struct vq_slot slots[3 * QS];
static uint64_t knet_mem[(1u << 20) / 8];
static struct knet k;
/* The upper layer: an echo service on port 8883 with 4 connections and 2 ring buffers. */
static struct tcp_echo echo;
static uint64_t echo_mem[(64u << 10) / 8];
static struct tcp_config echo_tcp;
static struct knet_upper echo_upper;
static uint64_t now_ms = 1000;
static uint32_t rnd_state = 12345;
static const uint8_t our_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

static uint64_t t_now_ms(void)
{
	return now_ms;
}

static void t_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++) {
		rnd_state = rnd_state * 1103515245u + 12345u;
		p[i] = (uint8_t)(rnd_state >> 16);
	}
}

static void echo_bind(void *ctx, struct tcp_stack *tcp)
{
	tcp_echo_bind(ctx, tcp);
}

/* Worker mode: frames go in through knet_input, out through the hook into hook_frame. */
static bool worker_mode, hook_fail;
static uint8_t hook_frame[KNET_STAGE_BYTES];
static size_t hook_len;
static uint32_t n_hook;

static struct knet_config kconfig(void)
{
	tcp_config_default(&echo_tcp);
	echo_tcp.ports[0] = 8883;
	echo_tcp.n_ports = 1;
	echo_tcp.max_conns = 4;
	echo_tcp.max_send_refs = 32;
	echo_tcp.max_pending_acks = 4;
	memset(echo_mem, 0, sizeof echo_mem);
	size_t elen = tcp_echo_mem_size(4, 2, 4096);
	assert_true(elen > 0 && elen <= sizeof echo_mem);
	assert_int_equal(tcp_echo_init(&echo, echo_mem, elen, 4, 2, 4096), 0);
	echo_upper = (struct knet_upper){ .ops = &tcp_echo_ops, .ops_ctx = &echo, .ctx = &echo,
					  .bind = echo_bind, .poll = NULL, .tcp = &echo_tcp };
	struct knet_config c = {
		.nic = &net, .pair = 0, .n_rx_pairs = 1, .use_dhcp = false, .ip = OUR_IP,
		.mask = 0xffffff00u, .gw = PEER_IP, .upper = &echo_upper, .n_arp = 4, .n_pending = 4,
		.rx_batch = 8, .now_ms = t_now_ms, .random = t_random,
	};
	return c;
}

static int setup(void **state)
{
	(void)state;
	fake_reset();
	worker_mode = false;
	memset(devs, 0, sizeof devs);
	memset(knet_mem, 0, sizeof knet_mem);
	now_ms = 1000;
	struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
	struct vnet_config c = { .frames = frames, .n_frames = NF, .frame_size = FS, .frame_stack = fstack,
				 .slots = slots, .n_slots = 3 * QS, .queue_size = QS, .max_pairs = 1,
				 .ctrl_spins = 1000, .fallback_mac = { 2, 0, 0, 0, 0, 9 } };
	fake_add_virtio(1, VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX | VIRTIO_NET_F_MAC, 3, 256, 4);
	memcpy(&fake_bar[FAKE_OFF_DEVCFG], our_mac, 6);
	fake_vio.auto_process = true;
	assert_int_equal(pci_bus_init(&bus, fake_port(), &pc), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(virtio_pci_probe(&vd, &bus, &devs[0]), 0);
	assert_int_equal(vnet_init(&net, &vd, &c), 0);
	return 0;
}

/* Every transmit frame back on the free stack, every receive frame posted. */
static int teardown(void **state)
{
	(void)state;
	struct vnet_pair *pr = &net.pairs[0];
	assert_true(vnet_tx_reap(&net, 0) >= 0);
	assert_int_equal(pr->n_free, pr->n_tx);
	assert_int_equal(pr->rx.n_outstanding, pr->n_rx);
	assert_int_equal(k.st.tx_bad_frame, 0);
	return 0;
}

static void up(void)
{
	struct knet_config c = kconfig();
	size_t len = knet_mem_size(&c);
	assert_true(len > 0 && len <= sizeof knet_mem);
	assert_int_equal(knet_init(&k, &c, knet_mem, len), 0);
	(void)knet_poll(&k); /* announces the static address (gratuitous ARP) */
}

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffffu) + (s >> 16);
	return (uint16_t)~s;
}

static uint32_t csum_add(uint32_t s, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	return s;
}

static size_t eth(uint8_t *f, uint16_t type)
{
	memcpy(f, our_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	st_be16(f + 12, type);
	return 14;
}

/* IPv4 header at f (20 bytes) for payload len, checksum filled. */
static void ipv4(uint8_t *f, uint8_t proto, size_t payload)
{
	memset(f, 0, 20);
	f[0] = 0x45;
	st_be16(f + 2, (uint16_t)(20 + payload));
	st_be16(f + 6, 0x4000);
	f[8] = 64;
	f[9] = proto;
	st_be32(f + 12, PEER_IP);
	st_be32(f + 16, OUR_IP);
	st_be16(f + 10, csum_fold(csum_add(0, f, 20)));
}


static void inject(const uint8_t *f, size_t len)
{
	if (worker_mode) {
		static uint8_t copy[2048];
		memcpy(copy, f, len);
		(void)knet_input(&k, copy, len);
		(void)knet_poll(&k);
		return;
	}
	assert_true(fake_net_inject(0, f, (uint32_t)len));
	(void)knet_poll(&k);
}

static void inject_peer_arp_request(void)
{
	uint8_t f[60] = { 0 };
	size_t o = eth(f, 0x0806);
	memset(f, 0xff, 6);
	st_be16(f + o, 1);
	st_be16(f + o + 2, 0x0800);
	f[o + 4] = 6;
	f[o + 5] = 4;
	st_be16(f + o + 6, 1);
	memcpy(f + o + 8, peer_mac, 6);
	st_be32(f + o + 14, PEER_IP);
	st_be32(f + o + 24, OUR_IP);
	inject(f, sizeof f);
}

static void test_config_rejected(void **state)
{
	(void)state;
	struct knet_config c = kconfig();
	assert_true(knet_mem_size(&c) > 0);
	c.nic = NULL;
	assert_int_equal(knet_mem_size(&c), 0);
	c = kconfig();
	c.n_rx_pairs = 2; /* the device has one pair */
	assert_int_equal(knet_mem_size(&c), 0);
	c = kconfig();
	c.ip = 0; /* static without an address */
	assert_int_equal(knet_mem_size(&c), 0);
	c = kconfig();
	c.now_ms = NULL;
	assert_int_equal(knet_mem_size(&c), 0);
	c = kconfig();
	c.upper = NULL; /* knet always serves an upper layer */
	assert_int_equal(knet_mem_size(&c), 0);
	c = kconfig();
	assert_int_equal(knet_init(&k, &c, knet_mem, knet_mem_size(&c) - 8), -E_INVAL);
	assert_int_equal(knet_init(&k, &c, (uint8_t *)knet_mem + 4, sizeof knet_mem - 8), -E_INVAL);
	memset(&k, 0, sizeof k);
}

static void test_arp_reply(void **state)
{
	(void)state;
	up();
	assert_true(fake_vio.n_tx >= 1); /* the gratuitous ARP */
	uint32_t n = fake_vio.n_tx;
	inject_peer_arp_request();
	assert_int_equal(fake_vio.n_tx, n + 1);
	const uint8_t *t = fake_vio.last_tx;
	assert_memory_equal(t, peer_mac, 6);
	assert_int_equal(ld_be16(t + 12), 0x0806);
	assert_int_equal(ld_be16(t + 14 + 6), 2);
	assert_int_equal(ld_be32(t + 14 + 14), OUR_IP);
	assert_memory_equal(t + 14 + 8, our_mac, 6);
	assert_int_equal(k.st.rx_frames, 1);
}

/* The device takes over steering: a knet stops and starts draining its pair on demand
 * (knet_set_rx_pairs), and refuses a range the device does not have. */
static void test_rx_pairs_switch(void **state)
{
	(void)state;
	up();
	assert_int_equal(knet_set_rx_pairs(&k, 2), -E_INVAL); /* the device has one pair */
	assert_int_equal(knet_set_rx_pairs(&k, 0), 0);
	inject_peer_arp_request(); /* waits in the queue: nobody drains it */
	assert_int_equal(k.st.rx_frames, 0);
	assert_int_equal(knet_set_rx_pairs(&k, 1), 0);
	(void)knet_poll(&k);
	assert_int_equal(k.st.rx_frames, 1); /* the waiting frame, answered */
	assert_int_equal(ld_be16(fake_vio.last_tx + 12), 0x0806);
}

static void test_icmp_echo(void **state)
{
	(void)state;
	up();
	inject_peer_arp_request();
	uint8_t f[14 + 20 + 8 + 32];
	size_t o = eth(f, 0x0800);
	uint8_t *icmp = f + o + 20;
	memset(icmp, 0, 8);
	icmp[0] = 8;
	st_be16(icmp + 4, 0x1234);
	st_be16(icmp + 6, 7);
	for (unsigned i = 0; i < 32; i++)
		icmp[8 + i] = (uint8_t)i;
	st_be16(icmp + 2, csum_fold(csum_add(0, icmp, 40)));
	ipv4(f + o, 1, 40);
	uint32_t n = fake_vio.n_tx;
	inject(f, sizeof f);
	assert_int_equal(fake_vio.n_tx, n + 1);
	const uint8_t *t = fake_vio.last_tx;
	assert_int_equal(ld_be16(t + 12), 0x0800);
	assert_int_equal(t[14 + 9], 1);
	assert_int_equal(ld_be32(t + 14 + 16), PEER_IP);
	assert_int_equal(t[34], 0); /* echo reply */
	assert_memory_equal(t + 34 + 4, icmp + 4, 36);
	assert_int_equal(csum_fold(csum_add(0, t + 14, 20)), 0);
	assert_int_equal(k.ns.cnt.icmp_echo_replies, 1);
}

/* A TCP segment from the peer: flags, seq, ack, payload. */
static void tcp_seg(uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack, const void *data, size_t dlen)
{
	uint8_t f[14 + 20 + 24 + 256];
	size_t hl = (flags & 0x02) ? 24 : 20;
	size_t o = eth(f, 0x0800);
	uint8_t *t = f + o + 20;
	assert_true(dlen <= 256);
	memset(t, 0, hl);
	st_be16(t, 40000);
	st_be16(t + 2, dport);
	st_be32(t + 4, seq);
	st_be32(t + 8, ack);
	t[12] = (uint8_t)(hl / 4) << 4;
	t[13] = flags;
	st_be16(t + 14, 65535);
	if (hl == 24) {
		t[20] = 2;
		t[21] = 4;
		st_be16(t + 22, 1460);
	}
	if (dlen)
		memcpy(t + hl, data, dlen);
	uint8_t ph[12];
	st_be32(ph, PEER_IP);
	st_be32(ph + 4, OUR_IP);
	ph[8] = 0;
	ph[9] = 6;
	st_be16(ph + 10, (uint16_t)(hl + dlen));
	st_be16(t + 16, csum_fold(csum_add(csum_add(0, ph, 12), t, hl + dlen)));
	ipv4(f + o, 6, hl + dlen);
	inject(f, o + 20 + hl + dlen);
}

static void test_tcp_echo(void **state)
{
	(void)state;
	up();
	inject_peer_arp_request();
	uint32_t n = fake_vio.n_tx;
	tcp_seg(8883, 0x02, 1000, 0, NULL, 0);
	assert_int_equal(fake_vio.n_tx, n + 1);
	const uint8_t *t = fake_vio.last_tx + 34;
	assert_int_equal(t[13] & 0x12, 0x12); /* SYN-ACK */
	assert_int_equal(ld_be32(t + 8), 1001);
	uint32_t iss = ld_be32(t + 4);

	tcp_seg(8883, 0x10, 1001, iss + 1, NULL, 0);
	assert_int_equal(tcp_conn_count(k.tcp), 1);
	static const char msg[] = "hello from the peer";
	tcp_seg(8883, 0x18, 1001, iss + 1, msg, sizeof msg - 1);
	now_ms += 100;
	(void)knet_poll(&k);
	t = fake_vio.last_tx + 34;
	size_t thl = (size_t)(t[12] >> 4) * 4;
	size_t ip_len = ld_be16(fake_vio.last_tx + 16);
	assert_int_equal(ip_len - 20 - thl, sizeof msg - 1);
	assert_memory_equal(t + thl, msg, sizeof msg - 1);
	assert_int_equal(ld_be32(t + 8), 1001 + sizeof msg - 1);
	assert_int_equal(echo.st.bytes_in, sizeof msg - 1);

	/* The peer acknowledges the echo, then closes; the echo closes its side too. */
	tcp_seg(8883, 0x10, 1001 + (uint32_t)(sizeof msg - 1), iss + 1 + (uint32_t)(sizeof msg - 1), NULL, 0);
	assert_int_equal(echo.st.bytes_acked, sizeof msg - 1);
	tcp_seg(8883, 0x11, 1001 + (uint32_t)(sizeof msg - 1), iss + 1 + (uint32_t)(sizeof msg - 1), NULL, 0);
	t = fake_vio.last_tx + 34;
	assert_int_equal(t[13] & 0x01, 0x01); /* our FIN */
	tcp_seg(8883, 0x10, 1002 + (uint32_t)(sizeof msg - 1), iss + 2 + (uint32_t)(sizeof msg - 1), NULL, 0);
	assert_int_equal(tcp_conn_count(k.tcp), 0);
	assert_int_equal(echo.st.open, 0);
	assert_int_equal(echo.n_free, echo.n_bufs);
	assert_int_equal(tcp_check_invariants(k.tcp), 0);
}

static void test_tcp_closed_port_rst(void **state)
{
	(void)state;
	up();
	inject_peer_arp_request();
	uint32_t n = fake_vio.n_tx;
	tcp_seg(9999, 0x02, 5000, 0, NULL, 0);
	assert_int_equal(fake_vio.n_tx, n + 1);
	const uint8_t *t = fake_vio.last_tx + 34;
	assert_int_equal(t[13] & 0x04, 0x04); /* RST */
	assert_int_equal(tcp_conn_count(k.tcp), 0);
}

static void test_foreign_frame_refused(void **state)
{
	(void)state;
	up();
	static uint8_t bogus[64];
	assert_int_equal(k.ns.port->tx_send(k.ns.port_ctx, bogus, 60), -E_INVAL);
	/* Inside the pool but not the start of a frame. */
	assert_int_equal(k.ns.port->tx_send(k.ns.port_ctx, frames + VNET_HDR_LEN + 5, 60), -E_INVAL);
	assert_int_equal(k.st.tx_bad_frame, 2);
	k.st.tx_bad_frame = 0; /* the teardown's leak check still runs */
}

static int h_tx(void *ctx, const uint8_t *frame, size_t len)
{
	(void)ctx;
	if (hook_fail)
		return -E_AGAIN;
	assert_true(len <= sizeof hook_frame);
	memcpy(hook_frame, frame, len);
	hook_len = len;
	n_hook++;
	return 0;
}

static uint32_t n_steered, addr_seen;
static bool steer_icmp(void *ctx, const uint8_t *frame, size_t len)
{
	(void)ctx;
	if (len >= 34 && ld_be16(frame + 12) == 0x0800 && frame[23] == 1) {
		n_steered++;
		return true;
	}
	return false;
}

static void h_addr(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw)
{
	(void)ctx;
	(void)mask;
	(void)gw;
	addr_seen = ip;
}

static const struct knet_hooks worker_hooks = { .tx = h_tx, .addr_changed = h_addr };
static const struct knet_hooks steer_hooks = { .rx_steer = steer_icmp, .addr_changed = h_addr };

static void icmp_echo_request(void)
{
	uint8_t f[14 + 20 + 8];
	size_t o = eth(f, 0x0800);
	uint8_t *icmp = f + o + 20;
	memset(icmp, 0, 8);
	icmp[0] = 8;
	st_be16(icmp + 2, csum_fold(csum_add(0, icmp, 8)));
	ipv4(f + o, 1, 8);
	inject(f, sizeof f);
}

static void test_worker_mode(void **state)
{
	(void)state;
	struct knet_config c = kconfig();
	c.ext_addr = true;
	c.ip = 0;
	c.n_rx_pairs = 0;
	c.tx_hook = true;
	c.n_tx_stage = 3; /* < n_pending + 2 */
	c.hooks = &worker_hooks;
	c.core = 1;
	assert_int_equal(knet_mem_size(&c), 0);
	c.n_tx_stage = 8;
	c.use_dhcp = true; /* an external address excludes DHCP */
	assert_int_equal(knet_mem_size(&c), 0);
	c.use_dhcp = false;
	size_t len = knet_mem_size(&c);
	assert_true(len > 0 && len <= sizeof knet_mem);
	assert_int_equal(knet_init(&k, &c, knet_mem, len), 0);
	worker_mode = true;
	hook_fail = false;
	n_hook = 0;
	addr_seen = 1;
	uint32_t dev_tx = fake_vio.n_tx;
	(void)knet_poll(&k);
	inject_peer_arp_request(); /* no address yet: nothing learnt, nothing sent */
	assert_int_equal(n_hook, 0);
	assert_int_equal(k.st.rx_no_addr, 1);

	knet_set_addr(&k, OUR_IP, 0xffffff00u, PEER_IP);
	assert_int_equal(addr_seen, OUR_IP);
	assert_int_equal(k.ip, OUR_IP);
	(void)knet_poll(&k); /* the gratuitous ARP, through the hook */
	assert_true(n_hook >= 1);
	uint32_t n = n_hook;
	inject_peer_arp_request();
	assert_int_equal(n_hook, n + 1);
	assert_int_equal(ld_be16(hook_frame + 12), 0x0806);
	assert_int_equal(ld_be16(hook_frame + 14 + 6), 2);
	icmp_echo_request();
	assert_int_equal(n_hook, n + 2);
	assert_int_equal(hook_frame[34], 0); /* echo reply */
	tcp_seg(8883, 0x02, 1000, 0, NULL, 0);
	assert_int_equal(n_hook, n + 3);
	assert_int_equal(hook_frame[34 + 13] & 0x12, 0x12); /* SYN-ACK */
	assert_int_equal(ld_be32(hook_frame + 34 + 8), 1001);

	hook_fail = true; /* no mesh credit: dropped and counted, the staging frame kept */
	icmp_echo_request();
	assert_int_equal(k.st.tx_hook_drops, 1);
	assert_int_equal(k.n_stage_free, c.n_tx_stage);
	hook_fail = false;

	knet_set_addr(&k, OUR_IP, 0xffffff00u, PEER_IP); /* unchanged: nothing happens */
	assert_true(k.net_up);
	knet_set_addr(&k, 0, 0, 0);
	assert_false(k.net_up);
	assert_int_equal(k.ip, 0);
	assert_int_equal(addr_seen, 0);
	icmp_echo_request();
	assert_int_equal(k.st.rx_no_addr, 2);
	knet_set_addr(&k, OUR_IP, 0xffffff00u, PEER_IP);
	n = n_hook;
	icmp_echo_request(); /* the ARP cache was reset: the reply waits behind ARP */
	assert_true(n_hook > n);
	assert_int_equal(k.n_stage_free, c.n_tx_stage - 1);
	n = n_hook;
	inject_peer_arp_request(); /* the peer's MAC: the queued reply leaves */
	assert_true(n_hook >= n + 2);
	assert_int_equal(k.n_stage_free, c.n_tx_stage);
	assert_int_equal(fake_vio.n_tx, dev_tx); /* nothing on the device */
	worker_mode = false;
}

static void test_steering_core(void **state)
{
	(void)state;
	struct knet_config c = kconfig();
	c.hooks = &steer_hooks;
	addr_seen = 0;
	n_steered = 0;
	size_t len = knet_mem_size(&c);
	assert_int_equal(knet_init(&k, &c, knet_mem, len), 0);
	assert_int_equal(addr_seen, OUR_IP); /* the static address, reported once */
	(void)knet_poll(&k);
	inject_peer_arp_request();
	uint32_t n = fake_vio.n_tx;
	icmp_echo_request(); /* taken by the steering hook: the stack never sees it */
	assert_int_equal(n_steered, 1);
	assert_int_equal(k.st.rx_steered, 1);
	assert_int_equal(fake_vio.n_tx, n);
	assert_int_equal(k.ns.cnt.icmp_echo_replies, 0);
	/* A worker's frame, sent as it is on our pair. */
	uint8_t f[60];
	for (unsigned i = 0; i < sizeof f; i++)
		f[i] = (uint8_t)(i * 3u);
	assert_int_equal(knet_send_frame(&k, f, sizeof f), 0);
	(void)knet_poll(&k);
	assert_int_equal(fake_vio.n_tx, n + 1);
	assert_memory_equal(fake_vio.last_tx, f, sizeof f);
	assert_int_equal(knet_send_frame(&k, f, 0), -E_INVAL);
	assert_int_equal(knet_send_frame(&k, f, 4096), -E_INVAL);
	assert_int_equal(k.st.fwd_frames, 1);
	assert_int_equal(k.st.fwd_drops, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config_rejected, setup, NULL),
		cmocka_unit_test_setup_teardown(test_arp_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_pairs_switch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_icmp_echo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp_echo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp_closed_port_rst, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_frame_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_worker_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steering_core, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
