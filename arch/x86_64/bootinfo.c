/* SPDX-License-Identifier: MIT
 *
 * Boot-information parsers (arch/x86_64/bootinfo.h): PVH start_info and Multiboot2.
 * Portable x86 variant: compiled for the host and unit-tested with crafted structures.
 * Reads every loader byte through lib/cursor; never follows a length it did not check.
 * Formats: Xen public/arch-x86/hvm/start_info.h (PVH) and the Multiboot2 specification
 * (boot information format, tags 1, 3, 6, 14, 15).
 */
#include "arch/x86_64/bootinfo.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

#define PVH_V0_LEN 40
#define PVH_V1_LEN 56
#define PVH_MEMMAP_ENTRY_LEN 24
#define MAX_MAP_ENTRIES 1024 /* bounds the work on a hostile count */
#define MB2_MAX_TOTAL (64u * 1024u)
#define E820_RAM 1
#define PAGE 4096u

static void bootinfo_reset(struct boot_info *out, enum bootinfo_kind kind)
{
	memset(out, 0, sizeof *out);
	out->kind = kind;
}

static void bootinfo_add_ram(struct boot_info *out, uint64_t base, uint64_t len)
{
	if (len == 0 || base + len < base)
		return;
	uint64_t start = (base + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	uint64_t end = (base + len) & ~(uint64_t)(PAGE - 1);
	if (start < base || end <= start)
		return;
	if (out->n_mem == BOOTINFO_MAX_MEM) {
		out->n_mem_dropped++;
		return;
	}
	out->mem[out->n_mem].base = start;
	out->mem[out->n_mem].len = end - start;
	out->n_mem++;
}

/* Copy a NUL-terminated string of at most BOOTINFO_CMDLINE_MAX - 1 bytes from c. */
static void bootinfo_copy_cmdline(struct boot_info *out, struct cur *c)
{
	size_t i = 0;
	while (cur_left(c) > 0) {
		uint8_t ch = cur_u8(c);
		if (ch == 0)
			break;
		if (i == BOOTINFO_CMDLINE_MAX - 1) {
			out->cmdline_truncated = true;
			break;
		}
		out->cmdline[i++] = (char)ch;
	}
	out->cmdline[i] = '\0';
}

int bootinfo_parse_pvh(struct boot_info *out, const struct plat_phys_reader *rd,
		       uint64_t start_info_phys)
{
	bootinfo_reset(out, BOOTINFO_PVH);
	const void *p = rd->map(rd->ctx, start_info_phys, PVH_V0_LEN);
	if (!p)
		return -E_INVAL;
	struct cur c = cur_make(p, PVH_V0_LEN);
	uint32_t magic = cur_le32(&c);
	uint32_t version = cur_le32(&c);
	cur_skip(&c, 8); /* flags, nr_modules */
	cur_skip(&c, 8); /* modlist_paddr */
	uint64_t cmdline_paddr = cur_le64(&c);
	out->rsdp_phys = cur_le64(&c);
	if (!cur_ok(&c) || magic != BOOTINFO_PVH_MAGIC)
		return -E_INVAL;
	if (cmdline_paddr) {
		const void *s = rd->map(rd->ctx, cmdline_paddr, BOOTINFO_CMDLINE_MAX);
		if (s) {
			struct cur sc = cur_make(s, BOOTINFO_CMDLINE_MAX);
			bootinfo_copy_cmdline(out, &sc);
		}
	}
	if (version < 1)
		return -E_NOENT;
	p = rd->map(rd->ctx, start_info_phys, PVH_V1_LEN);
	if (!p)
		return -E_INVAL;
	c = cur_make(p, PVH_V1_LEN);
	cur_skip(&c, PVH_V0_LEN);
	uint64_t memmap_paddr = cur_le64(&c);
	uint32_t n = cur_le32(&c);
	if (!cur_ok(&c))
		return -E_INVAL;
	if (memmap_paddr == 0 || n == 0)
		return -E_NOENT;
	if (n > MAX_MAP_ENTRIES)
		return -E_INVAL;
	size_t len = (size_t)n * PVH_MEMMAP_ENTRY_LEN;
	p = rd->map(rd->ctx, memmap_paddr, len);
	if (!p)
		return -E_INVAL;
	c = cur_make(p, len);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t base = cur_le64(&c);
		uint64_t size = cur_le64(&c);
		uint32_t type = cur_le32(&c);
		cur_skip(&c, 4);
		if (cur_ok(&c) && type == E820_RAM)
			bootinfo_add_ram(out, base, size);
	}
	return cur_ok(&c) ? (out->n_mem ? 0 : -E_NOENT) : -E_INVAL;
}

