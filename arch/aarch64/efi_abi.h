/* SPDX-License-Identifier: MIT
 *
 * The slice of the UEFI 2.10 ABI the aarch64 UEFI entry uses (efi.c, efi_menu.c): status
 * codes, table offsets, protocol GUIDs as stored and the function types, plus the two
 * loads through a firmware pointer. Private to arch/aarch64/efi*.c; only valid while boot
 * services last. Layouts: 4.3 (system table), 4.4 (boot services), 12.3 (simple text
 * input), 13.4-13.5 (simple file system, file protocol), 9.1 (loaded image).
 */
#ifndef ARCH_AARCH64_EFI_ABI_H
#define ARCH_AARCH64_EFI_ABI_H

#include <stdint.h>

#include "lib/mem.h"

#define EFI_SUCCESS 0ull
#define EFI_ERR (1ull << 63)
#define EFI_LOAD_ERROR (EFI_ERR | 1u)
#define EFI_UNSUPPORTED (EFI_ERR | 3u)
#define EFI_BUFFER_TOO_SMALL (EFI_ERR | 5u)
#define EFI_NOT_READY (EFI_ERR | 6u)
#define EFI_NOT_FOUND (EFI_ERR | 14u)

/* Boot services table offsets (4.4.1). */
#define BS_ALLOCATE_PAGES 40u
#define BS_FREE_PAGES 48u
#define BS_GET_MEMORY_MAP 56u
#define BS_HANDLE_PROTOCOL 152u
#define BS_EXIT_BOOT_SERVICES 232u
#define BS_STALL 248u
#define BS_SET_WATCHDOG_TIMER 256u
#define BS_LOCATE_PROTOCOL 320u
/* System table offsets (4.3.1). */
#define ST_CON_IN 48u
#define ST_CON_OUT 64u
#define ST_BOOT_SERVICES 96u
#define ST_N_TABLES 104u
#define ST_TABLES 112u
/* Loaded image protocol offsets (9.1.1). */
#define LI_DEVICE_HANDLE 24u
#define LI_LOAD_OPTIONS_SIZE 48u
#define LI_LOAD_OPTIONS 56u

#define EFI_ALLOCATE_ANY_PAGES 0u
#define EFI_ALLOCATE_ADDRESS 2u
#define EFI_LOADER_CODE 1u
#define EFI_LOADER_DATA 2u
#define EFI_BS_CODE 3u
#define EFI_BS_DATA 4u
#define EFI_CONVENTIONAL 7u
#define EFI_ACPI_RECLAIM 9u
#define EFI_ACPI_NVS 10u
#define EFI_FILE_MODE_READ 1ull

typedef uint64_t efi_status;
typedef efi_status (*efi_alloc_pages_fn)(uint32_t type, uint32_t mem_type, uint64_t n_pages, uint64_t *addr);
typedef efi_status (*efi_free_pages_fn)(uint64_t addr, uint64_t n_pages);
typedef efi_status (*efi_get_map_fn)(uint64_t *size, void *map, uint64_t *key, uint64_t *desc_size, uint32_t *ver);
typedef efi_status (*efi_handle_protocol_fn)(void *handle, const void *guid, void **iface);
typedef efi_status (*efi_exit_bs_fn)(void *handle, uint64_t key);
typedef efi_status (*efi_locate_protocol_fn)(const void *guid, void *registration, void **iface);
typedef efi_status (*efi_stall_fn)(uint64_t microseconds);
typedef efi_status (*efi_set_watchdog_fn)(uint64_t timeout_s, uint64_t code, uint64_t data_size, const uint16_t *data);
typedef efi_status (*efi_output_fn)(void *con_out, const uint16_t *s);
typedef efi_status (*efi_read_key_fn)(void *con_in, uint16_t key[2]); /* {ScanCode, UnicodeChar} */
typedef efi_status (*efi_get_rng_fn)(void *self, const void *algorithm, uint64_t len, uint8_t *out);
typedef efi_status (*efi_open_volume_fn)(void *fs, void **root);
typedef efi_status (*efi_file_open_fn)(void *dir, void **file, const uint16_t *name, uint64_t mode, uint64_t attrs);
typedef efi_status (*efi_file_close_fn)(void *file);
typedef efi_status (*efi_file_read_fn)(void *file, uint64_t *size, void *buf);
typedef efi_status (*efi_file_get_pos_fn)(void *file, uint64_t *pos);
typedef efi_status (*efi_file_set_pos_fn)(void *file, uint64_t pos);
/* Simple file system protocol: OpenVolume at 8. File protocol: Open 8, Close 16, Read 32,
 * GetPosition 48, SetPosition 56. Simple text input: ReadKeyStroke at 8. */

/* GUIDs as stored (first three fields little-endian). */
#define EFI_GUID_LOADED_IMAGE \
	{ 0xa1, 0x31, 0x1b, 0x5b, 0x62, 0x95, 0xd2, 0x11, 0x8e, 0x3f, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b }
#define EFI_GUID_SIMPLE_FILE_SYSTEM \
	{ 0x22, 0x5b, 0x4e, 0x96, 0x59, 0x64, 0xd2, 0x11, 0x8e, 0x39, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b }

/* One line (ASCII, at most 93 characters) on the firmware's console (efi.c). */
void a64_efi_say(void *systab, const char *msg);

static inline uint64_t efi_ld64(const void *base, size_t off)
{
	uint64_t v;
	memcpy(&v, (const uint8_t *)base + off, sizeof v);
	return v;
}

static inline void *efi_ldp(const void *base, size_t off)
{
	return (void *)(uintptr_t)efi_ld64(base, off);
}

#endif
