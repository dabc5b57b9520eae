/* SPDX-License-Identifier: MIT
 *
 * The VFS "urmqtt" (store/sqlite/vfs.h): SQLite's database file on the DB region and its
 * write-ahead log on the WAL region of the data disk, through store/dev.h. It owns the two
 * open files' state (sizes, locks, a one-block cache per region) and the VFS's counters.
 * It must never open a third file (journals, ATTACHed databases, temporary files: counted,
 * SQLITE_CANTOPEN), never write outside its two regions (SQLITE_FULL), never trust the
 * database header's numbers beyond the region, and never pass or return a double: it is
 * compiled general-registers only in the image, so xCurrentTime (double) is left NULL and
 * SQLite uses xCurrentTimeInt64.
 *
 * Design note. One VFS per process, in static storage. A file is CLOSED or OPEN:
 *
 *   CLOSED --xOpen (MAIN_DB: reads the header for its size)--> OPEN(DB)
 *   CLOSED --xOpen (WAL: "<db name>-wal", DB open)-----------> OPEN(WAL)
 *   OPEN   --xClose----------------------------------------> CLOSED
 *
 * Requests to the device are whole logical blocks. A range that does not cover whole
 * blocks goes through the region's slot in io_buf (block 0: DB, block 1: WAL), which then
 * holds that block as the device has it, so the next write that continues the range (the
 * WAL's frames at offsets of 24 + page size) patches it without reading it again.
 * Invariants (store_vfs_check):
 *  1. Files are open only while the VFS is registered; at most one DB and one WAL.
 *  2. The DB is open exactly when db_name is set; the WAL was opened under db_name-wal.
 *  3. db_size <= the DB region's bytes (writes past the region fail before any I/O).
 *  4. A valid slot holds exactly what the device returns for its block of its region:
 *     every write through the VFS to that block updates the slot or invalidates it, any
 *     failed request invalidates it, opening a file invalidates its region's slot.
 *  5. io_buf is used only inside one call of this file.
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

enum vfs_kind { VFS_DB, VFS_WAL, VFS__KINDS };

struct vfs_region {
	uint64_t lba, blocks;
	sqlite3_int64 bytes;
	uint8_t *slot;       /* one block of io_buf (invariant 4) */
	uint64_t slot_blk;   /* block index in the region */
	bool slot_valid;
};

/* SQLite allocates szOsFile bytes per open file and hands them to xOpen. */
struct vfs_file {
	sqlite3_file base; /* first: what SQLite sees */
	enum vfs_kind kind;
	int lock;          /* SQLITE_LOCK_*: exclusive mode climbs and stays */
};

struct store_vfs {
	bool registered;
	struct store_vfs_config cfg;
	uint32_t bs;             /* logical block */
	int sector;              /* max(logical, physical), at most VFS_SECTOR_MAX */
	bool read_only;
	struct vfs_region reg[VFS__KINDS];
	bool open[VFS__KINDS];
	char db_name[VFS_PATH_MAX + 1];
	size_t db_name_len;      /* 0: the DB is not open (invariant 2) */
	sqlite3_int64 db_size;   /* the DB file's size while open (invariant 3) */
	struct store_vfs_stats st;
	sqlite3_vfs vfs;
};

static struct store_vfs V;

static const sqlite3_io_methods vfs_io;

/* ---- block I/O on a region ---- */

static void slot_drop(struct vfs_region *r)
{
	r->slot_valid = false;
}

/* Make r's slot hold block blk of the region (invariant 4). */
static int slot_load(struct vfs_region *r, uint64_t blk)
{
	if (r->slot_valid && r->slot_blk == blk)
		return 0;
	r->slot_valid = false;
	int err = store_dev_read(V.cfg.dev, r->lba + blk, 1, r->slot);
	if (err)
		return err;
	r->slot_blk = blk;
	r->slot_valid = true;
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
			memcpy(out, r->slot + in, k);
			out += k;
			off += k;
			len -= k;
			continue;
		}
		/* Whole blocks straight into the caller's buffer (store_dev bounces them). */
		uint64_t n = MIN((uint64_t)(len / bs), (uint64_t)UINT32_MAX);
		int err = store_dev_read(V.cfg.dev, r->lba + blk, (uint32_t)n, out);
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
			memcpy(r->slot + at, in, k);
			V.st.rmw++;
			err = store_dev_write(V.cfg.dev, r->lba + blk, 1, r->slot);
			if (err) {
				slot_drop(r); /* the block may hold any mix now (invariant 4) */
				return err;
			}
			in += k;
			off += k;
			len -= k;
			continue;
		}
		uint64_t n = MIN((uint64_t)(len / bs), (uint64_t)UINT32_MAX);
		if (r->slot_valid && r->slot_blk >= blk && r->slot_blk - blk < n)
			slot_drop(r); /* overwritten below (invariant 4) */
		int err = store_dev_write(V.cfg.dev, r->lba + blk, (uint32_t)n, in);
		if (err)
			return err;
		in += n * bs;
		off += n * bs;
		len -= (size_t)(n * bs);
	}
	return 0;
}

