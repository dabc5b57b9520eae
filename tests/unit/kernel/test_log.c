/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/log and kernel/panic: line format, truncation, levels, per-site
 * rate limiting with the suppressed-count note, the tap (text without the prefix, the
 * structured fields, nothing past the level or the rate limit), and kpanic's message and
 * stop code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kernel/log.h"
#include "kernel/panic.h"

static char cap[8192];
static size_t cap_len;
static unsigned cap_writes;
static uint64_t fake_now;

static void cap_write(const char *s, size_t len)
{
	assert_true(cap_len + len < sizeof cap);
	memcpy(cap + cap_len, s, len);
	cap_len += len;
	cap[cap_len] = '\0';
	cap_writes++;
}

static uint64_t fake_clock(void)
{
	return fake_now;
}

static int setup(void **state)
{
	(void)state;
	cap_len = 0;
	cap[0] = '\0';
	cap_writes = 0;
	fake_now = 0;
	struct log_config cfg = { cap_write, fake_clock, LOG_LEVEL_INFO, 3, 1000000000u, NULL };
	log_init(&cfg);
	return 0;
}

static size_t fmt_line(char *buf, size_t len, uint64_t now, enum log_level lvl, const char *mod,
		       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = log_format_line(buf, len, now, lvl, mod, fmt, ap);
	va_end(ap);
	return n;
}

