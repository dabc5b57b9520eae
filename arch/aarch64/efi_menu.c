/* SPDX-License-Identifier: MIT
 *
 * The aarch64 boot menu and the installer's ESP image (efi_menu.h, ADR-094). Owns the
 * menu's four entries (the same, in the same order, as the x86_64 GRUB menu of
 * tools/release/images.sh), the wait for a key and the read of the ESP image file.
 * Invariants: the command line it writes names exactly one mode from the table; the wait
 * is bounded unless someone typed a key that is not a choice; the ESP image is read into
 * pages only it allocated, never more than A64_EFI_ESP_MAX bytes and never more than the
 * file's size, and a failed read frees them. Firmware input is trusted only as far as the
 * UEFI ABI obliges: key codes outside the choices are ignored, a short read is a failure.
 */
#include "arch/aarch64/efi_menu.h"

#include "arch/aarch64/a64.h"
#include "arch/aarch64/efi_abi.h"
#include "lib/fmt.h"
#include "lib/mem.h"

#define MENU_POLL_US 10000u
#define ESP_READ_CHUNK (4ull << 20) /* one Read call at most: firmware FAT drivers prefer it */

struct menu_entry {
	const char *mode;  /* urmqtt.mode= value (kernel/bootmode.h) */
	const char *line;  /* what the console shows */
};

static const struct menu_entry menu_entries[] = {
	{ "live", "  1  urMQTT live (runs from RAM, never writes a disk)" },
	{ "install", "  2  Install urMQTT to this machine's disk" },
	{ "install-erase", "  3  Install urMQTT, erasing the disk's data" },
	{ "diag", "  4  Diagnostics" },
};
#define MENU_N (sizeof menu_entries / sizeof menu_entries[0])

static void menu_stall(void *bs, uint64_t us)
{
	efi_stall_fn stall = (efi_stall_fn)efi_ldp(bs, BS_STALL);
	(void)stall(us);
}

/* The next key's character, or 0 when none is waiting (or there is no input). */
static uint16_t menu_key(void *con_in)
{
	if (!con_in)
		return 0;
	uint16_t key[2] = { 0, 0 };
	efi_read_key_fn read = (efi_read_key_fn)efi_ldp(con_in, 8);
	if (read(con_in, key) != EFI_SUCCESS)
		return 0;
	return key[1] ? key[1] : 0xffffu; /* a scan code alone (arrows, ESC): a key, not a choice */
}

/* The entry a key chooses: 0..MENU_N-1, MENU_N for Enter (the default), -1 otherwise. */
static int menu_choice(uint16_t ch)
{
	if (ch >= '1' && ch < '1' + MENU_N)
		return ch - '1';
	if (ch == '\r' || ch == '\n')
		return (int)MENU_N;
	return -1;
}

void a64_efi_menu(void *systab, const char *spec, char *cmdline, size_t cap)
{
	void *bs = efi_ldp(systab, ST_BOOT_SERVICES);
	void *con_in = efi_ldp(systab, ST_CON_IN);
	size_t def = 0;
	bool known = false;
	for (size_t i = 0; i < MENU_N; i++)
		if (strcmp(spec, menu_entries[i].mode) == 0) {
			def = i;
			known = true;
		}
	char line[96];
	a64_efi_say(systab, "");
	a64_efi_say(systab, "urMQTT boot menu (aarch64)");
	for (size_t i = 0; i < MENU_N; i++)
		a64_efi_say(systab, menu_entries[i].line);
	if (!known)
		a64_efi_say(systab, "(the image's default entry is not one of these: the default is 1)");
	(void)fmt_snprintf(line, sizeof line, "Type 1-4, or Enter for the default (%s); the default starts in %u s",
			   menu_entries[def].mode, A64_EFI_MENU_TIMEOUT_S);
	a64_efi_say(systab, line);

	/* No firmware watchdog while a person may be reading (it would reset the machine
	 * after 5 minutes at the menu); the kernel never re-arms it. */
	efi_set_watchdog_fn wd = (efi_set_watchdog_fn)efi_ldp(bs, BS_SET_WATCHDOG_TIMER);
	(void)wd(0, 0, 0, NULL);
	size_t chosen = def;
	uint64_t polls = (uint64_t)A64_EFI_MENU_TIMEOUT_S * 1000000u / MENU_POLL_US;
	bool counting = con_in != NULL;
	if (!con_in)
		a64_efi_say(systab, "(no console input: the default)");
	for (uint64_t t = 0; con_in && (!counting || t < polls); t++) {
		uint16_t ch = menu_key(con_in);
		if (ch) {
			int c = menu_choice(ch);
			if (c >= 0) {
				chosen = c == (int)MENU_N ? def : (size_t)c;
				break;
			}
			if (counting)
				a64_efi_say(systab, "Countdown stopped: type 1-4, or Enter for the default");
			counting = false;
		}
		menu_stall(bs, MENU_POLL_US);
	}
	(void)fmt_snprintf(line, sizeof line, "urMQTT: booting entry %u (urmqtt.mode=%s)", (unsigned)chosen + 1u,
			   menu_entries[chosen].mode);
	a64_efi_say(systab, line);
	(void)fmt_snprintf(cmdline, cap, "urmqtt.mode=%s", menu_entries[chosen].mode);
}

