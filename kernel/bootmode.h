/* SPDX-License-Identifier: MIT
 *
 * The boot mode chosen by the boot loader's menu: the one command-line key that every
 * build honours, production included (ADR "urmqtt.mode= in production"). Whoever edits the
 * boot loader's command line already controls the machine; no other key is read in a
 * production build (kernel/cmdline.h). The line is external input: bounded by its length,
 * an unknown value or a repeated key is refused (the caller stops loudly), never guessed.
 * Portable, no allocation (host-tested, fuzzed).
 */
#ifndef KERNEL_BOOTMODE_H
#define KERNEL_BOOTMODE_H

#include "lib/compiler.h"

#define BOOT_MODE_KEY "urmqtt.mode"
/* Longest accepted value ("install-erase") plus room to see a longer one refused. */
#define BOOT_MODE_VALUE_MAX 32

enum boot_mode {
	BOOT_MODE_SERVE,         /* no key: serve from the installed disk */
	BOOT_MODE_LIVE,          /* serve from RAM, never write any disk */
	BOOT_MODE_INSTALL,       /* write the image to the one empty disk, power off */
	BOOT_MODE_INSTALL_ERASE, /* the same, even over a disk that holds data */
	BOOT_MODE_DIAG,          /* diagnostics */
};

/* Read `urmqtt.mode=` from cmdline[0..len) (borrowed, stops at the first NUL; NULL with
 * len 0 is an empty line). 0 with *out set (BOOT_MODE_SERVE when the key is absent);
 * -E_INVAL when its value is unknown, empty, bare (no '='), or the key appears twice;
 * *out is then BOOT_MODE_SERVE and the caller must stop, naming the value. */
MUST_CHECK int boot_mode_parse(const char *cmdline, size_t len, enum boot_mode *out);

/* "serve", "live", "install", "install-erase", "diag"; "?" for anything else. */
const char *boot_mode_name(enum boot_mode m);

#endif
