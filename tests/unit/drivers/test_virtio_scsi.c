/* SPDX-License-Identifier: MIT
 * Unit tests for drivers/virtio_scsi (through drivers/blk.h) against the simulated
 * device: init through UNIT ATTENTION, READ CAPACITY(16) topology, READ/WRITE(16),
 * SYNCHRONIZE CACHE, UNMAP, sense decoding, hostile responses, and the QEMU behaviours
 * (used.len counting data-out, SYNCHRONIZE CACHE(16) refused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "drivers/virtio_scsi.h"
#include "fake_dev.h"
#include "lib/bytes.h"
#include "lib/err.h"

static struct pci_dev devs[2];
static struct pci_bus bus;
static struct virtio_dev vd;
static struct vscsi vs;
static struct vq_slot slots[16];
static uint8_t buf[2][4096] __attribute__((aligned(4096)));

static int setup(void **state)
{
	(void)state;
	fake_reset();
	memset(devs, 0, sizeof devs);
	return 0;
}

static void probe(uint16_t type, uint16_t nq)
{
	struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
	fake_add_virtio(type, VIRTIO_F_VERSION_1 | VIRTIO_F_EVENT_IDX, nq, 16, 4);
	assert_int_equal(pci_bus_init(&bus, fake_port(), &pc), 0);
	assert_int_equal(pci_bus_scan(&bus), 0);
	assert_int_equal(virtio_pci_probe(&vd, &bus, &devs[0]), 0);
}

static int scsi_up(uint32_t cdb, uint32_t sense, uint32_t pending_ua)
{
	struct vscsi_config c = { .slots = slots, .queue_size = 16, .msix = 0, .target = 0, .lun = 0,
				  .init_spins = 100 };
	probe(8, 3);
	st_le32(&fake_bar[FAKE_OFF_DEVCFG + 20], sense);
	st_le32(&fake_bar[FAKE_OFF_DEVCFG + 24], cdb);
	fake_vio.scsi_pending_ua = pending_ua;
	return vscsi_init(&vs, &vd, &c);
}

static int run(struct blk_req *r)
{
	struct blk_req *done;
	int err = blk_submit(&vs.blk, r);
	if (err)
		return err;
	blk_kick(&vs.blk);
	assert_int_equal(blk_poll(&vs.blk, &done), 0);
	assert_ptr_equal(done, r);
	return r->status;
}

static void test_scsi_init_and_topology(void **state)
{
	(void)state;
	const struct blk_topology *t = &vs.blk.topo;
	assert_int_equal(scsi_up(32, 96, 2), 0);
	assert_int_equal(t->capacity, FAKE_DISK_SECTORS);
	assert_int_equal(t->logical_block, 512);
	assert_int_equal(t->physical_block, 4096);
	assert_true(t->discard && t->flush);
	assert_false(t->write_zeroes);
	assert_int_equal(fake_vio.q[2].enable, 1);
	assert_int_equal(fake_vio.q[0].enable, 0);
	assert_int_equal(vs.n_free, 16);
	/* sizes the driver cannot honour */
	setup(NULL);
	assert_int_equal(scsi_up(8, 96, 0), -E_PROTO);
	assert_int_equal(vs.rejected[VSCSI_REJ_CONFIG], 1);
	setup(NULL);
	assert_int_equal(scsi_up(32, 4000, 0), -E_PROTO);
	/* UNIT ATTENTION that never clears */
	setup(NULL);
	assert_int_equal(scsi_up(32, 96, 100), -E_IO);
	/* a device that never answers */
	setup(NULL);
	probe(8, 3);
	st_le32(&fake_bar[FAKE_OFF_DEVCFG + 20], 96);
	st_le32(&fake_bar[FAKE_OFF_DEVCFG + 24], 32);
	fake_vio.auto_process = false;
	struct vscsi_config c = { .slots = slots, .queue_size = 16, .msix = 0, .init_spins = 50 };
	assert_int_equal(vscsi_init(&vs, &vd, &c), -E_TIMEOUT);
}

