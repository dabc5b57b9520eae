/* SPDX-License-Identifier: MIT
 *
 * The VFS stack (store/sqlite/vfs.h). Two VFS objects are ours: the block layer
 * STORE_VFS_RAW_NAME, which maps SQLite's files onto regions of the data disk through
 * store/dev.h, and the top STORE_VFS_NAME, which only routes each open: a write-ahead log
 * straight to the block layer, every other file to SQLite's cksumvfs (registered in
 * between, over the block layer). This file owns the open files' state (sizes, locks, the
 * one-block caches), the write-ahead log's frame checksums, and the counters. It must never
 * open a file that is not one of ours (journals, ATTACHed databases, temporary files, a
 * backup's log: counted by reason, SQLITE_CANTOPEN), never write outside a region
 * (SQLITE_FULL), never trust a header's numbers beyond its region, and never pass or
 * return a double: it is compiled general-registers only in the image, so xCurrentTime
 * (double) is left NULL and SQLite uses xCurrentTimeInt64.
 *
 * Design note. One stack per process, in static storage.
 *   Registration (store_vfs_register):  raw as default -> sqlite3_register_cksumvfs (wraps
 *   the default, becomes it) -> top over cksmvfs as default. store_vfs_unregister undoes
 *   the three in reverse, and frees cksumvfs's auto-extension list.
 *   A file (one per kind of region: DB, WAL, BACKUP_A, BACKUP_B; each over its extents) is
 *   CLOSED or OPEN:
 *     CLOSED --xOpen MAIN_DB "<name>" (size from its header)----------------> OPEN(DB)
 *     CLOSED --xOpen MAIN_DB STORE_VFS_BACKUP_x (slot present, no backup open)-> OPEN(BACKUP_x)
 *     CLOSED --xOpen WAL "<db name>-wal" (the DB open)------------------------> OPEN(WAL)
 *     OPEN   --xClose---------------------------------------------------------> CLOSED
 *     any    --store_vfs_extend (DB, a backup: one more extent)---------------> the same, more room
 *
 * Blocks. Requests to the device are whole logical blocks. A range that does not cover
 * whole blocks goes through a one-block slot of io_buf (block 0: shared by the DB and the
 * backups, block 1: the WAL's), which then holds that block as the device has it, so the
 * next write that continues the range (WAL frames at offsets of 24 + page size) patches it
 * without reading it again. A file's blocks are numbered through its extents in order
 * (region_lba); a request of whole blocks is split where an extent ends, so no request to
 * the device ever spans two extents.
 *
 * The write-ahead log's checksums. SQLite checksums each frame (header and page) into a
 * chain and writes the header first; cksumvfs would then change the page's last 8 bytes
 * (its checksum), so the chain would not match the bytes on the disk. Here the block layer
 * holds each frame header until its page comes, puts cksumvfs's checksum into the page (in
 * SQLite's page buffer, as cksumvfs does), continues the chain from the frame before (as
 * the disk has it) over the header and the page, and writes both. A padding frame (SQLite
 * repeats a transaction's last frame up to the sector boundary) whose write SQLite splits
 * at the sync point repeats the frame before it: its header is computed from that frame
 * (kept from when it was written, or read back), before the sync. A header SQLite writes
 * alone (it rewrites checksums from the disk's bytes when a transaction overwrote a frame)
 * goes out as it is. Pages that reserve no checksum bytes: every frame as SQLite wrote it.
 *
 * Backups. A backup's page 1 goes to the disk in the DB region's form (versions 2: a
 * WAL-mode image, which a raw copy over the DB region restores) and comes back to SQLite
 * as a database without a log (versions 1), so it opens without a WAL; its checksum is
 * recomputed when it was valid, so it stays valid in both forms (a bad one stays bad). The
 * change is made in SQLite's page buffer on the way out: its cached page 1 then says what
 * it would read back. Truncation: a database or a backup shrunk hands the whole blocks past
 * its new end back to the device; a device without discard keeps them (counted).
 *
 * Invariants (store_vfs_check):
 *  1. Files are open only while the stack is registered; at most one file per region and
 *     one backup file; a backup file only on a slot with blocks.
 *  2. The DB is open exactly when db_name is set; the WAL was opened under db_name-wal.
 *  3. An open database's or backup's size <= its region's bytes (writes past the region
 *     fail before any I/O).
 *  4. A valid slot holds exactly what the device returns for block blk of its owner's
 *     region: every write through the VFS to that block updates the slot or invalidates
 *     it, any failed request, discard or zeroing invalidates it, opening a file invalidates
 *     its region's block.
 *  5. io_buf is used only inside one call of this file.
 *  6. A held frame header exists only while the WAL is open and its geometry known; it is
 *     written before any other operation on the WAL but its page's write.
 *  7. Every file's extents are non-empty, inside the device and disjoint from every other
 *     extent of every file; the WAL has exactly one, the DB at least one; a region's blocks
 *     and bytes are their total. Extents only ever get added (store_vfs_extend) or
 *     lengthened at the end, so a byte of a file never moves.
 */
#include "store/sqlite/vfs.h"
#include "store/sqlite/sqlite_int.h"

#include "lib/err.h"
#include "lib/mem.h"

#define VFS_PATH_MAX 64        /* longest file name SQLite may give us, NUL excluded */
#define VFS_SECTOR_MAX 65536u  /* SQLite clamps larger sector sizes to this */
#define VFS_WAL_SUFFIX "-wal"
#define VFS_OPEN_TYPES 0x0FFF00 /* the file-type bits of xOpen's flags, as os_unix.c masks them */
/* Julian day of the Unix epoch in milliseconds (2440587.5 days). */
#define VFS_UNIX_EPOCH_JD_MS INT64_C(210866760000000)

/* The database file format (sqlite.org/fileformat2.html, section 1.3). */
#define DB_HDR_BYTES 100u
#define DB_HDR_WRITE_VERSION 18  /* 1 legacy (rollback journal), 2 WAL */
#define DB_HDR_READ_VERSION 19
#define DB_HDR_RESERVE 20        /* bytes reserved at the end of each page */
#define DB_VERSION_LEGACY 1u
#define DB_VERSION_WAL 2u
/* The write-ahead log format (section 4.1). */
#define WAL_HDR_BYTES 32u
#define WAL_FRAME_HDR_BYTES 24u
#define WAL_MAGIC 0x377f0682u    /* bit 0: the checksums read big-endian words */
/* cksumvfs's checksum: the last 8 bytes of a page (ext/misc/cksumvfs.c). */
#define CKSUM_BYTES 8u
#define VFS_SCAN_CHUNK 512u      /* bytes read at a time when a checksum needs the disk's */

static const char db_magic[16] = "SQLite format 3"; /* with its NUL */

STATIC_ASSERT(STORE_VFS_RESERVE_BYTES == CKSUM_BYTES, "cksumvfs verifies exactly 8 reserve bytes");

enum vfs_kind { VFS_DB, VFS_WAL, VFS_BACKUP_A, VFS_BACKUP_B, VFS__KINDS };

struct vfs_slot {
	uint8_t *buf;        /* one block of io_buf (invariant 4) */
	enum vfs_kind owner; /* whose region's block it holds */
	uint64_t blk;        /* block index in that region */
	bool valid;
};

/* A file's room: its extents in file order (the WAL: exactly one). */
struct vfs_region {
	enum vfs_kind kind;
	uint32_t n;            /* extents; 0: an absent backup slot */
	struct store_vfs_extent ext[STORE_VFS_MAX_EXTENTS];
	uint64_t blocks;       /* their total */
	sqlite3_int64 bytes;
	struct vfs_slot *slot;
};

/* SQLite allocates szOsFile bytes per open file and hands them to xOpen. */
struct vfs_file {
	sqlite3_file base; /* first: what SQLite sees */
	enum vfs_kind kind;
	int lock;          /* SQLITE_LOCK_*: exclusive mode climbs and stays */
};

