/* SPDX-License-Identifier: MIT
 *
 * Disk layout v2 (specification: docs/DISK-FORMAT.md): what is on the machine's data disk
 * and how it is recognised, planned and formatted. A GPT (protective MBR, primary and
 * backup headers and entry arrays) with two partitions, an EFI system partition reserved
 * for the images and one urMQTT data partition (type GUID STORE_GPT_TYPE_DATA). The data
 * partition starts with a meta area of one alignment unit: superblock slots A and B and
 * the block self-test's scratch block; then the regions (database, its write-ahead log,
 * the telemetry log, two database backup slots), each aligned to the alignment unit (1 MiB,
 * or the device's optimal I/O size when that is larger and a multiple of it).
 *
 * Recognising a disk only reads it. A disk is formatted only when it is blank (every
 * sampled byte zero) or when a format of ours was interrupted (our GPT, both superblock
 * slots never written); anything else is never written, and store_disk_probe says what
 * it found in words for the console. Parsers never trust disk bytes: every field is
 * range-checked through lib/cursor before use (fuzzed: tests/fuzz/fuzz_store_super.c,
 * fuzz_store_gpt.c).
 *
 * Superblocks. Each slot holds one superblock (STORE_SUPER_BYTES of header in a slot of
 * max(4096, block size) bytes) with a generation and a CRC-32C; the valid one with the
 * higher generation wins, so a write torn anywhere leaves the other slot in charge.
 * Generation g lives in slot (g - 1) % 2 (A for odd, B for even).
 *
 * Portable; reads and writes only through store/dev.h; never allocates (the caller lends
 * a scratch buffer).
 */
#ifndef STORE_LAYOUT_H
#define STORE_LAYOUT_H

#include "lib/compiler.h"
#include "store/dev.h"

#define STORE_LAYOUT_VERSION 2u
#define STORE_SUPER_BYTES 512u       /* the encoded header (CRC in its last 4 bytes) */
#define STORE_SLOT_MIN 4096u         /* a superblock slot: max(this, logical block) bytes */
#define STORE_MAX_REGIONS 16u
#define STORE_ALIGN_MIN (1u << 20)   /* regions and partitions are aligned to at least 1 MiB */
#define STORE_SCRATCH_BYTES 4096u    /* the block self-test's area, in the meta area */
/* Scratch buffer store_disk_probe / store_disk_format need (bytes, 8-aligned). */
#define STORE_LAYOUT_SCRATCH (64u * 1024u)

/* GPT partition type GUIDs in their textual form (on disk: the GPT mixed-endian form). */
#define STORE_GPT_TYPE_ESP "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
#define STORE_GPT_TYPE_DATA "e115a373-fb22-4a52-96f0-86c11c6fb76c"
/* A BIOS boot partition (GRUB's i386-pc core image, the release disk's BIOS boot): never
 * planned by the layout, only kept by a format that finds one (store_plan_keep_bios). */
#define STORE_GPT_TYPE_BIOS "21686148-6449-6e6f-744e-656564454649"

enum store_region_kind {
	STORE_REGION_NONE = 0,
	STORE_REGION_DB = 1,        /* the SQLite database file */
	STORE_REGION_WAL = 2,       /* its write-ahead log */
	STORE_REGION_TELEMETRY = 3, /* the telemetry log (per-core segment rings) */
	STORE_REGION_BACKUP_A = 4,  /* database backup slots (disk lifecycle) */
	STORE_REGION_BACKUP_B = 5,
	STORE_REGION__KINDS
};

/* A region: blocks are logical blocks counted from the partition's first block. The
 * database (DB) and the two backup slots (BACKUP_A, BACKUP_B) may have several regions of
 * their kind, its extents: the file's bytes run through them in superblock order (what a
 * growth of the disk appends, store/grow.h). WAL and TELEMETRY have one region each and
 * never grow. */
struct store_region {
	uint32_t kind;  /* enum store_region_kind */
	uint32_t flags; /* 0 in version 2 */
	uint64_t start;
	uint64_t blocks;
};

enum store_db_state { STORE_DB_FRESH = 0, STORE_DB_READY = 1 };