/* Zero the WAL's first block: the header goes, so every frame after it is invalid. */
static int wal_zero_header(void)
{
	struct vfs_region *r = &V.reg[VFS_WAL];
	if (r->slot_valid && r->slot_blk == 0)
		slot_drop(r);
	return store_dev_zero(V.cfg.dev, r->lba, 1);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The DB file's size from its header h (the region's first 100 bytes, untrusted). 0 when
 * the region holds no database. When the header says "SQLite format 3" but its page size
 * or count is unusable, or larger than the region, the region's size: SQLite then reads
 * page 1 and refuses it (SQLITE_NOTADB / SQLITE_CORRUPT) instead of taking a damaged
 * database for an empty one and formatting over it. */
static sqlite3_int64 db_size_from_header(const uint8_t *h, sqlite3_int64 region_bytes)
{
	static const char magic[16] = "SQLite format 3";
	if (memcmp(h, magic, sizeof magic) != 0)
		return 0;
	uint32_t ps = (uint32_t)h[16] << 8 | h[17];
	if (ps == 1)
		ps = 65536;
	if (ps < 512 || ps > 65536 || (ps & (ps - 1)))
		return region_bytes;
	uint32_t pages = be32(h + 28);
	if (pages == 0 || be32(h + 24) != be32(h + 92)) /* the in-header size is not valid */
		return region_bytes;
	uint64_t size = (uint64_t)ps * pages;
	return size > (uint64_t)region_bytes ? region_bytes : (sqlite3_int64)size;
}

/* ---- sqlite3_io_methods ---- */

static struct vfs_file *vf(sqlite3_file *f)
{
	return (struct vfs_file *)(void *)f;
}

static int vfs_close(sqlite3_file *f)
{
	struct vfs_file *p = vf(f);
	V.open[p->kind] = false;
	slot_drop(&V.reg[p->kind]);
	if (p->kind == VFS_DB) {
		V.db_name_len = 0;
		V.db_name[0] = '\0';
		V.db_size = 0;
	}
	p->base.pMethods = NULL;
	return SQLITE_OK;
}

static sqlite3_int64 file_size(const struct vfs_file *p)
{
	return p->kind == VFS_DB ? V.db_size : V.reg[VFS_WAL].bytes;
}

static int vfs_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	struct vfs_file *p = vf(f);
	V.st.reads++;
	if (amt <= 0 || off < 0)
		return amt == 0 ? SQLITE_OK : SQLITE_IOERR_READ;
	size_t want = (size_t)amt;
	sqlite3_int64 size = file_size(p);
	size_t have = off >= size ? 0 : (size_t)MIN((sqlite3_int64)want, size - off);
	if (have) {
		int err = region_read(&V.reg[p->kind], buf, (uint64_t)off, have);
		if (err) {
			V.st.errors++;
			return SQLITE_IOERR_READ;
		}
	}
	V.st.read_bytes += have;
	if (have < want) { /* past the end: zeros, and SQLite is told (it wants both) */
		memset((uint8_t *)buf + have, 0, want - have);
		V.st.short_reads++;
		return SQLITE_IOERR_SHORT_READ;
	}
	return SQLITE_OK;
}

static int vfs_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	struct vfs_file *p = vf(f);
	struct vfs_region *r = &V.reg[p->kind];
	V.st.writes++;
	if (amt <= 0 || off < 0)
		return amt == 0 ? SQLITE_OK : SQLITE_IOERR_WRITE;
	if (off > r->bytes || amt > r->bytes - off) { /* nothing written: invariant 3 */
		V.st.full++;
		return SQLITE_FULL;
	}
	int err = region_write(r, buf, (uint64_t)off, (size_t)amt);
	if (err) {
		V.st.errors++;
		return SQLITE_IOERR_WRITE;
	}
	V.st.write_bytes += (uint64_t)amt;
	if (p->kind == VFS_DB && off + amt > V.db_size)
		V.db_size = off + amt;
	return SQLITE_OK;
}

