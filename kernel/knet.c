/* SPDX-License-Identifier: MIT
 *
 * knet (kernel/knet.h): virtio-net queue pair <-> net_stack <-> tcp_stack <-> the upper
 * layer the caller gives, on one core; in the multicore data plane also the steering
 * hook, the mesh-fed input, the staged transmit through a hook and the address taken
 * from core 0. Owns only the frame lending between net/ and the driver (or its staging
 * frames) and the carving of caller memory; never parses packet bytes and never
 * allocates. A pair shared with another core is touched one queue at a time (the
 * virtqueue calls below), never both queues of a pair another core uses.
 */
#include "kernel/knet.h"
#include "drivers/virtqueue.h"
#include "kernel/log.h"
#include "lib/align.h"
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
	bool addr_ok = c->ext_addr ? !c->use_dhcp : (c->use_dhcp || c->ip);
	bool tx_ok = c->tx_hook ? (c->hooks && c->hooks->tx && c->n_tx_stage >= c->n_pending + 2u &&
				   c->n_tx_stage <= 65536u)
				: c->pair < c->nic->n_pairs;
	return (uint32_t)c->pair + c->n_rx_pairs <= c->nic->n_pairs && tx_ok &&
	       upper_ok(c) && c->n_arp >= 1 &&
	       c->n_arp <= 4096 && c->n_pending >= 1 && c->n_pending <= 4096 && c->rx_batch >= 1 &&
	       c->now_ms && c->random && addr_ok;
}

static size_t knet_stage_size(const struct knet_config *c)
{
	if (!c->tx_hook)
		return 0;
	return align8((size_t)c->n_tx_stage * KNET_STAGE_BYTES) + align8((size_t)c->n_tx_stage * sizeof(uint32_t));
}

size_t knet_mem_size(const struct knet_config *c)
{
	struct tcp_config tc;
	if (!c || !c->nic || !cfg_ok(c))
		return 0;
	knet_tcp_cfg(c, &tc);
	size_t t = tcp_stack_mem_size(&tc);
	if (!t)
		return 0;
	return align8(c->n_arp * sizeof(struct net_arp_entry)) +
	       align8(c->n_pending * sizeof(struct net_pending_frame)) + align8(t) + knet_stage_size(c);
}

/* ---- net/ port: transmit frames are virtio-net frames of cfg.pair ---- */

static uint8_t *knet_tx_get(void *ctx, size_t *cap)
{
	struct knet *k = ctx;
	struct vnet_frame f;
	*cap = 0;
	if (k->cfg.tx_hook) {
		if (!k->n_stage_free)
			return NULL;
		*cap = KNET_STAGE_BYTES;
		return k->stage + (size_t)k->stage_free[--k->n_stage_free] * KNET_STAGE_BYTES;
	}
	if (k->broken || vnet_tx_alloc(k->cfg.nic, k->cfg.pair, &f) != 0)
		return NULL;
	*cap = f.cap;
	return f.data;
}

