/* SPDX-License-Identifier: MIT
 *
 * The boot mode from `urmqtt.mode=` (kernel/bootmode.h). Portable, no allocation; reads
 * only inside [cmdline, cmdline + len) and stops at the first NUL. Tokens are separated by
 * spaces, as kernel/cmdline.c reads them; every token naming the key is looked at, so a
 * second one (even with the same value) is refused rather than one of them silently winning.
 */
#include "kernel/bootmode.h"
#include "lib/err.h"
#include "lib/mem.h"

static const struct {
	const char *name;
	enum boot_mode mode;
} boot_modes[] = {
	{ "live", BOOT_MODE_LIVE },
	{ "install", BOOT_MODE_INSTALL },
	{ "install-erase", BOOT_MODE_INSTALL_ERASE },
	{ "diag", BOOT_MODE_DIAG },
};

static int boot_mode_value(const char *v, size_t vlen, enum boot_mode *m)
{
	for (size_t i = 0; i < ARRAY_LEN(boot_modes); i++) {
		size_t n = strlen(boot_modes[i].name);
		if (n == vlen && memcmp(v, boot_modes[i].name, n) == 0) {
			*m = boot_modes[i].mode;
			return 0;
		}
	}
	return -E_INVAL;
}

int boot_mode_parse(const char *cmdline, size_t len, enum boot_mode *out)
{
	if (!out)
		return -E_INVAL;
	*out = BOOT_MODE_SERVE;
	if (!cmdline) {
		return len == 0 ? 0 : -E_INVAL;
	}
	const size_t klen = sizeof(BOOT_MODE_KEY) - 1;
	size_t end = strnlen(cmdline, len);
	size_t i = 0;
	bool seen = false;
	enum boot_mode found = BOOT_MODE_SERVE;
	while (i < end) {
		while (i < end && cmdline[i] == ' ')
			i++;
		size_t tok = i;
		while (i < end && cmdline[i] != ' ')
			i++;
		size_t tlen = i - tok;
		if (tlen < klen || memcmp(cmdline + tok, BOOT_MODE_KEY, klen) != 0)
			continue;
		if (tlen > klen && cmdline[tok + klen] != '=')
			continue; /* another key that starts with ours, e.g. urmqtt.modex */
		if (seen || tlen == klen)
			return -E_INVAL; /* repeated, or bare */
		seen = true;
		if (boot_mode_value(cmdline + tok + klen + 1, tlen - klen - 1, &found) != 0)
			return -E_INVAL;
	}
	*out = found;
	return 0;
}

const char *boot_mode_name(enum boot_mode m)
{
	switch (m) {
	case BOOT_MODE_SERVE:
		return "serve";
	case BOOT_MODE_LIVE:
		return "live";
	case BOOT_MODE_INSTALL:
		return "install";
	case BOOT_MODE_INSTALL_ERASE:
		return "install-erase";
	case BOOT_MODE_DIAG:
		return "diag";
	}
	return "?";
}
