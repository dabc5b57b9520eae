/* SPDX-License-Identifier: MIT
 *
 * The running node (kernel/node/node.h): per-core stacks and brokers, the core mesh,
 * steering, storage links and statistics, built from the devices the platform found.
 * Every core polls the NIC queue pairs it owns; core 0 receives from every pair until the
 * device steers, classifies each frame (kernel/ksteer) and hands TCP flows to the core
 * net/rss picks through the mesh, ARP to every core, the rest stays on core 0. A worker
 * transmits on its own pair when the device has one per core, else hands its frames back
 * to core 0, which sends them on pair 0. Core 0 runs DHCP (or takes ip= from the command
 * line) and tells every worker its address by a control message.
 * Owns the per-core state (struct node_core) and the node-wide decisions (how many data
 * cores, which core stores), written on the boot core before the other cores start and
 * then only by their own core (the start publishes them).
 */
#include "kernel/node/node.h"

#include <stdatomic.h>

#include "dp/dp.h"
#include "drivers/virtio_net.h"
#include "kernel/cmdline.h"
#include "kernel/kdemux.h"
#include "kernel/knet.h"
#include "kernel/kstore.h"
#include "kernel/ksteer.h"
#include "kernel/log.h"
#include "kernel/loop.h"
#include "kernel/node/broker.h"
#include "kernel/node/devices.h"
#include "kernel/node/disks.h"
#include "kernel/node/opsd.h"
#include "kernel/node/port.h"
#include "kernel/panic.h"
#include "kernel/xcore.h"
#include "lib/align.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "net/rss.h"
#include "plat/plat.h"
#include "store/ops.h"
#include "tls/shim/threading_kernel.h"
#include "urmqtt_config.h"

#define NODE_NET_DEMUX 5u     /* kind ranges one core's mesh demultiplexer holds */
#define NODE_NET_ARP 64u
#define NODE_NET_PENDING 32u
#define NODE_NET_RX_BATCH 8u  /* frames per poll: a few full TLS handshakes stay far below the
			       * 200 ms watchdog limit under TCG */
#define NODE_BROKER_REPORT_MS 10000u /* the memory line of kernel/node/broker */

/* Per core: its stack, its broker, its mesh demultiplexer and its counters. Built on the
 * boot core before the other cores start, then each touched only by its own core (the
 * counters are read by their core only: the log lines are per core). */
struct node_core {
	struct knet knet;
	struct node_broker broker;
	struct kdemux demux;
	struct kdemux_entry demux_tab[NODE_NET_DEMUX];
	struct ksteer steer;  /* worker, with the device steering: its own classifier */
	uint64_t steer_drops;  /* core 0: frames for this core dropped, no mesh credit */
	uint64_t arp_drops;    /* core 0: ARP copies for this core dropped */
	uint64_t tx_drops;     /* worker: frames for core 0 to send dropped, no credit */
	uint64_t addr_bad;     /* worker: malformed address messages */
	/* With the device steering: TCP flow frames to our address this core drained from its
	 * pair, and those of them net/rss hashes to another core (0 when the device steers by
	 * our key and table, VIRTIO_NET_F_RSS). */
	uint64_t rss_flows, rss_mismatch;
	uint64_t n_ipis;       /* wake-ups this core sent */
	uint64_t credit_wakes; /* senders named by xcore_credit_waiters (woken if halted) */
	uint64_t loop_passes_said; /* n_passes when the loop line was last logged */
	uint64_t stats_last_ms, stats_last_sum;
	struct kloop *loop;       /* this core's loop (its watchdog counts) */
	uint64_t figures_last_ms; /* the last figures given to kernel/node/opsd */
	/* The console's change this core's broker took (node_broker_config.ctl_broadcast): to
	 * be applied here and sent to the other data cores; bit c of ctl_owed: core c still
	 * owes it (this core's own bit included). One at a time. */
	uint64_t ctl_owed;
	struct node_ctl ctl;
	bool take_pair;       /* core 0's view of a worker: TAKE_PAIR still to send */
	bool ok;           /* knet and broker built */
	bool storage;      /* the storage core (kernel/kstore.h): a mesh demultiplexer, no stack */
	bool addr_dirty;   /* core 0's view of a worker: its address message still to send */
};
static struct node_core node_cores[PLAT_MAX_CPUS];
static uint32_t nd_n_net;   /* cores with a stack: 0 .. nd_n_net - 1 */
static bool nd_own_pairs;   /* every worker transmits on its own pair */
/* The device steers (a queue pair per core): after the cores started, each core drains its
 * own pair and frames stay on the core the device chose; else core 0 steers them all. */
static bool nd_device_steers;
static struct xcore_mesh *nd_mesh; /* NULL with one core */
static struct rss_steer nd_rss;    /* core 0's */
static uint16_t *nd_rss_indir;
static struct ksteer nd_steer;     /* core 0's */
/* Storage (kernel/kstore.h): with a data disk and several cores, the highest core runs it
 * and nothing else; with one core, core 0 runs it from its loop. Decided once, before the
 * cores start; read-only after. */
static bool nd_store_on;        /* a data disk exists: data cores record and hold acks */
static bool nd_store_dedicated; /* the storage core is not a data core */
static uint32_t nd_store_core;
static const char *nd_store_disk_name;
/* ---- the network stack on core 0 ---- */

static uint64_t nd_now_ms(void)
{
	return node_port_now_ms();
}

static void nd_random(void *buf, size_t len)
{
	if (node_port_random(buf, len) != 0)
		PANIC("csprng: generator unavailable on core %u", (unsigned)node_port_core_self());
}

/* Development builds: "ip=a.b.c.d/len" and optional "gw=a.b.c.d" replace DHCP. */
static bool nd_static_ip(const char *cmdline, size_t len, uint32_t *ip, uint32_t *mask, uint32_t *gw)
{
#ifdef URMQTT_PROD
	(void)cmdline;
	(void)len;
	(void)ip;
	(void)mask;
	(void)gw;
	return false;
#else
	char v[32];
	*gw = 0;
	if (cmdline_get(cmdline, len, "ip", v, sizeof v) != 0)
		return false;
	if (cmdline_parse_ipv4_prefix(v, ip, mask) != 0 || *mask == 0 || (*mask & 3u) || !(*ip & ~*mask)) {
		LOG_WARN("net", "ignoring ip= on the command line (want a.b.c.d/len, len 1..30, a host address)");
		return false;
	}
	if (cmdline_get(cmdline, len, "gw", v, sizeof v) == 0 && cmdline_parse_ipv4(v, gw) != 0) {
		LOG_WARN("net", "ignoring malformed gw= on the command line");
		*gw = 0;
	}
	return true;
#endif
}

