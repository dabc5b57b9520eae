/* SPDX-License-Identifier: MIT
 *
 * The UEFI entry of the aarch64 image (ADR-076). UEFI firmware loads the image as a PE32+
 * application (the header in boot.S) and calls a64_efi_entry(ImageHandle, SystemTable)
 * with the MMU on (identity map), caches on, at EL2 or EL1. This file, while boot
 * services last: moves the image to its link address + a random slide (KASLR, ADR-084:
 * EFI_RNG_PROTOCOL, else RNDR; the relocation table applied to the copy), or, without
 * entropy or room, to the address it is linked at if the firmware put it elsewhere; reserves the memory after it that the other cores' stacks take, finds the
 * ACPI 2.0 RSDP and the device tree in the configuration table, copies the load options
 * (the command line), shows the ISO's menu and reads the installer's ESP image when the
 * options ask for them (efi_menu.c, ADR-094) and, last, reads the memory map and exits boot services. Then
 * a64_efi_exit (boot.S) cleans the caches, turns the MMU off and joins the -kernel path
 * at a64_entry, which finds what was gathered here in `a64_efi_boot` (in .data: the .bss
 * is cleared on that path). Never returns to the firmware after ExitBootServices; before
 * it, every failure is reported on the firmware console and returned as an EFI status.
 *
 * Runs before the kernel's own set-up: no log, no heap, no stack canary (it is not set
 * yet), and until the move only position-independent code (locals, PC-relative calls).
 * Layouts: UEFI 2.10, 4.3 (system table), 4.4 (boot services), 7.2 (memory map), 9.1
 * (loaded image protocol), 4.6 (configuration table GUIDs).
 */
#include "arch/aarch64/a64.h"
#include "arch/aarch64/efi.h"
#include "arch/aarch64/efi_abi.h"
#include "arch/aarch64/efi_menu.h"
#include "arch/aarch64/kaslr.h"
#include "kernel/bootmode.h"
#include "lib/mem.h"

/* Room after the image for the other cores' stacks (main.c lays out, per core beyond
 * the boot core, 2 guard pages, a 32 KiB loop stack and a 16 KiB exception stack). */
#define EFI_STACKS_BYTES A64_OTHER_STACKS_BYTES
#define EFI_MAP_BYTES 16384u

STATIC_ASSERT(offsetof(struct a64_efi_boot, n_acpi) == 544, "boot.S A64_EFI_N_ACPI_OFF");
STATIC_ASSERT(offsetof(struct a64_efi_boot, acpi) == 552, "boot.S A64_EFI_ACPI_OFF");

/* Kept in .data: the path to a64_main clears .bss. */
struct a64_efi_boot a64_efi_boot __attribute__((section(".data")));
static uint8_t efi_map[EFI_MAP_BYTES] __attribute__((section(".data"), aligned(8)));

NORETURN void a64_efi_exit(uint64_t dtb_phys, const struct a64_efi_boot *b);

__attribute__((no_stack_protector)) void a64_efi_say(void *systab, const char *msg)
{
	uint16_t w[96];
	size_t i = 0;
	void *con = efi_ldp(systab, ST_CON_OUT);
	if (!con)
		return;
	for (; msg[i] && i < 93; i++)
		w[i] = (uint8_t)msg[i];
	w[i++] = '\r';
	w[i++] = '\n';
	w[i] = 0;
	efi_output_fn out = (efi_output_fn)efi_ldp(con, 8);
	(void)out(con, w);
}

static bool guid_eq(const uint8_t *g, const uint8_t want[16])
{
	return memcmp(g, want, 16) == 0;
}

/* GUIDs as stored (first three fields little-endian). */
static const uint8_t guid_acpi20[16] = { 0x71, 0xe8, 0x68, 0x88, 0xf1, 0xe4, 0xd3, 0x11,
					 0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81 };
static const uint8_t guid_dtb[16] = { 0xd5, 0x21, 0xb6, 0xb1, 0x9c, 0xf1, 0xa5, 0x41,
				      0x83, 0x0b, 0xd9, 0x15, 0x2c, 0x69, 0xaa, 0xe0 };
static const uint8_t guid_rng[16] = { 0xa5, 0xbc, 0x52, 0x31, 0xde, 0xea, 0x3d, 0x43,
				      0x86, 0x2e, 0xc0, 0x1c, 0xdc, 0x29, 0x1f, 0x44 };
