/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/console_in: a scripted console (bytes that arrive at given
 * milliseconds, a clock that advances on every empty poll) drives the line reader: plain
 * lines ended by CR or LF, the echo, backspace and DEL (also on an empty line), control and
 * non-ASCII bytes ignored, a line of exactly cap - 1 characters accepted and one more
 * refused (also after backspace), the timeout with and without partial input, a flood of
 * bytes that cannot hold the reader past its timeout, and bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/console_in.h"
#include "lib/err.h"

struct script {
	const char *in;
	size_t len, pos;
	uint64_t now_ms;
	uint64_t start_at_ms; /* no byte before this time */
	bool flood;           /* an endless stream of 'x', the clock +1 ms per byte */
	char echo[512];
	size_t n_echo;
};

static int sc_getc(void *ctx)
{
	struct script *s = ctx;
	if (s->flood) {
		s->now_ms++;
		return 'x';
	}
	if (s->now_ms < s->start_at_ms || s->pos >= s->len)
		return -1;
	return (uint8_t)s->in[s->pos++];
}

static void sc_write(void *ctx, const char *b, size_t n)
{
	struct script *s = ctx;
	for (size_t i = 0; i < n && s->n_echo + 1 < sizeof s->echo; i++)
		s->echo[s->n_echo++] = b[i];
	s->echo[s->n_echo] = 0;
}

static uint64_t sc_now(void *ctx)
{
	return ((struct script *)ctx)->now_ms;
}

static void sc_relax(void *ctx)
{
	((struct script *)ctx)->now_ms++;
}

static int run(struct script *s, const char *in, size_t in_len, char *buf, size_t cap, uint64_t timeout,
	       size_t *len)
{
	s->in = in;
	s->len = in_len;
	const struct console_in_ops ops = { sc_getc, sc_write, sc_now, sc_relax, s };
	return console_in_line(&ops, buf, cap, timeout, len);
}

#define RUN(s, lit, buf, cap, t, len) run(s, lit, sizeof(lit) - 1, buf, cap, t, len)

static void test_lines(void **state)
{
	(void)state;
	char buf[16];
	size_t len = 99;
	struct script s = { 0 };
	assert_int_equal(RUN(&s, "WIPE\r", buf, sizeof buf, 1000, &len), 0);
	assert_string_equal(buf, "WIPE");
	assert_int_equal(len, 4);
	assert_string_equal(s.echo, "WIPE\r\n");

	struct script s2 = { 0 };
	assert_int_equal(RUN(&s2, "no\nWIPE\n", buf, sizeof buf, 1000, &len), 0);
	assert_string_equal(buf, "no"); /* one line per call; the rest stays unread */
	assert_int_equal(s2.pos, 3);

	struct script s3 = { 0 };
	assert_int_equal(RUN(&s3, "\r", buf, sizeof buf, 1000, &len), 0);
	assert_string_equal(buf, "");
	assert_int_equal(len, 0);

	/* Bytes that arrive later than the call still count, before the timeout. */
	struct script s4 = { .start_at_ms = 500 };
	assert_int_equal(RUN(&s4, "ok\r", buf, sizeof buf, 1000, &len), 0);
	assert_string_equal(buf, "ok");
}

static void test_editing(void **state)
{
	(void)state;
	char buf[16];
	size_t len;
	struct script s = { 0 };
	assert_int_equal(RUN(&s, "\x08\x7fWX\x08IPEE\x7f\r", buf, sizeof buf, 1000, &len), 0);
	assert_string_equal(buf, "WIPE");
	assert_string_equal(s.echo, "WX\b \bIPEE\b \b\r\n");

	/* Control bytes, an escape sequence's ESC, tabs and non-ASCII are dropped unechoed;
	 * the printable rest of the sequence is kept (the operator sees it echoed). */
	struct script s2 = { 0 };
	assert_int_equal(RUN(&s2, "W\x01\x1b\tI\x80\xffPE\r", buf, sizeof buf, 1000, &len), 0);
	assert_string_equal(buf, "WIPE");
	assert_string_equal(s2.echo, "WIPE\r\n");
}

