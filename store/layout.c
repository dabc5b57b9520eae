/* SPDX-License-Identifier: MIT
 *
 * store/layout.h: disk layout v2, the byte-level specification of which is
 * docs/DISK-FORMAT.md. Owns the superblock codec, the plan (where everything goes on a
 * disk of a given size), the probe (what a disk holds, in words for the console) and the
 * two writers: the format of a blank disk and the commit of the next superblock
 * generation. Layer: store/, portable and freestanding; disk I/O only through
 * store/dev.h, the GPT through store/gpt.h. Never allocates (the caller lends a scratch
 * buffer), never writes from the probe, never writes a disk the probe did not call
 * BLANK or INTERRUPTED (the caller checks the kind before it formats).
 *
 * Design note. What the probe says about a disk, and what moves it on:
 *
 *     BLANK ------------ store_disk_format -----------> OURS (generation 1)
 *       |   (a power cut part-way)                   ^    |
 *       v                                            |    | store_super_commit
 *     INTERRUPTED ------ store_disk_format ----------+    v
 *                                                    OURS (generation g + 1)
 *     OURS on a larger disk --store_grow (store/grow.h): GPT, then superblock--> OURS
 *       (cut after the GPT: OURS with grow_pending, the GPT's data partition longer by
 *        whole units; store_grow run again finishes it)
 *     FOREIGN, OTHER_VERSION, DAMAGED: nothing here ever writes them.
 *
 * Invariants:
 *  1. store_disk_probe only reads (store_dev_read); so does every classification helper.
 *  2. Every state a power cut can leave inside store_disk_format probes as BLANK,
 *     INTERRUPTED or OURS; inside store_super_commit as OURS with the old or the new
 *     generation. Format order: GPT headers zeroed, flush; both entry arrays, flush;
 *     both headers and the protective MBR (LBA 0's boot code and disk signature kept as
 *     read: a BIOS boot of the disk survives), flush (so a header is never durable beside
 *     an array it does not describe, and store_gpt_footprint_check recognises every
 *     partial state); superblock slots and the head of every region zeroed, flush;
 *     superblock generation 1 in slot A, flush.
 *  3. A superblock's 512 bytes are the first sector of its slot and the rest of the slot
 *     is zero, so a torn slot write leaves the old header or the new one (sector
 *     granularity), and the CRC-32C catches anything worse.
 *  4. Generation g lives in slot (g - 1) % 2: the probe rejects (STORE_REJ_FIELD) a
 *     superblock found in the other slot, so the two slots never hold one generation.
 *  5. Nothing is written that our own decoders would reject: format and commit decode
 *     the GPT and the superblock they are about to write first (-E_INVAL if not).
 *  6. A superblock names at most one WAL and one TELEMETRY region; DB, BACKUP_A and
 *     BACKUP_B may have several extents (superblock order = file order), all disjoint.
 *     The probe calls a GPT data entry longer than the superblock's partition by whole
 *     units OURS (grow_pending), never one that is shorter.
 */
#include "store/layout.h"

#include "lib/bytes.h"
#include "lib/crc32c.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "store/gpt.h"
#include "store/wire_disk.h"

#define ALIGN_MAX (64u << 20)          /* the largest optimal_io taken as the alignment */
#define FORMAT_ZERO_BYTES (64u << 10)  /* the head of every region zeroed by the format */
#define PROBE_EDGE_BYTES (1u << 20)    /* the first and last MiB read in full */
#define PROBE_SAMPLES 64u
#define PROBE_SAMPLE_BYTES 4096u
#define NONE UINT64_MAX

STATIC_ASSERT(STORE_SB_OFF_TAIL == STORE_SB_OFF_REGIONS + STORE_MAX_REGIONS * STORE_SB_REGION_BYTES,
	      "the region table ends where the zero tail starts");
STATIC_ASSERT(STORE_SB_OFF_CRC + 4u == STORE_SUPER_BYTES, "the CRC is the header's last field");
STATIC_ASSERT(3u * 65536u <= STORE_ALIGN_MIN, "two slots and the scratch block fit the meta area");

static const char esp_name[] = "EFI system partition";
static const char bios_name[] = "BIOS boot partition";
static const char data_name[] = "urMQTT data";

static const char *const rej_names[STORE_REJ__COUNT] = {
	[STORE_REJ_NONE] = "none",      [STORE_REJ_MAGIC] = "magic",   [STORE_REJ_VERSION] = "version",
	[STORE_REJ_CRC] = "crc",        [STORE_REJ_FIELD] = "field",   [STORE_REJ_REGION] = "region",
};

const char *store_layout_rej_name(enum store_layout_rej r)
{
	if ((unsigned)r >= STORE_REJ__COUNT)
		return "?";
	return rej_names[r];
}

const char *store_disk_kind_name(enum store_disk_kind k)
{
	switch (k) {
	case STORE_DISK_BLANK: return "blank";
	case STORE_DISK_OURS: return "ours";
	case STORE_DISK_INTERRUPTED: return "interrupted";
	case STORE_DISK_FOREIGN: return "foreign";
	case STORE_DISK_OTHER_VERSION: return "other version";
	case STORE_DISK_DAMAGED: return "damaged";
	}
	return "?";
}