static const uint8_t guid_loaded_image[16] = EFI_GUID_LOADED_IMAGE;

/* The options this copy of the image uses when the firmware gives none (removable media,
 * EFI/BOOT/BOOTAA64.EFI, is started without load options): "URMQOPT1", then up to 55
 * printable characters and a NUL. Empty as built; tools/release/images.sh writes
 * "urmqtt.mode=live" into the ISO's copy, so the ISO runs live as its x86_64 menu's default
 * does, while the installed disk's copy serves from its disk (ADR-088). Volatile: the
 * bytes are read as they are in the file, never folded from the built-in zeros. */
#define EFI_DEFAULT_OPTIONS_MAGIC "URMQOPT1"
static volatile const char efi_default_options[64] __attribute__((used, aligned(8))) = EFI_DEFAULT_OPTIONS_MAGIC;

static void efi_default_cmdline(void)
{
	size_t n = 0;
	for (size_t i = sizeof EFI_DEFAULT_OPTIONS_MAGIC - 1; i < sizeof efi_default_options &&
							    n + 1 < sizeof a64_efi_boot.cmdline; i++) {
		char ch = efi_default_options[i];
		if (ch < 0x20 || ch > 0x7e)
			break;
		a64_efi_boot.cmdline[n++] = ch;
	}
	a64_efi_boot.cmdline[n] = '\0';
}

/* The load options (UCS-2) as ASCII; anything outside printable ASCII ends them. None,
 * empty or not text: the image's default options above. */
static void efi_cmdline(void *handle, void *bs)
{
	void *li = NULL;
	efi_default_cmdline();
	efi_handle_protocol_fn hp = (efi_handle_protocol_fn)efi_ldp(bs, BS_HANDLE_PROTOCOL);
	if (hp(handle, guid_loaded_image, &li) != EFI_SUCCESS || !li)
		return;
	uint32_t size;
	memcpy(&size, (const uint8_t *)li + LI_LOAD_OPTIONS_SIZE, sizeof size);
	const uint8_t *opt = efi_ldp(li, LI_LOAD_OPTIONS);
	if (!opt)
		return;
	size_t n = 0;
	for (uint32_t i = 0; i + 1 < size && n + 1 < sizeof a64_efi_boot.cmdline; i += 2) {
		uint16_t ch = (uint16_t)(opt[i] | opt[i + 1] << 8);
		if (ch == 0 || ch < 0x20 || ch > 0x7e)
			break;
		a64_efi_boot.cmdline[n++] = (char)ch;
	}
	a64_efi_boot.cmdline[n] = '\0';
	if (n == 0) /* none, or not text (a boot manager's own binary data): the defaults */
		efi_default_cmdline();
}

/* The ISO's menu (options "menu:<default>", efi_menu.h) and, when the mode is an install,
 * the ESP image the installer writes. A missing image is said here and refused by the
 * installer (kernel/node/install.c), which names what it lacks. */
static void efi_mode(void *handle, void *systab)
{
	char *cl = a64_efi_boot.cmdline;
	const size_t plen = sizeof A64_EFI_MENU_PREFIX - 1u;
	if (strncmp(cl, A64_EFI_MENU_PREFIX, plen) == 0) {
		char spec[BOOT_MODE_VALUE_MAX];
		size_t n = 0;
		for (const char *p = cl + plen; *p && *p != ' ' && n + 1 < sizeof spec; p++)
			spec[n++] = *p;
		spec[n] = '\0';
		a64_efi_menu(systab, spec, cl, sizeof a64_efi_boot.cmdline);
	}
	enum boot_mode m;
	if (boot_mode_parse(cl, sizeof a64_efi_boot.cmdline, &m) != 0 ||
	    (m != BOOT_MODE_INSTALL && m != BOOT_MODE_INSTALL_ERASE))
		return;
	const char *why = NULL;
	uint64_t base = 0, len = 0;
	if (a64_efi_read_esp(handle, systab, &base, &len, &why) == EFI_SUCCESS) {
		a64_efi_boot.esp_base = base;
		a64_efi_boot.esp_len = len;
		a64_efi_say(systab, "urMQTT: the installer's ESP image: " A64_EFI_ESP_PATH " read");
		return;
	}
	a64_efi_say(systab, "urMQTT: install: cannot read " A64_EFI_ESP_PATH " from the boot volume:");
	a64_efi_say(systab, why ? why : "?");
}