/* The decoded superblock (version 2). */
struct store_super {
	uint32_t version;
	uint64_t generation;      /* >= 1 */
	uint8_t part_guid[16];    /* the data partition's unique GUID (as in the GPT entry) */
	uint32_t block_size;      /* logical block size when formatted: bytes */
	uint32_t align_bytes;     /* alignment unit: >= STORE_ALIGN_MIN, multiple of block_size */
	uint64_t part_start;      /* the data partition: first absolute LBA */
	uint64_t part_blocks;     /* and its length in blocks */
	uint64_t created_s;       /* Unix seconds at format, 0 unknown */
	uint32_t db_state;        /* enum store_db_state: READY once the database was created */
	uint32_t backup_slot;     /* 0 none; 1 A, 2 B: the newest complete backup (disk lifecycle) */
	uint64_t backup_generation;
	uint32_t n_regions;
	struct store_region regions[STORE_MAX_REGIONS];
};

/* Why a superblock (or GPT) did not decode; each has a counter and a name. */
enum store_layout_rej {
	STORE_REJ_NONE = 0,
	STORE_REJ_MAGIC,        /* not ours */
	STORE_REJ_VERSION,      /* ours, another layout version (kept in *version) */
	STORE_REJ_CRC,
	STORE_REJ_FIELD,        /* a field out of range (sizes, alignment, generation 0...) */
	STORE_REJ_REGION,       /* a region outside the partition, misaligned, overlapping, a
				 * WAL or TELEMETRY region twice, or a required one (DB, WAL)
				 * missing */
	STORE_REJ__COUNT
};
const char *store_layout_rej_name(enum store_layout_rej r);

/* Encode sb into out (STORE_SUPER_BYTES, CRC filled). 0 or -E_INVAL (n_regions too big). */
MUST_CHECK int store_super_encode(const struct store_super *sb, uint8_t *out, size_t out_len);
/* Decode and validate one slot's bytes (len >= STORE_SUPER_BYTES). 0, or -E_CORRUPT with
 * *rej (for STORE_REJ_VERSION, *version holds the version found). */
MUST_CHECK int store_super_decode(const uint8_t *in, size_t len, struct store_super *out /* out */,
				  enum store_layout_rej *rej /* out */, uint32_t *version /* out */);

/* ---- the plan: where everything goes on a disk of a given size ---- */
struct store_layout_config {
	uint64_t esp_bytes;      /* 0: no ESP entry */
	uint64_t wal_bytes;      /* wanted; at most a sixteenth of the partition, at least one unit */
	uint32_t telemetry_pct;  /* 0..90 percent of the region space */
};

struct store_plan {
	uint32_t block_size, align_bytes;
	uint64_t disk_blocks;
	uint64_t esp_start, esp_blocks;   /* absolute LBAs; esp_blocks 0: no ESP */
	uint64_t bios_start, bios_blocks; /* a BIOS boot partition kept (store_plan_keep_bios);
					   * bios_blocks 0: none (what store_layout_plan says) */
	uint8_t bios_guid[16];            /* its unique GUID, kept (on-disk form) */
	uint64_t part_start, part_blocks; /* the data partition */
	uint64_t scratch_lba;             /* absolute LBA of the self-test's scratch block(s) */
	uint32_t n_regions;
	struct store_region regions[STORE_MAX_REGIONS]; /* DB, WAL, TELEMETRY, BACKUP_A, BACKUP_B */
};

/* Plan a disk of disk_blocks blocks of block_size bytes (optimal_io: the device's, 0
 * unknown). Pure. 0, -E_INVAL (bad sizes), or -E_RANGE when the disk is too small for
 * every region to get at least one alignment unit (*min_bytes says the smallest size that
 * fits). */
MUST_CHECK int store_layout_plan(const struct store_layout_config *cfg, uint64_t disk_blocks,
				 uint32_t block_size, uint32_t optimal_io,
				 struct store_plan *out /* out */, uint64_t *min_bytes /* out, may be NULL */);

/* ---- recognising a disk ---- */
struct store_disk_info;
/* Keep in p the BIOS boot partition the probe found in an INTERRUPTED disk's GPT (the
 * release disk's GRUB core, which the first boot's format must not drop), when it lies
 * wholly between the primary entry array and the plan's first partition (the ESP, else
 * the data partition). true when p now carries it; false (p unchanged) otherwise. */
bool store_plan_keep_bios(struct store_plan *p, const struct store_disk_info *info);

enum store_disk_kind {
	STORE_DISK_BLANK,        /* every sampled byte zero: may be formatted */
	STORE_DISK_OURS,         /* our GPT and a valid version-2 superblock */
	STORE_DISK_INTERRUPTED,  /* our GPT, both superblock slots all zero: a format of ours
				  * stopped part-way; may be formatted again */
	STORE_DISK_FOREIGN,      /* anything else: never written */
	STORE_DISK_OTHER_VERSION,/* our GPT and a superblock of another layout version */
	STORE_DISK_DAMAGED,      /* our GPT, but neither slot valid and not both blank */
};
const char *store_disk_kind_name(enum store_disk_kind k);

