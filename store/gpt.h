/* SPDX-License-Identifier: MIT
 *
 * Private to store/: the GPT (UEFI 2.10 section 5.3) as layout.c uses it. Build a
 * protective MBR, headers and an entry array of 128 entries of 128 bytes; decode and
 * validate a header and its entry array; load the GPT of a disk through a read callback,
 * falling back to the backup when the primary fails its checks; recognise what an
 * interrupted GPT write of ours leaves behind; and move one entry's last LBA (a growth of
 * the disk, store/grow.c). Wire offsets are in store/wire_disk.h.
 *
 * Every byte read is hostile: header and entries are decoded through lib/cursor, every
 * LBA is range-checked against the disk before any arithmetic that could overflow, and
 * nothing here asserts on input. Nothing allocates; nothing writes to a disk (the caller
 * writes what the encoders produce). GUIDs are kept in their on-disk (mixed-endian) form.
 */
#ifndef STORE_GPT_H
#define STORE_GPT_H

#include "lib/compiler.h"

/* Why a GPT copy (header or entries) did not decode: one name per site, for the log and
 * for tests. */
enum store_gpt_rej {
	STORE_GPT_OK = 0,
	STORE_GPT_REJ_DISK,        /* the disk is too small to hold a GPT */
	STORE_GPT_REJ_SIGNATURE,   /* not "EFI PART" */
	STORE_GPT_REJ_REVISION,    /* not 1.0 */
	STORE_GPT_REJ_HDR_SIZE,    /* HeaderSize < 92 or > the block */
	STORE_GPT_REJ_HDR_CRC,
	STORE_GPT_REJ_RESERVED,    /* the reserved u32 after the CRC is not zero */
	STORE_GPT_REJ_MY_LBA,      /* MyLBA is not where the header was read */
	STORE_GPT_REJ_ALT_LBA,     /* AlternateLBA outside the disk or on the wrong side */
	STORE_GPT_REJ_USABLE,      /* first/last usable LBA empty, outside the disk or over a header */
	STORE_GPT_REJ_ENTRY_SIZE,  /* SizeOfPartitionEntry != 128 */
	STORE_GPT_REJ_N_ENTRIES,   /* NumberOfPartitionEntries 0 or > 128 */
	STORE_GPT_REJ_ENTRIES_LBA, /* the entry array over a header, the usable range or the end */
	STORE_GPT_REJ_ENTRIES_CRC,
	STORE_GPT_REJ_PART_RANGE,  /* a partition ends before it starts or leaves the usable range */
	STORE_GPT_REJ_PART_OVERLAP,
	STORE_GPT_REJ__COUNT
};
const char *store_gpt_rej_name(enum store_gpt_rej r);

/* One used partition entry, decoded. */
struct store_gpt_part {
	uint8_t type[16], guid[16];  /* on-disk form */
	uint64_t first_lba, last_lba; /* inclusive, inside the usable range */
	uint64_t attrs;
	uint32_t index;               /* its entry number */
};

/* A decoded GPT copy. */
struct store_gpt {
	uint32_t block_size;
	uint64_t disk_blocks;
	uint64_t my_lba, alt_lba, first_usable, last_usable, entries_lba;
	uint32_t n_entries, entries_crc;
	uint8_t disk_guid[16];
	uint32_t n_used;              /* entries with a non-zero type (after entries_decode) */
	bool has_esp, has_data, has_bios; /* an entry of type STORE_GPT_TYPE_ESP / _DATA / _BIOS */
	struct store_gpt_part esp, data, bios; /* the first entry of each type */
};

/* Where our GPT goes on a disk of disk_blocks blocks of bs bytes (bs a power of two,
 * 512..65536): the entry array takes array_blocks blocks after LBA 1 and before the
 * backup header; usable LBAs are [first_usable, last_usable]. 0, or -E_RANGE when the
 * disk cannot hold both copies and one usable block. */
uint32_t store_gpt_array_blocks(uint32_t bs);
MUST_CHECK int store_gpt_geometry(uint32_t bs, uint64_t disk_blocks, uint64_t *first_usable /* out */,
				  uint64_t *last_usable /* out */);

/* ---- building ---- */
#define STORE_GPT_NEW_MAX_PARTS 4u
struct store_gpt_new_part {
	uint8_t type[16], guid[16];  /* on-disk form */
	uint64_t first_lba, last_lba; /* inclusive */
	const char *name;             /* borrowed: printable ASCII, at most 36 characters */
};
struct store_gpt_new {
	uint32_t block_size;
	uint64_t disk_blocks;
	uint8_t disk_guid[16];
	uint32_t n_parts;
	struct store_gpt_new_part parts[STORE_GPT_NEW_MAX_PARTS];
};

/* The protective MBR for a disk of disk_blocks blocks into out (len >= 512 bytes: all of
 * it written, zeros after the MBR; boot code and disk signature zero). */