static bool efi_usable(uint32_t type)
{
	return type == EFI_LOADER_CODE || type == EFI_LOADER_DATA || type == EFI_BS_CODE || type == EFI_BS_DATA ||
	       type == EFI_CONVENTIONAL;
}

/* The final memory map into a64_efi_boot: usable RAM merged into ranges (the firmware's
 * runtime, ACPI and reserved areas are left out), and the ACPI areas a64_efi_exit must
 * clean before the MMU goes off. */
static void efi_take_map(uint64_t size, uint64_t desc_size)
{
	struct a64_efi_boot *b = &a64_efi_boot;
	b->n_mem = 0;
	b->n_acpi = 0;
	b->mem_dropped = 0;
	for (uint64_t off = 0; desc_size >= 40 && off + desc_size <= size; off += desc_size) {
		const uint8_t *d = efi_map + off;
		uint32_t type;
		memcpy(&type, d, sizeof type);
		uint64_t base = efi_ld64(d, 8), len = efi_ld64(d, 24) << 12;
		if ((type == EFI_ACPI_RECLAIM || type == EFI_ACPI_NVS) && b->n_acpi < A64_EFI_MAX_ACPI) {
			b->acpi[b->n_acpi++] = (struct plat_mem_range){ base, len };
			continue;
		}
		if (!efi_usable(type) || len == 0)
			continue;
		if (b->n_mem > 0 && b->mem[b->n_mem - 1].base + b->mem[b->n_mem - 1].len == base) {
			b->mem[b->n_mem - 1].len += len;
			continue;
		}
		if (b->n_mem >= PLAT_MAX_MEM_RANGES) {
			b->mem_dropped++;
			continue;
		}
		b->mem[b->n_mem++] = (struct plat_mem_range){ base, len };
	}
}

/* At the linked address, boot services still on. */
__attribute__((no_stack_protector, noinline)) static efi_status efi_stage2(void *handle, void *systab)
{
	void *bs = efi_ldp(systab, ST_BOOT_SERVICES);
	uint64_t dtb = 0;

	a64_efi_boot.magic = A64_EFI_MAGIC;
	a64_efi_boot.rsdp = 0;
	uint64_t n = efi_ld64(systab, ST_N_TABLES);
	const uint8_t *tab = efi_ldp(systab, ST_TABLES);
	for (uint64_t i = 0; tab && i < n && i < 256; i++) {
		const uint8_t *e = tab + i * 24;
		if (guid_eq(e, guid_acpi20))
			a64_efi_boot.rsdp = efi_ld64(e, 16);
		else if (guid_eq(e, guid_dtb))
			dtb = efi_ld64(e, 16);
	}
	a64_efi_boot.dtb = dtb;
	efi_cmdline(handle, bs);
	efi_mode(handle, systab);
	if (a64_efi_boot.rsdp == 0 && dtb == 0) {
		a64_efi_say(systab, "urMQTT: the firmware gives neither ACPI 2.0 tables nor a device tree");
		return EFI_UNSUPPORTED;
	}
	a64_efi_say(systab, "urMQTT: exiting boot services");

	efi_get_map_fn get_map = (efi_get_map_fn)efi_ldp(bs, BS_GET_MEMORY_MAP);
	efi_exit_bs_fn exit_bs = (efi_exit_bs_fn)efi_ldp(bs, BS_EXIT_BOOT_SERVICES);
	/* The map key goes stale if anything allocates in between: read it again once. */
	for (int tries = 0; tries < 2; tries++) {
		uint64_t size = sizeof efi_map, key = 0, desc_size = 0;
		uint32_t ver = 0;
		if (get_map(&size, efi_map, &key, &desc_size, &ver) != EFI_SUCCESS) {
			a64_efi_say(systab, "urMQTT: GetMemoryMap failed");
			return EFI_LOAD_ERROR;
		}
		if (exit_bs(handle, key) == EFI_SUCCESS) {
			/* No boot services from here on, the console included. */
			efi_take_map(size, desc_size);
			a64_efi_exit(dtb, &a64_efi_boot);
		}
	}
	a64_efi_say(systab, "urMQTT: ExitBootServices failed twice");
	return EFI_LOAD_ERROR;
}