struct store_disk_info {
	enum store_disk_kind kind;
	char what[160];          /* one line for the console: what was found, e.g.
				  * "an ext2/3/4 filesystem (magic at byte 1080)",
				  * "a GPT with 3 partitions, none of type urMQTT data",
				  * "urMQTT layout version 7 (this image reads version 2)" */
	uint32_t other_version;  /* OTHER_VERSION: the version found */
	bool gpt_from_backup;    /* the primary GPT was invalid, the backup's was used */
	int super_slot;          /* OURS: 0 (A) or 1 (B); -1 otherwise */
	enum store_layout_rej slot_rej[2]; /* why each slot did not decode (NONE if it did) */
	uint64_t esp_start, esp_blocks;    /* from the GPT, when it is ours */
	uint64_t bios_start, bios_blocks;  /* a BIOS boot partition entry in it (0: none) */
	uint8_t bios_guid[16];
	uint64_t part_start, part_blocks;
	struct store_super sb;   /* OURS: the winning superblock */
	/* OURS: the GPT's data partition (same start and GUID) is longer than sb.part_blocks,
	 * by whole alignment units: a growth of ours (store/grow.h) wrote the GPT and was cut
	 * before its superblock commit. Boot finishes it (store_grow) before anything else
	 * uses the layout. A GPT entry SHORTER than the superblock's partition is DAMAGED. */
	bool grow_pending;
};

/* Read what is needed to classify the disk (GPT areas, superblock slots, and for a disk
 * without a GPT the first and last MiB plus 64 samples of 4 KiB spread over the rest) and
 * fill *out. Never writes. scratch: STORE_LAYOUT_SCRATCH bytes (borrowed). 0, or the
 * device's error (-E_IO, -E_TIMEOUT...): then *out says nothing. */
MUST_CHECK int store_disk_probe(struct store_dev *d, uint8_t *scratch, size_t scratch_len,
				struct store_disk_info *out /* out */);

/* Format a BLANK or INTERRUPTED disk with plan p: protective MBR (LBA 0's boot code and
 * disk signature, bytes 0..445, kept as found) and both GPTs (disk and partition GUIDs from
 * guids: disk, ESP, data; 48 bytes, borrowed; entries ESP, data, then p's BIOS boot
 * partition if any), flush; the first
 * 64 KiB of every region zeroed, flush; superblock generation 1 in slot A (db_state
 * FRESH), flush. *out: that superblock. scratch as for probe. 0 or the device's error
 * (then the disk is BLANK or INTERRUPTED again, never half ours in any other way). The
 * caller checked the kind; this function does not probe again. */
MUST_CHECK int store_disk_format(struct store_dev *d, const struct store_plan *p, const uint8_t guids[48],
				 uint64_t now_s, uint8_t *scratch, size_t scratch_len,
				 struct store_super *out /* out */);

/* The installer's half of a format (kernel/node/install.c): plan p's superblock slots and
 * region heads zeroed, flush, then the protective MBR and both GPTs as store_disk_format
 * writes them, flush; no superblock, so the disk then probes INTERRUPTED and the kernel's
 * first boot formats it in place with the same plan (the ESP never moves). The caller
 * decided the disk may be written. 0, -E_INVAL, or the device's error. */
MUST_CHECK int store_disk_format_gpt(struct store_dev *d, const struct store_plan *p, const uint8_t guids[48],
				     uint8_t *scratch, size_t scratch_len);

/* Write sb as the next generation (sb->generation + 1, into its slot), then flush; on
 * success sb->generation is the new one. 0 or the device's error (the old generation
 * stays in charge). scratch as for probe. */
MUST_CHECK int store_super_commit(struct store_dev *d, struct store_super *sb, uint8_t *scratch,
				  size_t scratch_len);

/* The first region (extent) of this kind in sb, or NULL. */
const struct store_region *store_super_region(const struct store_super *sb, enum store_region_kind k);
/* Extent i (0: the first) of kind k, in superblock order (the order of the file's bytes),
 * or NULL when there are not that many. Borrowed: points into sb. */
const struct store_region *store_super_extent(const struct store_super *sb, enum store_region_kind k, uint32_t i);
/* How many extents kind k has in sb; *blocks (may be NULL): their total length. */
uint32_t store_super_extents(const struct store_super *sb, enum store_region_kind k, uint64_t *blocks /* out */);

#endif
