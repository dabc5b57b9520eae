/* SPDX-License-Identifier: MIT
 *
 * The installer (kernel/node/install.h). Reads every disk only through store/dev.h; writes
 * only the one target, and only after it was judged (empty, or install-erase). What makes
 * a disk hold data (ADR "how install finds and judges the disk"): store_disk_probe's verdict
 * is not BLANK (a GPT or an MBR, a filesystem signature, any non-zero byte of its first and
 * last MiB or of its 64 samples, a layout of ours), or any non-zero byte in the first and
 * last MiB, or where the plan puts the two superblock slots. The boot medium is the disk
 * that holds an ISO 9660 volume descriptor ("CD001" at byte 32769: the hybrid ISO written
 * to a USB stick or attached as a disk); a read-only disk is never a target. The BIOS boot
 * image is checked (store_biosimg_parse) before any disk is looked at; where it cannot
 * apply, the console says why the disk boots by UEFI only.
 */
#include "kernel/node/install.h"

#include "kernel/log.h"
#include "kernel/node/port.h"
#include "kernel/panic.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "store/biosimg.h"
#include "store/dev.h"
#include "store/gpt.h"
#include "store/layout.h"
#include "urmqtt_config.h"

#define INST_EDGE_BYTES (1u << 20)  /* the first and last MiB read in full */
#define INST_ISO_PVD 32768u         /* ISO 9660: the primary volume descriptor's byte */

static uint64_t inst_now_ns(void *ctx)
{
	(void)ctx;
	return node_port_now_ns();
}

static void inst_dev(const struct node_install_config *c, uint32_t i, struct store_dev *d)
{
	const struct store_dev_port port = { inst_now_ns, NULL, NULL };
	int err = store_dev_init(d, c->disks[i], c->bounce, c->bounce_len, CONF_STORAGE_IO_TIMEOUT_MS, &port);
	if (err)
		PANIC("install: %s: unusable block size %u (%s)", c->names[i],
		      (unsigned)c->disks[i]->topo.logical_block, err_name(err));
}

static uint64_t inst_mib(const struct blk_dev *b)
{
	return b->topo.capacity * b->topo.logical_block >> 20;
}

/* Whether [lba, lba + n) holds a non-zero byte; reads through scratch. */
static bool inst_nonzero(const struct node_install_config *c, uint32_t i, struct store_dev *d, uint64_t lba,
			 uint64_t n)
{
	uint32_t bs = store_dev_block_size(d);
	uint32_t per = (uint32_t)(c->scratch_len / bs);
	while (n) {
		uint32_t k = (uint32_t)MIN(n, (uint64_t)per);
		int err = store_dev_read(d, lba, k, c->scratch);
		if (err)
			PANIC("install: %s: read failed at block %lu (%s)", c->names[i], (unsigned long)lba,
			      err_name(err));
		for (size_t j = 0; j < (size_t)k * bs; j++)
			if (c->scratch[j])
				return true;
		lba += k;
		n -= k;
	}
	return false;
}

static bool inst_is_iso(const struct node_install_config *c, uint32_t i, struct store_dev *d)
{
	uint32_t bs = store_dev_block_size(d);
	if ((uint64_t)INST_ISO_PVD + bs > store_dev_blocks(d) * bs || bs > c->scratch_len)
		return false;
	int err = store_dev_read(d, INST_ISO_PVD / bs, 1, c->scratch);
	if (err)
		PANIC("install: %s: read failed (%s)", c->names[i], err_name(err));
	const uint8_t *v = c->scratch + INST_ISO_PVD % bs;
	return v[0] == 1 && memcmp(v + 1, "CD001", 5) == 0;
}

/* The one target, or a stop naming what was found. */
static uint32_t inst_pick(const struct node_install_config *c)
{
	uint32_t target = UINT32_MAX, n_cand = 0;
	char cands[160] = "";
	size_t used = 0;
	for (uint32_t i = 0; i < c->n_disks; i++) {
		struct blk_dev *b = c->disks[i];
		struct store_dev d;
		inst_dev(c, i, &d);
		const char *skip = NULL;
		if (b->topo.read_only)
			skip = "read-only";
		else if (inst_is_iso(c, i, &d))
			skip = "the boot medium (an ISO 9660 image)";
		LOG_INFO("install", "%s: %lu MiB (%lu blocks of %u B)%s%s", c->names[i], (unsigned long)inst_mib(b),
			 (unsigned long)b->topo.capacity, (unsigned)b->topo.logical_block, skip ? ": not a target, " : "",
			 skip ? skip : "");
		if (skip)
			continue;
		n_cand++;
		target = i;
		size_t nl = strlen(c->names[i]);
		if (used + nl + 3 < sizeof cands) {
			if (used) {
				memcpy(cands + used, ", ", 2);
				used += 2;
			}
			memcpy(cands + used, c->names[i], nl);
			used += nl;
			cands[used] = 0;
		}
	}
	if (n_cand == 0)
		PANIC("install: no disk to install to (%u block device(s), none writable other than the boot medium): "
		      "attach one empty disk", (unsigned)c->n_disks);
	if (n_cand > 1)
		PANIC("install: %u disks could be the target (%s): refusing to choose; attach only the disk to "
		      "install to", (unsigned)n_cand, cands);
	return target;
}