/* kernel/node/node.h; *out unchanged when false. */
bool node_knob_u32(const char *cmdline, size_t len, const char *key, uint32_t lo, uint32_t hi, uint32_t *out)
{
#ifndef URMQTT_PROD
	char v[16];
	uint64_t n = 0;
	if (cmdline_get(cmdline, len, key, v, sizeof v) != 0)
		return false;
	for (const char *c = v; *c && n <= hi; c++)
		n = (*c >= '0' && *c <= '9') ? n * 10u + (uint64_t)(*c - '0') : UINT64_MAX;
	if (v[0] && n >= lo && n <= hi) {
		*out = (uint32_t)n;
		return true;
	}
	LOG_WARN("boot", "ignoring %s= (want %lu..%lu)", key, (unsigned long)lo, (unsigned long)hi);
#else
	(void)cmdline;
	(void)len;
	(void)key;
	(void)lo;
	(void)hi;
	(void)out;
#endif
	return false;
}

/* "broker_report_ms=N" (1000..600000) changes the memory line's period (the smoke test
 * reads it every second instead of every 10 s). */
static uint32_t nd_report_ms(const char *cmdline, size_t len)
{
	uint32_t ms = NODE_BROKER_REPORT_MS;
	(void)node_knob_u32(cmdline, len, "broker_report_ms", 1000u, 600000u, &ms);
	return ms;
}

/* The storage knobs of development builds, for tests that cannot wait for the
 * configuration's hours and days (0: the configuration's value): the first backup and
 * the interval (seconds), telemetry retention (seconds), the WAL pages that make the
 * storage core checkpoint (1: after every commit, so the database region is current). */
static void nd_store_knobs(const char *cmdline, size_t len, struct kstore_knobs *k)
{
	(void)node_knob_u32(cmdline, len, "store_backup_first_s", 1u, 86400u, &k->backup_first_s);
	(void)node_knob_u32(cmdline, len, "store_backup_interval_s", 1u, 86400u * 30u, &k->backup_interval_s);
	(void)node_knob_u32(cmdline, len, "store_retention_s", 1u, 86400u * 3650u, &k->retention_s);
	(void)node_knob_u32(cmdline, len, "store_checkpoint_pages", 1u, 1000000u, &k->checkpoint_pages);
}

/* storage.required, or "storage_required=1" on the command line: it can only make a build
 * stricter (a prod image requires storage already), so every build honours it. */
static bool nd_storage_required(const char *cmdline, size_t len)
{
	char v[8];
	if (CONF_STORAGE_REQUIRED)
		return true;
	return cmdline_get(cmdline, len, "storage_required", v, sizeof v) == 0 && v[0] == '1' && v[1] == 0;
}

/* ---- the multicore data plane ----
 * Wake-up protocol (a core halts only when its loop found no work; a mesh message must
 * not wait for its tick): a core about to halt stores sleeping = true, issues a seq_cst
 * fence and then looks at its incoming rings (node_mesh_pending, with interrupts off,
 * from the platform's idle path); a sender commits its message (release), issues a seq_cst fence and
 * then reads the receiver's sleeping flag, sending the wake-up IPI when it is set. With
 * the two fences at least one side sees the other's store: either the receiver finds
 * the message and does not halt, or the sender sees it asleep and interrupts it (an IPI
 * that arrives between the check and hlt stays pending and ends the halt: sti;hlt). */
/* Development builds: ballast_free_pct=P ballast_at_s=S ballast_hold_s=H: S seconds after
 * boot core 0's broker heap takes blocks it does not use until less than P % of it is
 * free, and gives them back H seconds later, so a test sees the health turn degraded
 * (heap low) and back on real accounting. */
static uint32_t nd_ballast_pct, nd_ballast_at_s, nd_ballast_hold_s;
static bool nd_ballast_held, nd_ballast_releasing, nd_ballast_done;

static void nd_ballast_knobs(const char *cmdline, size_t len)
{
	if (!node_knob_u32(cmdline, len, "ballast_free_pct", 1u, 99u, &nd_ballast_pct))
		return;
	nd_ballast_at_s = 5;
	nd_ballast_hold_s = 10;
	(void)node_knob_u32(cmdline, len, "ballast_at_s", 0u, 3600u, &nd_ballast_at_s);
	(void)node_knob_u32(cmdline, len, "ballast_hold_s", 1u, 3600u, &nd_ballast_hold_s);
}

/* A few blocks per loop pass, so taking or giving back the ballast stays far inside the
 * watchdog's budget (hundreds of MiB under TCG would not). */
static void nd_ballast_poll(uint64_t now_ms)
{
	if (!nd_ballast_pct || nd_ballast_done)
		return;
	struct node_broker *b = &node_cores[0].broker;
	if (!nd_ballast_held && now_ms >= (uint64_t)nd_ballast_at_s * 1000u) {
		size_t got = 0;
		if (node_broker_ballast(b, nd_ballast_pct, &got)) {
			LOG_INFO("test", "ballast: core 0's broker heap holds %lu MiB of ballast for %u s (under %u %% free)",
				 (unsigned long)(got >> 20), (unsigned)nd_ballast_hold_s, (unsigned)nd_ballast_pct);
			nd_ballast_held = true;
		}
	} else if (nd_ballast_held && now_ms >= ((uint64_t)nd_ballast_at_s + nd_ballast_hold_s) * 1000u) {
		size_t got = 0;
		if (!nd_ballast_releasing)
			LOG_INFO("test", "ballast: releasing");
		nd_ballast_releasing = true;
		if (node_broker_ballast(b, 0, &got)) {
			LOG_INFO("test", "ballast: released");
			nd_ballast_done = true;
		}
	}
}

static void nd_wake(uint32_t dst)
{
	/* seq_cst: orders the message's commit (a release store of the ring's head) before
	 * the load of the flag below; pairs with the fence in main_idle (see above). */
	atomic_thread_fence(memory_order_seq_cst);
	if (node_port_wake(dst))
		node_cores[node_port_core_self()].n_ipis++;
}

/* Called on `core` itself from its idle path, after the fence that follows its `sleeping`
 * store: a message waits, or mesh credit this core was refused has come back (its shard
 * backlog can move: one more pass instead of a halt until the tick; xcore invariant 7). */
bool node_mesh_pending(uint32_t core)
{
	return nd_mesh && core < PLAT_MAX_CPUS && (node_cores[core].ok || node_cores[core].storage) &&
	       (xcore_pending(nd_mesh, core) || xcore_credit_back(nd_mesh, core));
}

/* ARP received on core `self`: a copy to every other core, so each core's ARP cache
 * learns the replies to its own requests wherever they arrived. */
