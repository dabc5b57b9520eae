/* SPDX-License-Identifier: MIT
 * Fuzz target for kernel/bootmode: the input is a command line (no NUL terminator, read
 * only inside its length). The result is 0 or -E_INVAL; on -E_INVAL the mode is SERVE; on
 * 0 the mode is a named one, and when the key is not in the input at all the mode is SERVE. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/bootmode.h"
#include "lib/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_key(const uint8_t *data, size_t size)
{
	static const char k[] = BOOT_MODE_KEY "=";
	for (size_t i = 0; i + sizeof k - 1 <= size; i++)
		if (memcmp(data + i, k, sizeof k - 1) == 0)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum boot_mode m = BOOT_MODE_DIAG;
	int err = boot_mode_parse((const char *)data, size, &m);
	if (err != 0 && err != -E_INVAL)
		abort();
	if (err != 0 && m != BOOT_MODE_SERVE)
		abort();
	if (boot_mode_name(m)[0] == '?')
		abort();
	if (err == 0 && m != BOOT_MODE_SERVE &&
	    !has_key(data, size))
		abort();
	return 0;
}
