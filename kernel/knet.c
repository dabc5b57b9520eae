/* SPDX-License-Identifier: MIT
 *
 * knet (kernel/knet.h): virtio-net queue pair <-> net_stack <-> tcp_stack <-> the upper
 * layer the caller gives (or the TEMPORARY echo of the unit test), on one core. Owns only the frame lending between net/ and the driver and the
 * carving of caller memory; never parses packet bytes and never allocates.
 */
#include "kernel/knet.h"
#include "kernel/log.h"
#include "lib/err.h"
#include "lib/mem.h"

/* net/ timing (RFC values; from the configuration file at integration). */
#define KNET_TTL 64
#define KNET_MTU 1500
#define KNET_ARP_EXPIRY_MS 60000u
#define KNET_ARP_RETRY_MS 1000u
#define KNET_ARP_TRIES 5u
#define KNET_ARP_DEFEND_MS 10000u
#define KNET_ICMP_PER_S 100u
#define KNET_ICMP_BURST 50u
#define KNET_DHCP_RETRY_MS 4000u
#define KNET_DHCP_RETRY_MAX_MS 64000u
#define KNET_DHCP_REQ_TRIES 4u
#define KNET_DHCP_RENEW_MIN_MS 60000u
#define KNET_DHCP_LEASE_MIN_S 60u

static size_t align8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

static void knet_tcp_cfg(const struct knet_config *c, struct tcp_config *tc)
{
	*tc = *c->upper->tcp;
	tc->local_ip = c->use_dhcp ? 0 : c->ip;
}

static bool upper_ok(const struct knet_config *c)
{
	return c->upper && c->upper->ops && c->upper->tcp && c->upper->bind;
}

static bool cfg_ok(const struct knet_config *c)
{
	return c->nic && c->n_rx_pairs >= 1 && (uint32_t)c->pair + c->n_rx_pairs <= c->nic->n_pairs &&
	       upper_ok(c) && c->n_arp >= 1 &&
	       c->n_arp <= 4096 && c->n_pending >= 1 && c->n_pending <= 4096 && c->rx_batch >= 1 &&
	       c->now_ms && c->random && (c->use_dhcp || c->ip);
}

size_t knet_mem_size(const struct knet_config *c)
{
	struct tcp_config tc;
	if (!c || !cfg_ok(c))
		return 0;
	knet_tcp_cfg(c, &tc);
	size_t t = tcp_stack_mem_size(&tc);
	if (!t)
		return 0;
	return align8(c->n_arp * sizeof(struct net_arp_entry)) +
	       align8(c->n_pending * sizeof(struct net_pending_frame)) + align8(t);
}

/* ---- net/ port: transmit frames are virtio-net frames of cfg.pair ---- */

static uint8_t *knet_tx_get(void *ctx, size_t *cap)
{
	struct knet *k = ctx;
	struct vnet_frame f;
	*cap = 0;
	if (k->broken || vnet_tx_alloc(k->cfg.nic, k->cfg.pair, &f) != 0)
		return NULL;
	*cap = f.cap;
	return f.data;
}

/* The frame id of a pointer net/ gives back; false if it is not the start of one of the
 * pool's frames (a bug above us: counted, the frame is then lost). */
static bool knet_frame_id(struct knet *k, const uint8_t *p, uint32_t *id)
{
	const struct vnet_config *vc = &k->cfg.nic->cfg;
	const uint8_t *base = (const uint8_t *)vc->frames + VNET_HDR_LEN;
	if (p < base) {
		k->st.tx_bad_frame++;
		return false;
	}
	size_t off = (size_t)(p - base);
	if (off % vc->frame_size || off / vc->frame_size >= vc->n_frames) {
		k->st.tx_bad_frame++;
		return false;
	}
	*id = (uint32_t)(off / vc->frame_size);
	return true;
}

static int knet_tx_send(void *ctx, uint8_t *frame, size_t len)
{
	struct knet *k = ctx;
	uint32_t id;
	if (!knet_frame_id(k, frame, &id))
		return -E_INVAL;
	if (len > UINT32_MAX)
		len = 0; /* refused below: the frame goes back to the free stack */
	int err = vnet_tx_send(k->cfg.nic, k->cfg.pair, id, (uint32_t)len, NULL);
	if (err) {
		(void)!vnet_tx_cancel(k->cfg.nic, k->cfg.pair, id);
		return err;
	}
	k->st.tx_frames++;
	return 0;
}