/* What the block layer knows of the open write-ahead log (see the design note). */
struct vfs_wal {
	bool known;            /* header seen (read or written) and valid: geometry below */
	bool big_endian;       /* frame checksums over big-endian words (magic bit 0) */
	uint32_t page;         /* page size */
	bool chain_valid;      /* chain: the checksum stored in the frame ending at chain_end */
	uint64_t chain_end;    /* (32: the header's own checksum) */
	uint32_t chain[2];
	bool held;             /* a frame header waiting for its page (invariant 6) */
	uint64_t held_off;
	uint8_t held_hdr[WAL_FRAME_HDR_BYTES];
	bool rep_valid;        /* the header a repeat of the frame before rep_off would have */
	uint64_t rep_off;
	uint8_t rep_hdr[WAL_FRAME_HDR_BYTES];
};

struct store_vfs {
	bool registered;
	struct store_vfs_config cfg; /* as registered: the files' extents now are reg[]'s */
	uint32_t bs;             /* logical block */
	int sector;              /* max(logical, physical), at most VFS_SECTOR_MAX */
	bool read_only;
	struct vfs_slot slot[2];
	struct vfs_region reg[VFS__KINDS];
	bool open[VFS__KINDS];
	sqlite3_int64 size[VFS__KINDS]; /* the DB's or a backup's size while open (invariant 3) */
	bool cksum[VFS__KINDS];  /* DB (for its WAL too) and backups: pages carry checksums */
	char db_name[VFS_PATH_MAX + 1];
	size_t db_name_len;      /* 0: the DB is not open (invariant 2) */
	struct vfs_wal wal;
	struct store_vfs_stats st;
	sqlite3_vfs raw, top;
	sqlite3_vfs *cksm;       /* SQLite's cksumvfs, between them */
};

static struct store_vfs V;

static const sqlite3_io_methods vfs_io;

static enum store_vfs_file file_kind(enum vfs_kind k)
{
	return k == VFS_DB ? STORE_VFS_FILE_DB : k == VFS_WAL ? STORE_VFS_FILE_WAL : STORE_VFS_FILE_BACKUP;
}

/* A database file (the DB or a backup): sized by its header, truncated by SQLite. */
static bool is_main(enum vfs_kind k)
{
	return k != VFS_WAL;
}

static bool is_backup(enum vfs_kind k)
{
	return k == VFS_BACKUP_A || k == VFS_BACKUP_B;
}

/* ---- bytes ---- */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static bool page_size_ok(uint64_t n)
{
	return n >= 512 && n <= 65536 && !(n & (n - 1));
}

/* Does p (len bytes) start with a database header? */
static bool is_db_header(const uint8_t *p, size_t len)
{
	return len >= DB_HDR_BYTES && memcmp(p, db_magic, sizeof db_magic) == 0;
}

/* cksumvfs's page checksum (cksmCompute): two running 32-bit sums over the page's
 * little-endian words but its last 8 bytes, stored little-endian in those 8 bytes. len is
 * a page size. */
static void page_cksum(const uint8_t *page, size_t len, uint8_t out[CKSUM_BYTES])
{
	uint32_t s1 = 0, s2 = 0;
	for (size_t i = 0; i < len - CKSUM_BYTES; i += 8) {
		s1 += le32(page + i) + s2;
		s2 += le32(page + i + 4) + s1;
	}
	put_le32(out, s1);
	put_le32(out + 4, s2);
}

static bool page_sealed(const uint8_t *page, size_t len)
{
	uint8_t c[CKSUM_BYTES];
	page_cksum(page, len, c);
	return memcmp(c, page + len - CKSUM_BYTES, CKSUM_BYTES) == 0;
}

static void page_seal(uint8_t *page, size_t len)
{
	page_cksum(page, len, page + len - CKSUM_BYTES);
}

/* SQLite's WAL checksum (walChecksumBytes) continued in s over len bytes (a multiple of
 * 8): two running 32-bit sums over words of the log's byte order. */
static void wal_cksum(bool big_endian, const uint8_t *p, size_t len, uint32_t s[2])
{
	for (size_t i = 0; i < len; i += 8) {
		s[0] += (big_endian ? be32(p + i) : le32(p + i)) + s[1];
		s[1] += (big_endian ? be32(p + i + 4) : le32(p + i + 4)) + s[0];
	}
}

/* ---- block I/O on a region ---- */

/* Block blk of r: its LBA, and in *run how many blocks of the same extent start there
 * (0 when blk is past the region: callers stay inside it, invariant 3). */
static uint64_t region_lba(const struct vfs_region *r, uint64_t blk, uint64_t *run)
{
	for (uint32_t i = 0; i < r->n; i++) {
		if (blk < r->ext[i].blocks) {
			*run = r->ext[i].blocks - blk;
			return r->ext[i].lba + blk;
		}
		blk -= r->ext[i].blocks;
	}
	*run = 0;
	return 0;
}

static void slot_drop(struct vfs_region *r)
{
	struct vfs_slot *s = r->slot;
	if (s->owner == r->kind)
		s->valid = false;
}

/* Drop the slot when it holds one of blocks [first, end) of r (invariant 4). */
static void slot_drop_range(struct vfs_region *r, uint64_t first, uint64_t end)
{
	struct vfs_slot *s = r->slot;
	if (s->valid && s->owner == r->kind && s->blk >= first && s->blk < end)
		s->valid = false;
}

/* Make r's slot hold block blk of the region (invariant 4). */
static int slot_load(struct vfs_region *r, uint64_t blk)
{
	struct vfs_slot *s = r->slot;
	if (s->valid && s->owner == r->kind && s->blk == blk)
		return 0;
	s->valid = false;
	uint64_t run, lba = region_lba(r, blk, &run);
	if (!run)
		return -E_RANGE;
	int err = store_dev_read(V.cfg.dev, lba, 1, s->buf);
	if (err)
		return err;
	s->owner = r->kind;
	s->blk = blk;
	s->valid = true;
	return 0;
}

/* len bytes at byte offset off of region r into out; the range lies within the region. */
static int region_read(struct vfs_region *r, uint8_t *out, uint64_t off, size_t len)
{
	uint32_t bs = V.bs;
	while (len) {
		uint64_t blk = off / bs;
		size_t in = (size_t)(off % bs);
		if (in || len < bs) { /* a partial block, through the slot */
			size_t k = MIN(len, (size_t)bs - in);
			int err = slot_load(r, blk);
			if (err)
				return err;
			memcpy(out, r->slot->buf + in, k);
			out += k;
			off += k;
			len -= k;
			continue;
		}
		/* Whole blocks straight into the caller's buffer (store_dev bounces them), up to
		 * the end of the extent they start in. */
		uint64_t run, lba = region_lba(r, blk, &run);
		uint64_t n = MIN(MIN((uint64_t)(len / bs), (uint64_t)UINT32_MAX), run);
		if (!n)
			return -E_RANGE;
		int err = store_dev_read(V.cfg.dev, lba, (uint32_t)n, out);
		if (err)
			return err;
		out += n * bs;
		off += n * bs;
		len -= (size_t)(n * bs);
	}
	return 0;
}

/* len bytes from in at byte offset off of region r; partial blocks read-modify-write. */
static int region_write(struct vfs_region *r, const uint8_t *in, uint64_t off, size_t len)
{
	uint32_t bs = V.bs;
	while (len) {
		uint64_t blk = off / bs;
		size_t at = (size_t)(off % bs);
		if (at || len < bs) {
			size_t k = MIN(len, (size_t)bs - at);
			int err = slot_load(r, blk);
			if (err)
				return err;
			memcpy(r->slot->buf + at, in, k);
			V.st.rmw++;
			uint64_t run, lba = region_lba(r, blk, &run); /* loaded: inside the region */
			err = store_dev_write(V.cfg.dev, lba, 1, r->slot->buf);
			if (err) {
				slot_drop(r); /* the block may hold any mix now (invariant 4) */
				return err;
			}
			in += k;
			off += k;
			len -= k;
			continue;
		}
		uint64_t run, lba = region_lba(r, blk, &run);
		uint64_t n = MIN(MIN((uint64_t)(len / bs), (uint64_t)UINT32_MAX), run);
		if (!n)
			return -E_RANGE;
		slot_drop_range(r, blk, blk + n); /* overwritten below (invariant 4) */
		int err = store_dev_write(V.cfg.dev, lba, (uint32_t)n, in);
		if (err)
			return err;
		in += n * bs;
		off += n * bs;
		len -= (size_t)(n * bs);
	}
	return 0;
}