static void nd_arp_copies(uint32_t self, const uint8_t *frame, size_t len)
{
	for (uint32_t c = 0; c < nd_n_net; c++) {
		if (c == self)
			continue;
		if (xcore_send(nd_mesh, self, c, KSTEER_KIND_RX_FRAME, frame, (uint32_t)len) == 0)
			nd_wake(c);
		else
			node_cores[self].arp_drops++;
	}
}

/* A worker draining its own pair (the device steers), knet's rx_steer hook: a TCP flow to
 * our address stays here (the device picked this queue, and our replies leave on it, so
 * the device keeps the flow here); ARP is handled here and copied to every other core;
 * anything else (ICMP, DHCP) is core 0's. */
static bool nd_rx_worker(void *ctx, const uint8_t *frame, size_t len)
{
	struct node_core *dc = ctx;
	uint32_t self = (uint32_t)(dc - node_cores), w;
	enum ksteer_class k = ksteer_classify(&dc->steer, frame, len, &w);
	if (k == KSTEER_FLOW) {
		dc->rss_flows++;
		dc->rss_mismatch += w != self;
		return false;
	}
	if (k == KSTEER_ARP) {
		nd_arp_copies(self, frame, len);
		return false;
	}
	if (xcore_send(nd_mesh, self, 0, KSTEER_KIND_RX_FRAME, frame, (uint32_t)len) == 0)
		nd_wake(0);
	else
		dc->steer_drops++;
	return true;
}

/* A worker's address changed: its classifier follows. */
static void nd_worker_addr(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw)
{
	struct node_core *dc = ctx;
	(void)mask, (void)gw;
	ksteer_set_addr(&dc->steer, ip);
}

/* Core 0, knet's rx_steer hook: where a received frame goes (kernel/ksteer.h). */
static bool nd_rx_steer(void *ctx, const uint8_t *frame, size_t len)
{
	(void)ctx;
	uint32_t w;
	enum ksteer_class k = ksteer_classify(&nd_steer, frame, len, &w);
	if (k == KSTEER_ARP) {
		nd_arp_copies(0, frame, len);
		return false; /* and on core 0 itself */
	}
	if (k == KSTEER_FLOW && nd_device_steers) {
		node_cores[0].rss_flows++;
		node_cores[0].rss_mismatch += w != 0;
	}
	if (k != KSTEER_FLOW || w == 0 || nd_device_steers)
		return false;
	/* Frames never exceed the slot (mesh_slot_bytes >= 1536 > 1514): a refusal here is
	 * lack of credit; the peer's TCP retransmits. Never block. */
	if (xcore_send(nd_mesh, 0, w, KSTEER_KIND_RX_FRAME, frame, (uint32_t)len) == 0)
		nd_wake(w);
	else
		node_cores[w].steer_drops++;
	return true;
}

/* A worker without its own pair, knet's tx hook: core 0 sends it on pair 0. */
static int nd_tx_to_core0(void *ctx, const uint8_t *frame, size_t len)
{
	struct node_core *dc = ctx;
	uint32_t self = node_port_core_self();
	int err = xcore_send(nd_mesh, self, 0, KSTEER_KIND_TX_FRAME, frame, (uint32_t)len);
	if (err) {
		dc->tx_drops++;
		return err;
	}
	nd_wake(0);
	return 0;
}

/* Core 0: tell worker c the address; a full ring (more control messages in flight than
 * the reserve) leaves it marked and the mesh handler retries on later passes. */
static void nd_addr_send(uint32_t c)
{
	uint8_t m[KSTEER_ADDR_LEN];
	uint32_t mask, gw;
	uint32_t ip = net_stack_addr(&node_cores[0].knet.ns, &mask, &gw);
	if (!node_cores[0].knet.net_up)
		ip = mask = gw = 0;
	ksteer_addr_encode(m, ip, mask, gw);
	if (xcore_send_ctrl(nd_mesh, 0, c, KSTEER_KIND_ADDR, m, sizeof m) == 0) {
		node_cores[c].addr_dirty = false;
		nd_wake(c);
	} else {
		node_cores[c].addr_dirty = true;
	}
}

/* Core 0, knet's addr_changed hook: steer to the new address, tell every worker. */
static void nd_addr_changed(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw)
{
	(void)ctx;
	(void)mask;
	(void)gw;
	ksteer_set_addr(&nd_steer, ip);
	for (uint32_t c = 1; c < nd_n_net; c++)
		node_cores[c].addr_dirty = true; /* sent from the mesh handler, after knet took it */
}

/* The network kinds (kernel/ksteer.h) on every core. */
static void nd_net_recv(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct node_core *dc = ctx;
	uint32_t ip, mask, gw;
	switch (msg->kind) {
	case KSTEER_KIND_RX_FRAME: /* from our own cores only: never steered again */
		(void)src;
		(void)knet_input(&dc->knet, msg->data, msg->len);
		break;
	case KSTEER_KIND_TAKE_PAIR: /* the device steers: drain our own pair from now on */
		if (src == 0 && dc != &node_cores[0] && knet_set_rx_pairs(&dc->knet, 1) != 0)
			dc->addr_bad++;
		break;
	case KSTEER_KIND_TX_FRAME:
		if (dc == &node_cores[0])
			(void)!knet_send_frame(&dc->knet, msg->data, msg->len); /* counted in knet */
		break;
	case KSTEER_KIND_ADDR:
		if (src == 0 && ksteer_addr_decode(msg->data, msg->len, &ip, &mask, &gw) == 0)
			knet_set_addr(&dc->knet, ip, mask, gw);
		else
			dc->addr_bad++;
		break;
	default:
		break;
	}
}

/* Loop handler "mesh" (ctx = struct node_core *): this core's incoming messages, and on
 * core 0 the address messages still owed to workers. */
static int nd_mesh_poll(void *ctx)
{
	struct node_core *dc = ctx;
	uint32_t self = (uint32_t)(dc - node_cores);
	if (self == 0)
		for (uint32_t c = 1; c < nd_n_net; c++) {
			if (node_cores[c].addr_dirty)
				nd_addr_send(c);
			static const uint8_t none[1];
			if (node_cores[c].take_pair && xcore_send_ctrl(nd_mesh, 0, c, KSTEER_KIND_TAKE_PAIR, none, 0) == 0) {
				node_cores[c].take_pair = false;
				nd_wake(c);
			}
		}
	int n = (int)kdemux_poll(&dc->demux, nd_mesh, self);
	/* Senders that halted for want of credit on a ring we just drained: wake them now
	 * rather than at their next tick (ADR-085's halt; xcore invariant 7). The waiters
	 * call fenced already; node_port_wake fences again and reads `sleeping`. */
	for (uint64_t w = xcore_credit_waiters(nd_mesh, self); w; w &= w - 1) {
		uint32_t c = (uint32_t)__builtin_ctzll(w);
		if (node_port_wake(c))
			dc->n_ipis++;
		dc->credit_wakes++;
	}
	return n;
}