static void knet_tx_put(void *ctx, uint8_t *frame)
{
	struct knet *k = ctx;
	uint32_t id;
	if (knet_frame_id(k, frame, &id))
		(void)!vnet_tx_cancel(k->cfg.nic, k->cfg.pair, id);
}

static uint64_t knet_now_ms(void *ctx)
{
	const struct knet *k = ctx;
	return k->cfg.now_ms();
}

static uint32_t knet_random32(void *ctx)
{
	const struct knet *k = ctx;
	uint32_t v;
	k->cfg.random(&v, sizeof v);
	return v;
}

static const struct net_port_ops knet_port_ops = {
	.tx_get = knet_tx_get,
	.tx_send = knet_tx_send,
	.tx_put = knet_tx_put,
	.now_ms = knet_now_ms,
	.random = knet_random32,
};

/* ---- TCP's lower port: net/'s TCP adapter with ctx = &k->ns, plus clock and CSPRNG ---- */

static uint64_t knet_tcp_now_ms(void *ctx)
{
	const struct knet *k = CONTAINER_OF((struct net_stack *)ctx, struct knet, ns);
	return k->cfg.now_ms();
}

static void knet_tcp_random(void *ctx, void *buf, size_t len)
{
	const struct knet *k = CONTAINER_OF((struct net_stack *)ctx, struct knet, ns);
	k->cfg.random(buf, len);
}

static const struct tcp_port_ops knet_tcp_port = {
	.tx_begin = net_tcp_tx_begin,
	.tx_send = net_tcp_tx_send,
	.now_ms = knet_tcp_now_ms,
	.random = knet_tcp_random,
	.tx_abort = net_tcp_tx_abort,
};

/* ---- net/'s upper hooks ---- */

static void knet_tcp_input(void *ctx, uint32_t src_ip, uint32_t dst_ip, const uint8_t *seg, size_t len)
{
	struct knet *k = ctx;
	/* seg lies in the frame being received (net/ hands a read-only view of it); TCP gets
	 * the mutable view so TLS decrypts in place in the frame, released right after. */
	tcp_input_in_frame(k->tcp, src_ip, dst_ip, k->rx_frame, k->rx_len, seg, len);
}

static void knet_addr_changed(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw)
{
	struct knet *k = ctx;
	unsigned prefix = 0;
	for (uint32_t m = mask; m & 0x80000000u; m <<= 1)
		prefix++;
	k->ip = ip;
	tcp_stack_set_local_ip(k->tcp, ip);
	if (!ip) {
		LOG_WARN("net", "address lost (lease expired or refused)");
		return;
	}
	LOG_INFO("net", "%s: %u.%u.%u.%u/%u gateway %u.%u.%u.%u",
		 k->cfg.use_dhcp ? "DHCP lease" : "static address", (unsigned)(ip >> 24),
		 (unsigned)(ip >> 16 & 255u), (unsigned)(ip >> 8 & 255u), (unsigned)(ip & 255u), prefix,
		 (unsigned)(gw >> 24), (unsigned)(gw >> 16 & 255u), (unsigned)(gw >> 8 & 255u),
		 (unsigned)(gw & 255u));
}

static const struct net_upper_ops knet_upper = {
	.tcp_input = knet_tcp_input,
	.addr_changed = knet_addr_changed,
};