/* Hand blocks [first, end) of r back to the device, one request per extent they touch. A
 * device that cannot discard keeps them: not an error (counted once). */
static int region_discard(struct vfs_region *r, uint64_t first, uint64_t end)
{
	if (first >= end)
		return 0;
	slot_drop_range(r, first, end); /* contents unspecified now (invariant 4) */
	while (first < end) {
		uint64_t run, lba = region_lba(r, first, &run);
		uint64_t n = MIN(run, end - first);
		if (!n)
			return -E_RANGE;
		int err = store_dev_discard(V.cfg.dev, lba, n);
		if (err == -E_NOSYS) {
			V.st.discard_unsupported++;
			return 0;
		}
		if (err)
			return err;
		V.st.discarded_blocks += n;
		V.st.file[file_kind(r->kind)].discarded_blocks += n;
		first += n;
	}
	return 0;
}

/* ---- database files: sizes, page 1 ---- */

/* A database file's size from its header h (the region's first block, untrusted). 0 when
 * the region holds no database. When the header says "SQLite format 3" but its page size
 * or count is unusable, or larger than the region, the region's size: SQLite then reads
 * page 1 and refuses it (SQLITE_NOTADB / SQLITE_CORRUPT) instead of taking a damaged
 * database for an empty one and formatting over it. */
static sqlite3_int64 db_size_from_header(const uint8_t *h, sqlite3_int64 region_bytes)
{
	if (memcmp(h, db_magic, sizeof db_magic) != 0)
		return 0;
	uint32_t ps = (uint32_t)h[16] << 8 | h[17];
	if (ps == 1)
		ps = 65536;
	if (!page_size_ok(ps))
		return region_bytes;
	uint32_t pages = be32(h + 28);
	if (pages == 0 || be32(h + 24) != be32(h + 92)) /* the in-header size is not valid */
		return region_bytes;
	uint64_t size = (uint64_t)ps * pages;
	return size > (uint64_t)region_bytes ? region_bytes : (sqlite3_int64)size;
}

/* A backup's page 1 in p (the file's first len bytes) in one of its two forms: the disk
 * holds versions 2 (a WAL-mode image, as the DB region would), SQLite sees versions 1 (no
 * log). When p is a whole page whose checksum was valid, the checksum is recomputed, so
 * it stays valid in either form; a bad one stays bad. */
static void backup_page1_as(uint8_t *p, size_t len, uint8_t version)
{
	if (!is_db_header(p, len))
		return;
	uint8_t *w = p + DB_HDR_WRITE_VERSION, *r = p + DB_HDR_READ_VERSION;
	if ((*w != DB_VERSION_LEGACY && *w != DB_VERSION_WAL) || (*r != DB_VERSION_LEGACY && *r != DB_VERSION_WAL))
		return; /* not ours to translate: SQLite judges it */
	if (*w == version && *r == version)
		return;
	bool sealed = page_size_ok(len) && p[DB_HDR_RESERVE] == CKSUM_BYTES && page_sealed(p, len);
	*w = version;
	*r = version;
	if (sealed)
		page_seal(p, len);
}

/* Count a page read whose checksum is wrong (cksumvfs refuses it for the DB and backups,
 * wal_read for the WAL). */
static bool page_read_bad(enum vfs_kind k, const uint8_t *p, size_t len)
{
	if (!page_size_ok(len) || !V.cksum[k == VFS_WAL ? VFS_DB : k] || page_sealed(p, len))
		return false;
	V.st.file[file_kind(k)].bad_pages++;
	return true;
}

/* Note the reserve bytes of page 1 seen in p (len bytes at offset 0 of file k). */
static void note_page1(enum vfs_kind k, const uint8_t *p, size_t len)
{
	if (is_db_header(p, len))
		V.cksum[k == VFS_WAL ? VFS_DB : k] = p[DB_HDR_RESERVE] == CKSUM_BYTES;
}

/* ---- the write-ahead log ---- */

static void wal_forget(void)
{
	memset(&V.wal, 0, sizeof V.wal);
}

/* Learn the log's geometry from its header h (32 bytes, untrusted): unknown when invalid. */
static void wal_learn(const uint8_t *h)
{
	struct vfs_wal *w = &V.wal;
	uint32_t magic = be32(h), page = be32(h + 8);
	wal_forget();
	if ((magic & ~1u) != WAL_MAGIC || !page_size_ok(page))
		return;
	w->known = true;
	w->big_endian = magic & 1u;
	w->page = page;
	w->chain_valid = true;
	w->chain_end = WAL_HDR_BYTES;
	w->chain[0] = be32(h + 24);
	w->chain[1] = be32(h + 28);
}

static uint64_t wal_frame_bytes(void)
{
	return WAL_FRAME_HDR_BYTES + (uint64_t)V.wal.page;
}

/* Zero the WAL's first block: the header goes, so every frame after it is invalid. */
static int wal_zero_header(void)
{
	struct vfs_region *r = &V.reg[VFS_WAL];
	wal_forget();
	slot_drop_range(r, 0, 1);
	return store_dev_zero(V.cfg.dev, r->ext[0].lba, 1);
}

/* The checksum stored in the frame before the one at `frame` (or the header's). */
static int wal_prev_cksum(uint64_t frame, uint32_t s[2])
{
	struct vfs_wal *w = &V.wal;
	if (w->chain_valid && w->chain_end == frame) {
		s[0] = w->chain[0];
		s[1] = w->chain[1];
		return 0;
	}
	uint8_t b[8];
	uint64_t at = frame == WAL_HDR_BYTES ? WAL_HDR_BYTES - 8 : frame - wal_frame_bytes() + 16;
	int err = region_read(&V.reg[VFS_WAL], b, at, sizeof b);
	if (err)
		return err;
	s[0] = be32(b);
	s[1] = be32(b + 4);
	return 0;
}

static void wal_chain_at(uint64_t frame, const uint8_t *hdr)
{
	struct vfs_wal *w = &V.wal;
	w->chain_valid = true;
	w->chain_end = frame + wal_frame_bytes();
	w->chain[0] = be32(hdr + 16);
	w->chain[1] = be32(hdr + 20);
}

/* The header of a padding frame at `frame`: it repeats the frame before it (page number,
 * commit size, salts and page), so its checksum continues that frame's over the same
 * bytes. From rep when the frame before was written here, else from the disk. */
static int wal_repeat_header(uint64_t frame, uint8_t out[WAL_FRAME_HDR_BYTES])
{
	struct vfs_wal *w = &V.wal;
	uint64_t fb = wal_frame_bytes();
	if (!(w->rep_valid && w->rep_off == frame)) {
		if (frame < WAL_HDR_BYTES + fb)
			return -E_INVAL; /* no frame before it */
		struct vfs_region *r = &V.reg[VFS_WAL];
		uint64_t prev = frame - fb;
		uint8_t h[WAL_FRAME_HDR_BYTES], chunk[VFS_SCAN_CHUNK];
		int err = region_read(r, h, prev, sizeof h);
		if (err)
			return err;
		uint32_t s[2] = { be32(h + 16), be32(h + 20) };
		wal_cksum(w->big_endian, h, 8, s);
		for (uint64_t o = 0; o < w->page; o += sizeof chunk) {
			err = region_read(r, chunk, prev + WAL_FRAME_HDR_BYTES + o, sizeof chunk);
			if (err)
				return err;
			wal_cksum(w->big_endian, chunk, sizeof chunk, s);
		}
		memcpy(w->rep_hdr, h, 16);
		put_be32(w->rep_hdr + 16, s[0]);
		put_be32(w->rep_hdr + 20, s[1]);
		w->rep_off = frame;
		w->rep_valid = true;
	}
	memcpy(out, w->rep_hdr, WAL_FRAME_HDR_BYTES);
	return 0;
}

