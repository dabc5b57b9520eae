/* SPDX-License-Identifier: MIT
 * Fuzz target for kernel/console_in: the first byte picks the buffer's capacity (1..64),
 * the rest is what the console receives, byte by byte, with an empty poll (one
 * millisecond) after every byte whose low bits say so. After every call: the result is 0,
 * -E_TIMEOUT or -E_RANGE; on 0 the line is NUL-terminated within cap, printable ASCII only,
 * and its length is reported; otherwise the buffer holds "". The buffer is a heap block of
 * exactly cap bytes (ASan sees an overrun). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/console_in.h"
#include "lib/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct feed {
	const uint8_t *d;
	size_t n, pos;
	uint64_t now;
	bool gap;
};

static int f_getc(void *ctx)
{
	struct feed *f = ctx;
	if (f->gap) {
		f->gap = false;
		f->now++;
		return -1;
	}
	if (f->pos >= f->n) {
		f->now++;
		return -1;
	}
	uint8_t c = f->d[f->pos++];
	f->gap = (c & 3u) == 3u;
	return c;
}

static void f_write(void *ctx, const char *s, size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < len; i++)
		if (s[i] == 0)
			abort(); /* the echo never carries a NUL */
}

static uint64_t f_now(void *ctx)
{
	return ((struct feed *)ctx)->now;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t cap = (size_t)(data[0] & 63u) + 1u;
	struct feed f = { data + 1, size - 1, 0, 0, false };
	const struct console_in_ops ops = { f_getc, f_write, f_now, NULL, &f };
	char *buf = malloc(cap);
	if (!buf)
		abort();
	/* Read lines until the input and the timeout are used up. */
	for (int round = 0; round < 64; round++) {
		size_t len = 12345;
		int rc = console_in_line(&ops, buf, cap, 50, &len);
		if (rc == 0) {
			if (len >= cap || buf[len] != 0 || strlen(buf) != len)
				abort();
			for (size_t i = 0; i < len; i++)
				if (buf[i] < 0x20 || buf[i] > 0x7e)
					abort();
		} else if (rc == -E_TIMEOUT || rc == -E_RANGE) {
			if (buf[0] != 0 || len != 0)
				abort();
			if (rc == -E_TIMEOUT)
				break;
		} else {
			abort();
		}
	}
	free(buf);
	return 0;
}
