/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/virtio_blk through drivers/blk.h against the simulated device:
 * topology, read/write/flush/discard/write-zeroes round trips, range and feature checks,
 * device errors, a hostile device (bad status byte, short read, full queue), and
 * configuration changes (growth, shrink, a generation that moves mid-read or never
 * settles, the configuration vector) with the stepwise self-test on a grown disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "drivers/virtio_blk.h"
#include "fake_dev.h"
#include "lib/bytes.h"
#include "lib/err.h"

static struct pci_dev devs[2];
static struct pci_bus bus;
static struct virtio_dev vd;
static struct vblk vb;
static struct vq_slot slots[16];
static uint8_t buf[4][8192] __attribute__((aligned(4096)));

#define ALL (VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX | VIRTIO_BLK_F_BLK_SIZE | VIRTIO_BLK_F_FLUSH | \
	     VIRTIO_BLK_F_TOPOLOGY | VIRTIO_BLK_F_DISCARD | VIRTIO_BLK_F_WRITE_ZEROES)

static int setup(void **state)
{
	(void)state;
	fake_reset();
	memset(devs, 0, sizeof devs);
	return 0;
}

static int up(uint64_t features, uint64_t sectors, uint32_t blk_size, uint16_t qs)
{
	struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
	struct vblk_config c = { .slots = slots, .queue_size = qs, .msix = 0 };
	uint8_t *cfg = &fake_bar[FAKE_OFF_DEVCFG];
	fake_add_virtio(2, features, 1, 16, 2);
	st_le64(cfg + 0, sectors);
	st_le32(cfg + 20, blk_size);
	cfg[24] = 1;            /* two logical blocks per physical */
	st_le32(cfg + 28, 4);   /* optimal: four blocks */
	st_le32(cfg + 36, 64);  /* max discard sectors */
	st_le32(cfg + 48, 128); /* max write-zeroes sectors */
	assert_int_equal(pci_bus_init(&bus, fake_port(), &pc), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(virtio_pci_probe(&vd, &bus, &devs[0]), 0);
	return vblk_init(&vb, &vd, &c);
}

static int run(struct blk_req *r)
{
	struct blk_req *done;
	int err = blk_submit(&vb.blk, r);
	if (err)
		return err;
	blk_kick(&vb.blk);
	assert_int_equal(blk_poll(&vb.blk, &done), 0);
	assert_ptr_equal(done, r);
	return r->status;
}

static void test_topology(void **state)
{
	(void)state;
	const struct blk_topology *t = &vb.blk.topo;
	assert_int_equal(up(ALL, FAKE_DISK_SECTORS, 4096, 8), 0);
	assert_int_equal(t->capacity, FAKE_DISK_SECTORS / 8);
	assert_int_equal(t->logical_block, 4096);
	assert_int_equal(t->physical_block, 8192);
	assert_int_equal(t->optimal_io, 16384);
	assert_int_equal(t->max_discard, 8);
	assert_true(t->flush && t->discard && t->write_zeroes);
	assert_false(t->read_only);

	setup(NULL);
	assert_int_equal(up(VIRTIO_F_VERSION_1, FAKE_DISK_SECTORS, 4096, 8), 0);
	assert_int_equal(t->logical_block, 512);
	assert_int_equal(t->capacity, FAKE_DISK_SECTORS);
	assert_false(t->flush || t->discard || t->write_zeroes);
	assert_int_equal(t->optimal_io, 0);

	setup(NULL);
	assert_int_equal(up(ALL, FAKE_DISK_SECTORS, 1000, 8), -E_PROTO);
	assert_int_equal(vb.rejected[VBLK_REJ_CONFIG], 1);
}

static void test_round_trips(void **state)
{
	(void)state;
	struct blk_req w = { .op = BLK_WRITE, .lba = 3, .n_blocks = 2, .buf = buf[0] };
	struct blk_req r = { .op = BLK_READ, .lba = 3, .n_blocks = 2, .buf = buf[1] };
	struct blk_req f = { .op = BLK_FLUSH };
	struct blk_req d = { .op = BLK_DISCARD, .lba = 3, .n_blocks = 1 };
	struct blk_req z = { .op = BLK_WRITE_ZEROES, .lba = 4, .n_blocks = 1 };
	static const uint8_t zero[512];
	assert_int_equal(up(ALL, FAKE_DISK_SECTORS, 512, 8), 0);
	for (unsigned i = 0; i < 1024; i++)
		buf[0][i] = (uint8_t)(i * 7);
	assert_int_equal(run(&w), 0);
	assert_memory_equal(&fake_vio.disk[3 * 512], buf[0], 1024);
	assert_int_equal(run(&r), 0);
	assert_memory_equal(buf[1], buf[0], 1024);
	assert_int_equal(run(&f), 0);
	assert_int_equal(fake_vio.n_flush, 1);
	assert_int_equal(run(&d), 0);
	assert_int_equal(fake_vio.n_discard, 1);
	assert_memory_equal(&fake_vio.disk[3 * 512], zero, 512);
	assert_int_equal(run(&z), 0);
	assert_int_equal(fake_vio.n_wzero, 1);
	assert_memory_equal(&fake_vio.disk[4 * 512], zero, 512);
	assert_int_equal(vb.n_free, 8);
}

static void test_submit_checks(void **state)
{
	(void)state;
	struct blk_req r = { .op = BLK_READ, .lba = FAKE_DISK_SECTORS - 1, .n_blocks = 2, .buf = buf[0] };
	assert_int_equal(up(VIRTIO_F_VERSION_1 | VIRTIO_BLK_F_RO, FAKE_DISK_SECTORS, 512, 8), 0);
	assert_int_equal(blk_submit(&vb.blk, &r), -E_RANGE);
	r.lba = UINT64_MAX;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_RANGE);
	r.lba = 0;
	r.n_blocks = 0;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_RANGE);
	r.n_blocks = 1;
	r.buf = NULL;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_INVAL);
	r.buf = buf[0];
	r.op = BLK_WRITE;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_PERM);
	r.op = BLK_FLUSH;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_NOSYS);
	r.op = BLK_DISCARD;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_RANGE);
	r.op = (enum blk_op)77;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_INVAL);
}