/* Write the held header as SQLite gave it: its checksum is SQLite's own, right when SQLite
 * computed it from the disk's bytes (walRewriteChecksums) or the pages carry no checksum
 * (invariant 6). */
static int wal_release_held(void)
{
	struct vfs_wal *w = &V.wal;
	if (!w->held)
		return 0;
	w->held = false;
	w->rep_valid = false;
	int err = region_write(&V.reg[VFS_WAL], w->held_hdr, w->held_off, WAL_FRAME_HDR_BYTES);
	if (err) {
		w->chain_valid = false;
		return err;
	}
	wal_chain_at(w->held_off, w->held_hdr);
	return 0;
}

/* Write hdr at frame and len bytes of its page from `page` (all or the first part). */
static int wal_put(const uint8_t *hdr, uint64_t frame, const uint8_t *page, size_t len)
{
	struct vfs_region *r = &V.reg[VFS_WAL];
	int err = region_write(r, hdr, frame, WAL_FRAME_HDR_BYTES);
	if (!err)
		err = region_write(r, page, frame + WAL_FRAME_HDR_BYTES, len);
	if (err) {
		V.wal.chain_valid = false;
		V.wal.rep_valid = false;
		return err;
	}
	wal_chain_at(frame, hdr);
	return 0;
}

/* The held header is a padding frame's whose page SQLite has not handed over yet (split
 * at the sync point, or the sync comes right after the header): write its header as the
 * repeat of the frame before, and the first part of the page (len bytes, may be 0). A
 * held header that repeats nothing: at a sync (strict false) it is the last one SQLite
 * rewrote from the disk's bytes, written as it is; before part of a page it cannot be
 * sealed (-E_INVAL, counted). */
static int wal_put_repeat(const uint8_t *part, size_t len, bool strict)
{
	struct vfs_wal *w = &V.wal;
	uint8_t hdr[WAL_FRAME_HDR_BYTES];
	int err = wal_repeat_header(w->held_off, hdr);
	if (!err && memcmp(hdr, w->held_hdr, 16) != 0)
		err = -E_INVAL; /* not a repeat: its checksum cannot be known before its page */
	if (err == -E_INVAL && !strict)
		return wal_release_held();
	if (err) {
		V.st.frames_unsealable += err == -E_INVAL;
		w->held = false;
		w->rep_valid = false;
		w->chain_valid = false;
		return err;
	}
	w->held = false;
	w->rep_valid = false;
	return wal_put(hdr, w->held_off, part, len);
}

/* The held header's page, whole: checksum the page (in SQLite's buffer, as cksumvfs
 * does), continue the chain over header and page, write both; a commit frame also
 * prepares the header a padding repeat of it would have. */
static int wal_put_frame(const uint8_t *buf, size_t len)
{
	struct vfs_wal *w = &V.wal;
	uint8_t hdr[WAL_FRAME_HDR_BYTES];
	uint64_t frame = w->held_off;
	memcpy(hdr, w->held_hdr, sizeof hdr);
	w->held = false;
	w->rep_valid = false;
	if (be32(hdr) == 1)
		note_page1(VFS_WAL, buf, len);
	if (!V.cksum[VFS_DB])
		return wal_put(hdr, frame, buf, len); /* SQLite's chain is right as it is */
	/* SQLite's page buffer (a page of its cache, writable): the disk and the cache then
	 * hold the same checksum. NOLINTNEXTLINE(performance-no-int-to-ptr) */
	uint8_t *page = (uint8_t *)(uintptr_t)buf;
	page_seal(page, len);
	uint32_t s[2];
	int err = wal_prev_cksum(frame, s);
	if (err)
		return err;
	wal_cksum(w->big_endian, hdr, 8, s);
	wal_cksum(w->big_endian, page, len, s);
	put_be32(hdr + 16, s[0]);
	put_be32(hdr + 20, s[1]);
	err = wal_put(hdr, frame, page, len);
	if (err)
		return err;
	V.st.frames_sealed++;
	if (be32(hdr + 4) != 0) { /* a commit frame: SQLite may repeat it to the sector's end */
		wal_cksum(w->big_endian, hdr, 8, s);
		wal_cksum(w->big_endian, page, len, s);
		memcpy(w->rep_hdr, hdr, 16);
		put_be32(w->rep_hdr + 16, s[0]);
		put_be32(w->rep_hdr + 20, s[1]);
		w->rep_off = frame + wal_frame_bytes();
		w->rep_valid = true;
	}
	return 0;
}

/* A write to the WAL (see the design note). */
static int wal_write(const uint8_t *buf, size_t amt, uint64_t off)
{
	struct vfs_wal *w = &V.wal;
	struct vfs_region *r = &V.reg[VFS_WAL];
	if (off == 0) { /* the header: a new log (new salts); its checksum starts the chain */
		wal_forget(); /* a held header belonged to the log it replaces */
		int err = region_write(r, buf, 0, amt);
		if (!err && amt >= WAL_HDR_BYTES)
			wal_learn(buf);
		return err;
	}
	if (!w->known) {
		uint8_t h[WAL_HDR_BYTES];
		int err = region_read(r, h, 0, sizeof h);
		if (err)
			return err;
		wal_learn(h);
	}
	if (!w->known || off < WAL_HDR_BYTES) {
		int err = wal_release_held();
		return err ? err : region_write(r, buf, off, amt);
	}
	uint64_t fb = wal_frame_bytes();
	uint64_t rel = (off - WAL_HDR_BYTES) % fb, frame = off - rel;
	if (rel == 0 && amt == WAL_FRAME_HDR_BYTES) { /* a frame header: held for its page */
		int err = wal_release_held();
		if (err)
			return err;
		w->held = true;
		w->held_off = off;
		memcpy(w->held_hdr, buf, WAL_FRAME_HDR_BYTES);
		return 0;
	}
	if (w->held && off == w->held_off + WAL_FRAME_HDR_BYTES) {
		if (amt == w->page)
			return wal_put_frame(buf, amt);
		if (amt < w->page && V.cksum[VFS_DB])
			return wal_put_repeat(buf, amt, true);
	}
	int err = wal_release_held();
	if (err)
		return err;
	if (rel < WAL_FRAME_HDR_BYTES && V.cksum[VFS_DB]) {
		/* Part of a header SQLite split at the sync point: a padding frame's. */
		uint8_t hdr[WAL_FRAME_HDR_BYTES];
		size_t n = MIN(amt, (size_t)(WAL_FRAME_HDR_BYTES - rel));
		err = wal_repeat_header(frame, hdr);
		if (!err && rel < 16 && memcmp(hdr + rel, buf, MIN(n, (size_t)(16 - rel))) != 0)
			err = -E_INVAL;
		if (err) {
			V.st.frames_unsealable += err == -E_INVAL;
			return err;
		}
		err = region_write(r, hdr + rel, off, n);
		if (!err && amt > n)
			err = region_write(r, buf + n, off + n, amt - n);
		if (!err)
			wal_chain_at(frame, hdr);
		return err;
	}
	if (rel == WAL_FRAME_HDR_BYTES && amt == w->page && V.cksum[VFS_DB]) {
		/* A page without its header: an earlier frame overwritten (SQLite rewrites the
		 * checksums from the disk before the commit), or the page of a split header. */
		page_seal((uint8_t *)(uintptr_t)buf, amt); /* NOLINT(performance-no-int-to-ptr): as above */
		w->rep_valid = false;
	}
	return region_write(r, buf, off, amt);
}

/* A read of the WAL: a page of a frame is checked (by a query, a checkpoint or a backup
 * step: *bad when its checksum does not match); the header and whole frames (recovery)
 * are not (SQLite's own checksums). */
