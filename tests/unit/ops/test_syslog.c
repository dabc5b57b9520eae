/* SPDX-License-Identifier: MIT
 * ops/syslog: exact RFC 5424 lines (with and without structured data, unknown clock,
 * leap days, year ends, milliseconds), every SD escape, hostile certificate identities,
 * header sanitising and truncation, every cap from 0 past the full length against a
 * canary, the severity map and the name check. Each output is also read back by an
 * independent parser written here from the RFC's ABNF, not from the formatter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/syslog.h"

#define CANARY 0xa5
#define NS(s, ms) ((uint64_t)(s) * 1000000000u + (uint64_t)(ms) * 1000000u)

/* Format m with exactly cap bytes of room inside a larger buffer whose tail is a canary;
 * the result is copied NUL-terminated into out (out_cap > cap). */
static size_t run(const struct ops_syslog_msg *m, size_t cap, char *out, size_t out_cap)
{
	unsigned char *buf = malloc(cap + 32);
	assert_non_null(buf);
	memset(buf, CANARY, cap + 32);
	size_t n = ops_syslog_format((char *)buf, cap, m);
	assert_true(n <= cap);
	for (size_t i = cap; i < cap + 32; i++)
		assert_int_equal(buf[i], CANARY);
	assert_true(n < out_cap);
	memcpy(out, buf, n);
	out[n] = '\0';
	free(buf);
	return n;
}

/* ---- an independent RFC 5424 reader (section 6 ABNF) ---------------------------- */

struct parsed {
	unsigned pri;
	char ts[40], host[300], app[60], procid[140], msgid[40];
	int n_sd;
	char sd_id[40];
	bool has_identity, has_reason, has_peer;
	char identity[400], reason[400], peer[400];
	bool has_msg;
	char msg[4096];
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* A header token of 1..max PRINTUSASCII bytes followed by SP. */
static bool token(const char **p, const char *end, char *out, size_t max)
{
	size_t n = 0;
	while (*p < end && **p != ' ') {
		unsigned char c = (unsigned char)**p;
		if (c < 33 || c > 126 || n == max)
			return false;
		out[n++] = (char)c;
		(*p)++;
	}
	out[n] = '\0';
	if (n == 0 || *p == end)
		return false;
	(*p)++; /* SP */
	return true;
}

/* "-" or FULL-DATE "T" HH:MM:SS.mmm "Z" (we always send milliseconds). */
static bool ts_ok(const char *t)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	if (strcmp(t, "-") == 0)
		return true;
	if (strlen(t) != sizeof pat - 1)
		return false;
	for (size_t i = 0; i < sizeof pat - 1; i++)
		if (pat[i] == 'd' ? !is_digit(t[i]) : t[i] != pat[i])
			return false;
	int mo = atoi(t + 5), d = atoi(t + 8), h = atoi(t + 11), mi = atoi(t + 14), s = atoi(t + 17);
	return mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h <= 23 && mi <= 59 && s <= 60;
}

/* PARAM-VALUE up to the closing '"': '\' before '"' '\' ']' is an escape; a bare ']'
 * or '"' is not allowed inside (we are stricter than the RFC for ']'). */
static bool param_value(const char **p, const char *end, char *out, size_t max)
{
	size_t n = 0;
	while (*p < end && **p != '"') {
		char c = **p;
		if (c == ']')
			return false;
		if (c == '\\' && *p + 1 < end && ((*p)[1] == '"' || (*p)[1] == '\\' || (*p)[1] == ']')) {
			(*p)++;
			c = **p;
		}
		if (n + 1 >= max)
			return false;
		out[n++] = c;
		(*p)++;
	}
	out[n] = '\0';
	if (*p == end)
		return false;
	(*p)++;
	return true;
}

static bool sd_name_char(char c)
{
	return c >= 33 && c <= 126 && c != '=' && c != ']' && c != '"';
}