/* tx_hook: the staging frame index of p, or false (a bug above us: counted). */
static bool knet_stage_id(struct knet *k, const uint8_t *p, uint32_t *id)
{
	if (p < k->stage) {
		k->st.tx_bad_frame++;
		return false;
	}
	size_t off = (size_t)(p - k->stage);
	if (off % KNET_STAGE_BYTES || off / KNET_STAGE_BYTES >= k->cfg.n_tx_stage ||
	    k->n_stage_free >= k->cfg.n_tx_stage) {
		k->st.tx_bad_frame++;
		return false;
	}
	*id = (uint32_t)(off / KNET_STAGE_BYTES);
	return true;
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
	if (k->cfg.tx_hook) {
		if (!knet_stage_id(k, frame, &id))
			return -E_INVAL;
		int err = len <= KNET_STAGE_BYTES ? k->cfg.hooks->tx(k->cfg.hooks_ctx, frame, len) : -E_INVAL;
		k->stage_free[k->n_stage_free++] = id; /* copied or dropped: ours again */
		if (err) {
			k->st.tx_hook_drops++;
			return err;
		}
		k->st.tx_frames++;
		return 0;
	}
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
	if (k->cfg.tx_hook) {
		if (knet_stage_id(k, frame, &id))
			k->stage_free[k->n_stage_free++] = id;
		return;
	}
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
	if (k->cfg.hooks && k->cfg.hooks->addr_changed)
		k->cfg.hooks->addr_changed(k->cfg.hooks_ctx, ip, mask, gw);
	if (!ip) {
		LOG_WARN("net", "address lost (lease expired or refused)");
		return;
	}
	if (k->cfg.ext_addr) {
		LOG_DEBUG("net", "core %u: address %u.%u.%u.%u/%u from core 0", (unsigned)k->cfg.core,
			  (unsigned)(ip >> 24), (unsigned)(ip >> 16 & 255u), (unsigned)(ip >> 8 & 255u),
			  (unsigned)(ip & 255u), prefix);
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
	p += align8(tlen);
	if (cfg->tx_hook) {
		k->stage = p;
		p += align8((size_t)cfg->n_tx_stage * KNET_STAGE_BYTES);
		k->stage_free = (uint32_t *)(void *)p;
		for (uint32_t i = 0; i < cfg->n_tx_stage; i++)
			k->stage_free[i] = cfg->n_tx_stage - 1u - i;
		k->n_stage_free = cfg->n_tx_stage;
	}
	int err = tcp_stack_init(&k->tcp, tmem, tlen, &tc, &knet_tcp_port, &k->ns, cfg->upper->ops,
				 cfg->upper->ops_ctx);
	if (err)
		return err;
	cfg->upper->bind(cfg->upper->ctx, k->tcp);

	k->nc = (struct net_config){
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
	memcpy(k->nc.mac, cfg->nic->mac, NET_MAC_LEN);
	if (!cfg->tx_hook && cfg->n_rx_pairs == 0)
		vq_cb_disable(&cfg->nic->pairs[cfg->pair].tx); /* its vector belongs to the rx core */
	if (cfg->ext_addr)
		return 0; /* invariant 5: the stack starts with the first address */
	k->net_up = true;
	return net_stack_init(&k->ns, &k->nc, &knet_port_ops, k, &knet_upper, k);
}

/* Hand one received frame to net/ (invariant 2); the frame is writable so TLS can
 * decrypt in place. */
static void knet_rx_one(struct knet *k, uint8_t *frame, size_t len)
{
	k->st.rx_frames++;
	if (!k->net_up) {
		k->st.rx_no_addr++;
		return;
	}
	k->rx_frame = frame;
	k->rx_len = len;
	(void)net_stack_input(&k->ns, frame, len);
	k->rx_frame = NULL;
	k->rx_len = 0;
}

int knet_input(struct knet *k, uint8_t *frame, size_t len)
{
	if (k->broken)
		return 0;
	knet_rx_one(k, frame, len);
	return k->net_up ? 1 : 0;
}

void knet_set_addr(struct knet *k, uint32_t ip, uint32_t mask, uint32_t gw)
{
	if (!k->cfg.ext_addr || (k->net_up && ip == k->ip && mask == k->nc.mask && gw == k->nc.gw))
		return;
	bool was_up = k->net_up;
	if (k->net_up) {
		/* Frames queued behind ARP are lent transmit frames: give them back before
		 * the stack forgets them (invariant 1). */
		for (uint32_t i = 0; i < k->cfg.n_pending; i++)
			if (k->nc.pending[i].frame)
				knet_tx_put(k, k->nc.pending[i].frame);
		k->net_up = false;
	}
	if (!ip) {
		if (was_up)
			knet_addr_changed(k, 0, 0, 0);
		return;
	}
	k->nc.ip = ip;
	k->nc.mask = mask;
	k->nc.gw = gw;
	/* net_stack_init reports the static address through knet_addr_changed. */
	if (net_stack_init(&k->ns, &k->nc, &knet_port_ops, k, &knet_upper, k) != 0) {
		LOG_ERR("net", "core %u: address from core 0 refused by the stack", (unsigned)k->cfg.core);
		return;
	}
	k->net_up = true;
}

int knet_send_frame(struct knet *k, const uint8_t *frame, size_t len)
{
	struct vnet_frame f;
	if (k->broken || k->cfg.tx_hook || vnet_tx_alloc(k->cfg.nic, k->cfg.pair, &f) != 0) {
		k->st.fwd_drops++;
		return -E_AGAIN;
	}
	if (len == 0 || len > f.cap) {
		(void)!vnet_tx_cancel(k->cfg.nic, k->cfg.pair, f.id);
		k->st.fwd_drops++;
		return -E_INVAL;
	}
	memcpy(f.data, frame, len);
	if (vnet_tx_send(k->cfg.nic, k->cfg.pair, f.id, (uint32_t)len, NULL) != 0) {
		(void)!vnet_tx_cancel(k->cfg.nic, k->cfg.pair, f.id);
		k->st.fwd_drops++;
		return -E_AGAIN;
	}
	k->st.fwd_frames++;
	return 0;
}

/* Invariant 3, one queue at a time: the receive queues of our rx pairs, the transmit
 * queue of our tx pair. */
static void knet_kick(struct knet *k)
{
	struct vnet *n = k->cfg.nic;
	for (uint16_t p = k->cfg.pair; p < k->cfg.pair + k->cfg.n_rx_pairs; p++)
		(void)vq_kick(&n->pairs[p].rx);
	if (!k->cfg.tx_hook)
		(void)vq_kick(&n->pairs[k->cfg.pair].tx);
}

/* Interrupts of our rx pairs (and of the tx queue when that pair is ours alone to
 * receive from too, as on a single core): on (true: completions already pending) or off. */
static bool knet_irq(struct knet *k, bool on)
{
	struct vnet *n = k->cfg.nic;
	bool pending = false;
	for (uint16_t p = k->cfg.pair; p < k->cfg.pair + k->cfg.n_rx_pairs; p++) {
		bool tx = !k->cfg.tx_hook && p == k->cfg.pair;
		if (on) {
			pending = vq_cb_enable(&n->pairs[p].rx) || pending;
			if (tx)
				pending = vq_cb_enable(&n->pairs[p].tx) || pending;
		} else {
			vq_cb_disable(&n->pairs[p].rx);
			if (tx)
				vq_cb_disable(&n->pairs[p].tx);
		}
	}
	return pending;
}

int knet_set_rx_pairs(struct knet *k, uint16_t n)
{
	if ((uint32_t)k->cfg.pair + n > k->cfg.nic->n_pairs)
		return -E_INVAL;
	k->cfg.n_rx_pairs = n;
	k->irq_armed = false; /* invariant 4: the next pass without frames arms the new range */
	return 0;
}

int knet_poll(void *ctx)
{
	struct knet *k = ctx;
	int work = 0;

	if (k->broken)
		return 0;
	k->st.polls++;
	const struct knet_hooks *h = k->cfg.hooks;
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
			if (h && h->rx_steer && h->rx_steer(k->cfg.hooks_ctx, f.data, f.len))
				k->st.rx_steered++;
			else
				knet_rx_one(k, f.data, f.len);
			if (vnet_rx_release(k->cfg.nic, p, f.id) != 0)
				k->st.rx_release_err++;
			work++;
		}
	}
	uint64_t now = k->cfg.now_ms();
	if (k->net_up && now >= net_stack_next_timer_ms(&k->ns))
		net_stack_poll(&k->ns, now);
	tcp_poll(k->tcp);
	if (k->cfg.upper && k->cfg.upper->poll)
		work += (int)MIN(k->cfg.upper->poll(k->cfg.upper->ctx), 1024u);
	if (!k->cfg.tx_hook)
		(void)!vnet_tx_reap(k->cfg.nic, k->cfg.pair);
	knet_kick(k);
	/* Adaptive polling (invariant 4): under load the queues' interrupts are off and the
	 * loop polls; a pass without frames re-arms them before the core may halt, and
	 * reports work if completions slipped in meanwhile, so a frame never waits for the
	 * next tick. A knet without rx pairs has no interrupts: its wake-ups are the mesh's. */
	if (k->cfg.n_rx_pairs == 0)
		return work;
	if (work && k->irq_armed) {
		(void)knet_irq(k, false);
		k->irq_armed = false;
	} else if (!work && !k->irq_armed) {
		k->irq_armed = true;
		if (knet_irq(k, true))
			work = 1;
	}
	return work;
}
