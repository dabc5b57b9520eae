/* SPDX-License-Identifier: MIT
 *
 * The diagnostics run (kernel/diag/diag.h). Phases, in order, each bounded: PCI list;
 * virtio-net and disks probed with their own driver instances (the broker's are never
 * built in this mode); memory copy; per disk a sequential read from LBA 0 and the GPT's
 * free run; crypto; the WIPE prompt (only when some disk has a free run) and, after WIPE,
 * a write-and-verify of at most diag.disk_write_mb at the start of each free run; the
 * summary; the JSON line (with the bounds used). Every bound comes from the
 * configuration's [diag] section, read once into dg_lim (kernel/diag/limits.c); every
 * buffer is sized by it, allocated from whole pages and checked (none: that measurement is
 * reported as not done). Invariant: no write request is ever submitted unless the
 * operator's line equals "WIPE" and its target [lba, lba + n) lies inside the free run
 * diag_gpt_free_find returned for that disk (checked again right before each submit).
 */
#include "kernel/diag/diag.h"

#include "drivers/virtio.h"
#include "drivers/virtio_blk.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_scsi.h"
#include "kernel/diag/diag_int.h"
#include "kernel/diag/gpt_free.h"
#include "kernel/diag/json.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "store/wire_disk.h"

#define DG_POLLS 200000000u      /* bound on polls per block request or SCSI command */
#define DG_MAX_VIRTIO 16u
#define DG_BLK_QUEUE 16u
#define DG_NET_QUEUE 64u
#define DG_NET_FRAMES 128u
#define DG_NET_FRAME 2048u
#define DG_JSON_BYTES 16384u
#define DG_MAX_PCI_JSON 32u
#define DG_WIPE_WORD "WIPE"
/* A GPT's entry array: at most 128 entries of 128 bytes (store/gpt), or one block when a
 * block is larger (a block never exceeds the chunk: larger ones are not measured). */
#define DG_GPT_ENTS_BYTES (128u * STORE_GPT_ENTRY_BYTES)

struct dg_disk {
	const char *kind;       /* "virtio-blk", "virtio-scsi" */
	struct blk_dev *blk;
	const char *gpt_why;    /* static: "valid", or why no GPT is trusted */
	const char *write_why;  /* static: why not written, or "" */
	struct diag_gpt_free free;
	uint64_t read_bytes, read_ns;
	uint64_t write_bytes, write_ns;
	uint32_t index;
	int read_err;
	bool gpt_ok, wrote, verified;
};

static struct virtio_dev dg_vd[DG_MAX_VIRTIO];
static uint32_t dg_n_vd;
static struct vblk dg_vblk[DIAG_MAX_DISKS];
static struct vscsi dg_vscsi[DIAG_MAX_DISKS];
static struct dg_disk dg_disks[DIAG_MAX_DISKS];
static uint32_t dg_n_disks, dg_n_vblk, dg_n_vscsi;
static struct vnet dg_net;
static bool dg_net_ok;
static int dg_net_err = -E_NOENT;
static char dg_json[DG_JSON_BYTES];
static struct diag_limits dg_lim; /* set once at the start of diag_run */

/* Zeroed DMA pages, or NULL (reported by the caller). */
static void *dg_pages(size_t len)
{
	void *va = NULL;
	uint64_t pa;
	uint32_t n = (uint32_t)((len + HEAP_PAGE_SIZE - 1u) / HEAP_PAGE_SIZE);
	if (kheap_pages_alloc(n, 1, &va, &pa) != 0)
		return NULL;
	return va;
}

/* Give back a dg_pages run of len bytes (NULL: nothing). */
static void dg_pages_free(void *va, size_t len)
{
	if (va)
		kheap_pages_free(va, (uint32_t)((len + HEAP_PAGE_SIZE - 1u) / HEAP_PAGE_SIZE));
}

static const char *dg_type_name(uint16_t t)
{
	switch (t) {
	case VIRTIO_ID_NET: return "virtio-net";
	case VIRTIO_ID_BLOCK: return "virtio-blk";
	case VIRTIO_ID_RNG: return "virtio-rng";
	case VIRTIO_ID_SCSI: return "virtio-scsi";
	default: return "virtio";
	}
}