/* The broker shards' messages (dp/shard.h, kinds 0x0200-0x02ff) to this core's broker. */
static void nd_shard_recv(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct node_core *dc = ctx;
	node_broker_mesh_recv(&dc->broker, src, msg->kind, msg->data, msg->len);
}

/* ---- the console's changes to every data core ---- */

int node_ctl_broadcast(const struct node_ctl *op)
{
	struct node_core *dc = &node_cores[node_port_core_self()];
	if (dc->ctl_owed)
		return -E_AGAIN;
	dc->ctl = *op;
	dc->ctl_owed = nd_n_net >= 64 ? UINT64_MAX : (1ull << nd_n_net) - 1u;
	return 0;
}

/* This core's handler: apply its own change, then carry it to every other data core on the
 * mesh's control class (retried on later passes while a ring has no credit). */
static int nd_ctl_poll(void *ctx)
{
	struct node_core *dc = ctx;
	if (!dc->ctl_owed)
		return 0;
	uint32_t self = (uint32_t)(dc - node_cores);
	if (dc->ctl_owed & (1ull << self)) {
		dc->ctl_owed &= ~(1ull << self);
		node_broker_ctl_apply(&dc->broker, &dc->ctl);
	}
	for (uint32_t c = 0; nd_mesh && c < nd_n_net && c < 64; c++) {
		if (!(dc->ctl_owed & (1ull << c)))
			continue;
		if (xcore_send_ctrl(nd_mesh, self, c, KDEMUX_CTL_FIRST, &dc->ctl, (uint32_t)sizeof dc->ctl) == 0) {
			dc->ctl_owed &= ~(1ull << c);
			nd_wake(c);
		}
	}
	if (!nd_mesh)
		dc->ctl_owed = 0;
	return 1;
}

static void nd_ctl_recv(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct node_core *dc = ctx;
	(void)src;
	struct node_ctl op;
	if (msg->len != sizeof op)
		return;
	memcpy(&op, msg->data, sizeof op);
	node_broker_ctl_apply(&dc->broker, &op);
}

/* The shards' mesh op: from the calling core (the dp's own) to dst; -E_AGAIN without
 * credit (the shard backlogs it). Bulk class: the shards leave core.mesh_frame_slots of
 * every ring to the frames core 0 steers to a worker and a worker hands back to core 0,
 * which share those rings (a flood of routed copies once took every slot, the steered
 * frames were dropped and the connections behind them crawled on TCP retransmissions:
 * ADR-053). */
static int nd_shard_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	int err = xcore_send_bulk(nd_mesh, node_port_core_self(), dst, kind, data, len);
	if (err == 0)
		nd_wake(dst);
	return err;
}

/* The broker's shard line: frames this core's steering could not hand over for lack of
 * mesh credit. Every counter read here is written by `core` itself (core 0 counts the
 * frames and ARP copies it steers, a worker the frames it hands back). */
static uint64_t nd_mesh_frame_drops(uint32_t core)
{
	if (core != 0)
		return core < PLAT_MAX_CPUS ? node_cores[core].tx_drops : 0;
	uint64_t n = 0;
	for (uint32_t c = 1; c < nd_n_net; c++)
		n += node_cores[c].steer_drops + node_cores[c].arp_drops;
	return n;
}

/* ---- storage: the links between data cores and the storage core ----
 * Data core -> storage core: the mesh (dedicated storage core) or, with one core, the
 * storage engine's local queue. Storage core -> data core: the mesh, or with one core a
 * direct call into core 0's broker from the storage handler (a loop handler of core 0: no
 * broker call is in progress). */
static int nd_store_send(void *ctx, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	if (!nd_store_dedicated)
		return kstore_local(kind, data, len);
	int err = xcore_send(nd_mesh, node_port_core_self(), nd_store_core, kind, data, len);
	if (err == 0)
		nd_wake(nd_store_core);
	return err;
}

static int nd_store_out(uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	if (!nd_store_dedicated) {
		node_broker_store_recv(&node_cores[0].broker, kind, data, len);
		return 0;
	}
	int err = xcore_send(nd_mesh, nd_store_core, dst, kind, data, len);
	if (err == 0)
		nd_wake(dst);
	return err;
}

/* The storage core's mesh handler: what data cores record. */
static void nd_store_in(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	(void)ctx;
	kstore_input(src, msg->kind, msg->data, msg->len);
}

/* A data core's: what the storage core answers. */
static void nd_store_back(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct node_core *dc = ctx;
	(void)src;
	node_broker_store_recv(&dc->broker, msg->kind, msg->data, msg->len);
}

/* The storage core's own set-up: a demultiplexer for the storage kinds (boot core). */
static bool nd_store_core_init(uint32_t c)
{
	struct node_core *dc = &node_cores[c];
	int err = kdemux_init(&dc->demux, dc->demux_tab, NODE_NET_DEMUX);
	if (!err)
		err = kdemux_register(&dc->demux, KDEMUX_STORE_IN_FIRST, KDEMUX_STORE_IN_LAST, nd_store_in, dc);
	if (err) {
		LOG_ERR("boot", "core %u: storage core set-up failed (%s)", (unsigned)c, err_name(err));
		return false;
	}
	dc->storage = true;
	return true;
}

static const struct knet_hooks nd_core0_hooks = { .rx_steer = nd_rx_steer, .addr_changed = nd_addr_changed };
static const struct knet_hooks nd_worker_hooks = { .tx = nd_tx_to_core0 };
static const struct knet_hooks nd_worker_mq_hooks = { .rx_steer = nd_rx_worker, .addr_changed = nd_worker_addr };

/* The mesh between n cores, from the configuration. False (logged) when it cannot be
 * built: then only core 0 serves. */