static int wal_read(uint8_t *buf, size_t have, uint64_t off, bool *bad)
{
	struct vfs_wal *w = &V.wal;
	int err = wal_release_held();
	if (!err)
		err = region_read(&V.reg[VFS_WAL], buf, off, have);
	if (err)
		return err;
	if (off == 0 && have >= WAL_HDR_BYTES) {
		wal_learn(buf);
		return 0;
	}
	if (!w->known || off < WAL_HDR_BYTES)
		return 0;
	uint64_t fb = wal_frame_bytes(), rel = (off - WAL_HDR_BYTES) % fb;
	if (rel == 0 && have == fb && be32(buf) == 1)
		note_page1(VFS_WAL, buf + WAL_FRAME_HDR_BYTES, w->page);
	if (rel != WAL_FRAME_HDR_BYTES || have != w->page)
		return 0;
	note_page1(VFS_WAL, buf, have);
	*bad = page_read_bad(VFS_WAL, buf, have);
	return 0;
}

/* ---- sqlite3_io_methods ---- */

static struct vfs_file *vf(sqlite3_file *f)
{
	return (struct vfs_file *)(void *)f;
}

static int vfs_close(sqlite3_file *f)
{
	struct vfs_file *p = vf(f);
	int rc = SQLITE_OK;
	if (p->kind == VFS_WAL) {
		if (wal_release_held() != 0) {
			V.st.errors++;
			rc = SQLITE_IOERR_CLOSE;
		}
		wal_forget();
	}
	V.open[p->kind] = false;
	slot_drop(&V.reg[p->kind]);
	V.size[p->kind] = 0;
	if (p->kind == VFS_DB) {
		V.db_name_len = 0;
		V.db_name[0] = '\0';
	}
	p->base.pMethods = NULL;
	return rc;
}

static sqlite3_int64 file_size(const struct vfs_file *p)
{
	return p->kind == VFS_WAL ? V.reg[VFS_WAL].bytes : V.size[p->kind];
}

static int vfs_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	struct vfs_file *p = vf(f);
	struct store_vfs_file_stats *fs = &V.st.file[file_kind(p->kind)];
	V.st.reads++;
	fs->reads++;
	if (amt <= 0 || off < 0)
		return amt == 0 ? SQLITE_OK : SQLITE_IOERR_READ;
	size_t want = (size_t)amt;
	sqlite3_int64 size = file_size(p);
	size_t have = off >= size ? 0 : (size_t)MIN((sqlite3_int64)want, size - off);
	bool bad = false; /* a WAL page whose checksum does not match: not the page written */
	if (have) {
		int err = p->kind == VFS_WAL ? wal_read(buf, have, (uint64_t)off, &bad)
					     : region_read(&V.reg[p->kind], buf, (uint64_t)off, have);
		if (err) {
			V.st.errors++;
			return SQLITE_IOERR_READ;
		}
	}
	if (have && off == 0 && is_backup(p->kind))
		backup_page1_as(buf, have, DB_VERSION_LEGACY);
	if (have && is_main(p->kind) && page_size_ok(have) && (uint64_t)off % have == 0) {
		if (off == 0)
			note_page1(p->kind, buf, have);
		(void)page_read_bad(p->kind, buf, have); /* counted; cksumvfs above refuses it */
	}
	V.st.read_bytes += have;
	fs->read_bytes += have;
	if (bad)
		return SQLITE_IOERR_DATA;
	if (have < want) { /* past the end: zeros, and SQLite is told (it wants both) */
		memset((uint8_t *)buf + have, 0, want - have);
		V.st.short_reads++;
		return SQLITE_IOERR_SHORT_READ;
	}
	return SQLITE_OK;
}

/* A write of page 1 of a backup: the disk gets the WAL-mode form, SQLite's buffer (its
 * cached page 1) keeps the form it reads back, so the next transaction on the backup
 * connection sees no log either. */
static int backup_write_page1(struct vfs_region *r, const uint8_t *buf, size_t amt)
{
	/* SQLite's page buffer, writable (cksumvfs writes its checksum into it the same way).
	 * NOLINTNEXTLINE(performance-no-int-to-ptr) */
	uint8_t *p = (uint8_t *)(uintptr_t)buf;
	backup_page1_as(p, amt, DB_VERSION_WAL);
	int err = region_write(r, p, 0, amt);
	backup_page1_as(p, amt, DB_VERSION_LEGACY);
	return err;
}

static int vfs_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	struct vfs_file *p = vf(f);
	struct vfs_region *r = &V.reg[p->kind];
	struct store_vfs_file_stats *fs = &V.st.file[file_kind(p->kind)];
	V.st.writes++;
	fs->writes++;
	if (amt <= 0 || off < 0)
		return amt == 0 ? SQLITE_OK : SQLITE_IOERR_WRITE;
	if (off > r->bytes || amt > r->bytes - off) { /* nothing written: invariant 3 */
		V.st.full++;
		return SQLITE_FULL;
	}
	const uint8_t *in = buf;
	int err;
	if (p->kind == VFS_WAL)
		err = wal_write(in, (size_t)amt, (uint64_t)off);
	else if (is_backup(p->kind) && off == 0)
		err = backup_write_page1(r, in, (size_t)amt);
	else
		err = region_write(r, in, (uint64_t)off, (size_t)amt);
	if (err) {
		V.st.errors++;
		return SQLITE_IOERR_WRITE;
	}
	if (off == 0 && is_main(p->kind))
		note_page1(p->kind, in, (size_t)amt);
	V.st.write_bytes += (uint64_t)amt;
	fs->write_bytes += (uint64_t)amt;
	if (is_main(p->kind) && off + amt > V.size[p->kind])
		V.size[p->kind] = off + amt;
	return SQLITE_OK;
}

/* A database or a backup: its size is the number SQLite gives; shrinking hands the whole
 * blocks past the new end back to the device (never one holding a byte below it). The
 * WAL: truncating to 0 empties it (its header zeroed, as xDelete); to any other size
 * nothing changes, since frames past the live ones are invalid by their salts. */
static int vfs_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct vfs_file *p = vf(f);
	struct vfs_region *r = &V.reg[p->kind];
	if (size < 0)
		return SQLITE_IOERR_TRUNCATE;
	if (size > r->bytes) {
		V.st.full++;
		return SQLITE_FULL;
	}
	V.st.file[file_kind(p->kind)].truncates++;
	int err = 0;
	if (is_main(p->kind)) {
		sqlite3_int64 old = V.size[p->kind];
		V.size[p->kind] = size;
		if (size < old)
			err = region_discard(r, ((uint64_t)size + V.bs - 1) / V.bs, ((uint64_t)old + V.bs - 1) / V.bs);
	} else if (size == 0) {
		err = wal_zero_header();
	} else {
		err = wal_release_held();
	}
	if (err) {
		V.st.errors++;
		return SQLITE_IOERR_TRUNCATE;
	}
	return SQLITE_OK;
}

static int vfs_sync(sqlite3_file *f, int flags)
{
	struct vfs_file *p = vf(f);
	(void)flags;
	V.st.syncs++;
	V.st.file[file_kind(p->kind)].syncs++;
	/* A header held at a sync is the padding frame's that crosses the sync point: its page
	 * comes after the sync, its header must be durable with it. */
	int err = 0;
	if (p->kind == VFS_WAL && V.wal.held)
		err = V.cksum[VFS_DB] ? wal_put_repeat(NULL, 0, false) : wal_release_held();
	if (!err)
		err = store_dev_flush(V.cfg.dev);
	if (err) {
		V.st.errors++;
		return SQLITE_IOERR_FSYNC;
	}
	return SQLITE_OK;
}

static int vfs_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	*size = file_size(vf(f));
	return SQLITE_OK;
}

/* One connection per file in exclusive mode: locks are bookkeeping, never contended. */
static int vfs_lock(sqlite3_file *f, int level)
{
	struct vfs_file *p = vf(f);
	if (level > p->lock)
		p->lock = level;
	return SQLITE_OK;
}