static bool parse(const char *b, size_t len, struct parsed *r)
{
	const char *p = b, *end = b + len;
	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)b[i] < 32 || (unsigned char)b[i] > 126)
			return false; /* we promise plain printable ASCII */
	if (p == end || *p++ != '<')
		return false;
	unsigned v = 0, nd = 0;
	while (p < end && is_digit(*p) && nd < 3) {
		v = v * 10 + (unsigned)(*p++ - '0');
		nd++;
	}
	if (nd == 0 || (nd > 1 && b[1] == '0') || v > 191 || p == end || *p++ != '>')
		return false;
	r->pri = v;
	if (end - p < 2 || p[0] != '1' || p[1] != ' ')
		return false;
	p += 2;
	if (!token(&p, end, r->ts, sizeof r->ts - 1) || !ts_ok(r->ts) ||
	    !token(&p, end, r->host, 255) || !token(&p, end, r->app, 48) ||
	    !token(&p, end, r->procid, 128) || !token(&p, end, r->msgid, 32))
		return false;
	if (p < end && *p == '-') {
		p++;
	} else {
		while (p < end && *p == '[') {
			char name[40];
			size_t n = 0;
			p++;
			while (p < end && sd_name_char(*p) && n < 32)
				name[n++] = *p++;
			name[n] = '\0';
			if (n == 0)
				return false;
			if (r->n_sd++ == 0)
				strcpy(r->sd_id, name);
			while (p < end && *p == ' ') {
				char pname[40];
				size_t k = 0;
				p++;
				while (p < end && sd_name_char(*p) && k < 32)
					pname[k++] = *p++;
				pname[k] = '\0';
				if (k == 0 || end - p < 2 || p[0] != '=' || p[1] != '"')
					return false;
				p += 2;
				if (strcmp(pname, "identity") == 0 && !r->has_identity) {
					r->has_identity = true;
					if (!param_value(&p, end, r->identity, sizeof r->identity))
						return false;
				} else if (strcmp(pname, "reason") == 0 && !r->has_reason) {
					r->has_reason = true;
					if (!param_value(&p, end, r->reason, sizeof r->reason))
						return false;
				} else if (strcmp(pname, "peer") == 0 && !r->has_peer) {
					r->has_peer = true;
					if (!param_value(&p, end, r->peer, sizeof r->peer))
						return false;
				} else {
					char scratch[400];
					if (!param_value(&p, end, scratch, sizeof scratch))
						return false;
				}
			}
			if (p == end || *p++ != ']')
				return false;
		}
		if (r->n_sd == 0)
			return false;
	}
	if (p == end)
		return true;
	if (*p++ != ' ')
		return false;
	r->has_msg = true;
	if ((size_t)(end - p) >= sizeof r->msg)
		return false;
	memcpy(r->msg, p, (size_t)(end - p));
	return true;
}

/* ---- exact lines ------------------------------------------------------------------ */

static struct ops_syslog_msg base(void)
{
	struct ops_syslog_msg m;
	memset(&m, 0, sizeof m);
	m.facility = 16; /* local0 */
	m.severity = 6;
	m.unix_ns = UINT64_C(1796205934229999999); /* 2026-12-02T10:05:34.229999999Z */
	m.hostname = "broker1";
	m.app = "urmqtt";
	m.procid = 3;
	m.msgid = "mqtt";
	m.text = "client connected";
	m.text_len = strlen(m.text);
	return m;
}

static void expect(const struct ops_syslog_msg *m, const char *want)
{
	char out[4096];
	size_t n = run(m, 2048, out, sizeof out);
	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));
	struct parsed r;
	assert_true(parse(out, n, &r));
}