static void test_scsi_round_trips(void **state)
{
	(void)state;
	struct blk_req w = { .op = BLK_WRITE, .lba = 10, .n_blocks = 4, .buf = buf[0] };
	struct blk_req r = { .op = BLK_READ, .lba = 10, .n_blocks = 4, .buf = buf[1] };
	struct blk_req f = { .op = BLK_FLUSH };
	struct blk_req u = { .op = BLK_DISCARD, .lba = 11, .n_blocks = 1 };
	struct blk_req z = { .op = BLK_WRITE_ZEROES, .lba = 11, .n_blocks = 1 };
	static const uint8_t zero[512];
	assert_int_equal(scsi_up(32, 96, 1), 0);
	for (unsigned i = 0; i < 2048; i++)
		buf[0][i] = (uint8_t)(i ^ 0x5a);
	assert_int_equal(run(&w), 0);
	assert_memory_equal(&fake_vio.disk[10 * 512], buf[0], 2048);
	assert_int_equal(run(&r), 0);
	assert_memory_equal(buf[1], buf[0], 2048);
	assert_int_equal(run(&f), 0);
	assert_int_equal(fake_vio.n_flush, 1);
	assert_int_equal(run(&u), 0);
	assert_memory_equal(&fake_vio.disk[11 * 512], zero, 512);
	assert_int_equal(blk_submit(&vs.blk, &z), -E_NOSYS);
	r.lba = FAKE_DISK_SECTORS;
	assert_int_equal(blk_submit(&vs.blk, &r), -E_RANGE);
	/* a unit attention mid-life: error with decoded sense */
	r.lba = 0;
	fake_vio.scsi_pending_ua = 1;
	assert_int_equal(run(&r), -E_IO);
	assert_int_equal(r.sense, 0x062900);
	assert_int_equal(vs.n_free, 16);
}

static void test_sense_decoding(void **state)
{
	(void)state;
	static const struct {
		uint8_t b[18];
		uint32_t len;
		int err;
		uint8_t key, asc, ascq;
	} cases[] = {
		{ { 0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x24, 0x01 }, 18, 0, 5, 0x24, 1 },
		{ { 0xf1, 0, 0x03, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x11, 0x00 }, 14, 0, 3, 0x11, 0 },
		{ { 0x72, 0x06, 0x29, 0x02 }, 8, 0, 6, 0x29, 2 },
		{ { 0x73, 0x0b, 0x47, 0x00 }, 4, 0, 0xb, 0x47, 0 },
		{ { 0x70, 0, 0x05 }, 13, -E_PROTO, 0, 0, 0 }, /* fixed, cut before ASCQ */
		{ { 0x72, 0x06 }, 3, -E_PROTO, 0, 0, 0 },
		{ { 0x7f }, 18, -E_PROTO, 0, 0, 0 },
		{ { 0 }, 0, -E_PROTO, 0, 0, 0 },
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct vscsi_sense s;
		assert_int_equal(vscsi_sense_decode(cases[i].b, cases[i].len, &s), cases[i].err);
		assert_int_equal(s.key, cases[i].key);
		assert_int_equal(s.asc, cases[i].asc);
		assert_int_equal(s.ascq, cases[i].ascq);
	}
}

/* Post a read, let the device pop it, write a crafted response and complete it. */
static int crafted(uint8_t status, uint8_t response, uint32_t residual, uint32_t sense_len, uint32_t used_len)
{
	struct blk_req r = { .op = BLK_READ, .lba = 0, .n_blocks = 1, .buf = buf[0] };
	struct blk_req *done;
	uint16_t head;
	uint8_t *resp = NULL;
	fake_vio.auto_process = false;
	assert_int_equal(blk_submit(&vs.blk, &r), 0);
	blk_kick(&vs.blk);
	assert_true(fake_vq_pop(2, &head));
	for (unsigned s = 0; s < 16; s++)
		if (vs.inflight[s] == &r)
			resp = vs.areas + s * 256 + 128;
	assert_non_null(resp);
	st_le32(resp, sense_len);
	st_le32(resp + 4, residual);
	resp[10] = status;
	resp[11] = response;
	resp[12] = 0x70;
	resp[14] = 0x04;
	resp[24] = 0x44;
	fake_vq_push(2, head, used_len);
	assert_int_equal(blk_poll(&vs.blk, &done), 0);
	return done->status;
}

