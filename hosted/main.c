/* SPDX-License-Identifier: MIT
 *
 * build/hosted/urmqtt: the portable network stack (net/ and net/tcp/) as one Linux
 * process on a TAP device, with an echo service on a TCP port, so Linux's own TCP can be
 * the peer in tests. This file owns the platform glue the kernel provides elsewhere: the
 * NIC port (frame pool + TAP), the monotonic clock, randomness (getrandom), and the
 * run-to-completion loop (poll on the TAP with a timeout from the stacks' timers, clean
 * exit on SIGINT/SIGTERM). Everything is sized once at start-up; nothing is allocated
 * per packet. It is a test platform, never a product: it must not touch any network
 * configuration (addresses and routes of the TAP's Linux side are the caller's).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "dp/dp.h"
#include "hosted/blk_file.h"
#include "hosted/hosted.h"
#include "lib/err.h"
#include "net/net.h"
#include "net/tcp/tcp.h"
#include "tls/accel/accel.h"
#include "tests/support/tcp_echo.h"

#define HOSTED_N_ARP 64
#define HOSTED_N_PENDING 32
#define HOSTED_RX_BATCH 256
#define HOSTED_IDLE_POLL_MS 100

struct hosted {
	struct hosted_opts o;
	int tap_fd, sig_fd;
	struct hosted_pool pool;
	struct hosted_impair imp_rx, imp_tx;
	struct net_stack net;
	struct net_arp_entry arp[HOSTED_N_ARP];
	struct net_pending_frame pending[HOSTED_N_PENDING];
	void *tcp_mem;
	struct tcp_stack *tcp;
	uint8_t *rx_frame; /* the pool frame inside net_stack_input, else NULL */
	size_t rx_len;
	struct tcp_echo echo;
	void *echo_mem; /* malloc'd, zeroed: the echo service's tables and rings */
	struct hosted_broker broker;
	bool broker_up;
	uint32_t hs_waiting; /* handshakes staged in dp, run on the next passes */
	struct hosted_pcap pcap;
	struct hosted_blk_file disk;
	uint64_t t0_ms;
	uint64_t rx_frames, rx_nobuf, rx_err, tx_frames, tx_err;
};

/* One platform per process: the loop below is its only user. */
static struct hosted g_h;

static uint64_t clock_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		abort();
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void random_fill(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "hosted: getrandom failed\n");
			abort();
		}
		p += n;
		len -= (size_t)n;
	}
}

/* ---- NIC port for net/ (ctx = struct hosted *) -------------------------------------- */

static int tap_write(struct hosted *h, const uint8_t *frame, size_t len)
{
	hosted_pcap_frame(&h->pcap, frame, len);
	ssize_t n = write(h->tap_fd, frame, len);
	if (n != (ssize_t)len) {
		h->tx_err++;
		return -E_IO;
	}
	h->tx_frames++;
	return 0;
}

static uint8_t *port_tx_get(void *ctx, size_t *cap)
{
	struct hosted *h = ctx;
	uint8_t *f = hosted_pool_get(&h->pool);
	if (f)
		*cap = h->pool.frame_size;
	return f;
}

static int port_tx_send(void *ctx, uint8_t *frame, size_t len)
{
	struct hosted *h = ctx;
	int rc = 0;
	switch (hosted_impair_offer(&h->imp_tx, frame, len, clock_ms())) {
	case HOSTED_IMPAIR_QUEUED:
		return 0;
	case HOSTED_IMPAIR_DROP:
		break;
	case HOSTED_IMPAIR_PASS:
		rc = tap_write(h, frame, len);
		break;
	}
	hosted_pool_put(&h->pool, frame);
	return rc;
}

static void port_tx_put(void *ctx, uint8_t *frame)
{
	struct hosted *h = ctx;
	hosted_pool_put(&h->pool, frame);
}

static uint64_t port_now_ms(void *ctx)
{
	(void)ctx;
	return clock_ms();
}

static uint32_t port_random32(void *ctx)
{
	uint32_t v;
	(void)ctx;
	random_fill(&v, sizeof v);
	return v;
}

static void port_random(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	random_fill(buf, len);
}

static const struct net_port_ops hosted_net_port = {
	.tx_get = port_tx_get,
	.tx_send = port_tx_send,
	.tx_put = port_tx_put,
	.now_ms = port_now_ms,
	.random = port_random32,
};