static void test_exact_lines(void **state)
{
	(void)state;
	struct ops_syslog_msg m = base();
	expect(&m, "<134>1 2026-12-02T10:05:34.229Z broker1 urmqtt 3 mqtt - client connected");

	m.facility = 4; /* auth */
	m.severity = ops_syslog_severity(1);
	m.procid = 0;
	m.msgid = "tls";
	m.sd_identity = "CN=dev\"1]";
	m.sd_reason = "expired";
	m.text = "refused";
	m.text_len = 7;
	expect(&m, "<36>1 2026-12-02T10:05:34.229Z broker1 urmqtt 0 tls "
		   "[refusal@32473 identity=\"CN=dev\\\"1\\]\" reason=\"expired\"] refused");

	m.sd_identity = NULL; /* each parameter only when given */
	expect(&m, "<36>1 2026-12-02T10:05:34.229Z broker1 urmqtt 0 tls "
		   "[refusal@32473 reason=\"expired\"] refused");
	m.sd_identity = "dev";
	m.sd_reason = NULL;
	expect(&m, "<36>1 2026-12-02T10:05:34.229Z broker1 urmqtt 0 tls "
		   "[refusal@32473 identity=\"dev\"] refused");
	m.sd_identity = NULL;
	m.sd_peer = "10.0.2.2";
	expect(&m, "<36>1 2026-12-02T10:05:34.229Z broker1 urmqtt 0 tls "
		   "[refusal@32473 peer=\"10.0.2.2\"] refused");
	m.sd_identity = "dev";
	m.sd_reason = "perm";
	expect(&m, "<36>1 2026-12-02T10:05:34.229Z broker1 urmqtt 0 tls "
		   "[refusal@32473 identity=\"dev\" reason=\"perm\" peer=\"10.0.2.2\"] refused");
	m.sd_peer = NULL;

	/* unknown clock, no msgid, core 4294967295, empty body: no trailing SP */
	m = base();
	m.unix_ns = 0;
	m.msgid = NULL;
	m.procid = UINT32_MAX;
	m.text_len = 0;
	expect(&m, "<134>1 - broker1 urmqtt 4294967295 - -");
	m.text = NULL;
	m.text_len = 5;
	expect(&m, "<134>1 - broker1 urmqtt 4294967295 - -");

	/* PRI extremes and defensive clamps */
	m = base();
	m.facility = 0;
	m.severity = 0;
	expect(&m, "<0>1 2026-12-02T10:05:34.229Z broker1 urmqtt 3 mqtt - client connected");
	m.facility = 200;
	m.severity = 9;
	expect(&m, "<191>1 2026-12-02T10:05:34.229Z broker1 urmqtt 3 mqtt - client connected");
}

static void test_timestamps(void **state)
{
	(void)state;
	static const struct {
		uint64_t ns;
		const char *ts;
	} t[] = {
		{ 1, "1970-01-01T00:00:00.000Z" },
		{ NS(1709251199, 999) + 999999, "2024-02-29T23:59:59.999Z" }, /* leap day */
		{ NS(1709251200, 0), "2024-03-01T00:00:00.000Z" },
		{ NS(951825600, 1), "2000-02-29T12:00:00.001Z" },            /* 400-year leap */
		{ NS(4107542400, 0), "2100-03-01T00:00:00.000Z" },           /* 2100 is not leap */
		{ NS(1767225599, 0), "2025-12-31T23:59:59.000Z" },           /* end of year */
		{ NS(1767225600, 0), "2026-01-01T00:00:00.000Z" },
		{ NS(1796205934, 229), "2026-12-02T10:05:34.229Z" },
		{ NS(1796205934, 10), "2026-12-02T10:05:34.010Z" },
		{ UINT64_MAX, "2554-07-21T23:34:33.709Z" },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct ops_syslog_msg m = base();
		char want[200];
		m.unix_ns = t[i].ns;
		snprintf(want, sizeof want, "<134>1 %s broker1 urmqtt 3 mqtt - client connected", t[i].ts);
		expect(&m, want);
	}

	/* against libc's gmtime over a spread of days through 2554 */
	uint64_t x = 88172645463325252u;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t ns = x % UINT64_MAX + 1;
		time_t s = (time_t)(ns / 1000000000u);
		struct tm tm;
		char want[64], out[512];
		assert_non_null(gmtime_r(&s, &tm));
		size_t k = strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(want + k, sizeof want - k, ".%03uZ", (unsigned)(ns / 1000000u % 1000u));
		struct ops_syslog_msg m = base();
		m.unix_ns = ns;
		run(&m, 512, out, sizeof out);
		assert_memory_equal(out + 7, want, 24);
	}
}

/* ---- structured data ---------------------------------------------------------------- */

static void test_sd_escapes(void **state)
{
	(void)state;
	static const struct {
		const char *in, *wire;
	} t[] = {
		{ "a\"b", "a\\\"b" },
		{ "a\\b", "a\\\\b" },
		{ "a]b", "a\\]b" },
		{ "[x]", "[x\\]" }, /* '[' needs no escape */
		{ "\\\"]", "\\\\\\\"\\]" },
		{ "", "" },
		{ "plain text = ok", "plain text = ok" },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct ops_syslog_msg m = base();
		char want[300];
		m.sd_identity = t[i].in;
		m.sd_reason = t[i].in;
		snprintf(want, sizeof want,
			 "<134>1 2026-12-02T10:05:34.229Z broker1 urmqtt 3 mqtt "
			 "[refusal@32473 identity=\"%s\" reason=\"%s\"] client connected",
			 t[i].wire, t[i].wire);
		expect(&m, want);
		char out[1024];
		struct parsed r;
		size_t n = run(&m, 1024, out, sizeof out);
		assert_true(parse(out, n, &r));
		assert_string_equal(r.identity, t[i].in);
		assert_string_equal(r.reason, t[i].in);
	}
}