static void test_scsi_hostile_responses(void **state)
{
	(void)state;
	assert_int_equal(scsi_up(32, 96, 0), 0);
	assert_int_equal(crafted(0, 0xee, 0, 0, 620), -E_PROTO);
	assert_int_equal(vs.rejected[VSCSI_REJ_RESPONSE], 1);
	assert_int_equal(crafted(0, 4, 0, 0, 620), -E_IO); /* RESET: defined, an I/O error */
	assert_int_equal(crafted(0, 0, 513, 0, 620), -E_PROTO);
	assert_int_equal(vs.rejected[VSCSI_REJ_RESIDUAL], 1);
	assert_int_equal(crafted(0, 0, 12, 0, 620), -E_IO); /* short transfer */
	assert_int_equal(crafted(0, 0, 0, 0, 4), -E_PROTO); /* not even a response header */
	assert_int_equal(crafted(2, 0, 0, 0xffffffffu, 620), -E_IO); /* sense_len lies: capped */
	assert_int_equal(crafted(2, 0, 0, 5, 620), -E_IO);            /* too short to decode */
	assert_int_equal(vs.rejected[VSCSI_REJ_SENSE], 1);
	assert_int_equal(crafted(2, 0, 0, 18, 14), -E_IO);           /* used length cuts sense */
	assert_int_equal(vs.rejected[VSCSI_REJ_SENSE], 2);
	assert_int_equal(crafted(8, 0, 0, 0, 620), -E_IO); /* BUSY */
	assert_int_equal(vs.n_free, 16);
}

/* QEMU's virtio-scsi counts data-out bytes in used.len and its scsi-hd refuses
 * SYNCHRONIZE CACHE(16): writes, UNMAP and FLUSH still complete. */
static void test_scsi_qemu_behaviours(void **state)
{
	(void)state;
	struct blk_req w = { .op = BLK_WRITE, .lba = 20, .n_blocks = 2, .buf = buf[0] };
	struct blk_req r = { .op = BLK_READ, .lba = 20, .n_blocks = 2, .buf = buf[1] };
	struct blk_req f = { .op = BLK_FLUSH };
	struct blk_req u = { .op = BLK_DISCARD, .lba = 21, .n_blocks = 1 };
	assert_int_equal(scsi_up(32, 96, 1), 0);
	fake_vio.scsi_len_counts_out = true;
	fake_vio.scsi_no_sync16 = true;
	for (unsigned i = 0; i < 1024; i++)
		buf[0][i] = (uint8_t)(i * 7);
	for (unsigned round = 0; round < 3; round++) {
		assert_int_equal(run(&w), 0);
		assert_int_equal(run(&r), 0);
		assert_memory_equal(buf[1], buf[0], 1024);
		assert_int_equal(run(&f), 0);
		assert_int_equal(fake_vio.scsi_last_opcode, 0x35);
		assert_int_equal(run(&u), 0);
	}
	assert_int_equal(fake_vio.n_flush, 3);
	assert_int_equal(vs.q.stats.n_len_clamped, 6); /* the WRITEs and UNMAPs */
	assert_false(vs.q.broken);
	assert_int_equal(vs.q.stats.rejected[VQ_REJ_LEN], 0);
	assert_int_equal(vs.n_free, 16);
	/* still bounded: a length beyond the whole chain breaks the queue */
	assert_int_equal(blk_submit(&vs.blk, &w), 0);
	{
		struct blk_req *done;
		uint16_t head;
		fake_vio.auto_process = false;
		blk_kick(&vs.blk);
		assert_true(fake_vq_pop(2, &head));
		fake_vq_push(2, head, 12 + 96 + 19 + 32 + 1024 + 1);
		assert_int_equal(blk_poll(&vs.blk, &done), -E_PROTO);
		assert_int_equal(vs.q.stats.rejected[VQ_REJ_LEN], 1);
		assert_int_equal(vs.rejected[VSCSI_REJ_QUEUE], 1);
	}
}

static void test_scsi_selftest(void **state)
{
	(void)state;
	static uint8_t tb[2 * 4096] __attribute__((aligned(4096)));
	const char *why;
	assert_int_equal(scsi_up(32, 96, 0), 0);
	assert_int_equal(blk_selftest(&vs.blk, tb, sizeof tb, 0xdeadbeefu, 100, &why), 0);
	assert_int_equal(fake_vio.n_flush, 1);
	fake_vio.scsi_pending_ua = 1;
	assert_int_equal(blk_selftest(&vs.blk, tb, sizeof tb, 1, 100, &why), -E_IO);
	assert_string_equal(why, "request failed");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_scsi_init_and_topology, setup),
		cmocka_unit_test_setup(test_scsi_round_trips, setup),
		cmocka_unit_test_setup(test_sense_decoding, setup),
		cmocka_unit_test_setup(test_scsi_hostile_responses, setup),
		cmocka_unit_test_setup(test_scsi_selftest, setup),
		cmocka_unit_test_setup(test_scsi_qemu_behaviours, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