/* ---- the ESP image ---- */

static const uint8_t guid_loaded_image[16] = EFI_GUID_LOADED_IMAGE;
static const uint8_t guid_sfs[16] = EFI_GUID_SIMPLE_FILE_SYSTEM;

static void esp_close(void *f)
{
	if (f)
		(void)((efi_file_close_fn)efi_ldp(f, 16))(f);
}

/* Read the open file's `len` bytes into buf; a short read is a failure. */
static uint64_t esp_read_all(void *file, uint8_t *buf, uint64_t len)
{
	efi_file_read_fn read = (efi_file_read_fn)efi_ldp(file, 32);
	uint64_t done = 0;
	while (done < len) {
		uint64_t want = MIN(len - done, ESP_READ_CHUNK), got = want;
		uint64_t st = read(file, &got, buf + done);
		if (st != EFI_SUCCESS)
			return st;
		if (got == 0 || got > want)
			return EFI_LOAD_ERROR; /* the file ended early, or the driver overran */
		done += got;
	}
	return EFI_SUCCESS;
}

uint64_t a64_efi_read_esp(void *handle, void *systab, uint64_t *base, uint64_t *len, const char **why)
{
	void *bs = efi_ldp(systab, ST_BOOT_SERVICES);
	efi_handle_protocol_fn hp = (efi_handle_protocol_fn)efi_ldp(bs, BS_HANDLE_PROTOCOL);
	void *li = NULL, *fs = NULL, *root = NULL, *file = NULL;
	*base = 0;
	*len = 0;
	uint64_t st = hp(handle, guid_loaded_image, &li);
	if (st != EFI_SUCCESS || !li) {
		*why = "no loaded image protocol";
		return st ? st : EFI_NOT_FOUND;
	}
	void *dev = efi_ldp(li, LI_DEVICE_HANDLE);
	st = dev ? hp(dev, guid_sfs, &fs) : EFI_NOT_FOUND;
	if (st != EFI_SUCCESS || !fs) {
		*why = "the boot volume offers no file system";
		return st ? st : EFI_NOT_FOUND;
	}
	st = ((efi_open_volume_fn)efi_ldp(fs, 8))(fs, &root);
	if (st != EFI_SUCCESS || !root) {
		*why = "the boot volume did not open";
		return st ? st : EFI_NOT_FOUND;
	}
	uint16_t path[sizeof A64_EFI_ESP_PATH];
	for (size_t i = 0; i < sizeof A64_EFI_ESP_PATH; i++)
		path[i] = (uint8_t)A64_EFI_ESP_PATH[i];
	st = ((efi_file_open_fn)efi_ldp(root, 8))(root, &file, path, EFI_FILE_MODE_READ, 0);
	if (st != EFI_SUCCESS || !file) {
		esp_close(root);
		*why = "no " A64_EFI_ESP_PATH " on the boot volume";
		return st ? st : EFI_NOT_FOUND;
	}
	/* The size: the position after a seek to the end (13.5.14). */
	uint64_t size = 0;
	st = ((efi_file_set_pos_fn)efi_ldp(file, 56))(file, ~0ull);
	if (st == EFI_SUCCESS)
		st = ((efi_file_get_pos_fn)efi_ldp(file, 48))(file, &size);
	if (st == EFI_SUCCESS)
		st = ((efi_file_set_pos_fn)efi_ldp(file, 56))(file, 0);
	if (st != EFI_SUCCESS || size < 512u || size > A64_EFI_ESP_MAX) {
		esp_close(file);
		esp_close(root);
		*why = st != EFI_SUCCESS ? "its size could not be read" : "its size is outside 512 B .. 256 MiB";
		return st != EFI_SUCCESS ? st : EFI_LOAD_ERROR;
	}
	uint64_t pages = (size + A64_PAGE - 1) / A64_PAGE, at = 0;
	st = ((efi_alloc_pages_fn)efi_ldp(bs, BS_ALLOCATE_PAGES))(EFI_ALLOCATE_ANY_PAGES, EFI_LOADER_DATA, pages, &at);
	if (st != EFI_SUCCESS) {
		esp_close(file);
		esp_close(root);
		*why = "no memory for it";
		return st;
	}
	st = esp_read_all(file, (uint8_t *)(uintptr_t)at, size);
	esp_close(file);
	esp_close(root);
	if (st != EFI_SUCCESS) {
		(void)((efi_free_pages_fn)efi_ldp(bs, BS_FREE_PAGES))(at, pages);
		*why = "reading it failed";
		return st;
	}
	uint64_t line = 4ull << ((A64_SYSREG_READ(ctr_el0) >> 16) & 15u); /* CTR_EL0.DminLine */
	for (uint64_t a = at & ~(line - 1u); a < at + size; a += line)
		__asm__ volatile("dc civac, %0" : : "r"(a) : "memory");
	__asm__ volatile("dsb sy" : : : "memory");
	*base = at;
	*len = size;
	*why = NULL;
	return EFI_SUCCESS;
}