static void test_device_error_and_queue_full(void **state)
{
	(void)state;
	struct blk_req r[5];
	struct blk_req *done;
	/* the device claims more sectors than it can serve: it answers IOERR */
	assert_int_equal(up(VIRTIO_F_VERSION_1, FAKE_DISK_SECTORS * 2, 512, 8), 0);
	r[0] = (struct blk_req){ .op = BLK_READ, .lba = FAKE_DISK_SECTORS, .n_blocks = 1, .buf = buf[0] };
	assert_int_equal(run(&r[0]), -E_IO);
	fake_vio.auto_process = false;
	/* three descriptors per request: eight entries hold two */
	for (unsigned i = 0; i < 3; i++) {
		r[i] = (struct blk_req){ .op = BLK_READ, .lba = i, .n_blocks = 1, .buf = buf[i % 4] };
		assert_int_equal(blk_submit(&vb.blk, &r[i]), i < 2 ? 0 : -E_AGAIN);
	}
	assert_int_equal(vb.n_free, 6);
	blk_kick(&vb.blk);
	assert_int_equal(blk_poll(&vb.blk, &done), -E_AGAIN);
	fake_process(0);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(blk_poll(&vb.blk, &done), 0);
		assert_int_equal(done->status, 0);
	}
	assert_int_equal(vb.n_free, 8);
	assert_int_equal(blk_poll(&vb.blk, &done), -E_AGAIN);
}