static bool nd_mesh_init(uint32_t n)
{
	struct xcore_config xc = {
		.n_cores = n,
		.slots_per_ring = CONF_CORE_MESH_SLOTS,
		.slot_size = (uint32_t)align8(CONF_CORE_MESH_SLOT_BYTES),
		.ctrl_slots = CONF_CORE_MESH_CTRL_SLOTS,
		.credit_batch = CONF_CORE_MESH_CREDIT_BATCH,
		.poll_max = CONF_CORE_MESH_POLL_MAX,
		.poll_per_source = CONF_CORE_MESH_POLL_MAX,
		.bulk_reserve = CONF_CORE_MESH_FRAME_SLOTS,
	};
	size_t len, got;
	void *va = NULL;
	int err = xcore_mesh_size(&xc, &len);
	if (!err)
		err = (va = node_port_region(len, &got)) ? 0 : -E_NOMEM;
	if (!err)
		err = xcore_mesh_init(&nd_mesh, va, len, &xc);
	if (err) {
		nd_mesh = NULL;
		LOG_ERR("boot", "net: no core mesh for %u cores (%s); only core 0 serves", (unsigned)n,
			err_name(err));
		return false;
	}
	LOG_INFO("boot", "net: core mesh of %u cores, %u rings of %u slots of %u B (%lu KiB)", (unsigned)n,
		 (unsigned)(n * (n - 1)), (unsigned)xc.slots_per_ring, (unsigned)xc.slot_size,
		 (unsigned long)(len >> 10));
	return true;
}

/* Steering over n cores: a random Toeplitz key, the indirection table from the
 * configuration. False (logged) when refused. */
static bool nd_steer_init(uint32_t n)
{
	uint8_t key[RSS_KEY_LEN];
	size_t got;
	nd_random(key, sizeof key);
	if (!nd_rss_indir) /* kept when steering is rebuilt over fewer cores */
		nd_rss_indir = node_port_region(sizeof(uint16_t) * CONF_NET_RSS_INDIRECTION_ENTRIES, &got);
	struct rss_config rc = { .key = key, .n_workers = n, .n_indir = CONF_NET_RSS_INDIRECTION_ENTRIES,
				 .indir = nd_rss_indir };
	int err = rss_steer_init(&nd_rss, &rc);
	if (!err)
		err = ksteer_init(&nd_steer, &nd_rss);
	memset(key, 0, sizeof key);
	if (err)
		LOG_ERR("boot", "net: steering over %u cores refused (%s: net.rss_indirection_entries %u); only core 0 "
				"serves", (unsigned)n, err_name(err), (unsigned)CONF_NET_RSS_INDIRECTION_ENTRIES);
	return err == 0;
}

/* Core c's broker and stack (on the boot core). False (logged) on failure. */
static bool nd_core_net_init(uint32_t c, const struct node_broker_config *bc0, const struct knet_config *kc0)
{
	struct node_core *dc = &node_cores[c];
	struct node_broker_config bc = *bc0;
	bc.core = c;
	int err = node_broker_init(&dc->broker, &bc);
	if (err) {
		LOG_ERR("boot", "core %u: broker initialisation failed (%s)", (unsigned)c, err_name(err));
		return false;
	}
	struct knet_config kc = *kc0;
	kc.core = c;
	kc.upper = node_broker_upper(&dc->broker);
	if (c > 0) {
		kc.use_dhcp = false;
		kc.ext_addr = true;
		kc.ip = kc.mask = kc.gw = 0;
		kc.n_rx_pairs = 0;
		kc.pair = nd_own_pairs ? (uint16_t)c : 0;
		kc.tx_hook = !nd_own_pairs;
		kc.n_tx_stage = CONF_NET_TX_STAGE_FRAMES;
		kc.hooks = nd_own_pairs ? &nd_worker_mq_hooks : &nd_worker_hooks;
		kc.hooks_ctx = dc;
		if (nd_own_pairs && ksteer_init(&dc->steer, &nd_rss) != 0)
			return false;
	} else if (nd_mesh) {
		kc.hooks = &nd_core0_hooks;
	}
	size_t len = knet_mem_size(&kc);
	if (!len) {
		LOG_ERR("boot", "core %u: net configuration rejected", (unsigned)c);
		return false;
	}
	/* Sized by the configuration (TCP connections): too little RAM for it is reported
	 * with the remedy instead of stopping the boot. */
	size_t got;
	void *mem = node_port_region(len, &got);
	err = mem ? 0 : -E_NOMEM;
	if (err) {
		LOG_ERR("boot", "core %u: no %lu KiB for the TCP tables (%s): give the VM more memory "
				"(URMQTT_MEM) or configure fewer TCP connections", (unsigned)c,
			(unsigned long)(len >> 10), err_name(err));
		return false;
	}
	err = knet_init(&dc->knet, &kc, mem, len);
	if (!err && nd_mesh) {
		err = kdemux_init(&dc->demux, dc->demux_tab, NODE_NET_DEMUX);
		if (!err)
			err = kdemux_register(&dc->demux, KDEMUX_NET_FIRST, KDEMUX_NET_LAST, nd_net_recv, dc);
		if (!err)
			err = kdemux_register(&dc->demux, KDEMUX_SHARD_FIRST, KDEMUX_SHARD_LAST, nd_shard_recv, dc);
		if (!err && nd_store_dedicated)
			err = kdemux_register(&dc->demux, KDEMUX_STORE_OUT_FIRST, KDEMUX_STORE_OUT_LAST, nd_store_back, dc);
		if (!err)
			err = kdemux_register(&dc->demux, KDEMUX_CTL_FIRST, KDEMUX_CTL_LAST, nd_ctl_recv, dc);
	}
	if (err) {
		LOG_ERR("boot", "core %u: stack initialisation failed (%s)", (unsigned)c, err_name(err));
		return false;
	}
	dc->ok = true;
	return true;
}

/* Fewer cores than the shards were built for: the home-core hash would name cores that
 * do not serve, so core 0 serves every flow and every session alone (logged). */
static void nd_serve_alone(const char *why)
{
	LOG_ERR("boot", "net: %s: core 0 serves alone (no steering, one broker shard)", why);
	nd_n_net = 1;
	if (!nd_steer_init(1))
		nd_mesh = NULL;
	else
		ksteer_set_addr(&nd_steer, node_cores[0].knet.ip);
	node_broker_shards_off(&node_cores[0].broker);
}

