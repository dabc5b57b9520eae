/* SPDX-License-Identifier: MIT
 *
 * The ISO's boot menu on aarch64 UEFI and the installer's ESP image (ADR-094). x86_64 has
 * GRUB's menu and GRUB's Multiboot2 module; on Arm the image is itself the removable-media
 * loader (EFI/BOOT/BOOTAA64.EFI), so it shows the same four entries and, for the install
 * entries, reads the ESP image from the volume it was loaded from. Both run while boot
 * services last, at the image's final address, before the kernel's own set-up (efi.c).
 */
#ifndef ARCH_AARCH64_EFI_MENU_H
#define ARCH_AARCH64_EFI_MENU_H

#include <stddef.h>
#include <stdint.h>

/* Options text that asks for the menu: "menu:" then the default entry's mode (live,
 * install, install-erase, diag). images.sh writes it into the ISO's copy's default
 * options slot; an unknown default is entry 1 (live), said on the console. */
#define A64_EFI_MENU_PREFIX "menu:"
#define A64_EFI_MENU_TIMEOUT_S 3u          /* as the x86_64 GRUB menu's timeout */
/* The installer's ESP image on the boot volume, and the largest one read. */
#define A64_EFI_ESP_PATH "\\EFI\\urmqtt\\esp.img"
#define A64_EFI_ESP_MAX (256ull << 20)

/* Show the menu on the firmware console, read the choice from its input (a digit 1-4 or
 * Enter; the default after A64_EFI_MENU_TIMEOUT_S unless a key stopped the countdown, then
 * it waits), and write "urmqtt.mode=<choice>" into cmdline[0..cap). spec is the text after
 * the prefix. The firmware's watchdog is off while it waits. */
void a64_efi_menu(void *systab, const char *spec, char *cmdline, size_t cap);

/* Read A64_EFI_ESP_PATH from the volume `handle` (this image) was loaded from into fresh
 * LoaderData pages, cleaned to the point of coherency (the kernel reads it after the MMU
 * was off). 0 with *base, *len set; else an EFI status, with *why naming the step that
 * failed (the pages freed). */
uint64_t a64_efi_read_esp(void *handle, void *systab, uint64_t *base, uint64_t *len, const char **why);

#endif