static int vfs_unlock(sqlite3_file *f, int level)
{
	struct vfs_file *p = vf(f);
	if (level < p->lock)
		p->lock = level;
	return SQLITE_OK;
}

static int vfs_check_reserved(sqlite3_file *f, int *out)
{
	(void)f;
	*out = 0; /* nobody else exists to hold a lock */
	return SQLITE_OK;
}

static int vfs_file_control(sqlite3_file *f, int op, void *arg)
{
	(void)f;
	(void)op;
	(void)arg;
	/* Size hints, persistent WAL, pragmas, VFS names...: SQLite's defaults are right
	 * (a WAL is deleted on close after its checkpoint, by zeroing its header). */
	return SQLITE_NOTFOUND;
}

static int vfs_sector_size(sqlite3_file *f)
{
	(void)f;
	return V.sector;
}

/* Not SQLITE_IOCAP_POWERSAFE_OVERWRITE: SQLite pads each WAL commit to a sector boundary,
 * so a later transaction never rewrites a sector that holds committed frames. Not
 * SEQUENTIAL (writes may reach the medium in any order before a flush), not ATOMIC*. */
static int vfs_device_characteristics(sqlite3_file *f)
{
	(void)f;
	return 0;
}

/* Shared memory: never. SQLite asks for it only for a WAL opened without exclusive
 * locking (the default here is exclusive); cksumvfs's methods above ours would otherwise
 * reach a NULL. Refused loudly. */
static int vfs_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out)
{
	(void)f;
	(void)region;
	(void)size;
	(void)extend;
	*out = NULL;
	V.st.refused[STORE_VFS_REFUSED_SHM]++;
	return SQLITE_IOERR_SHMMAP;
}

static int vfs_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	(void)f;
	(void)offset;
	(void)n;
	(void)flags;
	return SQLITE_IOERR_SHMLOCK;
}

static void vfs_shm_barrier(sqlite3_file *f)
{
	(void)f;
}

static int vfs_shm_unmap(sqlite3_file *f, int delete_flag)
{
	(void)f;
	(void)delete_flag;
	return SQLITE_OK;
}

static const sqlite3_io_methods vfs_io = {
	.iVersion = 2, /* the shared-memory methods refuse; no xFetch (no memory mapping) */
	.xClose = vfs_close,
	.xRead = vfs_read,
	.xWrite = vfs_write,
	.xTruncate = vfs_truncate,
	.xSync = vfs_sync,
	.xFileSize = vfs_file_size,
	.xLock = vfs_lock,
	.xUnlock = vfs_unlock,
	.xCheckReservedLock = vfs_check_reserved,
	.xFileControl = vfs_file_control,
	.xSectorSize = vfs_sector_size,
	.xDeviceCharacteristics = vfs_device_characteristics,
	.xShmMap = vfs_shm_map,
	.xShmLock = vfs_shm_lock,
	.xShmBarrier = vfs_shm_barrier,
	.xShmUnmap = vfs_shm_unmap,
};

/* ---- sqlite3_vfs ---- */

static const char *const backup_names[STORE_VFS_BACKUP_SLOTS] = { STORE_VFS_BACKUP_A, STORE_VFS_BACKUP_B };

/* Is name (n bytes) a backup file's (*exact) or does it start with one (its journal, its
 * WAL)? The slot, or -1. */
static int backup_slot_of(const char *name, size_t n, bool *exact)
{
	for (int i = 0; i < (int)STORE_VFS_BACKUP_SLOTS; i++) {
		size_t k = strnlen(backup_names[i], VFS_PATH_MAX);
		if (n >= k && memcmp(name, backup_names[i], k) == 0) {
			*exact = n == k;
			return i;
		}
	}
	*exact = false;
	return -1;
}

/* Is name the open DB's name followed by "-wal"? */
static bool is_wal_name(const char *name)
{
	size_t n = strnlen(name, VFS_PATH_MAX + 1);
	size_t sfx = sizeof VFS_WAL_SUFFIX - 1;
	return V.db_name_len && n == V.db_name_len + sfx &&
	       memcmp(name, V.db_name, V.db_name_len) == 0 &&
	       memcmp(name + V.db_name_len, VFS_WAL_SUFFIX, sfx) == 0;
}

static int refuse_open(struct vfs_file *p, enum store_vfs_refusal why)
{
	p->base.pMethods = NULL; /* SQLite's rule, even when xOpen fails */
	V.st.refused_opens++;
	V.st.refused[why]++;
	return SQLITE_CANTOPEN;
}

/* Open a database or a backup: its size from its header. */
static int open_main(enum vfs_kind kind)
{
	struct vfs_region *r = &V.reg[kind];
	slot_drop(r); /* someone else may have written the disk since (invariant 4) */
	if (slot_load(r, 0) != 0) {
		V.st.errors++;
		return SQLITE_IOERR_READ;
	}
	const uint8_t *h = r->slot->buf;
	V.size[kind] = db_size_from_header(h, r->bytes);
	V.cksum[kind] = is_db_header(h, V.bs) && h[DB_HDR_RESERVE] == CKSUM_BYTES;
	return SQLITE_OK;
}

static int vfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
		    int *out_flags)
{
	(void)vfs;
	struct vfs_file *p = vf(f);
	p->base.pMethods = NULL;
	int type = flags & VFS_OPEN_TYPES; /* SQLITE_OPEN_MAIN_DB, _WAL, _MAIN_JOURNAL ... */
	if (!V.registered)
		return refuse_open(p, STORE_VFS_REFUSED_OTHER);
	if (!name || (flags & SQLITE_OPEN_DELETEONCLOSE))
		return refuse_open(p, STORE_VFS_REFUSED_TEMP); /* they live in memory (SQLITE_TEMP_STORE=3) */
	size_t n = strnlen(name, VFS_PATH_MAX + 1);
	bool exact;
	int slot = backup_slot_of(name, n, &exact);
	enum vfs_kind kind;
	if (slot >= 0 && (!exact || type != SQLITE_OPEN_MAIN_DB)) {
		return refuse_open(p, STORE_VFS_REFUSED_BACKUP_LOG); /* a backup has no log */
	} else if (slot >= 0) {
		kind = slot ? VFS_BACKUP_B : VFS_BACKUP_A;
		if (!V.reg[kind].blocks)
			return refuse_open(p, STORE_VFS_REFUSED_BACKUP_ABSENT);
		if (V.open[VFS_BACKUP_A] || V.open[VFS_BACKUP_B])
			return refuse_open(p, STORE_VFS_REFUSED_TWICE);
		int rc = open_main(kind);
		if (rc != SQLITE_OK)
			return rc;
	} else if (type == SQLITE_OPEN_MAIN_DB) {
		if (V.open[VFS_DB])
			return refuse_open(p, STORE_VFS_REFUSED_TWICE); /* a second connection, ATTACH of it */
		if (n == 0 || n > VFS_PATH_MAX - (sizeof VFS_WAL_SUFFIX - 1))
			return refuse_open(p, STORE_VFS_REFUSED_OTHER);
		kind = VFS_DB;
		int rc = open_main(kind);
		if (rc != SQLITE_OK)
			return rc;
		memcpy(V.db_name, name, n);
		V.db_name[n] = '\0';
		V.db_name_len = n;
	} else if (type == SQLITE_OPEN_WAL && is_wal_name(name)) {
		if (V.open[VFS_WAL])
			return refuse_open(p, STORE_VFS_REFUSED_TWICE);
		kind = VFS_WAL;
		slot_drop(&V.reg[VFS_WAL]);
		wal_forget();
	} else {
		/* A journal, a second database (ATTACH), a WAL of another name: only the DB, its
		 * WAL and the backups exist here. */
		return refuse_open(p, STORE_VFS_REFUSED_OTHER);
	}
	V.open[kind] = true;
	V.st.file[file_kind(kind)].opens++;
	p->kind = kind;
	p->lock = SQLITE_LOCK_NONE;
	p->base.pMethods = &vfs_io;
	if (out_flags) {
		*out_flags = flags;
		if (V.read_only)
			*out_flags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) |
				     SQLITE_OPEN_READONLY;
	}
	return SQLITE_OK;
}