void node_init(const struct node_config *cfg)
{
	struct node_broker_config bc = {
		.core = 0,
		.report_ms = nd_report_ms(cfg->cmdline, cfg->cmdline_len),
	};
	/* Development builds: "max_connections=N" sizes every table by N connection slots
	 * instead of tcp.max_connections (at most that): the memory test boots two sizes. */
	(void)node_knob_u32(cfg->cmdline, cfg->cmdline_len, "max_connections", 2u, CONF_TCP_MAX_CONNECTIONS,
			  &bc.max_conns);
	/* Development builds: "client_id_override=1" as mqtt.client_id_policy = "override". */
	uint32_t override = 0;
	(void)node_knob_u32(cfg->cmdline, cfg->cmdline_len, "client_id_override", 0u, 1u, &override);
	bc.client_id_override = override == 1;
	/* Development builds: "registry_allowlist=1" as tls.registry_mode = "allowlist". */
	uint32_t allowlist = 0;
	(void)node_knob_u32(cfg->cmdline, cfg->cmdline_len, "registry_allowlist", 0u, 1u, &allowlist);
	bc.allowlist = allowlist == 1;
	struct knet_config kc = {
		.nic = cfg->nic,
		.pair = 0,
		.n_rx_pairs = cfg->nic->n_pairs,
		.use_dhcp = true,
		.n_arp = NODE_NET_ARP,
		.n_pending = NODE_NET_PENDING,
		.rx_batch = NODE_NET_RX_BATCH,
		.now_ms = nd_now_ms,
		.random = nd_random,
	};
	if (nd_static_ip(cfg->cmdline, cfg->cmdline_len, &kc.ip, &kc.mask, &kc.gw))
		kc.use_dhcp = false;
	uint32_t n = MIN(MAX(cfg->n_cores, 1u), (uint32_t)PLAT_MAX_CPUS);
	/* Storage: with a data disk, the highest core runs it and nothing else (one core:
	 * core 0 runs it from its loop); the data cores are the others (ADR-031). */
	struct blk_dev *disk = cfg->disk;
	nd_store_disk_name = disk ? cfg->disk_name : "no disk";
	bool required = nd_storage_required(cfg->cmdline, cfg->cmdline_len);
	if (cfg->live) {
		/* The ISO's live entry: storage never starts, so no disk is probed, formatted or
		 * written, whatever the profile requires (issue 20). */
		LOG_WARN("boot", "live: running from RAM, no disk is written: serving WITHOUT persistence (a restart "
				 "forgets sessions, queued and retained messages)%s",
			 required ? "; storage.required does not apply to a live boot" : "");
		disk = NULL;
		required = false;
	} else if (disk && disk->topo.read_only) {
		/* Read-only media: storage cannot keep anything. Production (or storage.required)
		 * stops with the reason; a development build serves without persistence. */
#ifdef URMQTT_PROD
		const bool stop = true;
#else
		const bool stop = required;
#endif
		if (stop)
			PANIC("storage: the data disk %s is READ-ONLY (read-only media): this image needs a writable "
			      "disk for its state; stopping", nd_store_disk_name);
		LOG_WARN("boot", "storage: the data disk %s is read-only: serving WITHOUT persistence", nd_store_disk_name);
		disk = NULL;
	}
	if (!disk && required)
		PANIC("storage is required (storage.required) but unusable: this machine has no data disk "
		      "(virtio-blk or virtio-scsi)");
	if (!disk && !cfg->live && !cfg->disk)
		LOG_WARN("boot", "storage: no data disk (virtio-blk or virtio-scsi): serving WITHOUT persistence (a "
				 "restart forgets sessions, queued and retained messages)");
	nd_store_on = disk != NULL;
	nd_store_dedicated = nd_store_on && n > 1;
	uint32_t n_data = nd_store_dedicated ? n - 1 : n;
	if (n > 1 && !(nd_mesh_init(n) && nd_steer_init(n_data))) {
		nd_mesh = NULL;
		n = n_data = 1;
		nd_store_dedicated = false;
	}
	nd_store_core = nd_store_dedicated ? n - 1 : 0;
	nd_own_pairs = cfg->nic->n_pairs >= n_data;
	if (n_data > 1) { /* one broker shard per data core, sessions on their home core (ADR-027) */
		bc.n_cores = n_data;
		bc.mesh = (struct dp_mesh_ops){ nd_shard_send, NULL };
		bc.mesh_frame_drops = nd_mesh_frame_drops;
		nd_random(bc.home_key, sizeof bc.home_key);
	}
	bc.ctl_broadcast = node_ctl_broadcast;
	bc.n_data_cores = n_data;
	/* One ticket secret for every core's handshake env, wiped once they all copied it. */
	uint8_t ticket_secret[TLS_HS_TICKET_SECRET_LEN];
	nd_random(ticket_secret, sizeof ticket_secret);
	bc.ticket_secret = ticket_secret;
	bc.mesh_payload_max = nd_mesh ? xcore_payload_max(nd_mesh) : (uint32_t)align8(CONF_CORE_MESH_SLOT_BYTES) - 8u;
	if (nd_store_on) {
		bc.store_on = true;
		bc.store_send = nd_store_send;
		bc.store_payload_max = bc.mesh_payload_max;
		const struct kstore_config ks = {
			.blk = disk, .disk_name = nd_store_disk_name, .core = nd_store_core, .n_data = n_data,
			.dedicated = nd_store_dedicated, .required = required, .send = nd_store_out,
			.payload_max = bc.mesh_payload_max,
			.now_ns = node_port_now_ns, .wall_ms = node_port_wall_ms, .report_ms = bc.report_ms,
		};
		struct kstore_config kcfg = ks;
		memcpy(kcfg.home_key, bc.home_key, sizeof kcfg.home_key);
		nd_store_knobs(cfg->cmdline, cfg->cmdline_len, &kcfg.knobs);
		int rc = kstore_init(&kcfg);
		mem_wipe(kcfg.home_key, sizeof kcfg.home_key);
		if (rc != 0 || (nd_store_dedicated && !nd_store_core_init(nd_store_core))) {
			if (rc != 0)
				LOG_ERR("broker", "storage could not be set up; no network service");
			mem_wipe(ticket_secret, sizeof ticket_secret);
			mem_wipe(bc.home_key, sizeof bc.home_key);
			return;
		}
		node_devices_disk_vectors(nd_store_core);
		LOG_INFO("boot", "storage: %s, run by core %u%s", nd_store_disk_name, (unsigned)nd_store_core,
			 nd_store_dedicated ? " (nothing else runs there)" : " from its loop (one core)");
	}
	/* Core 0 first: its failure means no network at all; a worker's only shrinks the
	 * set of cores flows are steered to (the cores after it are not started either). */
	bool core0 = nd_core_net_init(0, &bc, &kc);
	nd_n_net = 1;
	for (uint32_t c = 1; core0 && c < n_data && nd_core_net_init(c, &bc, &kc); c++)
		nd_n_net = c + 1;
	mem_wipe(bc.home_key, sizeof bc.home_key);
	mem_wipe(ticket_secret, sizeof ticket_secret);
	bc.ticket_secret = NULL;
	if (!core0) {
		LOG_ERR("boot", "broker: initialisation failed; no network service");
		return;
	}
	if (nd_n_net < n_data)
		nd_serve_alone("a worker's stack or broker could not be built");
	if (nd_mesh) {
		/* A static address was taken inside core 0's knet_init, before the workers
		 * existed: (re)state it for the steering and every worker. */
		ksteer_set_addr(&nd_steer, node_cores[0].knet.ip);
		for (uint32_t c = 1; c < nd_n_net; c++)
			node_cores[c].addr_dirty = true;
	}
	bool msix = node_devices_nic_vectors(nd_own_pairs, nd_n_net);
	const char *irq = msix ? " (MSI-X + polling)" : " (polled)";
	const char *addr = kc.use_dhcp ? "DHCP" : "static address from the command line";
	if (nd_n_net == 1)
		LOG_INFO("boot", "net: one stack, on core 0, receiving from %u pair(s)%s; %s",
			 (unsigned)cfg->nic->n_pairs, irq, addr);
	else
		LOG_INFO("boot", "net: %u stacks, one per core; core 0 receives from %u pair(s)%s and steers; "
				 "workers transmit %s; %s",
			 (unsigned)nd_n_net, (unsigned)cfg->nic->n_pairs, irq,
			 nd_own_pairs ? "on their own pairs" : "through core 0 on pair 0", addr);
	LOG_INFO("broker", "listening on TCP %u (MQTT over TLS 1.3, client certificates required)%s",
		 (unsigned)node_broker_upper(&node_cores[0].broker)->tcp->ports[0],
		 kc.use_dhcp ? " once the DHCP lease is in" : "");
	/* Every core logs (the storage core too); core 0's stack carries syslog, statsd, SNTP. */
	if (opsd_init(n, &node_cores[0].knet.ns, &node_cores[0].broker, cfg->cmdline, cfg->cmdline_len) != 0)
		LOG_ERR("boot", "ops: syslog, statsd and SNTP could not be set up (the health is still logged)");
	nd_ballast_knobs(cfg->cmdline, cfg->cmdline_len);
}