static void test_overlong(void **state)
{
	(void)state;
	char buf[5];
	size_t len = 7;
	struct script s = { 0 };
	assert_int_equal(RUN(&s, "WIPE\r", buf, sizeof buf, 1000, &len), 0); /* exactly cap - 1 */
	assert_string_equal(buf, "WIPE");

	struct script s2 = { 0 };
	assert_int_equal(RUN(&s2, "WIPEX\r", buf, sizeof buf, 1000, &len), -E_RANGE);
	assert_string_equal(buf, "");
	assert_int_equal(len, 0);
	assert_string_equal(s2.echo, "WIPE\r\n"); /* the refused character is not echoed */

	/* Once a character was refused, backspace does not rescue the line. */
	struct script s3 = { 0 };
	assert_int_equal(RUN(&s3, "WIPEX\x08\x08\r", buf, sizeof buf, 1000, &len), -E_RANGE);
	assert_string_equal(buf, "");

	/* cap 1: only the empty line fits. */
	char one[1];
	struct script s4 = { 0 };
	assert_int_equal(RUN(&s4, "\n", one, sizeof one, 1000, &len), 0);
	assert_int_equal(one[0], 0);
	struct script s5 = { 0 };
	assert_int_equal(RUN(&s5, "a\n", one, sizeof one, 1000, &len), -E_RANGE);
}

static void test_timeout(void **state)
{
	(void)state;
	char buf[16];
	size_t len = 3;
	struct script s = { 0 };
	assert_int_equal(RUN(&s, "", buf, sizeof buf, 250, &len), -E_TIMEOUT);
	assert_int_equal(s.now_ms, 250);
	assert_int_equal(len, 0);

	struct script s2 = { 0 };
	assert_int_equal(RUN(&s2, "WIP", buf, sizeof buf, 250, &len), -E_TIMEOUT);
	assert_string_equal(buf, ""); /* a partial line is not returned */

	struct script s3 = { .start_at_ms = 300 };
	assert_int_equal(RUN(&s3, "WIPE\r", buf, sizeof buf, 250, &len), -E_TIMEOUT);

	/* Endless input without an end of line: still bounded by the timeout. */
	struct script s4 = { .flood = true };
	assert_int_equal(RUN(&s4, "", buf, sizeof buf, 100, &len), -E_TIMEOUT);
	assert_true(s4.now_ms <= 101);
}

static void test_args(void **state)
{
	(void)state;
	char buf[4];
	size_t len;
	struct script s = { 0 };
	const struct console_in_ops ops = { sc_getc, sc_write, sc_now, NULL, &s };
	const struct console_in_ops no_getc = { NULL, sc_write, sc_now, NULL, &s };
	assert_int_equal(console_in_line(NULL, buf, sizeof buf, 10, &len), -E_INVAL);
	assert_int_equal(console_in_line(&no_getc, buf, sizeof buf, 10, &len), -E_INVAL);
	assert_int_equal(console_in_line(&ops, NULL, sizeof buf, 10, &len), -E_INVAL);
	assert_int_equal(console_in_line(&ops, buf, 0, 10, &len), -E_INVAL);
	assert_int_equal(console_in_line(&ops, buf, sizeof buf, 10, NULL), -E_INVAL);
	/* No echo sink and no relax: still reads (the clock is advanced by hand below). */
	const struct console_in_ops quiet = { sc_getc, NULL, sc_now, NULL, &s };
	s.in = "ab\r";
	s.len = 3;
	assert_int_equal(console_in_line(&quiet, buf, sizeof buf, 10, &len), 0);
	assert_string_equal(buf, "ab");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_editing),
		cmocka_unit_test(test_overlong),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