int knet_init(struct knet *k, const struct knet_config *cfg, void *mem, size_t mem_len)
{
	size_t need = knet_mem_size(cfg);
	memset(k, 0, sizeof *k);
	if (!need || !mem || mem_len < need || ((uintptr_t)mem & 7u))
		return -E_INVAL;
	k->cfg = *cfg;
	k->irq_armed = true; /* virtqueues start with interrupts enabled */
	uint8_t *p = mem;
	struct net_arp_entry *arp = (struct net_arp_entry *)(void *)p;
	p += align8(cfg->n_arp * sizeof(struct net_arp_entry));
	struct net_pending_frame *pend = (struct net_pending_frame *)(void *)p;
	p += align8(cfg->n_pending * sizeof(struct net_pending_frame));
	struct tcp_config tc;
	knet_tcp_cfg(cfg, &tc);
	size_t tlen = tcp_stack_mem_size(&tc);
	void *tmem = p;
	int err = tcp_stack_init(&k->tcp, tmem, tlen, &tc, &knet_tcp_port, &k->ns, cfg->upper->ops,
				 cfg->upper->ops_ctx);
	if (err)
		return err;
	cfg->upper->bind(cfg->upper->ctx, k->tcp);

	struct net_config nc = {
		.use_dhcp = cfg->use_dhcp,
		.ip = cfg->use_dhcp ? 0 : cfg->ip,
		.mask = cfg->use_dhcp ? 0 : cfg->mask,
		.gw = cfg->use_dhcp ? 0 : cfg->gw,
		.ttl = KNET_TTL,
		.mtu = KNET_MTU,
		.arp = arp,
		.n_arp = cfg->n_arp,
		.pending = pend,
		.n_pending = cfg->n_pending,
		.arp_expiry_ms = KNET_ARP_EXPIRY_MS,
		.arp_retry_ms = KNET_ARP_RETRY_MS,
		.arp_max_tries = KNET_ARP_TRIES,
		.arp_defend_ms = KNET_ARP_DEFEND_MS,
		.icmp_rate_per_s = KNET_ICMP_PER_S,
		.icmp_burst = KNET_ICMP_BURST,
		.udp = k->udp,
		.n_udp = ARRAY_LEN(k->udp),
		.dhcp_retry_initial_ms = KNET_DHCP_RETRY_MS,
		.dhcp_retry_max_ms = KNET_DHCP_RETRY_MAX_MS,
		.dhcp_request_tries = KNET_DHCP_REQ_TRIES,
		.dhcp_renew_retry_min_ms = KNET_DHCP_RENEW_MIN_MS,
		.dhcp_lease_min_s = KNET_DHCP_LEASE_MIN_S,
	};
	memcpy(nc.mac, cfg->nic->mac, NET_MAC_LEN);
	return net_stack_init(&k->ns, &nc, &knet_port_ops, k, &knet_upper, k);
}

int knet_poll(void *ctx)
{
	struct knet *k = ctx;
	int work = 0;

	if (k->broken)
		return 0;
	k->st.polls++;
	for (uint16_t p = k->cfg.pair; p < k->cfg.pair + k->cfg.n_rx_pairs; p++) {
		for (uint32_t i = 0; i < k->cfg.rx_batch; i++) {
			struct vnet_frame f;
			int err = vnet_rx_poll(k->cfg.nic, p, &f);
			if (err == -E_AGAIN)
				break;
			if (err) {
				k->broken = true;
				LOG_ERR("net", "virtio-net pair %u broke (%s); the network is down",
					(unsigned)p, err_name(err));
				return work;
			}
			k->st.rx_frames++;
			k->rx_frame = f.data;
			k->rx_len = f.len;
			(void)net_stack_input(&k->ns, f.data, f.len);
			k->rx_frame = NULL;
			k->rx_len = 0;
			if (vnet_rx_release(k->cfg.nic, p, f.id) != 0)
				k->st.rx_release_err++;
			work++;
		}
	}
	uint64_t now = k->cfg.now_ms();
	if (now >= net_stack_next_timer_ms(&k->ns))
		net_stack_poll(&k->ns, now);
	tcp_poll(k->tcp);
	if (k->cfg.upper && k->cfg.upper->poll)
		work += (int)MIN(k->cfg.upper->poll(k->cfg.upper->ctx), 1024u);
	(void)!vnet_tx_reap(k->cfg.nic, k->cfg.pair);
	for (uint16_t p = k->cfg.pair; p < k->cfg.pair + k->cfg.n_rx_pairs; p++)
		vnet_flush(k->cfg.nic, p);
	/* Adaptive polling (invariant 4): under load the queues' interrupts are off and the
	 * loop polls; a pass without frames re-arms them before the core may halt, and
	 * reports work if completions slipped in meanwhile, so a frame never waits for the
	 * next tick. */
	if (work && k->irq_armed) {
		for (uint16_t p = k->cfg.pair; p < k->cfg.pair + k->cfg.n_rx_pairs; p++)
			vnet_irq_disable(k->cfg.nic, p);
		k->irq_armed = false;
	} else if (!work && !k->irq_armed) {
		bool pending = false;
		for (uint16_t p = k->cfg.pair; p < k->cfg.pair + k->cfg.n_rx_pairs; p++)
			pending = vnet_irq_enable(k->cfg.nic, p) || pending;
		k->irq_armed = true;
		if (pending)
			work = 1;
	}
	return work;
}
