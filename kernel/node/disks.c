/* SPDX-License-Identifier: MIT
 *
 * The disks' configuration changes (kernel/node/disks.h). A configuration interrupt only
 * counts on the storage core and wakes it (the platform's handler marks work, nothing
 * else); this core's loop then looks at the configuration generation of every disk whose
 * vector may have fired (the count does not say which) and, once a second, of the polled
 * ones, and re-reads what changed. Growth of the data disk goes to the storage service
 * (kstore_disk_grew: the layout grows and its new end is written and flushed, which tests
 * it); growth of another disk runs the read self-test again on the new last 4 KiB, one
 * step per millisecond at most; a shrink is an error in the log (I/O beyond the new end
 * then fails in the driver).
 * Invariants: the table is written by the boot core before the loops start and then only
 * by the storage core's loop; a self-test in progress is finished before another starts
 * (a growth meanwhile asks for one more on the newest end).
 */
#include "kernel/node/disks.h"

#include "drivers/blk.h"
#include "kernel/kstore.h"
#include "kernel/log.h"
#include "kernel/node/node.h"
#include "kernel/node/port.h"
#include "kernel/panic.h"
#include "lib/err.h"

#define ND_CFG_POLL_MS 1000u     /* polled disks, and a read that never settled */
#define ND_RETEST_STEPS 5000u    /* loop steps (one per ms at most) per self-test request: >= 5 s */

struct node_disk {
	struct vblk *v;
	uint8_t *buf; /* DMA, buf_len bytes: the boot self-test's, reused */
	size_t buf_len;
	bool irq;     /* its configuration vector reaches the storage core */
	bool retry;   /* the last read never settled: look again on the next poll */
	bool running; /* a self-test on the new end is in progress */
	bool retest;  /* it grew again meanwhile: test the newest end next */
	struct blk_selftest_run run;
	uint64_t run_lba;
};

static struct node_disk nd_disks[NODE_MAX_DISKS];
static uint32_t nd_n_disks;
static uint64_t nd_seen_irqs, nd_next_poll_ms, nd_last_step_ms;

int node_disk_add(struct vblk *v, uint8_t *buf, size_t buf_len, bool cfg_irq)
{
	if (nd_n_disks == NODE_MAX_DISKS)
		return -E_NOMEM;
	nd_disks[nd_n_disks++] = (struct node_disk){ .v = v, .buf = buf, .buf_len = buf_len, .irq = cfg_irq };
	return 0;
}

void node_disk_polled(uint32_t i)
{
	if (i < nd_n_disks)
		nd_disks[i].irq = false;
}

bool node_disk_irq(uint32_t i)
{
	return i < nd_n_disks && nd_disks[i].irq;
}

static void nd_retest_start(uint32_t i)
{
	struct node_disk *d = &nd_disks[i];
	const char *why = NULL;
	d->retest = false;
	int err = blk_readtest_start(&d->run, &d->v->blk, d->buf, d->buf_len, ND_RETEST_STEPS, &why);
	if (err) {
		LOG_ERR("blk", "virtio-blk%u: block read test on the new last 4 KiB: FAIL (%s)", (unsigned)i,
			why ? why : err_name(err));
		return;
	}
	d->run_lba = d->run.lba;
	d->running = true;
}

/* One step of a running self-test; 1 when it finished. */
static int nd_retest_step(uint32_t i)
{
	struct node_disk *d = &nd_disks[i];
	const char *why = NULL;
	int err = blk_selftest_step(&d->run, &why);
	if (err == -E_AGAIN)
		return 0;
	d->running = false;
	if (err)
		LOG_ERR("blk", "virtio-blk%u: block read test on the new last 4 KiB (block %lu): FAIL (%s)",
			(unsigned)i, (unsigned long)d->run_lba, why ? why : err_name(err));
	else
		LOG_INFO("blk", "virtio-blk%u: block read test on the new last 4 KiB (block %lu): PASS",
			 (unsigned)i, (unsigned long)d->run_lba);
	if (d->retest)
		nd_retest_start(i);
	return 1;
}

static void nd_config(uint32_t i)
{
	struct node_disk *d = &nd_disks[i];
	struct vblk_cap_event ev;
	int err = vblk_config_changed(d->v, &ev);
	d->retry = err == -E_AGAIN;
	if (ev.what == VBLK_CAP_GREW) {
		LOG_INFO("blk", "virtio-blk%u: capacity grew from %lu to %lu sectors (%lu MiB)", (unsigned)i,
			 (unsigned long)ev.old_sectors, (unsigned long)ev.new_sectors,
			 (unsigned long)(ev.new_sectors >> 11));
		/* The data disk belongs to the storage service, whose requests share its one
		 * queue: a read test there would take the service's completions. */
		if (node_store_on() && i == 0)
			kstore_disk_grew();
		else if (d->running)
			d->retest = true;
		else
			nd_retest_start(i);
	} else if (ev.what == VBLK_CAP_SHRANK) {
		LOG_ERR("blk", "virtio-blk%u: capacity SHRANK from %lu to %lu sectors: data beyond the new end "
			       "is gone, I/O there now fails",
			(unsigned)i, (unsigned long)ev.old_sectors, (unsigned long)ev.new_sectors);
	} else if (err) {
		LOG_WARN("blk", "virtio-blk%u: configuration change not read (%s)%s", (unsigned)i, err_name(err),
			 d->retry ? "; trying again in a second" : "");
	}
}

static int nd_disks_poll(void *ctx)
{
	(void)ctx;
	int work = 0;
	uint64_t now = node_port_now_ms();
	uint64_t irqs = node_port_irqs(node_store_core()); /* this core */
	bool irq = irqs != nd_seen_irqs, tick = now >= nd_next_poll_ms;
	bool step = now != nd_last_step_ms;

	if (step)
		nd_last_step_ms = now;
	for (uint32_t i = 0; i < nd_n_disks; i++)
		if (nd_disks[i].running && step)
			work += nd_retest_step(i);
	if (!irq && !tick)
		return work;
	nd_seen_irqs = irqs;
	if (tick)
		nd_next_poll_ms = now + ND_CFG_POLL_MS;
	for (uint32_t i = 0; i < nd_n_disks; i++) {
		const struct node_disk *d = &nd_disks[i];
		bool look = d->irq ? (irq || (tick && d->retry)) : tick;
		if (look && vblk_config_pending(d->v)) {
			nd_config(i);
			work++;
		}
	}
	return work;
}

void node_disks_loop_add(struct kloop *l, uint32_t core)
{
	if (core == node_store_core() && nd_n_disks && kloop_add(l, "blk", nd_disks_poll, NULL) != 0)
		PANIC("core %u: loop full", (unsigned)core);
}