/* What the reader must get back: bytes outside 32..126 as '?'. */
static void printable(char *dst, const char *src)
{
	for (; *src; src++)
		*dst++ = (unsigned char)*src >= 32 && (unsigned char)*src <= 126 ? *src : '?';
	*dst = '\0';
}

static void test_hostile_identity(void **state)
{
	(void)state;
	static const char *const hostile[] = {
		"\"] [evil@1 admin=\"yes",
		"a\\\"] - injected",
		"line1\nline2\r\n<0>1 - fake - - - - forged",
		"\xff\xfe\xc3\xa9 caf\xc3\xa9 \x80\xbf",
		"]]]]]]",
		"\\",
		"\\\\\"",
		"esc\x1b[31mred\x7f\x01\x09tab",
		"\"",
	};
	for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		struct ops_syslog_msg m = base();
		char out[1024], want[400];
		struct parsed r;
		m.sd_identity = hostile[i];
		m.sd_reason = "bad-cert";
		m.text = hostile[i]; /* the body may carry it too */
		m.text_len = strlen(hostile[i]);
		size_t n = run(&m, 1024, out, sizeof out);
		assert_true(n > 0);
		assert_true(parse(out, n, &r));
		assert_int_equal(r.n_sd, 1);
		assert_string_equal(r.sd_id, "refusal@32473");
		printable(want, hostile[i]);
		assert_string_equal(r.identity, want);
		assert_string_equal(r.reason, "bad-cert");
		assert_true(r.has_msg);
		assert_string_equal(r.msg, want);
		assert_string_equal(r.msgid, "mqtt");
		assert_null(memchr(out, '\n', n));
	}

	/* one exact line for the injection attempt */
	struct ops_syslog_msg m = base();
	m.sd_identity = "\"] [evil@1 admin=\"yes\n";
	m.text = "x";
	m.text_len = 1;
	expect(&m, "<134>1 2026-12-02T10:05:34.229Z broker1 urmqtt 3 mqtt "
		   "[refusal@32473 identity=\"\\\"\\] [evil@1 admin=\\\"yes?\"] x");
}

static void test_sd_value_cut(void **state)
{
	(void)state;
	char v[300], out[2048];
	struct parsed r;
	struct ops_syslog_msg m = base();
	m.sd_identity = v;

	memset(v, 'a', OPS_SYSLOG_SD_VALUE_MAX);
	v[OPS_SYSLOG_SD_VALUE_MAX] = '\0'; /* exactly the bound: kept whole */
	size_t n = run(&m, sizeof out - 1, out, sizeof out);
	assert_true(parse(out, n, &r));
	assert_string_equal(r.identity, v);

	v[OPS_SYSLOG_SD_VALUE_MAX] = 'a';
	v[OPS_SYSLOG_SD_VALUE_MAX + 1] = '\0'; /* one over: 127 bytes and '~' */
	n = run(&m, sizeof out - 1, out, sizeof out);
	assert_true(parse(out, n, &r));
	assert_int_equal(strlen(r.identity), OPS_SYSLOG_SD_VALUE_MAX);
	assert_int_equal(r.identity[OPS_SYSLOG_SD_VALUE_MAX - 1], '~');
	assert_memory_equal(r.identity, v, OPS_SYSLOG_SD_VALUE_MAX - 1);

	/* all escapes and cut: an escape pair is never split */
	memset(v, '"', 299);
	v[299] = '\0';
	m.sd_reason = v;
	n = run(&m, sizeof out - 1, out, sizeof out);
	assert_true(parse(out, n, &r));
	assert_int_equal(strlen(r.identity), OPS_SYSLOG_SD_VALUE_MAX);
	assert_int_equal(strspn(r.identity, "\""), OPS_SYSLOG_SD_VALUE_MAX - 1);
	assert_string_equal(r.identity, r.reason);

	/* the worst header plus SD (all three values cut, every byte escaped) still fits in
	 * OPS_SYSLOG_HEAD_MAX */
	m.sd_peer = v;
	char host[300], app[60], id[40];
	memset(host, ']', sizeof host - 1);
	host[sizeof host - 1] = '\0';
	memset(app, 'a', sizeof app - 1);
	app[sizeof app - 1] = '\0';
	memset(id, 'm', sizeof id - 1);
	id[sizeof id - 1] = '\0';
	m.hostname = host;
	m.app = app;
	m.msgid = id;
	m.procid = UINT32_MAX;
	m.facility = 23;
	m.severity = 7;
	m.text_len = 0;
	n = run(&m, OPS_SYSLOG_HEAD_MAX, out, sizeof out);
	assert_true(n > 0);
	assert_true(parse(out, n, &r));
	assert_string_equal(r.peer, r.reason);
}