/* After the APs started: steer only over the cores that run (a core that did not start
 * would never drain its rings). Boot core, before its own loop runs. */
/* Storage gets its final view of the data cores (kernel/kstore.h: it waits for this). A
 * dedicated storage core that did not start cannot serve: the data cores are told storage
 * is off (or the machine stops, storage.required). Boot core, after the cores started. */
static void nd_store_go(uint32_t n_started)
{
	if (!nd_store_on)
		return;
	if (nd_store_dedicated && n_started <= nd_store_core) {
		if (CONF_STORAGE_REQUIRED)
			PANIC("storage is required (storage.required) but its core %u did not start", (unsigned)nd_store_core);
		LOG_ERR("store", "the storage core %u did not start: serving WITHOUT persistence", (unsigned)nd_store_core);
		node_broker_store_recv(&node_cores[0].broker, STORE_K_OFF, NULL, 0);
		for (uint32_t c = 1; c < nd_n_net; c++)
			if (xcore_send_ctrl(nd_mesh, 0, c, STORE_K_OFF, NULL, 0) == 0)
				nd_wake(c);
		return;
	}
	kstore_go(nd_n_net);
}

/* The device steers: by our own hash when it can (VIRTIO_NET_F_RSS): core 0's Toeplitz key
 * and indirection table (shrunk to what the device holds) over the data cores' pairs, TCP
 * over IPv4 only, everything else to pair 0; else by its own flow hash. Logged. Boot core,
 * before any worker drains its pair (nd_rss is read by the workers only after that). */
static void nd_device_rss(struct vnet *nic)
{
	uint32_t n_indir = 0, n = nd_rss.n_indir;
	if (!nic->has_rss) {
		LOG_INFO("boot", "net: the device picks each flow's queue by its own hash (it offers no usable "
				 "VIRTIO_NET_F_RSS): a flow's queue need not be the core net/rss names");
		return;
	}
	while (n > nic->rss_max_indir)
		n >>= 1;
	int err = (nic->rss_hash_types & VNET_RSS_HASH_TCPV4) ? 0 : -E_NOSYS;
	if (!err && n != nd_rss.n_indir)
		err = rss_steer_shrink(&nd_rss, n);
	if (!err) {
		const struct vnet_rss r = {
			.hash_types = VNET_RSS_HASH_TCPV4,
			.indir = rss_steer_indir(&nd_rss, &n_indir),
			.n_indir = n_indir,
			.unclassified = 0,
			.n_tx = nic->n_pairs,
			.key = nd_rss.key,
			.key_len = RSS_KEY_LEN,
		};
		err = vnet_rss_set(nic, &r);
	}
	if (err)
		LOG_WARN("boot", "net: VIRTIO_NET_F_RSS not programmed (%s; device: key %u B, table %u, hash types "
				 "0x%x): the device picks each flow's queue by its own hash", err_name(err),
			 (unsigned)nic->rss_max_key, (unsigned)nic->rss_max_indir, (unsigned)nic->rss_hash_types);
	else
		LOG_INFO("boot", "net: VIRTIO_NET_F_RSS: the device picks each flow's queue by our Toeplitz key and "
				 "%u-entry indirection table (TCP/IPv4; the rest to pair 0)", (unsigned)n_indir);
}

void node_cores_started(uint32_t n_started)
{
	uint32_t n_data_started = nd_store_dedicated ? MIN(n_started, nd_store_core) : n_started;
	if (nd_mesh && nd_own_pairs && n_data_started >= nd_n_net && nd_n_net > 1) {
		/* Every core runs: the device steers from now on. Core 0 stops draining the
		 * workers' pairs before it tells each worker to take its own (frames wait in
		 * the queue meanwhile); this runs on core 0 before its loop does. */
		if (knet_set_rx_pairs(&node_cores[0].knet, 1) == 0) {
			nd_device_rss(node_cores[0].knet.cfg.nic);
			nd_device_steers = true;
			for (uint32_t c = 1; c < nd_n_net; c++)
				node_cores[c].take_pair = true;
			LOG_INFO("boot", "net: the device steers: each of %u cores drains its own queue pair",
				 (unsigned)nd_n_net);
		}
		nd_store_go(n_started);
		return;
	}
	if (nd_mesh && n_data_started < nd_n_net) {
		LOG_WARN("boot", "net: only %u of %u cores started", (unsigned)n_started, (unsigned)nd_n_net);
		nd_serve_alone("not every core started");
	}
	nd_store_go(n_started);
}

/* Development builds, test=net: each core with a stack logs its own counters at most once
 * a second when they changed (its own state only: no cross-core reads). */
static bool nd_stats_on;

void node_stats_enable(void)
{
	nd_stats_on = true;
}