/* One block request, waited for: 0, the request's status, or -E_TIMEOUT. */
static int dg_io(struct blk_dev *d, enum blk_op op, uint64_t lba, uint32_t n, void *buf)
{
	struct blk_req r = { .op = op, .lba = lba, .n_blocks = n, .buf = buf };
	int err = blk_submit(d, &r);
	if (err)
		return err;
	blk_kick(d);
	for (uint32_t i = 0; i < DG_POLLS; i++) {
		struct blk_req *done = NULL;
		err = blk_poll(d, &done);
		if (err == -E_AGAIN)
			continue;
		if (err)
			return err;
		if (done == &r)
			return r.status;
	}
	return -E_TIMEOUT;
}

static void dg_add_disk(const char *kind, uint32_t index, struct blk_dev *b)
{
	struct dg_disk *d = &dg_disks[dg_n_disks++];
	*d = (struct dg_disk){ .kind = kind, .index = index, .blk = b, .gpt_why = "", .write_why = "" };
}

static void dg_probe(const struct diag_platform *p)
{
	struct pci_bus *bus = p->bus;
	if (!bus)
		return;
	for (uint32_t i = 0; i < bus->n_devs && dg_n_vd < DG_MAX_VIRTIO; i++) {
		struct pci_dev *d = &bus->cfg.devs[i];
		uint16_t t = virtio_pci_device_type(d);
		if (!t || (d->flags & PCI_DEV_BAD))
			continue;
		bool want = (t == VIRTIO_ID_NET && !dg_net_ok) ||
			    ((t == VIRTIO_ID_BLOCK || t == VIRTIO_ID_SCSI) && dg_n_disks < DIAG_MAX_DISKS);
		if (!want)
			continue;
		struct virtio_dev *vd = &dg_vd[dg_n_vd];
		int err = virtio_pci_probe(vd, bus, d);
		if (err) {
			log_rawf("diag: %s at %02x:%02x.%u refused (%s)\n", dg_type_name(t), d->bus, d->dev, d->fn,
				 err_name(err));
			continue;
		}
		dg_n_vd++;
		if (t == VIRTIO_ID_NET) {
			struct vnet_config c = {
				.frames = dg_pages((size_t)DG_NET_FRAMES * DG_NET_FRAME),
				.n_frames = DG_NET_FRAMES,
				.frame_size = DG_NET_FRAME,
				.frame_stack = dg_pages(sizeof(uint32_t) * DG_NET_FRAMES),
				.slots = dg_pages(sizeof(struct vq_slot) * 3u * DG_NET_QUEUE),
				.n_slots = 3u * DG_NET_QUEUE,
				.queue_size = DG_NET_QUEUE,
				.max_pairs = 1,
				.ctrl_spins = DG_POLLS,
				.fallback_mac = { 0x02, 0x75, 0x72, 0x6d, 0x71, 0x01 },
			};
			dg_net_err = (!c.frames || !c.frame_stack || !c.slots) ? -E_NOMEM : vnet_init(&dg_net, vd, &c);
			dg_net_ok = dg_net_err == 0;
		} else if (t == VIRTIO_ID_BLOCK) {
			struct vblk *v = &dg_vblk[dg_n_vblk];
			struct vblk_config c = {
				.slots = dg_pages(sizeof(struct vq_slot) * DG_BLK_QUEUE),
				.queue_size = DG_BLK_QUEUE,
				.msix = VIRTIO_MSI_NO_VECTOR,
			};
			err = c.slots ? vblk_init(v, vd, &c) : -E_NOMEM;
			if (err) {
				log_rawf("diag: virtio-blk%u: initialisation failed (%s)\n", (unsigned)dg_n_vblk,
					 err_name(err));
				continue;
			}
			dg_add_disk("virtio-blk", dg_n_vblk++, &v->blk);
		} else {
			struct vscsi *v = &dg_vscsi[dg_n_vscsi];
			struct vscsi_config c = {
				.slots = dg_pages(sizeof(struct vq_slot) * DG_BLK_QUEUE),
				.queue_size = DG_BLK_QUEUE,
				.msix = VIRTIO_MSI_NO_VECTOR,
				.init_spins = DG_POLLS,
			};
			err = c.slots ? vscsi_init(v, vd, &c) : -E_NOMEM;
			if (err) {
				log_rawf("diag: virtio-scsi%u: initialisation failed (%s)\n", (unsigned)dg_n_vscsi,
					 err_name(err));
				continue;
			}
			dg_add_disk("virtio-scsi", dg_n_vscsi++, &v->blk);
		}
	}
}

