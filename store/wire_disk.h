/* SPDX-License-Identifier: MIT
 *
 * Disk formats the storage layer reads and writes: the protective MBR and the GPT (UEFI
 * 2.10 section 5.2.3 and 5.3), the superblock of layout v2 (docs/DISK-FORMAT.md), and the
 * few foreign signatures the probe names. Constants, offsets and GUID helpers only:
 * parsers read these formats through lib/cursor.h or lib/bytes.h; nothing here overlays
 * structs. Everything on disk is little-endian.
 */
#ifndef STORE_WIRE_DISK_H
#define STORE_WIRE_DISK_H

#include "lib/compiler.h"

/* ---- legacy / protective MBR (LBA 0, first 512 bytes, whatever the block size) ---- */
#define STORE_MBR_BYTES 512u
#define STORE_MBR_OFF_PARTS 446u      /* four 16-byte partition records */
#define STORE_MBR_PART_BYTES 16u
#define STORE_MBR_N_PARTS 4u
#define STORE_MBR_PART_OFF_STATUS 0u
#define STORE_MBR_PART_OFF_CHS_START 1u
#define STORE_MBR_PART_OFF_TYPE 4u
#define STORE_MBR_PART_OFF_CHS_END 5u
#define STORE_MBR_PART_OFF_LBA 8u     /* u32 */
#define STORE_MBR_PART_OFF_SIZE 12u   /* u32 */
#define STORE_MBR_OFF_SIG 510u        /* 0x55 0xAA */
#define STORE_MBR_SIG0 0x55u
#define STORE_MBR_SIG1 0xAAu
#define STORE_MBR_TYPE_PROTECTIVE 0xEEu

/* ---- GPT header (LBA 1 and the disk's last LBA) ---- */
#define STORE_GPT_SIGNATURE "EFI PART"
#define STORE_GPT_REVISION 0x00010000u
#define STORE_GPT_HDR_BYTES 92u
#define STORE_GPT_OFF_SIG 0u
#define STORE_GPT_OFF_REVISION 8u
#define STORE_GPT_OFF_HDR_SIZE 12u
#define STORE_GPT_OFF_HDR_CRC 16u     /* CRC-32 of HeaderSize bytes with this field zero */
#define STORE_GPT_OFF_RESERVED 20u    /* u32, zero */
#define STORE_GPT_OFF_MY_LBA 24u
#define STORE_GPT_OFF_ALT_LBA 32u
#define STORE_GPT_OFF_FIRST_USABLE 40u
#define STORE_GPT_OFF_LAST_USABLE 48u
#define STORE_GPT_OFF_DISK_GUID 56u
#define STORE_GPT_OFF_ENTRIES_LBA 72u
#define STORE_GPT_OFF_N_ENTRIES 80u
#define STORE_GPT_OFF_ENTRY_SIZE 84u
#define STORE_GPT_OFF_ENTRIES_CRC 88u

/* ---- GPT partition entry ---- */
#define STORE_GPT_ENTRY_BYTES 128u
#define STORE_GPT_N_ENTRIES 128u      /* what we write, and the most we accept */
#define STORE_GPT_ARRAY_BYTES 16384u  /* 128 entries of 128 bytes */
#define STORE_GPT_ENT_OFF_TYPE 0u
#define STORE_GPT_ENT_OFF_GUID 16u
#define STORE_GPT_ENT_OFF_FIRST 32u
#define STORE_GPT_ENT_OFF_LAST 40u    /* inclusive */
#define STORE_GPT_ENT_OFF_ATTRS 48u
#define STORE_GPT_ENT_OFF_NAME 56u    /* UTF-16LE, 36 code units, zero-padded */
#define STORE_GPT_NAME_UNITS 36u

/* ---- superblock, layout v2 (STORE_SUPER_BYTES = 512) ---- */
#define STORE_SB_MAGIC "URMQTTSB"
#define STORE_SB_OFF_MAGIC 0u
#define STORE_SB_OFF_VERSION 8u
#define STORE_SB_OFF_HDR_BYTES 12u
#define STORE_SB_OFF_GENERATION 16u
#define STORE_SB_OFF_PART_GUID 24u
#define STORE_SB_OFF_BLOCK_SIZE 40u
#define STORE_SB_OFF_ALIGN 44u
#define STORE_SB_OFF_PART_START 48u
#define STORE_SB_OFF_PART_BLOCKS 56u
#define STORE_SB_OFF_CREATED 64u
#define STORE_SB_OFF_DB_STATE 72u
#define STORE_SB_OFF_BACKUP_SLOT 76u
#define STORE_SB_OFF_BACKUP_GEN 80u
#define STORE_SB_OFF_N_REGIONS 88u
#define STORE_SB_OFF_RESERVED 92u
#define STORE_SB_OFF_REGIONS 96u      /* n_regions x {u32 kind, u32 flags, u64 start, u64 blocks} */
#define STORE_SB_REGION_BYTES 24u
#define STORE_SB_OFF_TAIL 480u        /* 96 + 16 * 24: zero up to the CRC */
#define STORE_SB_OFF_CRC 508u         /* CRC-32C of bytes [0, 508) */

/* ---- foreign signatures the probe names ---- */
#define STORE_EXT_OFF_MAGIC 1080u     /* ext2/3/4: s_magic at 1024 + 56, little-endian */
#define STORE_EXT_MAGIC 0xEF53u

#define STORE_GUID_BYTES 16u
#define STORE_GUID_TEXT_LEN 36u       /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */

static inline int store_wire_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Textual GUID (36 characters, NUL or anything after them ignored) to the GPT's on-disk
 * mixed-endian form: the first three groups little-endian, the last two as written.
 * 0, or -1 when the text is not a GUID. text borrowed; out[16] written on success. */
static inline int store_guid_from_text(const char *text, uint8_t out[16])
{
	/* position in the text of each byte's first digit, in on-disk order */
	static const uint8_t at[16] = { 6, 4, 2, 0, 11, 9, 16, 14, 19, 21, 24, 26, 28, 30, 32, 34 };
	for (uint32_t i = 0; i < STORE_GUID_TEXT_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? text[i] != '-' : store_wire_hex(text[i]) < 0)
			return -1;
	}
	for (uint32_t i = 0; i < 16; i++)
		out[i] = (uint8_t)(store_wire_hex(text[at[i]]) << 4 | store_wire_hex(text[at[i] + 1]));
	return 0;
}

/* The other way: on-disk form to 36 lowercase characters and a NUL (text[37]). */
static inline void store_guid_to_text(const uint8_t g[16], char text[37])
{
	static const uint8_t at[16] = { 6, 4, 2, 0, 11, 9, 16, 14, 19, 21, 24, 26, 28, 30, 32, 34 };
	static const char hex[] = "0123456789abcdef";
	for (uint32_t i = 0; i < STORE_GUID_TEXT_LEN; i++)
		text[i] = '-';
	for (uint32_t i = 0; i < 16; i++) {
		text[at[i]] = hex[g[i] >> 4];
		text[at[i] + 1] = hex[g[i] & 15u];
	}
	text[STORE_GUID_TEXT_LEN] = '\0';
}

#endif