static void inst_write_fail(const char *name, const char *what, int err)
{
	PANIC("install: %s: %s failed (%s); the disk holds no urMQTT layout: run the install again", name, what,
	      err_name(err));
}

void node_install(const struct node_install_config *c)
{
	if (!c || !c->bounce || c->bounce_len < 65536u || !c->scratch || c->scratch_len < (size_t)STORE_LAYOUT_SCRATCH ||
	    c->n_disks > NODE_INSTALL_MAX_DISKS)
		PANIC("install: no memory for the installer's buffers");
	LOG_INFO("install", "urMQTT installer (%s): %u block device(s)", c->erase ? "erasing a disk that holds data" :
		 "refusing a disk that holds data", (unsigned)c->n_disks);
	if (!c->esp || c->esp_len < 512u)
		PANIC("install: the boot loader passed no ESP image (%lu B): boot the ISO's install entry (x86_64: "
		      "GRUB's module2 \"esp\"; aarch64: \\EFI\\urmqtt\\esp.img on the boot volume)",
		      (unsigned long)(c->esp ? c->esp_len : 0));
	if (c->esp[510] != 0x55 || c->esp[511] != 0xaa)
		PANIC("install: the ESP image (%lu B) is not a FAT image (no boot signature): was it passed "
		      "gzipped with --nounzip?", (unsigned long)c->esp_len);
	struct store_biosimg bim;
	if (c->bios) {
		enum store_biosimg_rej rej;
		if (store_biosimg_parse(c->bios, c->bios_len, &bim, &rej) != 0)
			PANIC("install: the BIOS boot image (the \"bios\" module, %lu B) is malformed: %s; nothing "
			      "written", (unsigned long)c->bios_len, store_biosimg_rej_name(rej));
	}
	uint32_t t = inst_pick(c);
	const char *name = c->names[t];
	struct blk_dev *b = c->disks[t];
	struct store_dev d;
	inst_dev(c, t, &d);
	uint32_t bs = store_dev_block_size(&d);
	uint64_t n = store_dev_blocks(&d);

	const struct store_layout_config lc = {
		.esp_bytes = (uint64_t)CONF_STORAGE_ESP_MB << 20,
		.wal_bytes = (uint64_t)CONF_STORAGE_WAL_MB << 20,
		.telemetry_pct = CONF_STORAGE_TELEMETRY_PCT,
	};
	struct store_plan p;
	uint64_t min_bytes = 0;
	int err = store_layout_plan(&lc, n, bs, b->topo.optimal_io, &p, &min_bytes);
	if (err == -E_RANGE)
		PANIC("install: %s has %lu MiB; this image's layout needs at least %lu MiB", name,
		      (unsigned long)inst_mib(b), (unsigned long)((min_bytes + (1u << 20) - 1u) >> 20));
	if (err)
		PANIC("install: %s: no layout for %lu blocks of %u B (%s)", name, (unsigned long)n, (unsigned)bs,
		      err_name(err));
	if (c->esp_len > p.esp_blocks * bs)
		PANIC("install: the ESP image (%lu B) is larger than the ESP partition (%lu B)",
		      (unsigned long)c->esp_len, (unsigned long)(p.esp_blocks * bs));
	LOG_INFO("install", "target: %s, %lu MiB (%lu blocks of %u B): ESP %lu MiB at block %lu, data partition "
			    "%lu MiB at block %lu", name, (unsigned long)inst_mib(b), (unsigned long)n, (unsigned)bs,
		 (unsigned long)(p.esp_blocks * bs >> 20), (unsigned long)p.esp_start,
		 (unsigned long)(p.part_blocks * bs >> 20), (unsigned long)p.part_start);
	/* BIOS boot: the partition the raw disk has, when the image fits this disk's plan. */
	const char *uefi_only = "no BIOS boot image was given (x86_64: the install entry's \"bios\" module; "
				"aarch64 machines boot by UEFI)";
	if (c->bios) {
		uint8_t g[16];
		if (node_port_random(g, sizeof g) != 0)
			PANIC("install: no random numbers for the GPT's GUIDs");
		g[7] = (uint8_t)((g[7] & 0x0fu) | 0x40u); /* a version-4 GUID, on-disk form */
		g[8] = (uint8_t)((g[8] & 0x3fu) | 0x80u);
		if (store_biosimg_plan(&p, &bim, g, &uefi_only) == 0)
			uefi_only = NULL;
	}
	if (uefi_only)
		LOG_WARN("install", "%s will boot by UEFI only: %s", name, uefi_only);
	else
		LOG_INFO("install", "BIOS boot too: GRUB's core (%u sectors) in a BIOS boot partition at blocks "
				    "%lu..%lu, its boot code in LBA 0", (unsigned)bim.core_sectors,
			 (unsigned long)p.bios_start, (unsigned long)(p.bios_start + p.bios_blocks - 1u));

	/* Does it hold data? */
	struct store_disk_info info;
	err = store_disk_probe(&d, c->scratch, c->scratch_len, &info);
	if (err)
		PANIC("install: %s: reading it failed (%s)", name, err_name(err));
	uint64_t edge = MIN((uint64_t)INST_EDGE_BYTES / bs, n);
	uint64_t slots = MIN((uint64_t)2u * MAX(4096u, bs) / bs, p.part_blocks);
	const char *data = NULL;
	if (info.kind != STORE_DISK_BLANK)
		data = info.what;
	else if (inst_nonzero(c, t, &d, 0, edge) || inst_nonzero(c, t, &d, n - edge, edge))
		data = "non-zero bytes in its first or last MiB";
	else if (inst_nonzero(c, t, &d, p.part_start, slots))
		data = "non-zero bytes where the urMQTT superblocks go";
	if (data && !c->erase)
		PANIC("install: %s holds data (%s): NOT written. To install over it, boot the entry "
		      "\"Install urMQTT, erasing the disk's data\" (urmqtt.mode=install-erase)", name, data);
	if (data)
		LOG_WARN("install", "%s holds data (%s): erasing it, as asked (install-erase)", name, data);
	else
		LOG_INFO("install", "%s is empty", name);

	/* 1. Whatever partition table was there goes first (a stop from here on leaves a disk
	 * without one); 2. the ESP; 3. the BIOS core and LBA 0's boot code (no partition
	 * record: still no partition table); 4. the superblock slots and region heads, then our
	 * GPT, whose protective MBR keeps that boot code. */
	uint64_t first_usable, last_usable;
	err = store_gpt_geometry(bs, n, &first_usable, &last_usable);
	if (err)
		PANIC("install: %s: too small for a GPT", name);
	err = store_dev_zero(&d, 0, first_usable);
	if (!err)
		err = store_dev_zero(&d, last_usable + 1u, n - last_usable - 1u);
	if (!err)
		err = store_dev_flush(&d);
	if (err)
		inst_write_fail(name, "erasing the partition tables", err);
	uint64_t whole = c->esp_len / bs;
	size_t tail = c->esp_len % bs;
	for (uint64_t done = 0; done < whole && !err;) {
		uint32_t k = (uint32_t)MIN(whole - done, (uint64_t)(c->bounce_len / bs));
		err = store_dev_write(&d, p.esp_start + done, k, c->esp + done * bs);
		done += k;
	}
	if (!err && tail) {
		memset(c->scratch, 0, bs);
		memcpy(c->scratch, c->esp + whole * bs, tail);
		err = store_dev_write(&d, p.esp_start + whole, 1, c->scratch);
	}
	/* An image shorter than the partition (aarch64's, without its trailing zeros): the
	 * rest zeroed, so the partition holds exactly the image and nothing of the disk's past. */
	uint64_t esp_done = whole + (tail ? 1u : 0u);
	if (!err && esp_done < p.esp_blocks)
		err = store_dev_zero(&d, p.esp_start + esp_done, p.esp_blocks - esp_done);
	if (!err)
		err = store_dev_flush(&d);
	if (err)
		inst_write_fail(name, "writing the ESP", err);
	LOG_INFO("install", "ESP written: %lu KiB", (unsigned long)(c->esp_len >> 10));
	if (p.bios_blocks) {
		err = store_biosimg_write(&d, &p, &bim, c->scratch, c->scratch_len);
		if (err)
			inst_write_fail(name, "writing the BIOS boot code", err);
		LOG_INFO("install", "BIOS boot code written: GRUB's core at block %lu, boot code in LBA 0",
			 (unsigned long)p.bios_start);
	}
	uint8_t guids[48];
	if (node_port_random(guids, sizeof guids) != 0)
		PANIC("install: no random numbers for the GPT's GUIDs");
	err = store_disk_format_gpt(&d, &p, guids, c->scratch, c->scratch_len);
	if (err)
		inst_write_fail(name, "writing the GPT", err);
	LOG_INFO("install", "GPT written: ESP, urMQTT data partition (formatted at its first boot)%s; "
			    "%lu blocks written", p.bios_blocks ? " and BIOS boot partition" : "",
		 (unsigned long)(d.st.blocks[STORE_DEV_WRITE] + d.st.blocks[STORE_DEV_ZERO]));
	LOG_INFO("install", "%s boots by UEFI%s", name, p.bios_blocks ? " and by BIOS" : " only");
	log_rawf("install: done, powering off\n");
}