/* Memory copy throughput over two dg_lim.mem_buf_bytes buffers (given back after), at
 * least window_ms. *no_buf when they could not be allocated (no figure then). */
static uint64_t dg_mem_copy(const struct diag_platform *p, uint32_t window_ms, uint64_t *bytes, bool *no_buf)
{
	size_t len = dg_lim.mem_buf_bytes; /* >= 64 KiB (the schema's range), so a[128] exists */
	uint64_t rate = 0;
	*bytes = 0;
	uint8_t *a = dg_pages(len), *b = dg_pages(len);
	*no_buf = !a || !b;
	if (!*no_buf) {
		for (size_t i = 0; i < len; i += 64)
			a[i] = (uint8_t)i;
		uint64_t w = (uint64_t)window_ms * 1000000ull, n = 0, t0 = p->now_ns(), t;
		do {
			memcpy((n & 1) ? a : b, (n & 1) ? b : a, len);
			n++;
		} while ((t = p->now_ns() - t0) < w);
		*bytes = n * len;
		if (b[64] == 64 && a[128] == 128) /* else the copy did not happen: no figure */
			rate = diag_rate_milli(*bytes, t * 1000000ull);
	}
	dg_pages_free(a, len);
	dg_pages_free(b, len);
	return rate;
}

/* Blocks per request for d: dg_lim.disk_chunk_bytes, at least one block. */
static uint32_t dg_chunk_blocks(const struct blk_dev *d)
{
	uint32_t bs = d->topo.logical_block, chunk = dg_lim.disk_chunk_bytes;
	return bs >= chunk ? 1u : chunk / bs;
}

static void dg_disk_read(const struct diag_platform *p, struct dg_disk *d, uint8_t *buf)
{
	struct blk_dev *b = d->blk;
	uint32_t bs = b->topo.logical_block, per = dg_chunk_blocks(b);
	uint64_t max_blocks = MIN(b->topo.capacity, dg_lim.disk_read_bytes / bs);
	uint64_t lba = 0, t0 = p->now_ns();
	d->read_err = 0;
	while (lba < max_blocks) {
		uint32_t n = (uint32_t)MIN((uint64_t)per, max_blocks - lba);
		int err = dg_io(b, BLK_READ, lba, n, buf);
		if (err) {
			d->read_err = err;
			break;
		}
		lba += n;
	}
	d->read_ns = p->now_ns() - t0;
	d->read_bytes = lba * bs;
}

/* The disk's GPT and its free run (nothing written). */
static void dg_disk_gpt(struct dg_disk *d, uint8_t *buf, size_t buf_len, uint8_t *ents, size_t ents_cap)
{
	struct blk_dev *b = d->blk;
	uint32_t bs = b->topo.logical_block;
	uint64_t lba;
	size_t len;
	d->gpt_ok = false;
	if (b->topo.capacity < 3 || bs > buf_len) {
		d->gpt_why = "disk too small";
		return;
	}
	if (dg_io(b, BLK_READ, 1, 1, buf) != 0) {
		d->gpt_why = "read of LBA 1 failed";
		return;
	}
	if (diag_gpt_entries_at(buf, bs, bs, b->topo.capacity, &lba, &len, &d->gpt_why) != 0)
		return;
	uint32_t n_blocks = (uint32_t)((len + bs - 1u) / bs);
	if ((size_t)n_blocks * bs > ents_cap) {
		d->gpt_why = "entry array too large";
		return;
	}
	for (uint32_t i = 0; i < n_blocks; i++)
		if (dg_io(b, BLK_READ, lba + i, 1, ents + (size_t)i * bs) != 0) {
			d->gpt_why = "read of the entry array failed";
			return;
		}
	if (diag_gpt_free_find(buf, bs, ents, (size_t)n_blocks * bs, bs, b->topo.capacity, &d->free, &d->gpt_why) != 0)
		return;
	d->gpt_ok = true;
	d->gpt_why = "valid";
}