/* The DB: its size is the number SQLite gives (bytes past it stay on the region, unread).
 * The WAL: truncating to 0 empties it (its header zeroed, as xDelete); to any other size
 * nothing changes, since frames past the live ones are invalid by their salts. */
static int vfs_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct vfs_file *p = vf(f);
	if (size < 0)
		return SQLITE_IOERR_TRUNCATE;
	if (size > V.reg[p->kind].bytes) {
		V.st.full++;
		return SQLITE_FULL;
	}
	if (p->kind == VFS_DB) {
		V.db_size = size;
		return SQLITE_OK;
	}
	if (size == 0 && wal_zero_header() != 0) {
		V.st.errors++;
		return SQLITE_IOERR_TRUNCATE;
	}
	return SQLITE_OK;
}

static int vfs_sync(sqlite3_file *f, int flags)
{
	(void)f;
	(void)flags;
	V.st.syncs++;
	if (store_dev_flush(V.cfg.dev) != 0) {
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

/* One connection in exclusive mode: locks are bookkeeping, never contended. */
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

static const sqlite3_io_methods vfs_io = {
	.iVersion = 1, /* no xShmMap: exclusive locking mode keeps the WAL index in the heap */
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
};

/* ---- sqlite3_vfs ---- */

/* Is name the open DB's name followed by "-wal"? */
static bool is_wal_name(const char *name)
{
	size_t n = strnlen(name, VFS_PATH_MAX + 1);
	size_t sfx = sizeof VFS_WAL_SUFFIX - 1;
	return V.db_name_len && n == V.db_name_len + sfx &&
	       memcmp(name, V.db_name, V.db_name_len) == 0 &&
	       memcmp(name + V.db_name_len, VFS_WAL_SUFFIX, sfx) == 0;
}

static int refuse_open(struct vfs_file *p)
{
	p->base.pMethods = NULL; /* SQLite's rule, even when xOpen fails */
	V.st.refused_opens++;
	return SQLITE_CANTOPEN;
}

static int vfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
		    int *out_flags)
{
	(void)vfs;
	struct vfs_file *p = vf(f);
	p->base.pMethods = NULL;
	int type = flags & VFS_OPEN_TYPES; /* SQLITE_OPEN_MAIN_DB, _WAL, _MAIN_JOURNAL ... */
	if (!name || !V.registered || (flags & SQLITE_OPEN_DELETEONCLOSE))
		return refuse_open(p); /* temporary files live in memory (SQLITE_TEMP_STORE=3) */
	enum vfs_kind kind;
	if (type == SQLITE_OPEN_MAIN_DB && !V.open[VFS_DB]) {
		size_t n = strnlen(name, VFS_PATH_MAX + 1);
		if (n == 0 || n > VFS_PATH_MAX - (sizeof VFS_WAL_SUFFIX - 1))
			return refuse_open(p);
		kind = VFS_DB;
		struct vfs_region *r = &V.reg[VFS_DB];
		slot_drop(r); /* someone else may have written the disk since (invariant 4) */
		if (slot_load(r, 0) != 0) {
			V.st.errors++;
			return SQLITE_IOERR_READ;
		}
		V.db_size = db_size_from_header(r->slot, r->bytes);
		memcpy(V.db_name, name, n);
		V.db_name[n] = '\0';
		V.db_name_len = n;
	} else if (type == SQLITE_OPEN_WAL && !V.open[VFS_WAL] && is_wal_name(name)) {
		kind = VFS_WAL;
		slot_drop(&V.reg[VFS_WAL]);
	} else {
		/* A journal, a second database (ATTACH), a second connection, a WAL of another
		 * name: only the DB and its WAL exist here. */
		return refuse_open(p);
	}
	V.open[kind] = true;
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
		return SQLITE_IOERR_DELETE_NOENT; /* no such file; the DB is never deleted */
	if (wal_zero_header() != 0 || (sync_dir && store_dev_flush(V.cfg.dev) != 0)) {
		V.st.errors++;
		return SQLITE_IOERR_DELETE;
	}
	return SQLITE_OK;
}

/* The DB exists while open (it is the region); the WAL exists when its region starts with
 * a WAL header's magic number; nothing else exists. */
static int vfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	(void)flags;
	*out = 0;
	size_t n = strnlen(name, VFS_PATH_MAX + 1);
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
	uint32_t magic = be32(r->slot);
	*out = (magic & 0xFFFFFFFEu) == 0x377f0682u; /* WAL_MAGIC, either checksum order */
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

/* One connection: nothing is ever busy, so nothing waits. */
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

/* ---- registration ---- */

static bool region_ok(uint64_t lba, uint64_t blocks, uint64_t cap, uint32_t bs)
{
	return blocks && lba <= cap && blocks <= cap - lba && blocks <= (uint64_t)INT64_MAX / bs;
}

int store_vfs_register(const struct store_vfs_config *cfg)
{
	if (V.registered)
		return -E_EXIST;
	if (!store_sqlite_up() || !cfg || !cfg->dev || !cfg->dev->blk || !cfg->io_buf ||
	    !cfg->random)
		return -E_INVAL;
	uint32_t bs = store_dev_block_size(cfg->dev);
	uint64_t cap = store_dev_blocks(cfg->dev);
	if (cfg->io_buf_len / 2 < bs || !region_ok(cfg->db_lba, cfg->db_blocks, cap, bs) ||
	    !region_ok(cfg->wal_lba, cfg->wal_blocks, cap, bs))
		return -E_INVAL;
	if (cfg->db_lba < cfg->wal_lba + cfg->wal_blocks && cfg->wal_lba < cfg->db_lba + cfg->db_blocks)
		return -E_INVAL; /* overlapping regions */
	memset(&V, 0, sizeof V);
	V.cfg = *cfg;
	V.bs = bs;
	uint32_t phys = cfg->dev->blk->topo.physical_block;
	V.sector = (int)MIN(MAX(bs, phys), VFS_SECTOR_MAX);
	V.read_only = cfg->dev->blk->topo.read_only;
	V.reg[VFS_DB] = (struct vfs_region){ .lba = cfg->db_lba, .blocks = cfg->db_blocks,
					     .bytes = (sqlite3_int64)(cfg->db_blocks * bs),
					     .slot = cfg->io_buf };
	V.reg[VFS_WAL] = (struct vfs_region){ .lba = cfg->wal_lba, .blocks = cfg->wal_blocks,
					      .bytes = (sqlite3_int64)(cfg->wal_blocks * bs),
					      .slot = cfg->io_buf + bs };
	V.vfs = (sqlite3_vfs){
		.iVersion = 2, /* xCurrentTimeInt64 */
		.szOsFile = (int)sizeof(struct vfs_file),
		.mxPathname = VFS_PATH_MAX,
		.zName = STORE_VFS_NAME,
		.xOpen = vfs_open,
		.xDelete = vfs_delete,
		.xAccess = vfs_access,
		.xFullPathname = vfs_full_pathname,
		.xRandomness = vfs_randomness,
		.xSleep = vfs_sleep,
		.xCurrentTimeInt64 = vfs_current_time,
	};
	if (sqlite3_vfs_register(&V.vfs, 1) != SQLITE_OK) {
		memset(&V, 0, sizeof V);
		return -E_INVAL;
	}
	V.registered = true;
	return 0;
}

/* Refused (the VFS stays registered) while SQLite holds a file: unregistering then would
 * leave SQLite calling into a VFS that is gone; store_sqlite_fini reports it too. */
void store_vfs_unregister(void)
{
	if (!V.registered || V.open[VFS_DB] || V.open[VFS_WAL])
		return;
	(void)sqlite3_vfs_unregister(&V.vfs);
	V.registered = false;
}

void store_vfs_stats(struct store_vfs_stats *out)
{
	*out = V.st;
}

uint32_t store_vfs_open_files(void)
{
	return (uint32_t)V.open[VFS_DB] + (uint32_t)V.open[VFS_WAL];
}

int store_vfs_check(void)
{
	if (!V.registered && (V.open[VFS_DB] || V.open[VFS_WAL]))
		return -E_CORRUPT; /* 1 */
	if (V.open[VFS_DB] != (V.db_name_len != 0) || V.db_name_len > VFS_PATH_MAX ||
	    V.db_name[V.db_name_len] != '\0')
		return -E_CORRUPT; /* 2 */
	if (V.db_size < 0 || V.db_size > V.reg[VFS_DB].bytes)
		return -E_CORRUPT; /* 3 */
	for (int k = 0; k < VFS__KINDS; k++) {
		const struct vfs_region *r = &V.reg[k];
		if (r->slot_valid && r->slot_blk >= r->blocks)
			return -E_CORRUPT; /* 4 */
	}
	return 0;
}