static int bootinfo_mb2_mmap(struct boot_info *out, struct cur *t)
{
	uint32_t entry_size = cur_le32(t);
	cur_skip(t, 4); /* entry_version */
	if (!cur_ok(t) || entry_size < 24 || entry_size > 4096)
		return -E_INVAL;
	size_t n = cur_left(t) / entry_size;
	if (n > MAX_MAP_ENTRIES)
		return -E_INVAL;
	for (size_t i = 0; i < n; i++) {
		struct cur e = cur_sub(t, entry_size);
		uint64_t base = cur_le64(&e);
		uint64_t len = cur_le64(&e);
		uint32_t type = cur_le32(&e);
		if (!cur_ok(&e))
			return -E_INVAL;
		if (type == E820_RAM)
			bootinfo_add_ram(out, base, len);
	}
	return 0;
}

/* The kind a module's string names (the rest of its tag: the string and its NUL, then
 * padding GRUB may leave), or -1. */
static int bootinfo_mod_kind(struct cur *t)
{
	static const char *const names[BOOTINFO_MOD__COUNT] = { [BOOTINFO_MOD_ESP] = "esp",
								[BOOTINFO_MOD_BIOS] = "bios" };
	size_t n = cur_left(t);
	const uint8_t *s = cur_ptr(t, n);
	if (!s)
		return -1;
	const uint8_t *nul = memchr(s, 0, n);
	if (!nul)
		return -1; /* unterminated: no name */
	size_t len = (size_t)(nul - s);
	for (int k = 0; k < (int)BOOTINFO_MOD__COUNT; k++)
		if (strlen(names[k]) == len && memcmp(names[k], s, len) == 0)
			return k;
	return -1;
}

int bootinfo_parse_mb2(struct boot_info *out, const struct plat_phys_reader *rd, uint64_t mbi_phys)
{
	bootinfo_reset(out, BOOTINFO_MB2);
	if (mbi_phys & 7)
		return -E_INVAL;
	const void *p = rd->map(rd->ctx, mbi_phys, 8);
	if (!p)
		return -E_INVAL;
	struct cur c = cur_make(p, 8);
	uint32_t total = cur_le32(&c);
	if (total < 16 || total > MB2_MAX_TOTAL)
		return -E_INVAL;
	p = rd->map(rd->ctx, mbi_phys, total);
	if (!p)
		return -E_INVAL;
	c = cur_make(p, total);
	cur_skip(&c, 8);
	bool have_map = false, have_end = false;
	uint64_t rsdp_v1 = 0, rsdp_v2 = 0;
	while (cur_ok(&c) && cur_left(&c) >= 8) {
		size_t off = c.pos;
		struct cur h = c;
		uint32_t type = cur_le32(&h);
		uint32_t size = cur_le32(&h);
		if (!cur_ok(&h) || size < 8 || size > cur_left(&c))
			return -E_INVAL;
		struct cur t = cur_sub(&c, size);
		cur_skip(&t, 8);
		if (type == 0) {
			have_end = true;
			break;
		}
		if (type == 1) {
			bootinfo_copy_cmdline(out, &t);
		} else if (type == 6) {
			if (bootinfo_mb2_mmap(out, &t) != 0)
				return -E_INVAL;
			have_map = true;
		} else if (type == 3) {
			/* module: mod_start, mod_end (exclusive), then its string */
			uint32_t start = cur_le32(&t), end = cur_le32(&t);
			if (!cur_ok(&t) || end < start)
				return -E_INVAL;
			out->n_mods++;
			int k = bootinfo_mod_kind(&t);
			if (k < 0 || out->has_mod[k]) {
				out->n_mods_ignored++;
			} else {
				out->has_mod[k] = true;
				out->mods[k].base = start;
				out->mods[k].len = (uint64_t)end - start;
			}
		} else if (type == 14 && size >= 8 + 20) {
			rsdp_v1 = mbi_phys + off + 8;
		} else if (type == 15 && size >= 8 + 36) {
			rsdp_v2 = mbi_phys + off + 8;
		}
		size_t pad = (8 - (size & 7)) & 7; /* tags are 8-byte aligned */
		if (pad > cur_left(&c))
			break;
		cur_skip(&c, pad);
	}
	if (!cur_ok(&c) || !have_end)
		return -E_INVAL;
	out->rsdp_phys = rsdp_v2 ? rsdp_v2 : rsdp_v1;
	return have_map && out->n_mem ? 0 : -E_NOENT;
}

uint64_t bootinfo_mem_total(const struct boot_info *bi)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < bi->n_mem && i < BOOTINFO_MAX_MEM; i++)
		t += bi->mem[i].len;
	return t;
}