/* After WIPE: write a pattern over at most dg_lim.disk_write_bytes at the start of the free
 * run, then read it back and compare. buf and back hold dg_lim.disk_chunk_bytes each. */
static void dg_disk_write(const struct diag_platform *p, struct dg_disk *d, uint8_t *buf, uint8_t *back)
{
	struct blk_dev *b = d->blk;
	uint32_t bs = b->topo.logical_block, per = dg_chunk_blocks(b);
	uint64_t run_first = d->free.first_lba, run_end = d->free.first_lba + d->free.n_blocks;
	uint64_t n_total = MIN(d->free.n_blocks, dg_lim.disk_write_bytes / bs);
	if (b->topo.read_only) {
		d->write_why = "read-only disk";
		return;
	}
	if (!d->gpt_ok || n_total == 0) {
		d->write_why = "no unallocated space in a valid GPT";
		return;
	}
	uint64_t t0 = p->now_ns(), done = 0;
	while (done < n_total) {
		uint32_t n = (uint32_t)MIN((uint64_t)per, n_total - done);
		uint64_t lba = run_first + done;
		if (lba < run_first || lba + n > run_end) { /* never outside the free run */
			d->write_why = "outside the free run (refused)";
			return;
		}
		for (size_t i = 0; i < (size_t)n * bs; i++)
			buf[i] = (uint8_t)((lba * bs + i) * 131u >> 3);
		if (dg_io(b, BLK_WRITE, lba, n, buf) != 0) {
			d->write_why = "write failed";
			break;
		}
		done += n;
	}
	if (b->topo.flush && done == n_total && dg_io(b, BLK_FLUSH, 0, 0, NULL) != 0)
		d->write_why = "flush failed";
	d->write_ns = p->now_ns() - t0;
	d->write_bytes = done * bs;
	d->wrote = done > 0;
	bool same = done == n_total;
	for (uint64_t k = 0; k < done && same; k += per) {
		uint32_t n = (uint32_t)MIN((uint64_t)per, done - k);
		uint64_t lba = run_first + k;
		if (dg_io(b, BLK_READ, lba, n, back) != 0) {
			same = false;
			break;
		}
		for (size_t i = 0; i < (size_t)n * bs && same; i++)
			same = back[i] == (uint8_t)((lba * bs + i) * 131u >> 3);
	}
	d->verified = same;
}

/* The operator's answer: true only for a line equal to WIPE within the time. */
static bool dg_ask_wipe(const struct diag_platform *p, const char **why)
{
	uint32_t s = dg_lim.wipe_prompt_s;
	char line[16];
	size_t len = 0;
	if (!p->console) {
		*why = "skipped: no console input";
		return false;
	}
	log_rawf("diag: WRITE TEST: type WIPE and Enter within %u s to write up to %lu KiB into the\n",
		 (unsigned)s, (unsigned long)(dg_lim.disk_write_bytes >> 10));
	log_rawf("diag: unallocated space listed above (what is there is destroyed; partitions are\n");
	log_rawf("diag: never touched). Anything else, or nothing, skips it.\nWIPE? ");
	int err = console_in_line(p->console, line, sizeof line, (uint64_t)s * 1000u, &len);
	if (err == -E_TIMEOUT) {
		log_rawf("\n");
		*why = "skipped: no answer in time";
		return false;
	}
	if (err) {
		*why = "skipped: line refused";
		return false;
	}
	if (len != 4 || memcmp(line, DG_WIPE_WORD, 4) != 0) {
		*why = "skipped: not WIPE";
		return false;
	}
	*why = "confirmed";
	return true;
}