static int vfs_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	if (!is_wal_name(name))
		return SQLITE_IOERR_DELETE_NOENT; /* no such file; the DB and backups are never deleted */
	V.wal.held = false; /* the log it belonged to goes */
	if (wal_zero_header() != 0 || (sync_dir && store_dev_flush(V.cfg.dev) != 0)) {
		V.st.errors++;
		return SQLITE_IOERR_DELETE;
	}
	return SQLITE_OK;
}

/* The DB and a backup exist while open (they are regions); the WAL exists when its region
 * starts with a WAL header's magic number; nothing else exists. */
static int vfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	(void)flags;
	*out = 0;
	size_t n = strnlen(name, VFS_PATH_MAX + 1);
	bool exact;
	int slot = backup_slot_of(name, n, &exact);
	if (slot >= 0) {
		*out = exact && V.open[slot ? VFS_BACKUP_B : VFS_BACKUP_A];
		return SQLITE_OK;
	}
	if (V.db_name_len && n == V.db_name_len && memcmp(name, V.db_name, n) == 0) {
		*out = 1;
		return SQLITE_OK;
	}
	if (!is_wal_name(name))
		return SQLITE_OK;
	struct vfs_region *r = &V.reg[VFS_WAL];
	if (slot_load(r, 0) != 0) {
		V.st.errors++;
		return SQLITE_IOERR_ACCESS;
	}
	uint32_t magic = be32(r->slot->buf);
	*out = (magic & ~1u) == WAL_MAGIC;
	return SQLITE_OK;
}

static int vfs_full_pathname(sqlite3_vfs *vfs, const char *name, int n_out, char *out)
{
	(void)vfs;
	size_t n = strnlen(name, VFS_PATH_MAX + 1);
	if (n_out <= 0 || n >= (size_t)n_out || n > VFS_PATH_MAX)
		return SQLITE_CANTOPEN;
	memcpy(out, name, n + 1);
	return SQLITE_OK;
}

static int vfs_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	if (n <= 0)
		return 0;
	V.cfg.random(V.cfg.ctx, out, (size_t)n);
	return n;
}

/* One connection per file: nothing is ever busy, so nothing waits. */
static int vfs_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	(void)us;
	return 0;
}

static int vfs_current_time(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	int64_t ms = V.cfg.wall_ms ? V.cfg.wall_ms(V.cfg.ctx) : 0;
	if (ms <= 0)
		return SQLITE_ERROR; /* unknown: date('now') is NULL rather than 1970 */
	*out = VFS_UNIX_EPOCH_JD_MS + ms;
	return SQLITE_OK;
}

/* No operating system error numbers: SQLite asks after every I/O error, and cksumvfs
 * passes the question down unconditionally. */
static int vfs_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	if (n > 0 && out)
		out[0] = '\0';
	return 0;
}

/* No loadable code (SQLITE_OMIT_LOAD_EXTENSION): cksumvfs passes these down too. */
static void *vfs_dl_open(sqlite3_vfs *vfs, const char *path)
{
	(void)vfs;
	(void)path;
	return NULL;
}

static void vfs_dl_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	if (n > 0 && out)
		out[0] = '\0';
}

static void (*vfs_dl_sym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	(void)vfs;
	(void)h;
	(void)sym;
	return NULL;
}

static void vfs_dl_close(sqlite3_vfs *vfs, void *h)
{
	(void)vfs;
	(void)h;
}

/* The top of the stack: a write-ahead log to the block layer, everything else to
 * cksumvfs (which passes files that are no database straight through to the block layer). */
static int top_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out_flags)
{
	(void)vfs;
	if ((flags & VFS_OPEN_TYPES) == SQLITE_OPEN_WAL)
		return vfs_open(&V.raw, name, f, flags, out_flags);
	return V.cksm->xOpen(V.cksm, name, f, flags, out_flags);
}

/* ---- registration ---- */

/* One of our two VFS objects: the same services, its own name, file size and xOpen. */
static sqlite3_vfs vfs_methods(const char *name, int file_bytes,
			       int (*open)(sqlite3_vfs *, sqlite3_filename, sqlite3_file *, int, int *))
{
	return (sqlite3_vfs){
		.iVersion = 2, /* xCurrentTimeInt64 */
		.szOsFile = file_bytes,
		.mxPathname = VFS_PATH_MAX,
		.zName = name,
		.xOpen = open,
		.xDelete = vfs_delete,
		.xAccess = vfs_access,
		.xFullPathname = vfs_full_pathname,
		.xDlOpen = vfs_dl_open,
		.xDlError = vfs_dl_error,
		.xDlSym = vfs_dl_sym,
		.xDlClose = vfs_dl_close,
		.xRandomness = vfs_randomness,
		.xSleep = vfs_sleep,
		.xGetLastError = vfs_last_error,
		.xCurrentTimeInt64 = vfs_current_time,
	};
}

static bool region_ok(uint64_t lba, uint64_t blocks, uint64_t cap, uint32_t bs)
{
	return blocks && lba <= cap && blocks <= cap - lba && blocks <= (uint64_t)INT64_MAX / bs;
}

/* Does [lba, lba + blocks) overlap an extent of any file, but extent `skip` of `except`? */
static bool overlaps_any(uint64_t lba, uint64_t blocks, const struct vfs_region *except, uint32_t skip)
{
	for (int k = 0; k < VFS__KINDS; k++)
		for (uint32_t i = 0; i < V.reg[k].n; i++) {
			const struct store_vfs_extent *e = &V.reg[k].ext[i];
			if ((&V.reg[k] != except || i != skip) && lba < e->lba + e->blocks && e->lba < lba + blocks)
				return true;
		}
	return false;
}

/* Put [lba, lba + blocks) at the end of r: inside the device (cap blocks), clear of every
 * file's extents (invariant 7); continuing r's last extent, it lengthens it. 0, -E_INVAL,
 * or -E_RANGE (r has every extent it may have). */
static int region_append(struct vfs_region *r, uint64_t lba, uint64_t blocks, uint64_t cap)
{
	if (!region_ok(lba, blocks, cap, V.bs) || overlaps_any(lba, blocks, NULL, 0) ||
	    r->blocks > (uint64_t)INT64_MAX / V.bs - blocks)
		return -E_INVAL;
	struct store_vfs_extent *last = r->n ? &r->ext[r->n - 1] : NULL;
	if (last && last->lba + last->blocks == lba)
		last->blocks += blocks;
	else if (r->n == STORE_VFS_MAX_EXTENTS)
		return -E_RANGE;
	else
		r->ext[r->n++] = (struct store_vfs_extent){ lba, blocks };
	r->blocks += blocks;
	r->bytes = (sqlite3_int64)r->blocks * V.bs; /* <= INT64_MAX: checked above */
	return 0;
}

/* cksumvfs, statically linked (module.mk: SQLITE_CKSUMVFS_STATIC): ext/misc/cksumvfs.c. */
int sqlite3_register_cksumvfs(const char *unused);
int sqlite3_unregister_cksumvfs(void);

static void unregister_all(void)
{
	(void)sqlite3_vfs_unregister(&V.top);
	(void)sqlite3_unregister_cksumvfs();
	/* cksumvfs's auto-extension (verify_checksum() in every connection) leaves its list
	 * allocated; we own the list, nobody else adds to it. */
	sqlite3_reset_auto_extension();
	(void)sqlite3_vfs_unregister(&V.raw);
}