/* ---- header fields ------------------------------------------------------------------ */

static void test_header_sanitised(void **state)
{
	(void)state;
	struct ops_syslog_msg m = base();
	m.hostname = "my host\n";
	m.app = "ur\xc3\xa9mqtt";
	m.msgid = "mq tt\x7f";
	expect(&m, "<134>1 2026-12-02T10:05:34.229Z my_host_ ur__mqtt 3 mq_tt_ - client connected");

	m = base();
	m.hostname = "";
	m.app = NULL;
	m.msgid = "";
	expect(&m, "<134>1 2026-12-02T10:05:34.229Z - - 3 - - client connected");

	/* truncated to RFC 5424's lengths */
	char host[400], app[100], id[100], want[1024];
	memset(host, 'h', sizeof host - 1);
	host[sizeof host - 1] = '\0';
	memset(app, 'a', sizeof app - 1);
	app[sizeof app - 1] = '\0';
	memset(id, 'm', sizeof id - 1);
	id[sizeof id - 1] = '\0';
	m = base();
	m.hostname = host;
	m.app = app;
	m.msgid = id;
	snprintf(want, sizeof want,
		 "<134>1 2026-12-02T10:05:34.229Z %.255s %.48s 3 %.32s - client connected", host,
		 app, id);
	expect(&m, want);
	char out[1024];
	struct parsed r;
	size_t n = run(&m, 1024, out, sizeof out);
	assert_true(parse(out, n, &r));
	assert_int_equal(strlen(r.host), OPS_SYSLOG_HOSTNAME_MAX);
	assert_int_equal(strlen(r.app), OPS_SYSLOG_APP_MAX);
	assert_int_equal(strlen(r.msgid), OPS_SYSLOG_MSGID_MAX);
}

static void test_body_sanitised(void **state)
{
	(void)state;
	struct ops_syslog_msg m = base();
	m.text = "a\nb\tc\x80" "d\0e";
	m.text_len = 9; /* a NUL inside the length is a byte like any other */
	expect(&m, "<134>1 2026-12-02T10:05:34.229Z broker1 urmqtt 3 mqtt - a?b?c?d?e");
}

/* ---- caps --------------------------------------------------------------------------- */

static void test_every_cap(void **state)
{
	(void)state;
	char body[700];
	for (size_t i = 0; i < sizeof body; i++)
		body[i] = (char)(i % 7 == 3 ? '\n' : 'A' + i % 26);
	struct ops_syslog_msg m = base();
	m.sd_identity = "CN=x\"]";
	m.sd_reason = "unknown-ca";
	m.text = body;
	m.text_len = sizeof body;

	char full[2048], head[2048], out[2048];
	size_t n_full = run(&m, sizeof full - 1, full, sizeof full);
	struct ops_syslog_msg h = m;
	h.text_len = 0;
	size_t n_head = run(&h, sizeof head - 1, head, sizeof head);
	assert_true(n_head > 0 && n_full == n_head + 1 + sizeof body);

	for (size_t cap = 0; cap <= n_full + 3; cap++) {
		size_t n = run(&m, cap, out, sizeof out);
		struct parsed r;
		if (cap < n_head) {
			assert_int_equal(n, 0);
			continue;
		}
		assert_true(parse(out, n, &r));
		if (cap < n_head + 2) { /* no room for " ~": header only */
			assert_int_equal(n, n_head);
			assert_string_equal(out, head);
			assert_false(r.has_msg);
		} else if (cap < n_full) { /* cut: fills cap, ends in '~' */
			assert_int_equal(n, cap);
			assert_memory_equal(out, full, cap - 1);
			assert_int_equal(out[cap - 1], '~');
			assert_true(r.has_msg);
		} else {
			assert_int_equal(n, n_full);
			assert_string_equal(out, full);
		}
	}

	/* the receivers' minimum (RFC 5426 3.2) */
	size_t n = run(&m, OPS_SYSLOG_UDP_MIN, out, sizeof out);
	assert_int_equal(n, OPS_SYSLOG_UDP_MIN);
	assert_int_equal(out[n - 1], '~');
}