static void dg_hex4(char *out, uint32_t v)
{
	static const char hx[] = "0123456789abcdef";
	for (int i = 3; i >= 0; i--, v >>= 4)
		out[i] = hx[v & 15u];
	out[4] = 0;
}

static void dg_json_milli(struct diag_json *j, const char *key, uint64_t milli)
{
	diag_json_fixed(j, key, milli, 3);
}

static void dg_report_json(const struct diag_platform *p, uint64_t mem_milli, const struct diag_crypto *c,
			   bool asked, const char *wipe_why, uint64_t elapsed_ns)
{
	struct diag_json j;
	char tmp[32];
	diag_json_init(&j, dg_json, sizeof dg_json);
	diag_json_obj_begin(&j, NULL);
	diag_json_u64(&j, "diag_version", 1);
	diag_limits_json(&j, &dg_lim);
	diag_json_obj_begin(&j, "cpu");
	diag_json_str(&j, "arch", p->cpu.arch);
	diag_json_str(&j, "vendor", p->cpu.vendor);
	diag_json_str(&j, "model", p->cpu.model);
	diag_json_u64(&j, "count", p->cpu.count);
	diag_json_u64(&j, "clock_hz", p->cpu.clock_hz);
	diag_json_arr_begin(&j, "features");
	for (uint32_t i = 0; i < p->cpu.n_features && i < DIAG_MAX_FEATURES; i++)
		diag_json_str(&j, NULL, p->cpu.features[i]);
	diag_json_arr_end(&j);
	diag_json_obj_end(&j);
	diag_json_obj_begin(&j, "memory");
	diag_json_u64(&j, "total_bytes", p->mem_total);
	diag_json_u64(&j, "free_bytes", p->mem_free);
	dg_json_milli(&j, "copy_mb_s", mem_milli);
	diag_json_obj_end(&j);
	diag_json_arr_begin(&j, "pci");
	for (uint32_t i = 0; p->bus && i < p->bus->n_devs && i < DG_MAX_PCI_JSON; i++) {
		const struct pci_dev *d = &p->bus->cfg.devs[i];
		uint16_t t = virtio_pci_device_type(d);
		diag_json_obj_begin(&j, NULL);
		static const char hx[] = "0123456789abcdef";
		char bdf[8] = { hx[d->bus >> 4], hx[d->bus & 15u], ':', hx[(d->dev >> 4) & 1u], hx[d->dev & 15u], '.',
				(char)('0' + (d->fn & 7u)), 0 };
		diag_json_str(&j, "bdf", bdf);
		dg_hex4(tmp, d->vendor);
		diag_json_str(&j, "vendor", tmp);
		dg_hex4(tmp, d->device);
		diag_json_str(&j, "device", tmp);
		char cls[7] = { hx[d->class_code >> 4], hx[d->class_code & 15u], hx[d->subclass >> 4],
				hx[d->subclass & 15u], hx[d->prog_if >> 4], hx[d->prog_if & 15u], 0 };
		diag_json_str(&j, "class", cls);
		diag_json_str(&j, "kind", t ? dg_type_name(t) : ((d->flags & PCI_DEV_BAD) ? "rejected" : ""));
		diag_json_obj_end(&j);
	}
	diag_json_arr_end(&j);
	diag_json_arr_begin(&j, "net");
	if (dg_net_ok) {
		diag_json_obj_begin(&j, NULL);
		static const char hx[] = "0123456789abcdef";
		char mac[18];
		for (size_t i = 0; i < 6u; i++) {
			mac[i * 3u] = hx[dg_net.mac[i] >> 4];
			mac[i * 3u + 1u] = hx[dg_net.mac[i] & 15u];
			mac[i * 3u + 2u] = i == 5u ? 0 : ':';
		}
		diag_json_str(&j, "kind", "virtio-net");
		diag_json_str(&j, "mac", mac);
		diag_json_bool(&j, "link_up", vnet_link_up(&dg_net));
		diag_json_u64(&j, "queue_pairs_used", dg_net.n_pairs);
		diag_json_u64(&j, "queue_pairs_max", dg_net.dev_max_pairs);
		diag_json_obj_end(&j);
	}
	diag_json_arr_end(&j);
	diag_json_arr_begin(&j, "disks");
	for (uint32_t i = 0; i < dg_n_disks; i++) {
		const struct dg_disk *d = &dg_disks[i];
		const struct blk_topology *t = &d->blk->topo;
		diag_json_obj_begin(&j, NULL);
		diag_json_str(&j, "kind", d->kind);
		diag_json_u64(&j, "index", d->index);
		diag_json_u64(&j, "capacity_bytes", t->capacity * t->logical_block);
		diag_json_u64(&j, "blocks", t->capacity);
		diag_json_u64(&j, "block_size", t->logical_block);
		diag_json_u64(&j, "physical_block_size", t->physical_block);
		diag_json_bool(&j, "read_only", t->read_only);
		diag_json_u64(&j, "read_bytes", d->read_bytes);
		dg_json_milli(&j, "read_mb_s", diag_rate_milli(d->read_bytes, d->read_ns * 1000000ull));
		diag_json_str(&j, "read_error", d->read_err ? err_name(d->read_err) : "");
		diag_json_str(&j, "gpt", d->gpt_why);
		diag_json_u64(&j, "partitions", d->free.n_parts);
		diag_json_u64(&j, "free_first_lba", d->free.first_lba);
		diag_json_u64(&j, "free_blocks", d->free.n_blocks);
		diag_json_obj_begin(&j, "write");
		diag_json_bool(&j, "done", d->wrote);
		diag_json_str(&j, "why", d->wrote ? "" : d->write_why);
		diag_json_u64(&j, "bytes", d->write_bytes);
		diag_json_u64(&j, "first_lba", d->wrote ? d->free.first_lba : 0);
		dg_json_milli(&j, "mb_s", diag_rate_milli(d->write_bytes, d->write_ns * 1000000ull));
		diag_json_bool(&j, "verified", d->verified);
		diag_json_obj_end(&j);
		diag_json_obj_end(&j);
	}
	diag_json_arr_end(&j);
	diag_json_obj_begin(&j, "crypto");
	diag_json_bool(&j, "ok", c->ok);
	diag_json_str(&j, "failed", c->ok ? "" : c->why);
	diag_json_str(&j, "accel", c->accel ? c->accel : "");
	dg_json_milli(&j, "ecdsa_p256_sign_per_s", c->sign_milli);
	dg_json_milli(&j, "ecdsa_p256_verify_per_s", c->verify_milli);
	dg_json_milli(&j, "x25519_per_s", c->x25519_milli);
	dg_json_milli(&j, "aes_128_gcm_mb_s", c->gcm_mbs_milli);
	dg_json_milli(&j, "sha256_mb_s", c->sha_mbs_milli);
	diag_json_obj_end(&j);
	diag_json_obj_begin(&j, "wipe");
	diag_json_bool(&j, "asked", asked);
	diag_json_str(&j, "result", wipe_why);
	diag_json_obj_end(&j);
	diag_json_u64(&j, "elapsed_ms", elapsed_ns / 1000000u);
	diag_json_obj_end(&j);
	size_t len;
	int err = diag_json_finish(&j, &len);
	if (err) {
		log_rawf("diag: JSON report not printed (%s)\n", err_name(err));
		return;
	}
	log_raw("DIAG-JSON-BEGIN ", 16);
	log_raw(dg_json, len);
	log_raw(" DIAG-JSON-END\n", 15);
}