static void test_hostile_completions(void **state)
{
	(void)state;
	struct blk_req r = { .op = BLK_READ, .lba = 0, .n_blocks = 1, .buf = buf[0] };
	struct blk_req *done;
	uint16_t head;
	assert_int_equal(up(VIRTIO_F_VERSION_1, FAKE_DISK_SECTORS, 512, 4), 0);
	fake_vio.auto_process = false;
	/* status byte the spec does not define */
	assert_int_equal(blk_submit(&vb.blk, &r), 0);
	assert_true(fake_vq_pop(0, &head));
	for (unsigned s = 0; s < 4; s++)
		if (vb.inflight[s] == &r)
			vb.hdrs[s * 64 + 48] = 7;
	fake_vq_push(0, head, 513);
	assert_int_equal(blk_poll(&vb.blk, &done), 0);
	assert_int_equal(done->status, -E_PROTO);
	assert_int_equal(vb.rejected[VBLK_REJ_STATUS], 1);
	/* device never wrote the status (sentinel stays) */
	assert_int_equal(blk_submit(&vb.blk, &r), 0);
	assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, head, 513);
	assert_int_equal(blk_poll(&vb.blk, &done), 0);
	assert_int_equal(done->status, -E_PROTO);
	assert_int_equal(vb.rejected[VBLK_REJ_STATUS], 2);
	/* short read: status OK but fewer bytes than asked */
	assert_int_equal(blk_submit(&vb.blk, &r), 0);
	assert_true(fake_vq_pop(0, &head));
	for (unsigned s = 0; s < 4; s++)
		if (vb.inflight[s] == &r)
			vb.hdrs[s * 64 + 48] = 0;
	fake_vq_push(0, head, 100);
	assert_int_equal(blk_poll(&vb.blk, &done), 0);
	assert_int_equal(done->status, -E_IO);
	assert_int_equal(vb.rejected[VBLK_REJ_SHORT], 1);
	/* length beyond the chain: the queue refuses it and breaks */
	assert_int_equal(blk_submit(&vb.blk, &r), 0);
	assert_true(fake_vq_pop(0, &head));
	fake_vq_push(0, head, 514);
	assert_int_equal(blk_poll(&vb.blk, &done), -E_PROTO);
	assert_null(done);
	assert_int_equal(vb.rejected[VBLK_REJ_QUEUE], 1);
	assert_int_equal(blk_poll(&vb.blk, &done), -E_CLOSED);
}

static void set_cap(uint64_t sectors)
{
	st_le64(&fake_bar[FAKE_OFF_DEVCFG], sectors);
	fake_vio.gen++;
}

static void test_capacity_growth(void **state)
{
	(void)state;
	struct vblk_cap_event ev;
	assert_int_equal(up(ALL, 128, 512, 8), 0);
	assert_int_equal(vb.blk.topo.capacity, 128);
	assert_false(vblk_config_pending(&vb));
	set_cap(FAKE_DISK_SECTORS);
	assert_true(vblk_config_pending(&vb));
	assert_int_equal(vblk_config_changed(&vb, &ev), 0);
	assert_int_equal(ev.what, VBLK_CAP_GREW);
	assert_int_equal(ev.old_sectors, 128);
	assert_int_equal(ev.new_sectors, FAKE_DISK_SECTORS);
	assert_int_equal(vb.blk.topo.capacity, FAKE_DISK_SECTORS);
	assert_int_equal(vb.n_grew, 1);
	assert_false(vblk_config_pending(&vb));
	/* the new end is usable */
	struct blk_req r = { .op = BLK_READ, .lba = FAKE_DISK_SECTORS - 1, .n_blocks = 1, .buf = buf[0] };
	assert_int_equal(run(&r), 0);
	/* another field changed: same capacity, nothing to do, no longer pending */
	fake_vio.gen++;
	assert_true(vblk_config_pending(&vb));
	assert_int_equal(vblk_config_changed(&vb, &ev), 0);
	assert_int_equal(ev.what, VBLK_CAP_SAME);
	assert_int_equal(ev.new_sectors, FAKE_DISK_SECTORS);
	assert_false(vblk_config_pending(&vb));
}

static void test_capacity_blocks(void **state)
{
	(void)state;
	struct vblk_cap_event ev;
	/* 4 KiB logical blocks: capacity in blocks, a partial block at the end is not usable */
	assert_int_equal(up(ALL, 64, 4096, 8), 0);
	assert_int_equal(vb.blk.topo.capacity, 8);
	set_cap(FAKE_DISK_SECTORS + 7);
	assert_int_equal(vblk_config_changed(&vb, &ev), 0);
	assert_int_equal(ev.what, VBLK_CAP_GREW);
	assert_int_equal(ev.new_sectors, FAKE_DISK_SECTORS + 7);
	assert_int_equal(vb.blk.topo.capacity, FAKE_DISK_SECTORS / 8);
}