int store_vfs_register(const struct store_vfs_config *cfg)
{
	if (V.registered)
		return -E_EXIST;
	if (!store_sqlite_up() || !cfg || !cfg->dev || !cfg->dev->blk || !cfg->io_buf ||
	    !cfg->random)
		return -E_INVAL;
	if (sqlite3_vfs_find(STORE_VFS_CKSUM_NAME) || sqlite3_vfs_find(STORE_VFS_NAME) ||
	    sqlite3_vfs_find(STORE_VFS_RAW_NAME))
		return -E_EXIST;
	uint32_t bs = store_dev_block_size(cfg->dev);
	uint64_t cap = store_dev_blocks(cfg->dev);
	if (cfg->io_buf_len / 2 < bs || cfg->db.n == 0 || cfg->db.n > STORE_VFS_MAX_EXTENTS)
		return -E_INVAL;
	for (uint32_t i = 0; i < STORE_VFS_BACKUP_SLOTS; i++)
		if (cfg->backup[i].n > STORE_VFS_MAX_EXTENTS)
			return -E_INVAL;
	memset(&V, 0, sizeof V);
	V.cfg = *cfg;
	V.bs = bs;
	uint32_t phys = cfg->dev->blk->topo.physical_block;
	V.sector = (int)MIN(MAX(bs, phys), VFS_SECTOR_MAX);
	V.read_only = cfg->dev->blk->topo.read_only;
	V.slot[0].buf = cfg->io_buf;
	V.slot[1].buf = cfg->io_buf + bs;
	for (int k = 0; k < VFS__KINDS; k++)
		V.reg[k] = (struct vfs_region){ .kind = (enum vfs_kind)k, .slot = &V.slot[k == VFS_WAL] };
	int bad = region_append(&V.reg[VFS_WAL], cfg->wal_lba, cfg->wal_blocks, cap);
	for (uint32_t i = 0; i < cfg->db.n && !bad; i++)
		bad = region_append(&V.reg[VFS_DB], cfg->db.ext[i].lba, cfg->db.ext[i].blocks, cap);
	for (uint32_t s = 0; s < STORE_VFS_BACKUP_SLOTS && !bad; s++)
		for (uint32_t i = 0; i < cfg->backup[s].n && !bad; i++)
			bad = region_append(&V.reg[s ? VFS_BACKUP_B : VFS_BACKUP_A], cfg->backup[s].ext[i].lba,
					    cfg->backup[s].ext[i].blocks, cap);
	if (bad) {
		memset(&V, 0, sizeof V);
		return -E_INVAL;
	}
	V.raw = vfs_methods(STORE_VFS_RAW_NAME, (int)sizeof(struct vfs_file), vfs_open);
	int err = -E_INVAL;
	/* cksumvfs wraps whatever is the default when it registers, and becomes the default. */
	if (sqlite3_vfs_register(&V.raw, 1) != SQLITE_OK)
		goto fail;
	int rc = sqlite3_register_cksumvfs(NULL);
	if (rc != SQLITE_OK) {
		err = (rc & 0xff) == SQLITE_NOMEM ? -E_NOMEM : -E_INVAL;
		goto fail;
	}
	V.cksm = sqlite3_vfs_find(STORE_VFS_CKSUM_NAME);
	if (!V.cksm || V.cksm->pAppData != &V.raw || V.cksm->szOsFile < V.raw.szOsFile)
		goto fail;
	/* Its files are cksumvfs's (ours inside them) or ours: cksumvfs's are the larger. */
	V.top = vfs_methods(STORE_VFS_NAME, V.cksm->szOsFile, top_open);
	if (sqlite3_vfs_register(&V.top, 1) != SQLITE_OK)
		goto fail;
	V.registered = true;
	return 0;
fail:
	unregister_all();
	memset(&V, 0, sizeof V);
	return err;
}

/* Refused (the stack stays registered) while SQLite holds a file: unregistering then would
 * leave SQLite calling into a VFS that is gone; store_sqlite_fini reports it too. */
void store_vfs_unregister(void)
{
	if (!V.registered || store_vfs_open_files())
		return;
	unregister_all();
	V.registered = false;
	V.cksm = NULL;
}

void store_vfs_stats(struct store_vfs_stats *out)
{
	*out = V.st;
}

int store_vfs_backup_clear(uint32_t slot)
{
	if (!V.registered || slot >= STORE_VFS_BACKUP_SLOTS)
		return -E_INVAL;
	enum vfs_kind k = slot ? VFS_BACKUP_B : VFS_BACKUP_A;
	struct vfs_region *r = &V.reg[k];
	if (!r->blocks)
		return -E_INVAL;
	if (V.open[k])
		return -E_EXIST;
	/* The rest first (every extent), then the header block: disjoint, so their order does
	 * not matter. */
	int err = region_discard(r, 1, r->blocks);
	slot_drop_range(r, 0, 1);
	if (!err)
		err = store_dev_zero(V.cfg.dev, r->ext[0].lba, 1);
	return err;
}

int store_vfs_extend(enum store_vfs_file file, uint32_t slot, uint64_t lba, uint64_t blocks)
{
	enum vfs_kind k;
	if (!V.registered)
		return -E_INVAL;
	if (file == STORE_VFS_FILE_DB && slot == 0)
		k = VFS_DB;
	else if (file == STORE_VFS_FILE_BACKUP && slot < STORE_VFS_BACKUP_SLOTS)
		k = slot ? VFS_BACKUP_B : VFS_BACKUP_A;
	else
		return -E_INVAL; /* the WAL never grows */
	/* An open file keeps its size and its blocks' places: only its room grows. */
	return region_append(&V.reg[k], lba, blocks, store_dev_blocks(V.cfg.dev));
}

uint32_t store_vfs_open_files(void)
{
	uint32_t n = 0;
	for (int k = 0; k < VFS__KINDS; k++)
		n += V.open[k];
	return n;
}

int store_vfs_check(void)
{
	uint32_t backups = (uint32_t)V.open[VFS_BACKUP_A] + (uint32_t)V.open[VFS_BACKUP_B];
	if (!V.registered && store_vfs_open_files())
		return -E_CORRUPT; /* 1 */
	if (backups > 1 || (V.open[VFS_BACKUP_A] && !V.reg[VFS_BACKUP_A].blocks) ||
	    (V.open[VFS_BACKUP_B] && !V.reg[VFS_BACKUP_B].blocks))
		return -E_CORRUPT; /* 1 */
	if (V.open[VFS_DB] != (V.db_name_len != 0) || V.db_name_len > VFS_PATH_MAX ||
	    V.db_name[V.db_name_len] != '\0')
		return -E_CORRUPT; /* 2 */
	for (int k = 0; k < VFS__KINDS; k++) {
		const struct vfs_region *r = &V.reg[k];
		if (V.size[k] < 0 || V.size[k] > r->bytes || (!V.open[k] && V.size[k]))
			return -E_CORRUPT; /* 3 */
	}
	for (int i = 0; i < 2; i++) {
		const struct vfs_slot *s = &V.slot[i];
		if (s->valid && (s->owner >= VFS__KINDS || s->blk >= V.reg[s->owner].blocks ||
				 V.reg[s->owner].slot != s))
			return -E_CORRUPT; /* 4 */
	}
	if (V.wal.held && (!V.open[VFS_WAL] || !V.wal.known))
		return -E_CORRUPT; /* 6 */
	if (V.registered && (V.reg[VFS_WAL].n != 1 || V.reg[VFS_DB].n == 0))
		return -E_CORRUPT; /* 7 */
	for (int k = 0; k < VFS__KINDS; k++) {
		const struct vfs_region *r = &V.reg[k];
		uint64_t sum = 0;
		if (r->n > STORE_VFS_MAX_EXTENTS)
			return -E_CORRUPT; /* 7 */
		for (uint32_t i = 0; i < r->n; i++) {
			if (!r->ext[i].blocks || overlaps_any(r->ext[i].lba, r->ext[i].blocks, r, i))
				return -E_CORRUPT; /* 7 */
			sum += r->ext[i].blocks;
		}
		if (sum != r->blocks || r->bytes < 0 || (uint64_t)r->bytes != sum * V.bs)
			return -E_CORRUPT; /* 7 */
	}
	return 0;
}