/* A rate x1000 as "123.456" into out (24 bytes). */
static void dg_milli(char *out, uint64_t v)
{
	char t[24];
	unsigned n = 0;
	uint64_t w = v / 1000u;
	do {
		t[n++] = (char)('0' + w % 10u);
		w /= 10u;
	} while (w && n < 20);
	unsigned k = 0;
	while (n)
		out[k++] = t[--n];
	out[k++] = '.';
	out[k++] = (char)('0' + v / 100u % 10u);
	out[k++] = (char)('0' + v / 10u % 10u);
	out[k++] = (char)('0' + v % 10u);
	out[k] = 0;
}

void diag_cpu_feature(struct diag_cpu *c, bool has, const char *name)
{
	if (has && c->n_features < DIAG_MAX_FEATURES)
		c->features[c->n_features++] = name;
}

int diag_run(const struct diag_platform *p)
{
	uint64_t t0 = p->now_ns();
	char a[24], b[24], c_[24];
	diag_limits_get(&dg_lim, p->wipe_prompt_s);
	log_rawf("\n==== urMQTT diagnostics ====\n");
	log_rawf("cpu: %s, %s \"%s\", %u listed by the firmware, counter %lu Hz\n", p->cpu.arch, p->cpu.vendor,
		 p->cpu.model, (unsigned)p->cpu.count, (unsigned long)p->cpu.clock_hz);
	log_rawf("cpu features:");
	for (uint32_t i = 0; i < p->cpu.n_features && i < DIAG_MAX_FEATURES; i++)
		log_rawf(" %s", p->cpu.features[i]);
	log_rawf("\nmemory: %lu MiB in the firmware's map, %lu MiB free\n", (unsigned long)(p->mem_total >> 20),
		 (unsigned long)(p->mem_free >> 20));
	if (p->bus) {
		log_rawf("pci: %u functions (%s)\n", (unsigned)p->bus->n_devs, p->pci_how ? p->pci_how : "?");
		for (uint32_t i = 0; i < p->bus->n_devs; i++) {
			const struct pci_dev *d = &p->bus->cfg.devs[i];
			uint16_t t = virtio_pci_device_type(d);
			log_rawf("  %02x:%02x.%u %04x:%04x class %02x%02x%02x %s\n", d->bus, d->dev, d->fn, d->vendor,
				 d->device, d->class_code, d->subclass, d->prog_if,
				 t ? dg_type_name(t) : ((d->flags & PCI_DEV_BAD) ? "REJECTED" : ""));
		}
	} else {
		log_rawf("pci: none\n");
	}
	dg_probe(p);
	if (dg_net_ok) {
		const uint8_t *m = dg_net.mac;
		log_rawf("net: virtio-net MAC %02x:%02x:%02x:%02x:%02x:%02x, link %s, %u of %u queue pair(s)\n", m[0],
			 m[1], m[2], m[3], m[4], m[5], vnet_link_up(&dg_net) ? "up" : "down", (unsigned)dg_net.n_pairs,
			 (unsigned)dg_net.dev_max_pairs);
	} else {
		log_rawf("net: no usable virtio-net (%s)\n", err_name(dg_net_err));
	}
	log_rawf("limits: %u ms per measurement, memory copy %u KiB, disk read %lu KiB, write %lu KiB, "
		 "%u KiB per request, WIPE prompt %u s\n",
		 (unsigned)dg_lim.measure_ms, (unsigned)(dg_lim.mem_buf_bytes >> 10),
		 (unsigned long)(dg_lim.disk_read_bytes >> 10), (unsigned long)(dg_lim.disk_write_bytes >> 10),
		 (unsigned)(dg_lim.disk_chunk_bytes >> 10), (unsigned)dg_lim.wipe_prompt_s);
	uint64_t mem_bytes;
	bool mem_no_buf;
	uint64_t mem_milli = dg_mem_copy(p, dg_lim.measure_ms, &mem_bytes, &mem_no_buf);
	dg_milli(a, mem_milli);
	if (mem_no_buf)
		log_rawf("memory copy: not measured (no free pages for two %u KiB buffers)\n",
			 (unsigned)(dg_lim.mem_buf_bytes >> 10));
	else
		log_rawf("memory copy: %s MB/s (%lu MiB in %u KiB blocks)\n", a, (unsigned long)(mem_bytes >> 20),
			 (unsigned)(dg_lim.mem_buf_bytes >> 10));

	size_t chunk = dg_lim.disk_chunk_bytes, ents_cap = MAX(chunk, (size_t)DG_GPT_ENTS_BYTES);
	uint8_t *buf = dg_pages(chunk), *back = dg_pages(chunk);
	uint8_t *ents = dg_pages(ents_cap);
	bool any_free = false;
	for (uint32_t i = 0; i < dg_n_disks; i++) {
		struct dg_disk *d = &dg_disks[i];
		const struct blk_topology *t = &d->blk->topo;
		if (!buf || !back || !ents || t->logical_block > chunk) {
			d->read_err = -E_NOMEM;
			d->gpt_why = "no buffer";
			continue;
		}
		dg_disk_read(p, d, buf);
		dg_disk_gpt(d, buf, chunk, ents, ents_cap);
		dg_milli(a, diag_rate_milli(d->read_bytes, d->read_ns * 1000000ull));
		log_rawf("disk %s%u: %lu MiB (%lu blocks of %u B, physical %u)%s; read %lu KiB from LBA 0 at %s MB/s%s%s\n",
			 d->kind, (unsigned)d->index, (unsigned long)((t->capacity * t->logical_block) >> 20),
			 (unsigned long)t->capacity, (unsigned)t->logical_block, (unsigned)t->physical_block,
			 t->read_only ? ", read-only" : "", (unsigned long)(d->read_bytes >> 10), a,
			 d->read_err ? ", FAILED: " : "", d->read_err ? err_name(d->read_err) : "");
		if (d->gpt_ok)
			log_rawf("disk %s%u: GPT valid, %u partition(s); unallocated: %lu blocks at LBA %lu\n", d->kind,
				 (unsigned)d->index, (unsigned)d->free.n_parts, (unsigned long)d->free.n_blocks,
				 (unsigned long)d->free.first_lba);
		else
			log_rawf("disk %s%u: no GPT the diagnostics trust (%s): never written\n", d->kind,
				 (unsigned)d->index, d->gpt_why);
		if (d->gpt_ok && d->free.n_blocks && !t->read_only)
			any_free = true;
		d->write_why = t->read_only ? "read-only disk"
					    : (d->gpt_ok && d->free.n_blocks ? "not confirmed"
									     : "no unallocated space in a valid GPT");
	}

	struct diag_crypto cr;
	diag_crypto_measure(&cr, p->now_ns, dg_lim.measure_ms);
	if (cr.ok) {
		dg_milli(a, cr.sign_milli);
		dg_milli(b, cr.verify_milli);
		dg_milli(c_, cr.x25519_milli);
		log_rawf("crypto (%s): P-256 ECDSA %s sign/s, %s verify/s; X25519 %s/s\n", cr.accel, a, b, c_);
		dg_milli(a, cr.gcm_mbs_milli);
		dg_milli(b, cr.sha_mbs_milli);
		log_rawf("crypto: AES-128-GCM %s MB/s, SHA-256 %s MB/s (16 KiB per call)\n", a, b);
	} else {
		log_rawf("crypto: FAILED (%s)\n", cr.why);
	}

	const char *wipe_why = "skipped: no disk with unallocated space in a valid GPT";
	bool asked = false;
	if (any_free) {
		asked = true;
		if (dg_ask_wipe(p, &wipe_why)) {
			for (uint32_t i = 0; i < dg_n_disks; i++) {
				struct dg_disk *d = &dg_disks[i];
				if (!d->gpt_ok || !d->free.n_blocks || d->blk->topo.read_only)
					continue;
				d->write_why = "";
				dg_disk_write(p, d, buf, back);
				dg_milli(a, diag_rate_milli(d->write_bytes, d->write_ns * 1000000ull));
				log_rawf("disk %s%u: wrote %lu KiB at LBA %lu at %s MB/s, read back %s%s%s\n", d->kind,
					 (unsigned)d->index, (unsigned long)(d->write_bytes >> 10),
					 (unsigned long)d->free.first_lba, a, d->verified ? "identical" : "DIFFERENT",
					 d->write_why[0] ? "; " : "", d->write_why);
			}
			wipe_why = "written";
		}
	}
	log_rawf("write test: %s\n", wipe_why);
	dg_report_json(p, mem_milli, &cr, asked, wipe_why, p->now_ns() - t0);
	log_rawf("==== diagnostics done ====\n");
	return 0;
}