static void test_capacity_shrink(void **state)
{
	(void)state;
	struct vblk_cap_event ev;
	struct blk_req r = { .op = BLK_WRITE, .lba = 100, .n_blocks = 1, .buf = buf[0] };
	assert_int_equal(up(ALL, FAKE_DISK_SECTORS, 512, 8), 0);
	assert_int_equal(run(&r), 0);
	set_cap(64);
	assert_int_equal(vblk_config_changed(&vb, &ev), -E_RANGE);
	assert_int_equal(ev.what, VBLK_CAP_SHRANK);
	assert_int_equal(ev.old_sectors, FAKE_DISK_SECTORS);
	assert_int_equal(ev.new_sectors, 64);
	assert_int_equal(vb.blk.topo.capacity, 64);
	assert_int_equal(vb.n_shrank, 1);
	/* beyond the new end: refused before the device sees it */
	assert_int_equal(blk_submit(&vb.blk, &r), -E_RANGE);
	r.lba = 63;
	r.n_blocks = 2;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_RANGE);
	r.op = BLK_DISCARD;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_RANGE);
	r = (struct blk_req){ .op = BLK_READ, .lba = 63, .n_blocks = 1, .buf = buf[0] };
	assert_int_equal(run(&r), 0);
	/* down to nothing: every request refused */
	set_cap(0);
	assert_int_equal(vblk_config_changed(&vb, &ev), -E_RANGE);
	assert_int_equal(vb.blk.topo.capacity, 0);
	r.lba = 0;
	assert_int_equal(blk_submit(&vb.blk, &r), -E_RANGE);
	/* and back */
	set_cap(FAKE_DISK_SECTORS);
	assert_int_equal(vblk_config_changed(&vb, &ev), 0);
	assert_int_equal(ev.what, VBLK_CAP_GREW);
	assert_int_equal(ev.old_sectors, 0);
	assert_int_equal(run(&r), 0);
}

/* The device grows from 0xffffff00 to 0x1_00000100 sectors between the two 32-bit halves
 * of the driver's read: without the generation check it would see 0x1_ffffff00. */
static unsigned hook_left;
static void grow_mid_read(uint32_t off)
{
	if (off == 4 && hook_left) {
		hook_left--;
		set_cap(0x100000100ull);
	}
}

static void churn(uint32_t off)
{
	(void)off;
	fake_vio.gen++;
}

static void test_capacity_generation(void **state)
{
	(void)state;
	struct vblk_cap_event ev;
	assert_int_equal(up(VIRTIO_F_VERSION_1, 128, 512, 8), 0);
	set_cap(0xffffff00ull);
	hook_left = 1;
	fake_vio.devcfg_read_hook = grow_mid_read;
	fake_vio.n_devcfg_reads = 0;
	assert_int_equal(vblk_config_changed(&vb, &ev), 0);
	assert_int_equal(fake_vio.n_devcfg_reads, 4); /* torn copy, then a stable one */
	assert_int_equal(ev.what, VBLK_CAP_GREW);
	assert_int_equal(ev.new_sectors, 0x100000100ull);
	assert_int_equal(vb.blk.topo.capacity, 0x100000100ull);
	assert_false(vblk_config_pending(&vb));
	/* a configuration that never settles: nothing applied, still pending, counted */
	fake_vio.devcfg_read_hook = churn;
	assert_int_equal(vblk_config_changed(&vb, &ev), -E_AGAIN);
	assert_int_equal(ev.what, VBLK_CAP_SAME);
	assert_int_equal(vb.blk.topo.capacity, 0x100000100ull);
	assert_int_equal(vd.rejected[VIRTIO_REJ_CFG], 1);
	assert_true(vblk_config_pending(&vb));
	/* it settles: applied */
	fake_vio.devcfg_read_hook = NULL;
	set_cap(FAKE_DISK_SECTORS);
	assert_int_equal(vblk_config_changed(&vb, &ev), -E_RANGE);
	assert_int_equal(ev.what, VBLK_CAP_SHRANK);
	assert_int_equal(vb.blk.topo.capacity, FAKE_DISK_SECTORS);
	/* a failed device: nothing read */
	virtio_fail(&vd, "test");
	set_cap(128);
	assert_false(vblk_config_pending(&vb));
	assert_int_equal(vblk_config_changed(&vb, &ev), -E_CLOSED);
	assert_int_equal(vb.blk.topo.capacity, FAKE_DISK_SECTORS);
}