static int nd_stats_poll(void *ctx)
{
	struct node_core *dc = ctx;
	const struct knet *k = &dc->knet;
	uint32_t core = (uint32_t)(dc - node_cores);
	uint64_t now = nd_now_ms();
	if (now < dc->stats_last_ms + 1000u)
		return 0;
	dc->stats_last_ms = now;
	uint64_t irqs = node_port_irqs(core);
	uint64_t sum = k->st.rx_frames + k->st.tx_frames + irqs + k->st.rx_steered;
	if (sum == dc->stats_last_sum)
		return 0;
	dc->stats_last_sum = sum;
	struct dp_stats ds;
	dp_stats_get(dc->broker.dp, &ds); /* this core's broker, on this core */
	LOG_INFO("net", "core %u pair %u: %lu frames in, %lu out, %lu device interrupts, %u connections, "
			"%lu TLS handshakes, %lu bytes in, %lu ICMP echo replies, %lu frames of unknown type",
		 (unsigned)core, (unsigned)k->cfg.pair, (unsigned long)k->st.rx_frames,
		 (unsigned long)k->st.tx_frames, (unsigned long)irqs, (unsigned)tcp_conn_count(k->tcp),
		 (unsigned long)ds.hs_done, (unsigned long)ds.bytes_in,
		 (unsigned long)k->ns.cnt.icmp_echo_replies, (unsigned long)k->ns.cnt.eth_type);
	if (nd_mesh && core == 0) {
		uint64_t sd = 0, ad = 0;
		for (uint32_t c = 1; c < nd_n_net; c++) {
			sd += node_cores[c].steer_drops;
			ad += node_cores[c].arp_drops;
		}
		LOG_INFO("net", "core 0 steering: %lu frames to workers, %lu flows, %lu ARP, %lu dropped (no mesh "
				"credit), %lu ARP copies dropped, %lu worker frames sent (%lu dropped), %lu wake-ups",
			 (unsigned long)k->st.rx_steered, (unsigned long)nd_steer.cnt.flows,
			 (unsigned long)nd_steer.cnt.arp, (unsigned long)sd, (unsigned long)ad,
			 (unsigned long)k->st.fwd_frames, (unsigned long)k->st.fwd_drops, (unsigned long)dc->n_ipis);
	} else if (nd_mesh) {
		LOG_INFO("net", "core %u mesh: %lu frames from core 0 (%lu before an address), %lu sent back "
				"(%lu dropped: no credit), %lu wake-ups sent",
			 (unsigned)core, (unsigned long)k->st.rx_frames, (unsigned long)k->st.rx_no_addr,
			 (unsigned long)k->st.tx_frames, (unsigned long)dc->tx_drops, (unsigned long)dc->n_ipis);
	}
	/* nd_device_steers is core 0's; a worker goes by nd_own_pairs, set before it started. */
	if (core == 0 ? nd_device_steers : nd_own_pairs)
		LOG_INFO("net", "core %u rss: %lu of %lu flow frames received here hash (net/rss) to another core",
			 (unsigned)core, (unsigned long)dc->rss_mismatch, (unsigned long)dc->rss_flows);
	return 0;
}

/* Once a second, this core's figures for core 0's health and statsd (kernel/node/opsd). */
static int nd_figures_poll(void *ctx)
{
	struct node_core *dc = ctx;
	uint32_t core = (uint32_t)(dc - node_cores);
	uint64_t now = nd_now_ms();
	if (core == 0)
		nd_ballast_poll(now);
	if (now < dc->figures_last_ms + 1000u)
		return 0;
	dc->figures_last_ms = now;
	struct opsd_figures f;
	if (dc->storage) {
		memset(&f, 0, sizeof f); /* the storage core: storage's figures only */
	} else {
		node_broker_figures(&dc->broker, &f);
	}
	if (dc->storage || (core == 0 && nd_store_on && !nd_store_dedicated))
		kstore_figures(&f);
	/* Written by this core's own tick interrupt, read here on the same core: the
	 * interrupted loop sees its writes in program order; an aligned 64-bit load. */
	f.v[OPSD_F_WATCHDOG_OVERRUNS] = dc->loop ? dc->loop->n_overruns : 0;
	opsd_publish(core, &f);
	/* Several cores, with the broker's report on (broker_report_ms): how often this core's
	 * loop passed and halted (no work found), the wake-ups it sent and mbedTLS's lock
	 * acquisitions (all cores), so a run shows cores spinning or waiting on each other
	 * (issue 26; this core's counters, plain reads). */
	if (nd_mesh && dc->loop && !dc->storage && dc->broker.cfg.report_ms &&
	    dc->loop->n_passes != dc->loop_passes_said) {
		dc->loop_passes_said = dc->loop->n_passes;
		LOG_INFO("loop", "core %u: passes=%lu halts=%lu wakeups_sent=%lu credit_wakes=%lu tls_locks=%lu "
				 "tls_contended=%lu",
			 (unsigned)core, (unsigned long)dc->loop->n_passes, (unsigned long)dc->loop->n_idle,
			 (unsigned long)dc->n_ipis, (unsigned long)dc->credit_wakes, (unsigned long)tls_threading_locks(),
			 (unsigned long)tls_threading_contended());
	}
	return 0;
}

void node_loop_add(struct kloop *l, uint32_t core)
{
	node_disks_loop_add(l, core); /* on the core that owns the disks */
	if (core < PLAT_MAX_CPUS && node_cores[core].storage) { /* the storage core: nothing else */
		node_cores[core].loop = l;
		if (kloop_add(l, "mesh", nd_mesh_poll, &node_cores[core]) != 0 ||
		    kloop_add(l, "ops-figures", nd_figures_poll, &node_cores[core]) != 0)
			PANIC("core %u: loop full", (unsigned)core);
		kstore_loop_add(l);
		return;
	}
	if (core >= PLAT_MAX_CPUS || !node_cores[core].ok)
		return;
	struct node_core *dc = &node_cores[core];
	dc->loop = l;
	if (nd_stats_on && kloop_add(l, "net-stats", nd_stats_poll, dc) != 0)
		PANIC("core %u: loop full", (unsigned)core);
	if (kloop_add(l, "ops-figures", nd_figures_poll, dc) != 0 || kloop_add(l, "console", nd_ctl_poll, dc) != 0 ||
	    (core == 0 && kloop_add(l, "ops", opsd_poll, NULL) != 0))
		PANIC("core %u: loop full", (unsigned)core);
	/* The mesh before the stack: frames a worker handed back are posted in the same pass
	 * as knet_poll's kick. */
	if (nd_mesh && kloop_add(l, "mesh", nd_mesh_poll, dc) != 0)
		PANIC("core %u: loop full", (unsigned)core);
	if (kloop_add(l, "net", knet_poll, &dc->knet) != 0)
		PANIC("core %u: loop full", (unsigned)core);
	if (nd_store_on && !nd_store_dedicated && core == 0)
		kstore_loop_add(l); /* one core: storage from core 0's loop, within its pass budget */
}

bool node_store_on(void)
{
	return nd_store_on;
}

uint32_t node_store_core(void)
{
	return nd_store_core;
}