/* ---- helpers ------------------------------------------------------------------------ */

static void test_severity(void **state)
{
	(void)state;
	assert_int_equal(ops_syslog_severity(0), 3); /* ERR -> Error */
	assert_int_equal(ops_syslog_severity(1), 4); /* WARN -> Warning */
	assert_int_equal(ops_syslog_severity(2), 6); /* INFO -> Informational */
	assert_int_equal(ops_syslog_severity(3), 7); /* DEBUG -> Debug */
	assert_int_equal(ops_syslog_severity(-1), 3);
	assert_int_equal(ops_syslog_severity(INT_MIN), 3);
	assert_int_equal(ops_syslog_severity(4), 7);
	assert_int_equal(ops_syslog_severity(INT_MAX), 7);
}

static void test_name_ok(void **state)
{
	(void)state;
	char s[300];
	assert_true(ops_syslog_name_ok("broker1", OPS_SYSLOG_HOSTNAME_MAX));
	assert_true(ops_syslog_name_ok("urmqtt", OPS_SYSLOG_APP_MAX));
	assert_true(ops_syslog_name_ok("-", 1));
	assert_true(ops_syslog_name_ok("!~[]\"", 5));
	assert_false(ops_syslog_name_ok("", 255));
	assert_false(ops_syslog_name_ok(NULL, 255));
	assert_false(ops_syslog_name_ok("a", 0));
	assert_false(ops_syslog_name_ok("a b", 255));
	assert_false(ops_syslog_name_ok("a\n", 255));
	assert_false(ops_syslog_name_ok("a\x7f", 255));
	assert_false(ops_syslog_name_ok("caf\xc3\xa9", 255));
	assert_false(ops_syslog_name_ok("a", SIZE_MAX));
	memset(s, 'h', sizeof s);
	s[OPS_SYSLOG_HOSTNAME_MAX] = '\0';
	assert_true(ops_syslog_name_ok(s, OPS_SYSLOG_HOSTNAME_MAX));
	s[OPS_SYSLOG_HOSTNAME_MAX] = 'h';
	s[OPS_SYSLOG_HOSTNAME_MAX + 1] = '\0';
	assert_false(ops_syslog_name_ok(s, OPS_SYSLOG_HOSTNAME_MAX));
	s[OPS_SYSLOG_APP_MAX] = '\0';
	assert_true(ops_syslog_name_ok(s, OPS_SYSLOG_APP_MAX));
	s[OPS_SYSLOG_APP_MAX] = 'h';
	assert_false(ops_syslog_name_ok(s, OPS_SYSLOG_APP_MAX));
}

/* The reader itself must refuse what the RFC refuses, or it proves nothing. */
static void test_reader_rejects(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"<134>1 - h a 1 m - x\n",                     /* control byte */
		"<192>1 - h a 1 m -",                         /* PRI > 191 */
		"<01>1 - h a 1 m -",                          /* leading zero */
		"<134>2 - h a 1 m -",                         /* version */
		"<134>1 2026-13-02T10:05:34.229Z h a 1 m -", /* month */
		"<134>1 - h a 1 m [x a=\"b]\"]",              /* bare ']' in a value */
		"<134>1 - h a 1 m [x a=\"b\"",                /* unclosed element */
		"<134>1 - h a 1 m [x a=b]",                   /* unquoted value */
		"<134>1 - h a 1 m x",                         /* SD neither '-' nor '[' */
		"<134>1 - h a 1 mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm -", /* MSGID of 33 */
	};
	struct parsed r;
	static const char good[] = "<134>1 - h a 1 m [x a=\"b\\]\" reason=\"\\\\\"][y@1] z";
	assert_true(parse(good, strlen(good), &r));
	assert_int_equal(r.n_sd, 2);
	assert_string_equal(r.reason, "\\");
	assert_string_equal(r.msg, "z");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_false(parse(bad[i], strlen(bad[i]), &r));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_lines),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_sd_escapes),
		cmocka_unit_test(test_hostile_identity),
		cmocka_unit_test(test_sd_value_cut),
		cmocka_unit_test(test_header_sanitised),
		cmocka_unit_test(test_body_sanitised),
		cmocka_unit_test(test_every_cap),
		cmocka_unit_test(test_severity),
		cmocka_unit_test(test_name_ok),
		cmocka_unit_test(test_reader_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