/* 64 random bits for the slide: EFI_RNG_PROTOCOL (its default algorithm), else RNDR.
 * 1, 0 (neither exists) or -1 (what exists failed). Position-independent. */
static int efi_random(void *bs, uint64_t *v, uint32_t *source)
{
	efi_locate_protocol_fn locate = (efi_locate_protocol_fn)efi_ldp(bs, BS_LOCATE_PROTOCOL);
	void *rng = NULL;
	bool have_rng = locate(guid_rng, NULL, &rng) == EFI_SUCCESS && rng;
	if (have_rng) {
		efi_get_rng_fn get = (efi_get_rng_fn)efi_ldp(rng, 8);
		uint8_t b[8];
		if (get(rng, NULL, sizeof b, b) == EFI_SUCCESS) {
			memcpy(v, b, sizeof b);
			mem_wipe(b, sizeof b);
			*source = A64_KASLR_SRC_EFI_RNG;
			return 1;
		}
	}
	int r = a64_kaslr_rndr(v);
	if (r == 1)
		*source = A64_KASLR_SRC_RNDR;
	return r == 1 ? 1 : have_rng || r < 0 ? -1 : 0;
}

/* KASLR on the UEFI path (ADR-084): the image (file bytes, .bss, stacks after it) to
 * a free place link + slide, the slide a multiple of 64 KiB in [extent, top - link -
 * extent] (top: the highest usable address of the memory map, at most 1 GiB above the
 * link address), drawn again when the firmware has the drawn pages in use; the table
 * applied to the copy. Returns the copy's address, or 0 with k->state saying why the
 * boot goes on unslid (then the caller places the image at its link address as before).
 * Position-independent: runs where the firmware put the image. */
static uint64_t efi_kaslr(void *bs, uint64_t run, uint64_t link, uint64_t image_size, struct a64_kaslr *k)
{
	memset(k, 0, sizeof *k);
	k->decided = 1;
	uint64_t extent = (image_size + EFI_STACKS_BYTES + A64_KASLR_ALIGN - 1) & ~(A64_KASLR_ALIGN - 1);
	uint64_t size = sizeof efi_map, key = 0, desc_size = 0, top = 0;
	uint32_t ver = 0;
	efi_get_map_fn get_map = (efi_get_map_fn)efi_ldp(bs, BS_GET_MEMORY_MAP);
	if (get_map(&size, efi_map, &key, &desc_size, &ver) == EFI_SUCCESS) {
		for (uint64_t off = 0; desc_size >= 40 && off + desc_size <= size; off += desc_size) {
			uint32_t type;
			memcpy(&type, efi_map + off, sizeof type);
			uint64_t end = efi_ld64(efi_map + off, 8) + (efi_ld64(efi_map + off, 24) << 12);
			if (type == EFI_CONVENTIONAL && end > top)
				top = end;
		}
	}
	uint64_t smax = top > link ? (top - link) & ~(A64_KASLR_ALIGN - 1) : 0;
	if (smax > A64_KASLR_WINDOW - A64_KASLR_ALIGN)
		smax = A64_KASLR_WINDOW - A64_KASLR_ALIGN;
	if (smax < 2 * extent) {
		k->state = A64_KASLR_NO_ROOM;
		k->room_why = A64_KASLR_ROOM_EFI_MAP;
		return 0;
	}
	uint64_t n_slots = (smax - 2 * extent) / A64_KASLR_ALIGN + 1;
	k->n_slots = (uint32_t)n_slots;
	efi_alloc_pages_fn alloc = (efi_alloc_pages_fn)efi_ldp(bs, BS_ALLOCATE_PAGES);
	efi_free_pages_fn free_pages = (efi_free_pages_fn)efi_ldp(bs, BS_FREE_PAGES);
	for (uint32_t t = 0; t < A64_KASLR_TRIES; t++) {
		uint64_t rnd;
		int got = efi_random(bs, &rnd, &k->source);
		if (got <= 0) {
			k->state = got == 0 ? A64_KASLR_NO_ENTROPY : A64_KASLR_RNG_FAILED;
			return 0;
		}
		uint64_t slide = extent + (rnd % n_slots) * A64_KASLR_ALIGN;
		mem_wipe(&rnd, sizeof rnd);
		uint64_t at = link + slide;
		/* Code pages: the firmware maps LoaderData non-executable. The stacks' room too. */
		if (alloc(EFI_ALLOCATE_ADDRESS, EFI_LOADER_CODE, extent / A64_PAGE, &at) != EFI_SUCCESS)
			continue;
		memcpy((void *)(uintptr_t)at, (const void *)(uintptr_t)run, (size_t)image_size);
		struct kreloc_layout lay = a64_kaslr_layout(link);
		const uint8_t *table = (const uint8_t *)a64_relocs_start;
		size_t table_len = (size_t)(a64_relocs_end - a64_relocs_start);
		size_t file_len = (size_t)(a64_file_end - a64_image_start);
		if (kreloc_apply_in(&lay, table, table_len, (uint8_t *)(uintptr_t)at, file_len, slide, &k->report) !=
		    0) {
			(void)free_pages(at, extent / A64_PAGE);
			k->state = A64_KASLR_BAD_TABLE;
			return 0;
		}
		k->state = A64_KASLR_SLID;
		k->slide = slide;
		struct a64_kaslr *moved = (struct a64_kaslr *)(uintptr_t)((uint64_t)(uintptr_t)k - run + at);
		*moved = *k;
		for (uint64_t a = at; a < at + image_size; a += 64)
			__asm__ volatile("dc cvau, %0" : : "r"(a) : "memory");
		__asm__ volatile("dsb ish\n\tic iallu\n\tdsb ish\n\tisb" : : : "memory");
		return at;
	}
	k->state = A64_KASLR_NO_ROOM;
	k->room_why = A64_KASLR_ROOM_EFI_TAKEN;
	return 0;
}