static void test_config_vector(void **state)
{
	(void)state;
	struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
	struct vblk_config c = { .slots = slots, .queue_size = 8, .msix = VIRTIO_MSI_NO_VECTOR,
				 .config_irq = true, .config_msix = 1 };
	fake_add_virtio(2, ALL, 1, 16, 2);
	st_le64(&fake_bar[FAKE_OFF_DEVCFG], 128);
	st_le32(&fake_bar[FAKE_OFF_DEVCFG + 20], 512);
	assert_int_equal(pci_bus_init(&bus, fake_port(), &pc), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(virtio_pci_probe(&vd, &bus, &devs[0]), 0);
	assert_int_equal(vblk_init(&vb, &vd, &c), 0);
	assert_true(vb.cfg_irq);
	assert_int_equal(fake_vio.config_msix, 1);
	assert_int_equal(fake_vio.q[0].msix, VIRTIO_MSI_NO_VECTOR);
	/* a device without vectors: initialised anyway, changes polled */
	setup(NULL);
	fake_add_virtio(2, ALL, 1, 16, 2);
	fake_vio.no_vectors = true;
	st_le64(&fake_bar[FAKE_OFF_DEVCFG], 128);
	st_le32(&fake_bar[FAKE_OFF_DEVCFG + 20], 512);
	assert_int_equal(pci_bus_init(&bus, fake_port(), &pc), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(virtio_pci_probe(&vd, &bus, &devs[0]), 0);
	assert_int_equal(vblk_init(&vb, &vd, &c), 0);
	assert_false(vb.cfg_irq);
	assert_int_equal(vb.blk.topo.capacity, 128);
}

/* The stepwise self-test on the new end of a disk that grew. */
static void test_selftest_steps(void **state)
{
	(void)state;
	static uint8_t tb[2 * 8192] __attribute__((aligned(4096)));
	struct blk_selftest_run s;
	struct vblk_cap_event ev;
	const char *why;
	int err;
	unsigned steps = 0;
	assert_int_equal(up(ALL, 128, 512, 8), 0);
	assert_int_equal(blk_selftest(&vb.blk, tb, sizeof tb, 1, 100, &why), 0);
	assert_memory_equal(&fake_vio.disk[(128 - 8) * 512], tb, 4096);
	set_cap(FAKE_DISK_SECTORS);
	assert_int_equal(vblk_config_changed(&vb, &ev), 0);
	fake_vio.auto_process = false;
	assert_int_equal(blk_selftest_start(&s, &vb.blk, tb, sizeof tb, 2, 3, &why), 0);
	while ((err = blk_selftest_step(&s, &why)) == -E_AGAIN) {
		fake_process(0); /* the device answers between two loop passes */
		assert_true(++steps < 10);
	}
	assert_int_equal(err, 0);
	assert_null(why);
	assert_int_equal(steps, 5); /* write, read, flush: posted, then seen done (not the flush) */
	assert_memory_equal(&fake_vio.disk[(FAKE_DISK_SECTORS - 8) * 512], tb, 4096);
	assert_int_equal(fake_vio.n_flush, 2);
	assert_int_equal(blk_selftest_step(&s, &why), -E_INVAL); /* over */
	/* a device that stops answering: bounded by max_polls steps per request */
	assert_int_equal(blk_selftest_start(&s, &vb.blk, tb, sizeof tb, 3, 3, &why), 0);
	steps = 0;
	while ((err = blk_selftest_step(&s, &why)) == -E_AGAIN)
		steps++;
	assert_int_equal(err, -E_TIMEOUT);
	assert_string_equal(why, "timeout");
	assert_int_equal(steps, 2);
	assert_int_equal(blk_selftest_start(&s, &vb.blk, tb, sizeof tb, 3, 0, &why), -E_INVAL);
}

static void test_selftest(void **state)
{
	(void)state;
	static uint8_t tb[2 * 8192] __attribute__((aligned(4096)));
	const char *why;
	assert_int_equal(up(ALL, FAKE_DISK_SECTORS, 512, 8), 0);
	assert_int_equal(blk_selftest(&vb.blk, tb, sizeof tb, 0x12345678u, 100, &why), 0);
	assert_null(why);
	assert_int_equal(fake_vio.n_flush, 1);
	assert_memory_equal(&fake_vio.disk[(FAKE_DISK_SECTORS - 8) * 512], tb, 4096);
	assert_int_equal(blk_selftest(&vb.blk, tb, 4096, 1, 100, &why), -E_INVAL);
	/* a device that cannot serve its last blocks */
	setup(NULL);
	assert_int_equal(up(ALL, FAKE_DISK_SECTORS * 2, 4096, 8), 0);
	assert_int_equal(blk_selftest(&vb.blk, tb, sizeof tb, 7, 100, &why), -E_IO);
	assert_string_equal(why, "request failed");
	/* a device that never answers */
	setup(NULL);
	assert_int_equal(up(ALL, FAKE_DISK_SECTORS, 512, 8), 0);
	fake_vio.auto_process = false;
	assert_int_equal(blk_selftest(&vb.blk, tb, sizeof tb, 7, 100, &why), -E_TIMEOUT);
	/* read-only */
	setup(NULL);
	assert_int_equal(up(ALL | VIRTIO_BLK_F_RO, FAKE_DISK_SECTORS, 512, 8), 0);
	assert_int_equal(blk_selftest(&vb.blk, tb, sizeof tb, 7, 100, &why), -E_INVAL);
}

/* The read-only run reads the last 4 KiB and writes nothing, even on a writable disk. */
static void test_readtest(void **state)
{
	(void)state;
	static uint8_t tb[2 * 8192] __attribute__((aligned(4096)));
	const char *why;
	assert_int_equal(up(ALL, FAKE_DISK_SECTORS, 512, 8), 0);
	static uint8_t before[4096];
	memcpy(before, &fake_vio.disk[(FAKE_DISK_SECTORS - 8) * 512], sizeof before);
	for (size_t i = 0; i < sizeof before; i++) /* something to read back */
		fake_vio.disk[(FAKE_DISK_SECTORS - 8) * 512 + i] = (uint8_t)(i * 7u);
	memcpy(before, &fake_vio.disk[(FAKE_DISK_SECTORS - 8) * 512], sizeof before);
	assert_int_equal(blk_readtest(&vb.blk, tb, sizeof tb, 100, &why), 0);
	assert_null(why);
	assert_int_equal(fake_vio.n_flush, 0);
	assert_memory_equal(&fake_vio.disk[(FAKE_DISK_SECTORS - 8) * 512], before, sizeof before);
	assert_memory_equal(tb + 4096, before, sizeof before); /* what was read */
	/* a read-only disk may be read-tested */
	setup(NULL);
	assert_int_equal(up(ALL | VIRTIO_BLK_F_RO, FAKE_DISK_SECTORS, 512, 8), 0);
	assert_int_equal(blk_readtest(&vb.blk, tb, sizeof tb, 100, &why), 0);
	assert_int_equal(blk_readtest(&vb.blk, tb, 4096, 100, &why), -E_INVAL); /* buffer too small */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_topology, setup),
		cmocka_unit_test_setup(test_round_trips, setup),
		cmocka_unit_test_setup(test_submit_checks, setup),
		cmocka_unit_test_setup(test_device_error_and_queue_full, setup),
		cmocka_unit_test_setup(test_hostile_completions, setup),
		cmocka_unit_test_setup(test_capacity_growth, setup),
		cmocka_unit_test_setup(test_capacity_blocks, setup),
		cmocka_unit_test_setup(test_capacity_shrink, setup),
		cmocka_unit_test_setup(test_capacity_generation, setup),
		cmocka_unit_test_setup(test_config_vector, setup),
		cmocka_unit_test_setup(test_selftest_steps, setup),
		cmocka_unit_test_setup(test_selftest, setup),
		cmocka_unit_test_setup(test_readtest, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