/* TCP's lower port is net/'s adapter (ctx = struct net_stack *). */
static const struct tcp_port_ops hosted_tcp_port = {
	.tx_begin = net_tcp_tx_begin,
	.tx_send = net_tcp_tx_send,
	.now_ms = port_now_ms,
	.random = port_random,
	.tx_abort = net_tcp_tx_abort,
};

/* ---- what net/ calls above itself (ctx = struct hosted *) --------------------------- */

static void up_tcp_input(void *ctx, uint32_t src_ip, uint32_t dst_ip, const uint8_t *seg,
			 size_t len)
{
	struct hosted *h = ctx;
	/* seg lies in the pool frame being received (net/ hands a read-only view); TCP gets
	 * the mutable view so TLS decrypts in place in it. */
	if (h->tcp)
		tcp_input_in_frame(h->tcp, src_ip, dst_ip, h->rx_frame, h->rx_len, seg, len);
}

static void print_ip(const char *what, uint32_t ip)
{
	printf("%s%u.%u.%u.%u", what, ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

static void up_addr_changed(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw)
{
	struct hosted *h = ctx;
	if (h->tcp)
		tcp_stack_set_local_ip(h->tcp, ip);
	printf("hosted: address");
	print_ip(" ", ip);
	print_ip(" mask ", mask);
	print_ip(" gw ", gw);
	printf("\n");
}

static const struct net_upper_ops hosted_net_up = {
	.tcp_input = up_tcp_input,
	.addr_changed = up_addr_changed,
};

/* ---- stats ------------------------------------------------------------------------- */

static void print_stats(struct hosted *h, const char *tag)
{
	const struct tcp_stats *ts = tcp_stats(h->tcp);
	const struct tcp_echo_stats *es = &h->echo.st;
	const struct net_counters *nc = &h->net.cnt;
	uint64_t t = clock_ms() - h->t0_ms;

	printf("%s t=%llu.%01llu conns=%u echo_open=%u accepted=%llu closed=%llu/%llu/%llu/%llu/%llu"
	       " echo_in=%llu echo_acked=%llu echo_nobuf=%llu echo_refused=%llu srefs=%u\n",
	       tag, (unsigned long long)(t / 1000), (unsigned long long)(t % 1000 / 100),
	       tcp_conn_count(h->tcp), (unsigned)es->open, (unsigned long long)es->accepted,
	       (unsigned long long)es->closed[TCP_CLOSE_NORMAL],
	       (unsigned long long)es->closed[TCP_CLOSE_RESET],
	       (unsigned long long)es->closed[TCP_CLOSE_TIMEOUT],
	       (unsigned long long)es->closed[TCP_CLOSE_ABORT],
	       (unsigned long long)es->closed[TCP_CLOSE_REFUSED],
	       (unsigned long long)es->bytes_in, (unsigned long long)es->bytes_acked,
	       (unsigned long long)es->no_buffer, (unsigned long long)es->send_refused,
	       tcp_sref_count(h->tcp));
	printf("%s tcp in_segs=%llu out_segs=%llu in_bytes=%llu out_bytes=%llu rexmit=%llu"
	       " fast_rexmit=%llu rto=%llu persist=%llu timeouts=%llu rst_sent=%llu opened=%llu closed=%llu"
	       " cookies=%llu cookie_bad=%llu ooo=%llu bad_csum=%llu no_conn=%llu oow=%llu"
	       " tx_no_frame=%llu pending_full=%llu sref_exhausted=%llu table_full=%llu"
	       " syn_refused=%llu syn_remembered=%llu accept_refused=%llu\n",
	       tag, (unsigned long long)ts->in_segs, (unsigned long long)ts->out_segs,
	       (unsigned long long)ts->in_bytes, (unsigned long long)ts->out_bytes,
	       (unsigned long long)ts->retransmits, (unsigned long long)ts->fast_retransmits,
	       (unsigned long long)ts->rto_expired, (unsigned long long)ts->persist_probes,
	       (unsigned long long)ts->timeouts,
	       (unsigned long long)ts->rst_sent, (unsigned long long)ts->conns_opened,
	       (unsigned long long)ts->conns_closed, (unsigned long long)ts->syn_cookie_sent,
	       (unsigned long long)ts->cookie_bad, (unsigned long long)ts->rx_ooo,
	       (unsigned long long)ts->rx_bad_csum, (unsigned long long)ts->rx_no_conn,
	       (unsigned long long)ts->rx_out_of_window, (unsigned long long)ts->tx_no_frame,
	       (unsigned long long)ts->pending_full, (unsigned long long)ts->sref_exhausted,
	       (unsigned long long)ts->conn_table_full, (unsigned long long)ts->syn_refused,
	       (unsigned long long)ts->syn_remembered, (unsigned long long)ts->accept_refused);
	printf("%s net rx=%llu tx=%llu tap_rx=%llu tap_tx=%llu tap_rx_nobuf=%llu tap_err=%llu/%llu"
	       " tx_nobuf=%llu arp_replies=%llu arp_requests=%llu icmp_replies=%llu"
	       " pool_free=%u pool_low=%u impair_drop=%llu/%llu impair_reorder=%llu/%llu\n",
	       tag, (unsigned long long)nc->rx_frames, (unsigned long long)nc->tx_frames,
	       (unsigned long long)h->rx_frames, (unsigned long long)h->tx_frames,
	       (unsigned long long)h->rx_nobuf, (unsigned long long)h->rx_err,
	       (unsigned long long)h->tx_err, (unsigned long long)nc->tx_nobuf,
	       (unsigned long long)nc->arp_replies_sent,
	       (unsigned long long)nc->arp_requests_sent,
	       (unsigned long long)nc->icmp_echo_replies, h->pool.n_free, h->pool.low_water,
	       (unsigned long long)h->imp_rx.dropped, (unsigned long long)h->imp_tx.dropped,
	       (unsigned long long)h->imp_rx.reordered, (unsigned long long)h->imp_tx.reordered);
}

/* ---- the loop ------------------------------------------------------------------------ */

/* One received pool frame into the stack; TCP may decrypt in place in it (the capture
 * above has already taken its copy). */
static void rx_input(struct hosted *h, uint8_t *frame, size_t len)
{
	h->rx_frame = frame;
	h->rx_len = len;
	(void)net_stack_input(&h->net, frame, len);
	h->rx_frame = NULL;
	h->rx_len = 0;
}

static void rx_deliver(struct hosted *h, uint8_t *frame, size_t len)
{
	switch (hosted_impair_offer(&h->imp_rx, frame, len, clock_ms())) {
	case HOSTED_IMPAIR_QUEUED:
		return;
	case HOSTED_IMPAIR_PASS:
		hosted_pcap_frame(&h->pcap, frame, len);
		rx_input(h, frame, len);
		break;
	case HOSTED_IMPAIR_DROP:
		break;
	}
	hosted_pool_put(&h->pool, frame);
}

/* Read what the TAP has, at most one batch. False on a fatal device error. */
static bool rx_batch(struct hosted *h)
{
	static uint8_t sink[65536]; /* frames read while the pool is empty are dropped */
	for (int i = 0; i < HOSTED_RX_BATCH; i++) {
		uint8_t *f = hosted_pool_get(&h->pool);
		uint8_t *dst = f ? f : sink;
		size_t cap = f ? h->pool.frame_size : sizeof sink;
		ssize_t n = read(h->tap_fd, dst, cap);
		if (n < 0) {
			int e = errno;
			if (f)
				hosted_pool_put(&h->pool, f);
			if (e == EAGAIN || e == EINTR)
				return true;
			h->rx_err++;
			fprintf(stderr, "hosted: TAP read: %s\n", strerror(e));
			return e != EBADFD && e != EIO;
		}
		h->rx_frames++;
		if (!f) {
			h->rx_nobuf++;
			continue;
		}
		rx_deliver(h, f, (size_t)n);
	}
	return true;
}

static void impair_flush(struct hosted *h, uint64_t now)
{
	uint8_t *f;
	size_t len;
	while ((f = hosted_impair_pop(&h->imp_tx, now, &len)) != NULL) {
		(void)tap_write(h, f, len);
		hosted_pool_put(&h->pool, f);
	}
	while ((f = hosted_impair_pop(&h->imp_rx, now, &len)) != NULL) {
		hosted_pcap_frame(&h->pcap, f, len);
		rx_input(h, f, len);
		hosted_pool_put(&h->pool, f);
	}
}

static void impair_drain(struct hosted_impair *im, struct hosted_pool *pool)
{
	uint8_t *f;
	size_t len;
	while ((f = hosted_impair_pop(im, UINT64_MAX, &len)) != NULL)
		hosted_pool_put(pool, f);
}

static int loop_timeout(struct hosted *h, uint64_t now, uint64_t next_stats, uint64_t end)
{
	if (h->hs_waiting)
		return 0; /* staged handshakes: the next pass runs more of them */
	uint64_t due = now + (tcp_conn_count(h->tcp) ? h->o.tick_ms : HOSTED_IDLE_POLL_MS);
	due = MIN(due, net_stack_next_timer_ms(&h->net));
	due = MIN(due, hosted_impair_next_ms(&h->imp_rx));
	due = MIN(due, hosted_impair_next_ms(&h->imp_tx));
	due = MIN(due, next_stats);
	due = MIN(due, end);
	if (h->broker_up)
		due = MIN(due, hosted_broker_due_ms(&h->broker));
	return due <= now ? 0 : (int)MIN(due - now, 1000);
}

static int run(struct hosted *h)
{
	uint64_t now = clock_ms();
	uint64_t next_stats = h->o.stats_ms ? now + h->o.stats_ms : UINT64_MAX;
	uint64_t next_bstats = h->broker_up && h->o.broker_stats_ms ? now + h->o.broker_stats_ms :
								       UINT64_MAX;
	uint64_t end = h->o.run_ms ? now + h->o.run_ms : UINT64_MAX;
	struct pollfd pfd[2] = {
		{.fd = h->tap_fd, .events = POLLIN},
		{.fd = h->sig_fd, .events = POLLIN},
	};

	for (;;) {
		now = clock_ms();
		int n = poll(pfd, 2, loop_timeout(h, now, MIN(next_stats, next_bstats), end));
		if (n < 0 && errno != EINTR) {
			perror("hosted: poll");
			return 1;
		}
		if (n > 0 && (pfd[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(h->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
				printf("hosted: signal %u, shutting down\n", si.ssi_signo);
			return 0;
		}
		if (n > 0 && (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL))) {
			fprintf(stderr, "hosted: TAP device error\n");
			return 1;
		}
		if (n > 0 && (pfd[0].revents & POLLIN) && !rx_batch(h))
			return 1;
		now = clock_ms();
		impair_flush(h, now);
		tcp_poll(h->tcp);
		h->hs_waiting = h->broker_up ? hosted_broker_poll(&h->broker) : 0;
		if (net_stack_next_timer_ms(&h->net) <= now)
			net_stack_poll(&h->net, now);
		if (now >= next_stats) {
			print_stats(h, "stats");
			next_stats = now + h->o.stats_ms;
		}
		if (now >= next_bstats) {
			hosted_broker_stats(&h->broker, "stats");
			next_bstats = now + h->o.broker_stats_ms;
		}
		if (now >= end) {
			printf("hosted: --run-ms reached, shutting down\n");
			return 0;
		}
	}
}

/* ---- start-up and shutdown ---------------------------------------------------------- */

/* The disk behind the block interface, checked like the kernel does at boot: a read of
 * its last 4 KiB, nothing written (storage writes only a disk it recognised or found
 * blank: store/boot.h). */
static int setup_disk(struct hosted *h)
{
	static uint8_t buf[2 * 65536] ALIGNED(4096);
	const char *why = "ok";
	int rc = hosted_blk_file_open(&h->disk, h->o.disk, (uint64_t)h->o.disk_mib << 20, 512,
				      64, false);
	if (rc < 0) {
		fprintf(stderr, "hosted: disk %s: %s\n", h->o.disk, err_name(rc));
		return -1;
	}
	rc = blk_readtest(&h->disk.dev, buf, sizeof buf, 1000, &why);
	printf("hosted: disk %s: %llu blocks of %u B, read test %s\n", h->o.disk,
	       (unsigned long long)h->disk.dev.topo.capacity, h->disk.dev.topo.logical_block,
	       rc ? why : "passed");
	return rc ? -1 : 0;
}

static int setup(struct hosted *h)
{
	const char *why = NULL;
	sigset_t set;
	int rc;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
	    (h->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		perror("hosted: signalfd");
		return -1;
	}
	h->tap_fd = hosted_tap_open(h->o.tap, &why);
	if (h->tap_fd < 0) {
		fprintf(stderr, "hosted: TAP %s: %s: %s\n", h->o.tap, why, strerror(-h->tap_fd));
		return -1;
	}
	/* Frames: room for the MTU plus Ethernet, rounded up; the pool must also cover
	 * ARP-pending frames and both impairment queues. */
	size_t frame_size = ((size_t)h->o.mtu + 14 + 63) & ~(size_t)63;
	uint32_t q = h->o.frames / 4;
	bool rx = h->o.impair_rx, tx = h->o.impair_tx;
	if (hosted_pool_init(&h->pool, h->o.frames, frame_size) < 0 ||
	    hosted_impair_init(&h->imp_rx, rx ? h->o.loss_pct : 0, rx ? h->o.reorder_pct : 0,
			       rx ? h->o.delay_ms : 0, q, h->o.seed) < 0 ||
	    hosted_impair_init(&h->imp_tx, tx ? h->o.loss_pct : 0, tx ? h->o.reorder_pct : 0,
			       tx ? h->o.delay_ms : 0, q, h->o.seed ^ 0x5555555555555555ull) < 0) {
		fprintf(stderr, "hosted: cannot allocate frame pool or impairment queues\n");
		return -1;
	}
	if (h->o.disk && setup_disk(h) < 0)
		return -1;
	if (h->o.pcap && hosted_pcap_open(&h->pcap, h->o.pcap) < 0) {
		fprintf(stderr, "hosted: pcap %s: %s\n", h->o.pcap, strerror(errno));
		return -1;
	}
	const struct tcp_upper_ops *upper = &tcp_echo_ops;
	void *upper_ctx = &h->echo;
	struct tcp_config tc;
	if (h->o.broker) {
		if (hosted_broker_init(&h->broker, h->o.max_conn, h->o.disk ? &h->disk.dev : NULL, h->o.disk,
				       &h->o.storage, h->o.client_id_override, &h->o.fleet) < 0)
			return -1;
		h->broker_up = true;
		if (h->o.no_curve_driver) {
			accel_set_enabled(false);
			fprintf(stderr, "hosted: curve driver off (--no-curve-driver): %s\n", accel_describe());
		}
		upper = &dp_tcp_upper;
		upper_ctx = h->broker.nb.dp;
		dp_tcp_config_from_conf(&tc);
	} else {
		size_t elen = tcp_echo_mem_size(h->o.max_conn, h->o.echo_bufs, h->o.echo_buf_size);
		h->echo_mem = elen ? aligned_alloc(8, (elen + 7) & ~(size_t)7) : NULL;
		if (!h->echo_mem) {
			fprintf(stderr, "hosted: cannot allocate echo buffers\n");
			return -1;
		}
		memset(h->echo_mem, 0, elen);
		if (tcp_echo_init(&h->echo, h->echo_mem, elen, h->o.max_conn, h->o.echo_bufs,
				  h->o.echo_buf_size) < 0) {
			fprintf(stderr, "hosted: echo service configuration rejected\n");
			return -1;
		}
		tcp_config_default(&tc);
		tc.ports[0] = h->o.echo_port;
		tc.n_ports = 1;
	}
	tc.local_ip = h->o.dhcp ? 0 : h->o.ip;
	tc.max_conns = h->o.max_conn;
	tc.max_send_refs = MAX(4096u, 4u * h->o.max_conn);
	tc.max_pending_acks = MAX(256u, h->o.max_conn);
	tc.mss = (uint16_t)(h->o.mtu - 40);
	tc.tick_ms = h->o.tick_ms;
	size_t mem_len = tcp_stack_mem_size(&tc);
	if (!mem_len) {
		fprintf(stderr, "hosted: TCP configuration rejected\n");
		return -1;
	}
	h->tcp_mem = aligned_alloc(64, (mem_len + 63) & ~(size_t)63);
	if (!h->tcp_mem) {
		fprintf(stderr, "hosted: cannot allocate %zu bytes for TCP\n", mem_len);
		return -1;
	}
	rc = tcp_stack_init(&h->tcp, h->tcp_mem, mem_len, &tc, &hosted_tcp_port, &h->net,
			    upper, upper_ctx);
	if (rc < 0) {
		fprintf(stderr, "hosted: tcp_stack_init: %s\n", err_name(rc));
		return -1;
	}
	if (!h->broker_up)
		tcp_echo_bind(&h->echo, h->tcp);
	if (h->broker_up)
		hosted_broker_attach(&h->broker, h->tcp);

	struct net_config nc = {
		.use_dhcp = h->o.dhcp,
		.ip = h->o.ip,
		.mask = h->o.mask,
		.gw = h->o.gw,
		.ttl = 64,
		.mtu = h->o.mtu,
		.arp = h->arp,
		.n_arp = HOSTED_N_ARP,
		.pending = h->pending,
		.n_pending = HOSTED_N_PENDING,
		.arp_expiry_ms = 300000,
		.arp_retry_ms = 1000,
		.arp_max_tries = 3,
		.arp_defend_ms = 10000,
		.icmp_rate_per_s = 100,
		.icmp_burst = 50,
		.dhcp_retry_initial_ms = 4000,
		.dhcp_retry_max_ms = 64000,
		.dhcp_request_tries = 4,
		.dhcp_renew_retry_min_ms = 60000,
		.dhcp_lease_min_s = 60,
	};
	memcpy(nc.mac, h->o.mac, sizeof nc.mac);
	rc = net_stack_init(&h->net, &nc, &hosted_net_port, h, &hosted_net_up, h);
	if (rc < 0) {
		fprintf(stderr, "hosted: net_stack_init: %s\n", err_name(rc));
		return -1;
	}
	printf("hosted: tap %s mac %02x:%02x:%02x:%02x:%02x:%02x %s port %u max_conn %u"
	       " frames %u x %zu B, TCP %zu B (cb %zu B, slot %zu B)%s\n",
	       h->o.tap, h->o.mac[0], h->o.mac[1], h->o.mac[2], h->o.mac[3], h->o.mac[4],
	       h->o.mac[5], h->broker_up ? "broker" : "echo", tc.ports[0], h->o.max_conn, h->o.frames, frame_size, mem_len,
	       tcp_cb_size(), tcp_slot_size(),
	       hosted_impair_on(&h->imp_rx) || hosted_impair_on(&h->imp_tx) ?
		       ", link impaired" : "");
	return 0;
}

/* Abort what is still open so every buffer is back, then release everything. */
static void teardown(struct hosted *h)
{
	if (h->o.broker) {
		hosted_broker_fini(&h->broker); /* aborts through TCP, which must still exist */
		h->broker_up = false;
		if (h->tcp)
			tcp_poll(h->tcp);
	}
	if (h->tcp) {
		for (uint32_t i = 0; h->echo_mem && i < h->echo.max_conns; i++)
			if (h->echo.conns[i].open)
				tcp_abort(h->tcp, i);
		tcp_poll(h->tcp);
	}
	impair_drain(&h->imp_tx, &h->pool);
	impair_drain(&h->imp_rx, &h->pool);
	if (h->pool.n && h->pool.n_free + HOSTED_N_PENDING < h->pool.n)
		fprintf(stderr, "hosted: %u frames still lent at exit\n", h->pool.n - h->pool.n_free);
	free(h->echo_mem);
	h->echo_mem = NULL;
	free(h->tcp_mem);
	h->tcp = NULL;
	hosted_impair_fini(&h->imp_rx);
	hosted_impair_fini(&h->imp_tx);
	hosted_pool_fini(&h->pool);
	hosted_pcap_close(&h->pcap);
	if (h->o.disk)
		hosted_blk_file_close(&h->disk);
	if (h->tap_fd >= 0)
		close(h->tap_fd);
	if (h->sig_fd >= 0)
		close(h->sig_fd);
}

int main(int argc, char **argv)
{
	struct hosted *h = &g_h;
	const char *err;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	h->tap_fd = -1;
	h->sig_fd = -1;
	rc = hosted_opts_parse(&h->o, argc, argv, &err);
	if (rc == 1) {
		hosted_opts_usage(argv[0]);
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "hosted: %s\n", err ? err : "bad arguments");
		hosted_opts_usage(argv[0]);
		return 2;
	}
	if (!h->o.mac_set) {
		random_fill(h->o.mac, sizeof h->o.mac);
		h->o.mac[0] = (uint8_t)((h->o.mac[0] & 0xfe) | 0x02); /* unicast, local */
	}
	if (!h->o.seed)
		random_fill(&h->o.seed, sizeof h->o.seed);
	h->t0_ms = clock_ms();
	rc = setup(h) < 0 ? 1 : run(h);
	if (h->tcp)
		print_stats(h, "final");
	if (h->tcp && h->broker_up)
		hosted_broker_stats(&h->broker, "final");
	teardown(h);
	return rc;
}