static void test_format_line(void **state)
{
	(void)state;
	static const struct {
		uint64_t now;
		enum log_level lvl;
		const char *mod, *arg, *want;
	} cases[] = {
		{ 0, LOG_LEVEL_INFO, "boot", "hello", "[    0.000000] I boot: hello\n" },
		{ 1234567891ull, LOG_LEVEL_ERR, "tcp", "x", "[    1.234567] E tcp: x\n" },
		{ 99999000000000ull, LOG_LEVEL_WARN, NULL, "", "[99999.000000] W -: \n" },
		{ 5000, LOG_LEVEL_DEBUG, "m", "d", "[    0.000005] D m: d\n" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[LOG_LINE_MAX];
		size_t n = fmt_line(buf, sizeof buf, cases[i].now, cases[i].lvl, cases[i].mod, "%s",
				    cases[i].arg);
		assert_string_equal(buf, cases[i].want);
		assert_int_equal(n, strlen(cases[i].want));
	}
}

static void test_format_truncates_with_marker(void **state)
{
	(void)state;
	char buf[32];
	size_t n = fmt_line(buf, sizeof buf, 0, LOG_LEVEL_INFO, "mod", "%s",
			    "a very long message that cannot fit");
	assert_int_equal(n, sizeof buf - 1);
	assert_int_equal(strlen(buf), n);
	assert_int_equal(buf[n - 1], '\n');
	assert_int_equal(buf[n - 2], '~');
	char tiny[2];
	assert_int_equal(fmt_line(tiny, 1, 0, LOG_LEVEL_INFO, "m", "x"), 0);
}

static void test_levels_filter(void **state)
{
	(void)state;
	LOG_DEBUG("t", "not shown");
	assert_int_equal(cap_len, 0);
	LOG_INFO("t", "shown %d", 1);
	LOG_ERR("t", "shown %d", 2);
	assert_non_null(strstr(cap, "I t: shown 1\n"));
	assert_non_null(strstr(cap, "E t: shown 2\n"));
}

static void emit_from_one_site(int i)
{
	LOG_WARN("flood", "line %d", i);
}

static void test_rate_limit_per_site(void **state)
{
	(void)state;
	uint64_t sup0 = log_count_suppressed();
	for (int i = 0; i < 10; i++)
		emit_from_one_site(i);
	assert_non_null(strstr(cap, "line 2\n"));
	assert_null(strstr(cap, "line 3\n"));
	assert_int_equal(log_count_suppressed() - sup0, 7);
	/* another site is not limited by the first */
	LOG_WARN("other", "independent");
	assert_non_null(strstr(cap, "independent"));
	/* next window: the line comes out with the suppressed count */
	fake_now = 1500000000u;
	emit_from_one_site(42);
	assert_non_null(strstr(cap, "line 42\n    (7 similar lines suppressed)\n"));
	emit_from_one_site(43);
	assert_non_null(strstr(cap, "line 43\n"));
	assert_null(strstr(strstr(cap, "line 43"), "suppressed"));
}

static void test_raw_bypasses_limits(void **state)
{
	(void)state;
	for (int i = 0; i < 20; i++)
		log_rawf("r%d;", i);
	assert_non_null(strstr(cap, "r19;"));
}

static struct {
	unsigned n;
	enum log_level lvl;
	char mod[16], text[LOG_LINE_MAX], reason[16], identity[32];
} tapped;

static void cap_tap(enum log_level lvl, const char *mod, const struct log_fields *f, const char *text,
		    size_t len)
{
	tapped.n++;
	tapped.lvl = lvl;
	(void)snprintf(tapped.mod, sizeof tapped.mod, "%s", mod);
	(void)snprintf(tapped.text, sizeof tapped.text, "%.*s", (int)len, text);
	(void)snprintf(tapped.reason, sizeof tapped.reason, "%s", f && f->reason ? f->reason : "-");
	(void)snprintf(tapped.identity, sizeof tapped.identity, "%s", f && f->identity ? f->identity : "-");
}

static void emit_tapped_site(int i)
{
	LOG_INFO("tapped", "again %d", i);
}

static void test_tap_sees_text_and_fields(void **state)
{
	(void)state;
	memset(&tapped, 0, sizeof tapped);
	log_set_tap(cap_tap);
	LOG_WARN("mqtt", "refused %s", "dev-9");
	assert_int_equal(tapped.n, 1);
	assert_int_equal(tapped.lvl, LOG_LEVEL_WARN);
	assert_string_equal(tapped.mod, "mqtt");
	assert_string_equal(tapped.text, "refused dev-9"); /* no "[time] W mqtt: ", no newline */
	assert_string_equal(tapped.reason, "-");
	struct log_fields f = { .reason = "acl", .identity = "dev-\"9" };
	LOG_FIELDS(LOG_LEVEL_INFO, "mqtt", &f, "publish to %s denied", "x/y");
	assert_int_equal(tapped.n, 2);
	assert_string_equal(tapped.text, "publish to x/y denied");
	assert_string_equal(tapped.reason, "acl");
	assert_string_equal(tapped.identity, "dev-\"9");
	assert_non_null(strstr(cap, "I mqtt: publish to x/y denied\n")); /* the console unchanged */
	/* the level changed at run time: debug lines now pass, then no more */
	log_set_level(LOG_LEVEL_DEBUG);
	assert_int_equal(log_get_level(), LOG_LEVEL_DEBUG);
	LOG_DEBUG("mqtt", "now visible");
	assert_int_equal(tapped.n, 3);
	assert_non_null(strstr(cap, "D mqtt: now visible\n"));
	log_set_level(LOG_LEVEL_INFO);
	tapped.n = 2;
	/* below the level and over the site's burst: the tap sees nothing either */
	LOG_DEBUG("mqtt", "quiet");
	assert_int_equal(tapped.n, 2);
	for (int i = 0; i < 10; i++)
		emit_tapped_site(i);
	assert_int_equal(tapped.n, 2 + 3);
	/* a line truncated to the buffer reaches the tap truncated, marker included */
	char big[400];
	memset(big, 'z', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	LOG_ERR("m", "%s", big);
	assert_int_equal(tapped.n, 6);
	size_t tl = strlen(tapped.text);
	assert_true(tl > 100 && tl < LOG_LINE_MAX);
	assert_int_equal(tapped.text[tl - 1], '~');
	log_set_tap(NULL);
	LOG_WARN("mqtt", "untapped");
	assert_int_equal(tapped.n, 6);
}

static jmp_buf panic_jmp;
static int panic_code;

static void fake_stop(int code)
{
	panic_code = code;
	longjmp(panic_jmp, 1);
}

static void test_panic_message_and_code(void **state)
{
	(void)state;
	struct panic_ops ops = { fake_stop };
	panic_init(&ops);
	panic_reset_for_test();
	if (setjmp(panic_jmp) == 0)
		kpanic(0x42, "bad thing %d", 7);
	assert_int_equal(panic_code, 0x42);
	assert_non_null(strstr(cap, "*** PANIC: bad thing 7\n"));
	/* nested panic: no message, still stops */
	cap_len = 0;
	cap[0] = '\0';
	if (setjmp(panic_jmp) == 0)
		kpanic(0x43, "second");
	assert_int_equal(panic_code, 0x43);
	assert_null(strstr(cap, "second"));
	assert_non_null(strstr(cap, "nested panic"));
	panic_reset_for_test();
	if (setjmp(panic_jmp) == 0)
		ASSERT(1 + 1 == 3);
	assert_int_equal(panic_code, PANIC_CODE_ASSERT);
	assert_non_null(strstr(cap, "assertion failed: 1 + 1 == 3"));
	panic_reset_for_test();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_format_line, setup),
		cmocka_unit_test_setup(test_format_truncates_with_marker, setup),
		cmocka_unit_test_setup(test_levels_filter, setup),
		cmocka_unit_test_setup(test_rate_limit_per_site, setup),
		cmocka_unit_test_setup(test_raw_bypasses_limits, setup),
		cmocka_unit_test_setup(test_tap_sees_text_and_fields, setup),
		cmocka_unit_test_setup(test_panic_message_and_code, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
