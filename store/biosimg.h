/* SPDX-License-Identifier: MIT
 *
 * The BIOS boot image: what the ISO's install entries pass the installer (a Multiboot2
 * module named "bios", tools/release/images.sh) so that the disk it writes also boots by
 * BIOS, exactly as the release's raw disk does (ADR-089): GRUB's i386-pc core in a BIOS
 * boot partition and GRUB's boot code in LBA 0. Layer: store/, portable and freestanding.
 * The image is external input: parsed through lib/cursor, every field checked, never
 * trusted for a length; the parser never writes it and keeps pointers into it.
 *
 * Format, version 1 (all integers little-endian; the producer is images.sh's "BIOS boot
 * code" section, which patches both GRUB images for a core at core_lba, as
 * grub-bios-setup would):
 *
 *   offset  bytes              field
 *   0       8                  magic "URMQBIOS"
 *   8       4                  version: 1
 *   12      4                  boot code bytes: 440 (LBA 0's bytes 0..439)
 *   16      8                  core_lba: the 512-byte sector the core was patched to start at
 *   24      4                  core_sectors: the core's length in 512-byte sectors, 2..4096
 *   28      484                zero
 *   512     440                the boot code (GRUB's boot.img, patched)
 *   952     core_sectors * 512 the core (GRUB's core.img, patched, zero-padded to a sector)
 *
 * The length is exactly 952 + core_sectors * 512. Version 1 carries GRUB 2's images and the
 * parser checks the three fields that tie them to core_lba: boot code bytes 0x5c..0x63
 * (u64, the core's first sector) == core_lba; the core's first sector's block list at 0x1f4
 * (u64 start, u16 sectors) == core_lba + 1 and core_sectors - 1. A later version changes
 * the version field; this parser refuses it by name.
 */
#ifndef STORE_BIOSIMG_H
#define STORE_BIOSIMG_H

#include "lib/compiler.h"
#include "store/dev.h"
#include "store/layout.h"

#define STORE_BIOSIMG_MAGIC "URMQBIOS"
#define STORE_BIOSIMG_VERSION 1u
#define STORE_BIOSIMG_HDR_BYTES 512u
#define STORE_BIOSIMG_CODE_BYTES 440u  /* LBA 0's boot code, before the disk signature */
#define STORE_BIOSIMG_SECTOR 512u      /* a BIOS boots 512-byte sectors only */
#define STORE_BIOSIMG_MIN_CORE 2u      /* diskboot's sector and at least one more */
#define STORE_BIOSIMG_MAX_CORE 4096u   /* 2 MiB: GRUB's i386-pc cores are ~60 KiB */
/* wire offsets */
#define STORE_BIOSIMG_OFF_VERSION 8u
#define STORE_BIOSIMG_OFF_CODE_BYTES 12u
#define STORE_BIOSIMG_OFF_CORE_LBA 16u
#define STORE_BIOSIMG_OFF_CORE_SECTORS 24u
#define STORE_BIOSIMG_OFF_RESERVED 28u
#define STORE_BIOSIMG_CODE_OFF_CORE_LBA 0x5cu   /* in the boot code: u64 */
#define STORE_BIOSIMG_CORE_OFF_BLOCKLIST 0x1f4u /* in the core's first sector: u64, u16 */

/* Why an image was refused: one name per site, for the console and for tests. */
enum store_biosimg_rej {
	STORE_BIOSIMG_OK = 0,
	STORE_BIOSIMG_REJ_SHORT,        /* shorter than the header and the boot code */
	STORE_BIOSIMG_REJ_MAGIC,        /* not "URMQBIOS" (not gunzipped? not this format?) */
	STORE_BIOSIMG_REJ_VERSION,      /* a version this kernel does not read */
	STORE_BIOSIMG_REJ_CODE_BYTES,   /* the boot code length is not 440 */
	STORE_BIOSIMG_REJ_RESERVED,     /* a non-zero byte in the header's reserved tail */
	STORE_BIOSIMG_REJ_CORE_SECTORS, /* core_sectors outside 2..4096 */
	STORE_BIOSIMG_REJ_CORE_LBA,     /* core_lba 0 (LBA 0 is the MBR) or beyond 32 bits */
	STORE_BIOSIMG_REJ_LENGTH,       /* the length is not 952 + core_sectors * 512 */
	STORE_BIOSIMG_REJ_CODE_LBA,     /* the boot code names another sector than core_lba */
	STORE_BIOSIMG_REJ_BLOCKLIST,    /* the core's block list does not follow core_lba */
	STORE_BIOSIMG_REJ__COUNT
};
/* A phrase for the console ("its magic is not URMQBIOS", ...); never NULL. */
const char *store_biosimg_rej_name(enum store_biosimg_rej r);

/* A parsed image: pointers into the image (borrowed from the caller's bytes). */
struct store_biosimg {
	const uint8_t *code;       /* STORE_BIOSIMG_CODE_BYTES bytes */
	const uint8_t *core;       /* core_sectors * 512 bytes */
	uint64_t core_lba;
	uint32_t core_sectors;
	uint32_t version;          /* as found (also when REJ_VERSION) */
};

/* Parse and check img (len bytes, borrowed; out keeps pointers into it). 0 with *out, or
 * -E_CORRUPT with *rej naming the first check that failed (out then says nothing but
 * version). Pure; any bytes. */
MUST_CHECK int store_biosimg_parse(const uint8_t *img, size_t len, struct store_biosimg *out /* out */,
				   enum store_biosimg_rej *rej /* out */);

/* Put in plan p (of a disk with 512-byte blocks, from store_layout_plan) the BIOS boot
 * partition for im: from im->core_lba to the plan's first partition (the ESP, else the
 * data partition), GUID guid (16 bytes, on-disk form, copied), the entry the release's raw
 * disk has. 0, or -E_RANGE with *why (a static phrase for the console) when it cannot
 * apply: blocks other than 512 B, or the core not wholly between the GPT's first usable
 * LBA and that partition. p unchanged then. */
MUST_CHECK int store_biosimg_plan(struct store_plan *p, const struct store_biosimg *im, const uint8_t guid[16],
				  const char **why /* out */);

/* Write im onto d for plan p (which carries its partition: store_biosimg_plan): the core
 * at core_lba, the rest of the partition zeroed; LBA 0: the boot code, every other byte
 * zero (no partition record, no signature: the disk does not look partitioned); flush.
 * Before store_disk_format_gpt, whose protective MBR keeps LBA 0's boot code: until the
 * GPT is written the disk looks installed to nobody. scratch: at least one block
 * (borrowed). 0, -E_INVAL (p carries no BIOS partition matching im, bad arguments) or the
 * device's error. */
MUST_CHECK int store_biosimg_write(struct store_dev *d, const struct store_plan *p, const struct store_biosimg *im,
				   uint8_t *scratch, size_t scratch_len);

#endif