/* From boot.S's a64_efi_entry: `run` is where the image runs, `link` where it is linked.
 * Position-independent until efi_stage2 runs at `link` (or, slid, at link + slide). */
__attribute__((no_stack_protector)) uint64_t a64_efi_main(void *handle, void *systab, uint64_t run, uint64_t link,
							  uint64_t image_size);
__attribute__((no_stack_protector)) uint64_t a64_efi_main(void *handle, void *systab, uint64_t run, uint64_t link,
							  uint64_t image_size)
{
	void *bs = efi_ldp(systab, ST_BOOT_SERVICES);
	efi_alloc_pages_fn alloc = (efi_alloc_pages_fn)efi_ldp(bs, BS_ALLOCATE_PAGES);
	efi_status (*stage2)(void *, void *) = efi_stage2;
	struct a64_kaslr *k = &a64_kaslr; /* this copy's: the outcome travels in the copy made */
	uint64_t at = efi_kaslr(bs, run, link, image_size, k);
	if (at) {
		stage2 = (efi_status(*)(void *, void *))((uintptr_t)stage2 - run + at);
		return stage2(handle, systab);
	}
	uint64_t pages = (image_size + A64_PAGE - 1) / A64_PAGE;
	if (run != link) {
		/* Code pages: the firmware maps LoaderData non-executable. */
		at = link;
		if (alloc(EFI_ALLOCATE_ADDRESS, EFI_LOADER_CODE, pages, &at) != EFI_SUCCESS) {
			a64_efi_say(systab, "urMQTT: the memory at the image's link address is taken");
			return EFI_LOAD_ERROR;
		}
		memcpy((void *)(uintptr_t)link, (const void *)(uintptr_t)run, (size_t)image_size);
		for (uint64_t a = link; a < link + image_size; a += 64)
			__asm__ volatile("dc cvau, %0" : : "r"(a) : "memory");
		__asm__ volatile("dsb ish\n\tic iallu\n\tdsb ish\n\tisb" : : : "memory");
	}
	at = link + pages * A64_PAGE;
	if (alloc(EFI_ALLOCATE_ADDRESS, EFI_LOADER_DATA, EFI_STACKS_BYTES / A64_PAGE, &at) != EFI_SUCCESS) {
		a64_efi_say(systab, "urMQTT: the memory after the image (other cores' stacks) is taken");
		return EFI_LOAD_ERROR;
	}
	stage2 = (efi_status(*)(void *, void *))((uintptr_t)stage2 - run + link);
	return stage2(handle, systab);
}