void store_gpt_mbr_encode(uint8_t *out, size_t len, uint64_t disk_blocks);
/* The same over blk, LBA 0 as read (len >= 512): its first STORE_MBR_OFF_PARTS bytes (boot
 * code, disk signature and the two bytes after it) kept, the partition records, the
 * signature and the rest of the block written as store_gpt_mbr_encode writes them. What the
 * format and a growth write, so that a boot loader's code in LBA 0 (a BIOS boot of the
 * disk) survives them. */
void store_gpt_mbr_protect(uint8_t *blk, size_t len, uint64_t disk_blocks);
/* The entry array (array_blocks * block_size bytes into out, zero-padded); *crc its
 * CRC-32 over the 128 entries. 0 or -E_INVAL (a part outside the usable range, a name
 * too long, len too small). The caller checks overlaps by decoding (store_gpt_entries_decode). */
MUST_CHECK int store_gpt_entries_encode(const struct store_gpt_new *g, uint8_t *out, size_t len,
					uint32_t *crc /* out */);
/* The primary (backup false: LBA 1) or backup (the last LBA) header: one block into out
 * (len >= block_size, the whole block written). 0 or -E_INVAL. */
MUST_CHECK int store_gpt_header_encode(const struct store_gpt_new *g, bool backup, uint32_t entries_crc,
				       uint8_t *out, size_t len);

/* Move the last LBA of used entry `index` of an entry array of 128 entries (arr: len >=
 * STORE_GPT_ARRAY_BYTES bytes as read from a disk, borrowed) to last_lba, keeping every
 * other byte (types, GUIDs, names, attributes, the other entries); *crc: the array's new
 * CRC-32. What a growth of the disk writes (store/grow.c): the caller decodes the result
 * against the new header before writing it. 0 or -E_INVAL (index >= 128, an unused entry,
 * last_lba before its first LBA). */
MUST_CHECK int store_gpt_entry_resize(uint8_t *arr, size_t len, uint32_t index, uint64_t last_lba,
				      uint32_t *crc /* out */);

/* ---- decoding ---- */
/* Decode the header in blk (the block read at at_lba, len bytes) of a disk of
 * disk_blocks blocks of bs bytes, and check it: signature, revision, size, CRC, MyLBA ==
 * at_lba, the usable range and the entry array inside the disk and clear of each other
 * and of the headers (a header at LBA 1 is the primary, anything else a backup). 0 with
 * *out filled (no entries yet), or -E_CORRUPT with *rej. blk borrowed. */
MUST_CHECK int store_gpt_header_decode(const uint8_t *blk, size_t len, uint32_t bs, uint64_t disk_blocks,
				       uint64_t at_lba, struct store_gpt *out /* out */,
				       enum store_gpt_rej *rej /* out */);
/* Check the entry array of g (ents: the bytes read at g->entries_lba, len >= n_entries *
 * 128): CRC, every used entry inside the usable range, no two overlapping; fills n_used
 * and the ESP / data entries. 0 or -E_CORRUPT with *rej. ents borrowed. */
MUST_CHECK int store_gpt_entries_decode(const uint8_t *ents, size_t len, struct store_gpt *g,
					enum store_gpt_rej *rej /* out */);

/* ---- loading from a disk ---- */
struct store_gpt_src {
	/* read n blocks at lba into buf: 0 or a negative error, passed back unchanged */
	int (*read)(void *ctx, uint64_t lba, uint32_t n, void *buf);
	void *ctx;                    /* linked */
	uint32_t block_size;
	uint64_t disk_blocks;
};

struct store_gpt_verdict {
	enum store_gpt_rej primary, backup; /* why each copy failed (OK: valid or not tried) */
	bool from_backup;                   /* the primary failed, the backup was used */
};

/* Load the GPT: the primary at LBA 1; if it fails, the backup at the last LBA, then at
 * the primary's AlternateLBA when the primary's header itself was sound. scratch:
 * max(block_size, 16 KiB) bytes at least (borrowed). 0 (*out valid), -E_CORRUPT (no valid
 * copy; *v says why), -E_INVAL (bad block size or scratch), or the read's error. */
MUST_CHECK int store_gpt_load(const struct store_gpt_src *src, uint8_t *scratch, size_t scratch_len,
			      struct store_gpt *out /* out */, struct store_gpt_verdict *v /* out */);

/* What lies in our GPT's places (LBA 0, the primary header and array, the backup array
 * and header) when no valid GPT was found. */
enum store_gpt_footprint {
	STORE_GPT_FP_ZERO,    /* all zero */
	STORE_GPT_FP_PARTIAL, /* only pieces an interrupted GPT write of ours leaves: our
			       * protective MBR (any boot code before its partition records),
			       * headers shaped as ours for this disk, arrays holding only ESP /
			       * urMQTT data / BIOS boot entries, never a header and its array
			       * both present (that pair would have been valid) */
	STORE_GPT_FP_OTHER,   /* anything else */
};
/* Classify those places (reads at most 2 * (2 + array_blocks) blocks). 0, -E_RANGE (the
 * disk is too small for a GPT: no footprint), -E_INVAL, or the read's error. */
MUST_CHECK int store_gpt_footprint_check(const struct store_gpt_src *src, uint8_t *scratch, size_t scratch_len,
					 enum store_gpt_footprint *out /* out */);

#endif