static bool block_size_ok(uint32_t bs)
{
	return bs >= 512u && bs <= 65536u && (bs & (bs - 1u)) == 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* A superblock slot: max(4096, block) bytes. */
static uint32_t slot_bytes(uint32_t bs)
{
	return bs > STORE_SLOT_MIN ? bs : STORE_SLOT_MIN;
}

/* ---- the superblock ---- */

int store_super_encode(const struct store_super *sb, uint8_t *out, size_t out_len)
{
	if (!sb || !out || out_len < STORE_SUPER_BYTES || sb->n_regions > STORE_MAX_REGIONS)
		return -E_INVAL;
	struct wcur w = wcur_make(out, STORE_SUPER_BYTES);
	wcur_bytes(&w, STORE_SB_MAGIC, 8);
	wcur_le32(&w, STORE_LAYOUT_VERSION); /* this code writes version 2 only */
	wcur_le32(&w, STORE_SUPER_BYTES);
	wcur_le64(&w, sb->generation);
	wcur_bytes(&w, sb->part_guid, 16);
	wcur_le32(&w, sb->block_size);
	wcur_le32(&w, sb->align_bytes);
	wcur_le64(&w, sb->part_start);
	wcur_le64(&w, sb->part_blocks);
	wcur_le64(&w, sb->created_s);
	wcur_le32(&w, sb->db_state);
	wcur_le32(&w, sb->backup_slot);
	wcur_le64(&w, sb->backup_generation);
	wcur_le32(&w, sb->n_regions);
	wcur_le32(&w, 0); /* reserved */
	for (uint32_t i = 0; i < sb->n_regions; i++) {
		wcur_le32(&w, sb->regions[i].kind);
		wcur_le32(&w, sb->regions[i].flags);
		wcur_le64(&w, sb->regions[i].start);
		wcur_le64(&w, sb->regions[i].blocks);
	}
	wcur_zero(&w, STORE_SB_OFF_CRC - w.pos);
	if (!wcur_ok(&w) || w.pos != STORE_SB_OFF_CRC)
		return -E_INVAL;
	wcur_le32(&w, crc32c(0, out, STORE_SB_OFF_CRC));
	return wcur_ok(&w) ? 0 : -E_INVAL;
}

static int sb_reject(enum store_layout_rej *rej, enum store_layout_rej why)
{
	*rej = why;
	return -E_CORRUPT;
}

/* The region table of sb against its own geometry (fields already checked). */
static enum store_layout_rej check_regions(const struct store_super *sb)
{
	uint64_t ab = sb->align_bytes / sb->block_size; /* >= 16: align >= 1 MiB, block <= 64 KiB */
	/* the kinds whose file may have several extents (a growth appends them) */
	const uint32_t repeats = 1u << STORE_REGION_DB | 1u << STORE_REGION_BACKUP_A | 1u << STORE_REGION_BACKUP_B;
	uint32_t seen = 0;
	for (uint32_t i = 0; i < sb->n_regions; i++) {
		const struct store_region *r = &sb->regions[i];
		if (r->kind == STORE_REGION_NONE || r->kind >= STORE_REGION__KINDS ||
		    (seen & ~repeats & (1u << r->kind)) || r->flags != 0)
			return STORE_REJ_REGION;
		seen |= 1u << r->kind;
		if (r->blocks == 0 || r->start % ab || r->blocks % ab)
			return STORE_REJ_REGION;
		/* after the meta area (the partition's first unit), inside the partition */
		if (r->start < ab || r->start > sb->part_blocks || r->blocks > sb->part_blocks - r->start)
			return STORE_REJ_REGION;
		for (uint32_t j = 0; j < i; j++) {
			const struct store_region *o = &sb->regions[j];
			if (r->start < o->start + o->blocks && o->start < r->start + r->blocks)
				return STORE_REJ_REGION;
		}
	}
	if (!(seen & (1u << STORE_REGION_DB)) || !(seen & (1u << STORE_REGION_WAL)))
		return STORE_REJ_REGION;
	return STORE_REJ_NONE;
}

int store_super_decode(const uint8_t *in, size_t len, struct store_super *out, enum store_layout_rej *rej,
		       uint32_t *version)
{
	if (out)
		memset(out, 0, sizeof *out);
	if (rej)
		*rej = STORE_REJ_NONE;
	if (version)
		*version = 0;
	if (!in || !out || !rej || len < STORE_SUPER_BYTES) {
		if (rej)
			*rej = STORE_REJ_FIELD;
		return -E_INVAL;
	}
	struct cur c = cur_make(in, STORE_SUPER_BYTES);
	const uint8_t *magic = cur_ptr(&c, 8);
	if (!magic || memcmp(magic, STORE_SB_MAGIC, 8) != 0)
		return sb_reject(rej, STORE_REJ_MAGIC);
	/* The version before the CRC: another version may put its CRC elsewhere. */
	uint32_t v = cur_le32(&c);
	if (v != STORE_LAYOUT_VERSION) {
		if (version)
			*version = v;
		return sb_reject(rej, STORE_REJ_VERSION);
	}
	struct cur whole = cur_make(in, STORE_SUPER_BYTES);
	const uint8_t *body = cur_ptr(&whole, STORE_SB_OFF_CRC);
	uint32_t stored_crc = cur_le32(&whole);
	if (!body || !cur_ok(&whole) || crc32c(0, body, STORE_SB_OFF_CRC) != stored_crc)
		return sb_reject(rej, STORE_REJ_CRC);

	struct store_super sb;
	memset(&sb, 0, sizeof sb);
	sb.version = v;
	uint32_t hdr_bytes = cur_le32(&c);
	sb.generation = cur_le64(&c);
	cur_bytes(&c, sb.part_guid, 16);
	sb.block_size = cur_le32(&c);
	sb.align_bytes = cur_le32(&c);
	sb.part_start = cur_le64(&c);
	sb.part_blocks = cur_le64(&c);
	sb.created_s = cur_le64(&c);
	sb.db_state = cur_le32(&c);
	sb.backup_slot = cur_le32(&c);
	sb.backup_generation = cur_le64(&c);
	sb.n_regions = cur_le32(&c);
	uint32_t reserved = cur_le32(&c);
	bool unused_zero = true;
	for (uint32_t i = 0; i < STORE_MAX_REGIONS; i++) {
		struct store_region r;
		r.kind = cur_le32(&c);
		r.flags = cur_le32(&c);
		r.start = cur_le64(&c);
		r.blocks = cur_le64(&c);
		if (i < sb.n_regions)
			sb.regions[i] = r;
		else if (r.kind || r.flags || r.start || r.blocks)
			unused_zero = false;
	}
	const uint8_t *tail = cur_ptr(&c, STORE_SB_OFF_CRC - STORE_SB_OFF_TAIL);
	if (!cur_ok(&c) || !tail)
		return sb_reject(rej, STORE_REJ_FIELD); /* 512 bytes were there: cannot happen */

	uint32_t bs = sb.block_size;
	if (hdr_bytes != STORE_SUPER_BYTES || sb.generation == 0 || !block_size_ok(bs) ||
	    sb.align_bytes < STORE_ALIGN_MIN || sb.align_bytes % bs || sb.db_state > STORE_DB_READY ||
	    sb.backup_slot > 2u || sb.n_regions == 0 || sb.n_regions > STORE_MAX_REGIONS || reserved != 0 ||
	    !unused_zero || !all_zero(tail, STORE_SB_OFF_CRC - STORE_SB_OFF_TAIL))
		return sb_reject(rej, STORE_REJ_FIELD);
	/* the partition: past LBA 0, and its end addressable in bytes */
	if (sb.part_start == 0 || sb.part_start > UINT64_MAX / bs || sb.part_blocks > UINT64_MAX / bs - sb.part_start)
		return sb_reject(rej, STORE_REJ_FIELD);
	enum store_layout_rej r = check_regions(&sb);
	if (r != STORE_REJ_NONE)
		return sb_reject(rej, r);
	*out = sb;
	return 0;
}

const struct store_region *store_super_region(const struct store_super *sb, enum store_region_kind k)
{
	return store_super_extent(sb, k, 0);
}

const struct store_region *store_super_extent(const struct store_super *sb, enum store_region_kind k, uint32_t i)
{
	if (!sb)
		return NULL;
	for (uint32_t j = 0; j < sb->n_regions && j < STORE_MAX_REGIONS; j++)
		if (sb->regions[j].kind == (uint32_t)k && i-- == 0)
			return &sb->regions[j];
	return NULL;
}

uint32_t store_super_extents(const struct store_super *sb, enum store_region_kind k, uint64_t *blocks)
{
	uint32_t n = 0;
	uint64_t total = 0;
	for (uint32_t j = 0; sb && j < sb->n_regions && j < STORE_MAX_REGIONS; j++)
		if (sb->regions[j].kind == (uint32_t)k) {
			n++;
			total += sb->regions[j].blocks; /* decoded: each inside the partition, disjoint */
		}
	if (blocks)
		*blocks = total;
	return n;
}

/* ---- the plan ---- */

/* Alignment units of each region (indexed by kind) for r units after the meta area.
 * 0, or -E_RANGE when a region would get none. Success is monotonic in r: r - wal
 * never decreases and the telemetry share gives back what the three equal parts need
 * (only on disks of a few dozen units with a high percentage). r < 2^44. */
static int plan_units(uint32_t pct, uint64_t wal_want, uint64_t r, uint64_t u[STORE_REGION__KINDS])
{
	uint64_t wal = MIN(wal_want, r / 16u);
	if (wal < 1u)
		wal = 1u;
	uint64_t tel = r * pct / 100u;
	if ((pct && tel < 1u) || r < wal + 3u + (pct ? 1u : 0u))
		return -E_RANGE;
	if (tel > r - wal - 3u)
		tel = r - wal - 3u;
	uint64_t each = (r - wal - tel) / 3u;
	u[STORE_REGION_NONE] = 0;
	u[STORE_REGION_DB] = each;
	u[STORE_REGION_WAL] = wal;
	u[STORE_REGION_TELEMETRY] = tel;
	u[STORE_REGION_BACKUP_A] = each;
	u[STORE_REGION_BACKUP_B] = each;
	return 0;
}

int store_layout_plan(const struct store_layout_config *cfg, uint64_t disk_blocks, uint32_t block_size,
		      uint32_t optimal_io, struct store_plan *out, uint64_t *min_bytes)
{
	if (min_bytes)
		*min_bytes = 0;
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	if (!cfg || !block_size_ok(block_size) || cfg->telemetry_pct > 90u || disk_blocks > UINT64_MAX / block_size)
		return -E_INVAL;
	uint32_t align = STORE_ALIGN_MIN;
	if (optimal_io > STORE_ALIGN_MIN && optimal_io % STORE_ALIGN_MIN == 0 && optimal_io <= ALIGN_MAX)
		align = optimal_io;
	if (align % block_size)
		return -E_INVAL; /* cannot happen: blocks are powers of two up to 64 KiB */
	uint64_t bs = block_size, ab = align / block_size;
	uint64_t lim = UINT64_MAX / bs; /* blocks in the largest disk whose bytes we can count */
	uint64_t eb = store_gpt_array_blocks(block_size);
	uint64_t esp_start = div_up(2u + eb, ab) * ab; /* first aligned LBA after the primary GPT */
	uint64_t esp_units = div_up(cfg->esp_bytes, align);
	if (esp_units >= lim / ab - 1u)
		return -E_INVAL; /* no disk holds that ESP */
	uint64_t part_start = esp_start + esp_units * ab;
	uint64_t wal_want = div_up(cfg->wal_bytes, align);
	uint64_t u[STORE_REGION__KINDS];

	/* The smallest disk: the fewest units after the meta area that plan (found by trying,
	 * at most ~130 for 90 percent), then the partition ends where the backup array starts. */
	uint64_t r_min = 0;
	for (uint64_t r = 1; r <= 4096u && !r_min; r++)
		if (plan_units(cfg->telemetry_pct, wal_want, r, u) == 0)
			r_min = r;
	if (!r_min)
		return -E_INVAL;
	uint64_t tail = (r_min + 1u) * ab + 1u + eb;
	if (part_start > lim - tail)
		return -E_INVAL;
	uint64_t min_blocks = part_start + tail;
	if (min_bytes)
		*min_bytes = min_blocks * bs;
	if (disk_blocks < min_blocks)
		return -E_RANGE;

	uint64_t end = (disk_blocks - 1u - eb) / ab * ab; /* the last usable LBA + 1, rounded down */
	uint64_t units = (end - part_start) / ab;
	if (plan_units(cfg->telemetry_pct, wal_want, units - 1u, u))
		return -E_RANGE; /* monotonic: cannot happen */
	uint64_t scratch = MAX((uint64_t)STORE_SCRATCH_BYTES, bs) / bs;

	out->block_size = block_size;
	out->align_bytes = align;
	out->disk_blocks = disk_blocks;
	out->esp_start = esp_units ? esp_start : 0;
	out->esp_blocks = esp_units * ab;
	out->part_start = part_start;
	out->part_blocks = units * ab;
	out->scratch_lba = part_start + ab - scratch;
	static const uint32_t order[] = { STORE_REGION_DB, STORE_REGION_WAL, STORE_REGION_TELEMETRY,
					  STORE_REGION_BACKUP_A, STORE_REGION_BACKUP_B };
	uint64_t at = ab;
	for (uint32_t i = 0; i < ARRAY_LEN(order); i++) {
		if (u[order[i]] == 0)
			continue; /* telemetry at 0 percent: no region */
		struct store_region *r = &out->regions[out->n_regions++];
		r->kind = order[i];
		r->flags = 0;
		r->start = at;
		r->blocks = u[order[i]] * ab;
		at += r->blocks;
	}
	return 0;
}

bool store_plan_keep_bios(struct store_plan *p, const struct store_disk_info *info)
{
	if (!p || !info || info->kind != STORE_DISK_INTERRUPTED || info->bios_blocks == 0 || p->block_size == 0)
		return false;
	uint64_t fu, lu;
	if (store_gpt_geometry(p->block_size, p->disk_blocks, &fu, &lu))
		return false;
	uint64_t first = p->esp_blocks ? p->esp_start : p->part_start;
	if (info->bios_start < fu || info->bios_start >= first || info->bios_blocks > first - info->bios_start)
		return false;
	p->bios_start = info->bios_start;
	p->bios_blocks = info->bios_blocks;
	memcpy(p->bios_guid, info->bios_guid, 16);
	return true;
}

/* ---- the probe ---- */

static int dev_read(void *ctx, uint64_t lba, uint32_t n, void *buf)
{
	return store_dev_read(ctx, lba, n, buf);
}

static void say(struct store_disk_info *out, enum store_disk_kind k, const char *fmt, ...) PRINTF_LIKE(3, 4);
static void say(struct store_disk_info *out, enum store_disk_kind k, const char *fmt, ...)
{
	va_list ap;
	out->kind = k;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(out->what, sizeof out->what, fmt, ap);
	va_end(ap);
}

/* What LBA 0 holds as an MBR (its first 512 bytes; blk holds at least that). */
struct mbr_facts {
	bool sig;         /* 0x55AA at 510 */
	bool protective;  /* a record of type 0xEE */
	uint32_t n_parts; /* records not all zero */
};

static struct mbr_facts mbr_facts(const uint8_t *blk, size_t len)
{
	struct mbr_facts f = { false, false, 0 };
	struct cur c = cur_make(blk, len);
	cur_skip(&c, STORE_MBR_OFF_PARTS);
	for (uint32_t i = 0; i < STORE_MBR_N_PARTS; i++) {
		struct cur r = cur_sub(&c, STORE_MBR_PART_BYTES);
		const uint8_t *rec = cur_ptr(&r, STORE_MBR_PART_BYTES);
		if (!rec)
			return f;
		struct cur t = cur_make(rec, STORE_MBR_PART_BYTES);
		cur_skip(&t, STORE_MBR_PART_OFF_TYPE);
		uint8_t type = cur_u8(&t);
		cur_skip(&t, STORE_MBR_PART_OFF_LBA - STORE_MBR_PART_OFF_TYPE - 1u);
		uint32_t lba = cur_le32(&t), size = cur_le32(&t);
		if (type == STORE_MBR_TYPE_PROTECTIVE)
			f.protective = true;
		if (type || lba || size)
			f.n_parts++;
	}
	uint8_t s0 = cur_u8(&c), s1 = cur_u8(&c);
	f.sig = cur_ok(&c) && s0 == STORE_MBR_SIG0 && s1 == STORE_MBR_SIG1;
	return f;
}

/* Decode one slot's bytes for the probe: the superblock (rej NONE), or why not. A valid
 * superblock of a generation that does not belong in this slot is rejected (invariant 4). */
static void probe_slot(const uint8_t *buf, size_t len, int slot, struct store_super *sb, enum store_layout_rej *rej,
		       uint32_t *version, bool *zero)
{
	*zero = all_zero(buf, len);
	if (store_super_decode(buf, len, sb, rej, version) == 0 && (sb->generation - 1u) % 2u != (uint64_t)slot) {
		*rej = STORE_REJ_FIELD;
		memset(sb, 0, sizeof *sb);
	}
}

/* A valid GPT: ours (with a data partition) or someone else's. */
static int probe_gpt(struct store_dev *d, uint8_t *scratch, const struct store_gpt *g, struct store_disk_info *out)
{
	if (!g->has_data) {
		say(out, STORE_DISK_FOREIGN, "a GPT with %u partition%s, none of type urMQTT data", g->n_used,
		    g->n_used == 1 ? "" : "s");
		return 0;
	}
	uint32_t bs = store_dev_block_size(d);
	if (g->has_esp) {
		out->esp_start = g->esp.first_lba;
		out->esp_blocks = g->esp.last_lba - g->esp.first_lba + 1u;
	}
	if (g->has_bios) {
		out->bios_start = g->bios.first_lba;
		out->bios_blocks = g->bios.last_lba - g->bios.first_lba + 1u;
		memcpy(out->bios_guid, g->bios.guid, 16);
	}
	out->part_start = g->data.first_lba;
	out->part_blocks = g->data.last_lba - g->data.first_lba + 1u; /* last <= last usable < disk */

	/* An MBR partition table written over our protective MBR: someone else uses the disk. */
	int err = store_dev_read(d, 0, 1, scratch);
	if (err)
		return err;
	struct mbr_facts f = mbr_facts(scratch, bs);
	if (f.sig && !f.protective && f.n_parts) {
		say(out, STORE_DISK_DAMAGED, "our GPT, but LBA 0 holds an MBR partition table with %u partition%s",
		    f.n_parts, f.n_parts == 1 ? "" : "s");
		return 0;
	}

	uint32_t sbytes = slot_bytes(bs), sblocks = sbytes / bs;
	if (out->part_blocks < 2u * (uint64_t)sblocks) {
		say(out, STORE_DISK_DAMAGED, "the urMQTT data partition is too small for its superblocks");
		return 0;
	}
	struct store_super s[2];
	uint32_t version[2];
	bool zero[2];
	for (int i = 0; i < 2; i++) {
		err = store_dev_read(d, out->part_start + (uint64_t)i * sblocks, sblocks, scratch);
		if (err)
			return err;
		probe_slot(scratch, sbytes, i, &s[i], &out->slot_rej[i], &version[i], &zero[i]);
	}
	bool ok0 = out->slot_rej[0] == STORE_REJ_NONE, ok1 = out->slot_rej[1] == STORE_REJ_NONE;
	if (ok0 || ok1) {
		int w = ok0 && (!ok1 || s[0].generation > s[1].generation) ? 0 : 1;
		const struct store_super *sb = &s[w];
		/* A GPT entry longer by whole units: a growth cut before its superblock commit
		 * (store/grow.h writes the GPT first); shorter or otherwise different: damaged. */
		uint64_t ab = sb->align_bytes / sb->block_size;
		bool longer = out->part_blocks > sb->part_blocks && (out->part_blocks - sb->part_blocks) % ab == 0;
		if (sb->part_start != out->part_start || (sb->part_blocks != out->part_blocks && !longer) ||
		    memcmp(sb->part_guid, g->data.guid, 16) != 0 || sb->block_size != bs) {
			say(out, STORE_DISK_DAMAGED,
			    "superblock %c (generation %llu) disagrees with the GPT about the data partition",
			    w ? 'B' : 'A', (unsigned long long)sb->generation);
			return 0;
		}
		out->sb = *sb;
		out->super_slot = w;
		out->grow_pending = longer;
		say(out, STORE_DISK_OURS, "urMQTT layout version %u, generation %llu (slot %c)%s", sb->version,
		    (unsigned long long)sb->generation, w ? 'B' : 'A',
		    longer ? "; a growth of the partition to finish" : "");
		return 0;
	}
	for (int i = 0; i < 2; i++)
		if (out->slot_rej[i] == STORE_REJ_VERSION) {
			out->other_version = version[i];
			say(out, STORE_DISK_OTHER_VERSION, "urMQTT layout version %u (this image reads version %u)",
			    version[i], STORE_LAYOUT_VERSION);
			return 0;
		}
	if (zero[0] && zero[1]) {
		say(out, STORE_DISK_INTERRUPTED, "an unfinished urMQTT format (GPT written, no superblock yet)");
		return 0;
	}
	say(out, STORE_DISK_DAMAGED, "our GPT, but neither superblock slot is valid (A: %s, B: %s)",
	    zero[0] ? "blank" : store_layout_rej_name(out->slot_rej[0]),
	    zero[1] ? "blank" : store_layout_rej_name(out->slot_rej[1]));
	return 0;
}

/* The zero scan of a disk without a valid GPT. */
struct scan {
	uint64_t first_any; /* byte offset of the first non-zero byte seen, NONE if none */
	uint64_t first_out; /* the same outside our GPT's places */
	uint64_t fp_lo_end, fp_hi_start; /* those places: blocks [0, lo_end) and [hi_start, end) */
};

static int scan_blocks(struct store_dev *d, uint8_t *scratch, size_t scratch_len, uint64_t lba, uint64_t n,
		       struct scan *s)
{
	uint32_t bs = store_dev_block_size(d);
	uint64_t per = scratch_len / bs;
	while (n) {
		uint32_t k = (uint32_t)MIN(n, per);
		int err = store_dev_read(d, lba, k, scratch);
		if (err)
			return err;
		for (uint32_t j = 0; j < k; j++) {
			const uint8_t *b = scratch + (size_t)j * bs;
			if (all_zero(b, bs))
				continue;
			size_t at = 0;
			while (!b[at])
				at++;
			uint64_t off = (lba + j) * bs + at;
			bool in_fp = lba + j < s->fp_lo_end || lba + j >= s->fp_hi_start;
			if (off < s->first_any)
				s->first_any = off;
			if (!in_fp && off < s->first_out)
				s->first_out = off;
		}
		lba += k;
		n -= k;
	}
	return 0;
}

/* The first and last MiB in full (or all of a disk under 2 MiB) and 64 samples of 4 KiB
 * (or one block) spread evenly over the rest: at most 2 MiB + 64 samples read. */
static int scan_disk(struct store_dev *d, uint8_t *scratch, size_t scratch_len, struct scan *s)
{
	uint32_t bs = store_dev_block_size(d);
	uint64_t n = store_dev_blocks(d);
	uint64_t edge = PROBE_EDGE_BYTES / bs;
	if (n < 2u * edge)
		return scan_blocks(d, scratch, scratch_len, 0, n, s);
	int err = scan_blocks(d, scratch, scratch_len, 0, edge, s);
	if (err)
		return err;
	uint64_t mid = n - 2u * edge, sample = MAX((uint64_t)PROBE_SAMPLE_BYTES, (uint64_t)bs) / bs;
	if (mid <= PROBE_SAMPLES * sample) {
		err = scan_blocks(d, scratch, scratch_len, edge, mid, s);
	} else {
		uint64_t span = mid - sample, q = span / (PROBE_SAMPLES - 1u), rem = span % (PROBE_SAMPLES - 1u);
		for (uint64_t i = 0; i < PROBE_SAMPLES && !err; i++)
			err = scan_blocks(d, scratch, scratch_len, edge + i * q + i * rem / (PROBE_SAMPLES - 1u),
					  sample, s);
	}
	if (err)
		return err;
	return scan_blocks(d, scratch, scratch_len, n - edge, edge, s);
}

/* Name what a foreign disk without a valid GPT holds (first_any: its first non-zero byte). */
static int describe_foreign(struct store_dev *d, uint8_t *scratch, uint64_t first_any, struct store_disk_info *out)
{
	uint32_t bs = store_dev_block_size(d);
	uint64_t n = store_dev_blocks(d);
	int err = store_dev_read(d, 0, 1, scratch);
	if (err)
		return err;
	struct mbr_facts f = mbr_facts(scratch, bs);
	if (f.sig && f.protective) {
		say(out, STORE_DISK_FOREIGN, "a GPT whose headers fail their checks (protective MBR at LBA 0)");
		return 0;
	}
	if (f.sig && f.n_parts) {
		say(out, STORE_DISK_FOREIGN, "an MBR partition table with %u partition%s", f.n_parts,
		    f.n_parts == 1 ? "" : "s");
		return 0;
	}
	uint64_t ext_lba = STORE_EXT_OFF_MAGIC / bs;
	if (ext_lba < n) {
		err = store_dev_read(d, ext_lba, 1, scratch);
		if (err)
			return err;
		struct cur c = cur_make(scratch, bs);
		cur_skip(&c, STORE_EXT_OFF_MAGIC % bs);
		if (cur_le16(&c) == STORE_EXT_MAGIC && cur_ok(&c)) {
			say(out, STORE_DISK_FOREIGN, "an ext2/3/4 filesystem (magic at byte %u)", STORE_EXT_OFF_MAGIC);
			return 0;
		}
	}
	if (f.sig) {
		say(out, STORE_DISK_FOREIGN, "a FAT/NTFS boot sector (0x55AA at byte 510, no partition table)");
		return 0;
	}
	say(out, STORE_DISK_FOREIGN, "non-zero data at byte %llu", (unsigned long long)first_any);
	return 0;
}

/* No valid GPT: blank, the remains of our own interrupted GPT write, or foreign. */
static int probe_bare(struct store_dev *d, uint8_t *scratch, size_t scratch_len, const struct store_gpt_src *src,
		      struct store_disk_info *out)
{
	uint64_t n = store_dev_blocks(d);
	enum store_gpt_footprint fp = STORE_GPT_FP_OTHER;
	struct scan s = { NONE, NONE, 0, n };
	int err = store_gpt_footprint_check(src, scratch, scratch_len, &fp);
	if (err && err != -E_RANGE)
		return err;
	uint64_t fu, lu;
	if (err == 0 && store_gpt_geometry(src->block_size, n, &fu, &lu) == 0) {
		s.fp_lo_end = fu;
		s.fp_hi_start = lu + 1u;
	}
	err = scan_disk(d, scratch, scratch_len, &s);
	if (err)
		return err;
	if (s.first_any == NONE) {
		say(out, STORE_DISK_BLANK, "no data in any sampled place");
		return 0;
	}
	if (s.first_out == NONE && fp == STORE_GPT_FP_PARTIAL) {
		say(out, STORE_DISK_INTERRUPTED, "an unfinished urMQTT format (its GPT incomplete)");
		return 0;
	}
	return describe_foreign(d, scratch, s.first_any, out);
}

static bool args_ok(const struct store_dev *d, const uint8_t *scratch, size_t scratch_len)
{
	if (!d || !d->blk || !scratch || scratch_len < (size_t)STORE_LAYOUT_SCRATCH)
		return false;
	uint32_t bs = store_dev_block_size(d);
	return block_size_ok(bs) && bs <= scratch_len && store_dev_blocks(d) <= UINT64_MAX / bs;
}

int store_disk_probe(struct store_dev *d, uint8_t *scratch, size_t scratch_len, struct store_disk_info *out)
{
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	out->super_slot = -1;
	if (!args_ok(d, scratch, scratch_len))
		return -E_INVAL;
	struct store_gpt_src src = { dev_read, d, store_dev_block_size(d), store_dev_blocks(d) };
	struct store_gpt g;
	struct store_gpt_verdict v;
	int err = store_gpt_load(&src, scratch, scratch_len, &g, &v);
	if (err == 0) {
		out->gpt_from_backup = v.from_backup;
		err = probe_gpt(d, scratch, &g, out);
	} else if (err == -E_CORRUPT) {
		err = probe_bare(d, scratch, scratch_len, &src, out);
	}
	if (err) {
		memset(out, 0, sizeof *out);
		out->super_slot = -1;
	}
	return err;
}

/* ---- writing ---- */

/* Write one superblock into its slot (the header, then zeros to the slot's end). */
static int write_slot(struct store_dev *d, const struct store_super *sb, uint8_t *scratch, size_t scratch_len)
{
	uint32_t bs = store_dev_block_size(d), sbytes = slot_bytes(bs);
	if (sbytes > scratch_len)
		return -E_INVAL;
	int err = store_super_encode(sb, scratch, scratch_len);
	if (err)
		return err;
	/* invariant 5: what we write decodes */
	struct store_super check;
	enum store_layout_rej rej;
	uint32_t version;
	if (store_super_decode(scratch, STORE_SUPER_BYTES, &check, &rej, &version))
		return -E_INVAL;
	memset(scratch + STORE_SUPER_BYTES, 0, sbytes - STORE_SUPER_BYTES);
	uint64_t slot = (sb->generation - 1u) % 2u;
	err = store_dev_write(d, sb->part_start + slot * (sbytes / bs), sbytes / bs, scratch);
	if (err)
		return err;
	return store_dev_flush(d);
}

int store_super_commit(struct store_dev *d, struct store_super *sb, uint8_t *scratch, size_t scratch_len)
{
	if (!sb || !args_ok(d, scratch, scratch_len))
		return -E_INVAL;
	if (sb->block_size != store_dev_block_size(d) || sb->generation == 0)
		return -E_INVAL;
	if (sb->generation == UINT64_MAX)
		return -E_RANGE;
	struct store_super next = *sb;
	next.generation++;
	int err = write_slot(d, &next, scratch, scratch_len);
	if (err)
		return err;
	sb->generation = next.generation;
	return 0;
}

/* Make a random GUID an RFC 4122 version-4 one (on-disk form: the version nibble is the
 * high nibble of byte 7, the variant the top bits of byte 8); never all zero. */
static void guid_v4(uint8_t g[16], const uint8_t *random)
{
	memcpy(g, random, 16);
	g[7] = (uint8_t)((g[7] & 0x0fu) | 0x40u);
	g[8] = (uint8_t)((g[8] & 0x3fu) | 0x80u);
}

/* The GPT of plan p, checked by our own decoder (invariant 5). */
static int format_gpt_spec(const struct store_plan *p, const uint8_t guids[48], struct store_gpt_new *g,
			   uint8_t *scratch, size_t scratch_len)
{
	memset(g, 0, sizeof *g);
	g->block_size = p->block_size;
	g->disk_blocks = p->disk_blocks;
	guid_v4(g->disk_guid, guids);
	uint8_t type_esp[16], type_data[16];
	if (store_guid_from_text(STORE_GPT_TYPE_ESP, type_esp) || store_guid_from_text(STORE_GPT_TYPE_DATA, type_data))
		return -E_INVAL;
	if (p->esp_blocks) {
		struct store_gpt_new_part *e = &g->parts[g->n_parts++];
		memcpy(e->type, type_esp, 16);
		guid_v4(e->guid, guids + 16);
		e->first_lba = p->esp_start;
		e->last_lba = p->esp_start + p->esp_blocks - 1u;
		e->name = esp_name;
	}
	struct store_gpt_new_part *e = &g->parts[g->n_parts++];
	memcpy(e->type, type_data, 16);
	guid_v4(e->guid, guids + 32);
	e->first_lba = p->part_start;
	e->last_lba = p->part_start + p->part_blocks - 1u;
	e->name = data_name;
	if (p->part_blocks == 0 || p->esp_start > UINT64_MAX - p->esp_blocks ||
	    p->part_start > UINT64_MAX - p->part_blocks || p->bios_start > UINT64_MAX - p->bios_blocks)
		return -E_INVAL;
	if (p->bios_blocks) { /* kept as it was found: type, place, unique GUID (the decode checks the range) */
		e = &g->parts[g->n_parts++];
		if (store_guid_from_text(STORE_GPT_TYPE_BIOS, e->type))
			return -E_INVAL;
		memcpy(e->guid, p->bios_guid, 16);
		e->first_lba = p->bios_start;
		e->last_lba = p->bios_start + p->bios_blocks - 1u;
		e->name = bios_name;
	}

	uint32_t crc;
	struct store_gpt dec;
	enum store_gpt_rej rej;
	int err = store_gpt_entries_encode(g, scratch, scratch_len, &crc);
	if (!err)
		err = store_gpt_header_encode(g, false, crc, scratch, scratch_len);
	if (!err)
		err = store_gpt_header_decode(scratch, g->block_size, g->block_size, g->disk_blocks, 1, &dec, &rej);
	if (!err)
		err = store_gpt_entries_encode(g, scratch, scratch_len, &crc);
	if (!err)
		err = store_gpt_entries_decode(scratch, scratch_len, &dec, &rej);
	return err ? -E_INVAL : 0;
}

/* Step 1 of the format: the GPT in three flushed steps. a: both headers zeroed, so no
 * header (of an earlier interrupted format) stays durable beside an array it does not
 * describe; b: both arrays; c: both headers and the protective MBR. After a cut in any
 * step the probe finds a valid GPT of ours or only pieces of one (invariant 2). */
static int format_gpt(struct store_dev *d, const struct store_gpt_new *g, uint8_t *scratch, size_t scratch_len)
{
	uint64_t n = g->disk_blocks;
	uint32_t eb = store_gpt_array_blocks(g->block_size), crc = 0;
	int err = store_dev_zero(d, 1, 1);
	if (!err)
		err = store_dev_zero(d, n - 1u, 1);
	if (!err)
		err = store_dev_flush(d);
	if (!err)
		err = store_gpt_entries_encode(g, scratch, scratch_len, &crc);
	if (!err)
		err = store_dev_write(d, 2, eb, scratch);
	if (!err)
		err = store_dev_write(d, n - 1u - eb, eb, scratch);
	if (!err)
		err = store_dev_flush(d);
	if (!err)
		err = store_gpt_header_encode(g, false, crc, scratch, scratch_len);
	if (!err)
		err = store_dev_write(d, 1, 1, scratch);
	if (!err)
		err = store_gpt_header_encode(g, true, crc, scratch, scratch_len);
	if (!err)
		err = store_dev_write(d, n - 1u, 1, scratch);
	if (!err)
		err = store_dev_read(d, 0, 1, scratch);
	if (!err) {
		store_gpt_mbr_protect(scratch, g->block_size, n); /* a boot loader's code kept */
		err = store_dev_write(d, 0, 1, scratch);
	}
	if (!err)
		err = store_dev_flush(d);
	return err;
}

/* Step 2: both superblock slots (at least the meta area's first 64 KiB) and the first
 * 64 KiB of every region read as zeros, flushed. Whatever a blank-looking disk held there
 * (the probe only samples) is gone before the first superblock is written. */
static int format_zero(struct store_dev *d, const struct store_plan *p)
{
	uint32_t bs = p->block_size;
	uint64_t meta = MAX((uint64_t)FORMAT_ZERO_BYTES, 2u * (uint64_t)slot_bytes(bs)) / bs;
	int err = store_dev_zero(d, p->part_start, meta);
	for (uint32_t i = 0; i < p->n_regions && !err; i++) {
		uint64_t k = MIN(p->regions[i].blocks, (uint64_t)FORMAT_ZERO_BYTES / bs);
		err = store_dev_zero(d, p->part_start + p->regions[i].start, k);
	}
	if (!err)
		err = store_dev_flush(d);
	return err;
}

int store_disk_format_gpt(struct store_dev *d, const struct store_plan *p, const uint8_t guids[48],
			  uint8_t *scratch, size_t scratch_len)
{
	if (!p || !guids || !args_ok(d, scratch, scratch_len))
		return -E_INVAL;
	if (p->block_size != store_dev_block_size(d) || p->disk_blocks != store_dev_blocks(d) ||
	    p->n_regions > STORE_MAX_REGIONS)
		return -E_INVAL;
	struct store_gpt_new g;
	int err = format_gpt_spec(p, guids, &g, scratch, scratch_len);
	/* The zeros first, the GPT last: until the GPT is durable the disk is not ours. */
	if (!err)
		err = format_zero(d, p);
	if (!err)
		err = format_gpt(d, &g, scratch, scratch_len);
	return err;
}

int store_disk_format(struct store_dev *d, const struct store_plan *p, const uint8_t guids[48], uint64_t now_s,
		      uint8_t *scratch, size_t scratch_len, struct store_super *out)
{
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	if (!p || !guids || !args_ok(d, scratch, scratch_len))
		return -E_INVAL;
	uint32_t bs = store_dev_block_size(d);
	uint64_t n = store_dev_blocks(d);
	if (p->block_size != bs || p->disk_blocks != n || p->n_regions > STORE_MAX_REGIONS)
		return -E_INVAL;

	struct store_gpt_new g;
	int err = format_gpt_spec(p, guids, &g, scratch, scratch_len);
	if (err)
		return err;
	struct store_super sb;
	memset(&sb, 0, sizeof sb);
	sb.version = STORE_LAYOUT_VERSION;
	sb.generation = 1;
	memcpy(sb.part_guid, g.parts[p->esp_blocks ? 1u : 0u].guid, 16); /* the data entry */
	sb.block_size = bs;
	sb.align_bytes = p->align_bytes;
	sb.part_start = p->part_start;
	sb.part_blocks = p->part_blocks;
	sb.created_s = now_s;
	sb.db_state = STORE_DB_FRESH;
	sb.n_regions = p->n_regions;
	memcpy(sb.regions, p->regions, sizeof sb.regions);
	/* invariant 5 before the first write: the superblock must decode too */
	struct store_super check;
	enum store_layout_rej rej;
	uint32_t version;
	if (store_super_encode(&sb, scratch, scratch_len) ||
	    store_super_decode(scratch, STORE_SUPER_BYTES, &check, &rej, &version))
		return -E_INVAL;

	/* 1. The GPT, 2. zeros where the probe and the database look first, 3. the superblock
	 * (invariant 2). */
	err = format_gpt(d, &g, scratch, scratch_len);
	if (!err)
		err = format_zero(d, p);
	if (!err)
		err = write_slot(d, &sb, scratch, scratch_len);
	if (err)
		return err;
	*out = sb;
	return 0;
}
