/* SPDX-License-Identifier: MIT
 *
 * Growing the data disk's layout when the device grew (specification: docs/DISK-FORMAT.md
 * section 9): the data partition is extended to the new end of the disk and the new space
 * is appended, in three equal parts, to the database file and the two backup slots as new
 * extents (store/layout.h). The write-ahead log and the telemetry log never grow (the
 * telemetry ring's geometry is fixed at format). Nothing ever shrinks: a disk smaller than
 * its layout is refused by the caller (store/boot.c) and by the plan (-E_RANGE).
 *
 * At boot (store_boot, after the probe said OURS, before the database opens) and at run
 * time (store_boot_grow, when the device's capacity grew). Only the core that runs the
 * database calls it: it waits for the disk through store/dev.h. Portable; never allocates
 * (the caller lends a scratch buffer); writes only through store/dev.h.
 */
#ifndef STORE_GROW_H
#define STORE_GROW_H

#include "lib/compiler.h"
#include "store/dev.h"
#include "store/layout.h"

struct store_gpt;

enum store_grow_outcome {
	STORE_GROW_NONE,   /* the disk did not grow by a unit past the partition: nothing written */
	STORE_GROW_FILES,  /* the partition grew and the database and both backup slots with it */
	STORE_GROW_UNUSED, /* the partition grew, the new space is given to no file (yet) */
};

/* One part of the new space, in the order it lies on the disk: blocks counted from the
 * partition's first block (as regions are). */
struct store_grow_part {
	uint32_t kind;     /* STORE_REGION_DB, _BACKUP_A or _BACKUP_B */
	uint64_t start, blocks;
	bool merged;       /* appended to the kind's last extent (it ended right there) */
};

/* What a growth does; a pure function of the superblock, the GPT and the disk's size. */
struct store_grow_plan {
	enum store_grow_outcome outcome;
	bool table_full;           /* UNUSED: the region table had no room for the new extents */
	bool pending;              /* the GPT's data partition was already longer: a growth cut short */
	uint64_t disk_blocks;
	uint64_t old_part_blocks;  /* the superblock's partition length */
	uint64_t new_part_blocks;  /* after the growth (old_part_blocks for NONE) */
	uint64_t free_blocks;      /* from the end of the last region to the new partition end */
	uint64_t unused_blocks;    /* what stays after the last region once the parts are placed */
	uint32_t n_parts;
	struct store_grow_part parts[3];
	struct store_super sb;     /* the superblock to commit (its generation unchanged) */
};

/* Plan the growth of the layout sb (decoded) on a disk of disk_blocks blocks whose GPT is
 * g (loaded: its data partition must be sb's, the same start and GUID, as long or longer by
 * whole units). Pure. The new partition ends at the new last usable LBA + 1 rounded down to
 * the alignment unit U; the free space runs from the end of the last region to there. Three
 * units or more: split in three equal parts (the remainder unused), one each for DB,
 * BACKUP_A and BACKUP_B (so a backup always has room for a copy of the database), placed
 * in the order DB, BACKUP_A, BACKUP_B rotated so that the kind of the partition's last
 * region comes first and lengthens that region instead of adding one. Fewer than three
 * units, or no room in the region table: the partition still grows and the space stays
 * unused. 0 (*out filled), -E_INVAL (arguments), -E_CORRUPT (g's data partition is not
 * sb's), -E_RANGE (the disk is smaller than the partition). */
MUST_CHECK int store_grow_plan(const struct store_super *sb, const struct store_gpt *g, uint64_t disk_blocks,
			       struct store_grow_plan *out /* out */);

struct store_grow_result {
	enum store_grow_outcome outcome;
	bool table_full, pending;
	uint32_t block_size;
	uint64_t old_part_blocks, new_part_blocks, unused_blocks;
	uint64_t gained[STORE_REGION__KINDS]; /* blocks each kind gained */
	uint32_t n_parts;
	struct store_grow_part parts[3];      /* what was appended (for the VFS: store_boot_grow) */
	/* One line for the console, e.g.
	 * "the disk grew: data partition 30 MiB -> 222 MiB; database +64 MiB, backup A +64 MiB,
	 *  backup B +64 MiB", "the disk grew: data partition 30 MiB -> 32 MiB; the new 2 MiB stay
	 *  unused (the files grow by 3 units of 1 MiB at least)", "the disk (64 MiB) did not
	 *  grow by a unit (1 MiB) past the data partition (30 MiB): nothing changes". */
	char what[240];
};

/* Grow the layout of the disk behind d, whose superblock is *sb (the one in charge: the
 * probe's, or the last committed), to the device's current capacity: plan (above), then,
 * unless nothing changes, write in this order, each step flushed before the next:
 *   1. the GPT copy the disk was NOT read from (normally the backup: its entry array, then
 *      its header, at the new end of the disk), flush;
 *   2. the other copy (normally the primary: protective MBR and entry array, flush; header,
 *      flush), or the backup as in 1;
 *   3. store_super_commit of the new superblock (partition length, extents).
 * The new GPT is the loaded one with the data partition's last LBA moved (every other byte
 * of its entries kept) and the new geometry; both it and the superblock are decoded by our
 * own readers before the first write. A power cut between any two writes leaves a disk the
 * probe calls OURS (with grow_pending after step 2 began), and store_grow run again
 * converges to the same regions. On success *sb is the new superblock (generation + 1).
 * scratch: STORE_LAYOUT_SCRATCH bytes (borrowed). 0 (*out says what happened), -E_CORRUPT
 * (no valid GPT, or not sb's), -E_RANGE (the disk is smaller than the layout), -E_NOSYS (a
 * GPT this growth cannot rewrite: not 128 entries, or another partition in the way), or
 * the device's error (the disk is then in one of the states above). out->what says which. */
MUST_CHECK int store_grow(struct store_dev *d, struct store_super *sb, uint8_t *scratch, size_t scratch_len,
			  struct store_grow_result *out /* out */);

#endif
