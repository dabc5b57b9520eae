/* SPDX-License-Identifier: MIT
 * ops/statsd: exact datagrams, name sanitising, the boundary where a line exactly fits
 * or is one byte too long (with a canary behind the budget), lines that can never fit,
 * counter deltas from totals across restarts and refusals, and the caller's loop filling
 * 508-byte datagrams from 200 metrics, re-parsed here: every datagram within budget and
 * greedily packed, every metric exactly once with its value; the per-core droppers' gauge
 * names (mqtt_dropper_metric) and text (mqtt_droppers_text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt/broker.h"
#include "ops/statsd.h"

#define CANARY 0x5a
#define SLACK 32

static void check_canary(const char *buf, size_t cap)
{
	for (size_t i = cap; i < cap + SLACK; i++)
		assert_int_equal((unsigned char)buf[i], CANARY);
}

/* buf[0..len) as a NUL-terminated string */
static const char *str(const struct ops_statsd *b)
{
	static char s[4096];
	assert_true(b->len < sizeof s);
	memcpy(s, b->buf, b->len);
	s[b->len] = '\0';
	return s;
}

static void test_exact_datagram(void **state)
{
	(void)state;
	char buf[256 + SLACK];
	struct ops_statsd b;
	memset(buf, CANARY, sizeof buf);
	ops_statsd_begin(&b, buf, 256, "urmqtt.broker1");
	assert_int_equal(b.len, 0);
	assert_int_equal(b.lines, 0);
	assert_true(ops_statsd_gauge(&b, "connections", 5));
	assert_true(ops_statsd_count(&b, "core1.publishes", 7));
	assert_true(ops_statsd_gauge(&b, "x", UINT64_MAX));
	assert_true(ops_statsd_count(&b, "zero", 0));
	assert_string_equal(str(&b), "urmqtt.broker1.connections:5|g\n"
				     "urmqtt.broker1.core1.publishes:7|c\n"
				     "urmqtt.broker1.x:18446744073709551615|g\n"
				     "urmqtt.broker1.zero:0|c");
	assert_int_equal(b.lines, 4);
	assert_int_equal(b.n_dropped, 0);
	check_canary(buf, 256);

	/* no prefix: no leading dot */
	ops_statsd_begin(&b, buf, 256, "");
	assert_true(ops_statsd_gauge(&b, "connections", 12));
	assert_true(ops_statsd_count(&b, "core0.bytes_in", 1234567890123u));
	assert_string_equal(str(&b), "connections:12|g\ncore0.bytes_in:1234567890123|c");
	ops_statsd_begin(&b, buf, 256, NULL);
	assert_true(ops_statsd_gauge(&b, "up", 1));
	assert_string_equal(str(&b), "up:1|g");

	/* no name: the prefix alone; neither: dropped */
	ops_statsd_begin(&b, buf, 256, "p");
	assert_true(ops_statsd_gauge(&b, "", 1));
	assert_true(ops_statsd_gauge(&b, NULL, 2));
	assert_string_equal(str(&b), "p:1|g\np:2|g");
	ops_statsd_begin(&b, buf, 256, "");
	assert_true(ops_statsd_gauge(&b, "", 1));
	assert_int_equal(b.len, 0);
	assert_int_equal(b.n_dropped, 1);
	check_canary(buf, 256);
}

static void test_sanitise(void **state)
{
	(void)state;
	char buf[256];
	struct ops_statsd b;
	ops_statsd_begin(&b, buf, sizeof buf, "ur mqtt:b1");
	assert_true(ops_statsd_count(&b, "core1.a:b|c@d\ne f/\xc3\xa9\t#", 1));
	assert_true(ops_statsd_gauge(&b, "AZaz09_.-", 2));
	assert_string_equal(str(&b), "ur_mqtt_b1.core1.a_b_c_d_e_f_____:1|c\n"
				     "ur_mqtt_b1.AZaz09_.-:2|g");
	/* the prefix is linked, not copied, and is never modified */
	const char *prefix = "bad|prefix";
	ops_statsd_begin(&b, buf, sizeof buf, prefix);
	assert_true(ops_statsd_gauge(&b, "g", 3));
	assert_string_equal(str(&b), "bad_prefix.g:3|g");
	assert_string_equal(prefix, "bad|prefix");
}

static void test_boundary(void **state)
{
	(void)state;
	char buf[64 + SLACK];
	struct ops_statsd b;

	/* "abc:1|g" is 7 bytes: a cap of 7 holds it exactly */
	memset(buf, CANARY, sizeof buf);
	ops_statsd_begin(&b, buf, 7, "");
	assert_true(ops_statsd_gauge(&b, "abc", 1));
	assert_int_equal(b.len, 7);
	assert_string_equal(str(&b), "abc:1|g");
	check_canary(buf, 7);
	/* full: the next line is refused and nothing changes */
	assert_false(ops_statsd_gauge(&b, "d", 1));
	assert_int_equal(b.len, 7);
	assert_int_equal(b.lines, 1);
	check_canary(buf, 7);

	/* one byte too long for the whole budget: dropped, counted, never retried */
	memset(buf, CANARY, sizeof buf);
	ops_statsd_begin(&b, buf, 6, "");
	assert_true(ops_statsd_gauge(&b, "abc", 1));
	assert_int_equal(b.len, 0);
	assert_int_equal(b.lines, 0);
	assert_int_equal(b.n_dropped, 1);
	check_canary(buf, 0);
	assert_true(ops_statsd_gauge(&b, "ab", 1)); /* a shorter line still fits */
	assert_string_equal(str(&b), "ab:1|g");
	assert_int_equal(b.n_dropped, 1);
	check_canary(buf, 6);

	/* a second line with its '\n': 7 + 1 + 7 = 15 fits exactly in 15 ... */
	memset(buf, CANARY, sizeof buf);
	ops_statsd_begin(&b, buf, 15, "");
	assert_true(ops_statsd_gauge(&b, "abc", 1));
	assert_true(ops_statsd_count(&b, "def", 2));
	assert_string_equal(str(&b), "abc:1|g\ndef:2|c");
	check_canary(buf, 15);
	/* ... and is refused in 14, leaving the datagram as it was */
	memset(buf, CANARY, sizeof buf);
	ops_statsd_begin(&b, buf, 14, "");
	assert_true(ops_statsd_gauge(&b, "abc", 1));
	assert_false(ops_statsd_count(&b, "def", 2));
	assert_int_equal(b.len, 7);
	assert_int_equal(b.lines, 1);
	assert_int_equal(b.n_dropped, 0);
	check_canary(buf, 7); /* not a byte of the refused line was written */
	/* the caller's retry in a new datagram */
	ops_statsd_begin(&b, buf, 14, "");
	assert_true(ops_statsd_count(&b, "def", 2));
	assert_string_equal(str(&b), "def:2|c");

	/* with a prefix: "p.abc:1|g" is 9 bytes */
	ops_statsd_begin(&b, buf, 9, "p");
	assert_true(ops_statsd_gauge(&b, "abc", 1));
	assert_int_equal(b.len, 9);
	ops_statsd_begin(&b, buf, 8, "p");
	assert_true(ops_statsd_gauge(&b, "abc", 1));
	assert_int_equal(b.len, 0);
	assert_int_equal(b.n_dropped, 1);

	/* a zero budget drops everything and writes nothing */
	memset(buf, CANARY, sizeof buf);
	ops_statsd_begin(&b, buf, 0, "");
	assert_true(ops_statsd_gauge(&b, "a", 1));
	assert_int_equal(b.n_dropped, 1);
	check_canary(buf, 0);
}

static void test_count_total(void **state)
{
	(void)state;
	char buf[256];
	struct ops_statsd b;
	uint64_t last = 0;
	ops_statsd_begin(&b, buf, sizeof buf, "");
	assert_true(ops_statsd_count_total(&b, "c", 10, &last));
	assert_int_equal(last, 10);
	assert_true(ops_statsd_count_total(&b, "c", 15, &last));
	assert_int_equal(last, 15);
	assert_true(ops_statsd_count_total(&b, "c", 15, &last)); /* no growth: 0 */
	assert_true(ops_statsd_count_total(&b, "c", 3, &last));  /* restart: 0 */
	assert_int_equal(last, 3);
	assert_true(ops_statsd_count_total(&b, "c", 7, &last));
	assert_int_equal(last, 7);
	last = 1;
	assert_true(ops_statsd_count_total(&b, "c", UINT64_MAX, &last));
	assert_int_equal(last, UINT64_MAX);
	assert_string_equal(str(&b), "c:10|c\nc:5|c\nc:0|c\nc:0|c\nc:4|c\nc:18446744073709551614|c");

	/* refused for room: *last stays, so the delta is sent whole on the retry */
	ops_statsd_begin(&b, buf, 12, "");
	last = 100;
	assert_true(ops_statsd_gauge(&b, "gauge", 1)); /* 9 bytes */
	assert_false(ops_statsd_count_total(&b, "c", 142, &last));
	assert_int_equal(last, 100);
	assert_int_equal(b.lines, 1);
	ops_statsd_begin(&b, buf, 12, "");
	assert_true(ops_statsd_count_total(&b, "c", 142, &last));
	assert_int_equal(last, 142);
	assert_string_equal(str(&b), "c:42|c");

	/* dropped for good (longer than any datagram): not appended, *last stays */
	ops_statsd_begin(&b, buf, 5, "");
	assert_true(ops_statsd_count_total(&b, "c", 200, &last));
	assert_int_equal(last, 142);
	assert_int_equal(b.n_dropped, 1);
	assert_int_equal(b.len, 0);
}

/* ---- the caller's loop ------------------------------------------------------------ */

#define N_METRICS 200
#define BUDGET 508 /* 576 - 60 (IPv4 with options) - 8 (UDP) */
#define MAX_DGRAMS 64

struct dgrams {
	char data[MAX_DGRAMS][BUDGET + SLACK];
	size_t len[MAX_DGRAMS];
	size_t n;
	uint32_t dropped;
};

static void metric_name(char *out, size_t cap, unsigned i)
{
	/* varied lengths; some with bytes the sanitiser must replace */
	if (i % 17 == 5)
		snprintf(out, cap, "core%u.odd:name|%u", i % 4, i);
	else
		snprintf(out, cap, "core%u.metric_%u%.*s", i % 4, i, (int)(i % 23), "_padding_padding_paddin");
}

static uint64_t metric_value(unsigned i)
{
	return i % 9 == 0 ? UINT64_MAX - i : (uint64_t)i * 1000003u;
}

static void send_dgram(struct dgrams *d, struct ops_statsd *b)
{
	assert_true(d->n < MAX_DGRAMS);
	assert_true(b->len > 0);
	assert_true(b->len <= BUDGET);
	check_canary(d->data[d->n], BUDGET);
	d->len[d->n] = b->len;
	d->dropped += b->n_dropped;
	d->n++;
}

static void test_many_datagrams(void **state)
{
	(void)state;
	static struct dgrams d;
	struct ops_statsd b;
	char name[96];
	const char *prefix = "urmqtt.broker1";

	memset(&d, 0, sizeof d);
	memset(d.data, CANARY, sizeof d.data);
	ops_statsd_begin(&b, d.data[0], BUDGET, prefix);
	for (unsigned i = 0; i < N_METRICS;) {
		metric_name(name, sizeof name, i);
		bool ok = i % 2 ? ops_statsd_count(&b, name, metric_value(i))
				: ops_statsd_gauge(&b, name, metric_value(i));
		if (ok) {
			i++;
			continue;
		}
		assert_true(b.lines > 0); /* refused only when another datagram helps */
		send_dgram(&d, &b);
		ops_statsd_begin(&b, d.data[d.n], BUDGET, prefix);
	}
	if (b.lines)
		send_dgram(&d, &b);
	assert_int_equal(d.dropped, 0);
	assert_true(d.n > 1);

	/* re-parse: name:value|type lines, each metric once */
	int seen[N_METRICS] = { 0 };
	size_t first_line_len[MAX_DGRAMS];
	for (size_t k = 0; k < d.n; k++) {
		char dg[BUDGET + 1];
		memcpy(dg, d.data[k], d.len[k]);
		dg[d.len[k]] = '\0';
		assert_int_not_equal(dg[d.len[k] - 1], '\n');
		first_line_len[k] = strcspn(dg, "\n");
		char *save = NULL;
		for (char *line = strtok_r(dg, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char *colon = strchr(line, ':'), *bar = strchr(line, '|');
			assert_non_null(colon);
			assert_non_null(bar);
			assert_true(colon < bar);
			assert_null(strchr(colon + 1, ':')); /* sanitised: one ':' and one '|' */
			assert_null(strchr(bar + 1, '|'));
			assert_int_equal(strlen(bar), 2);
			*colon = '\0';
			assert_int_equal(strncmp(line, "urmqtt.broker1.core", 19), 0);
			unsigned idx = N_METRICS;
			/* the metric's index: the digits after "metric_" or after "odd_name_" */
			const char *m = strstr(line, ".metric_");
			if (m)
				idx = (unsigned)strtoul(m + 8, NULL, 10);
			else if ((m = strstr(line, ".odd_name_")) != NULL)
				idx = (unsigned)strtoul(m + 10, NULL, 10);
			assert_true(idx < N_METRICS);
			char want[128], wname[96];
			metric_name(wname, sizeof wname, idx);
			for (char *c = wname; *c; c++)
				if (*c == ':' || *c == '|')
					*c = '_';
			snprintf(want, sizeof want, "urmqtt.broker1.%s", wname);
			assert_string_equal(line, want);
			char *end = NULL;
			uint64_t v = strtoull(colon + 1, &end, 10);
			assert_ptr_equal(end, bar);
			assert_true(v == metric_value(idx));
			assert_int_equal(bar[1], idx % 2 ? 'c' : 'g');
			seen[idx]++;
		}
	}
	for (unsigned i = 0; i < N_METRICS; i++)
		assert_int_equal(seen[i], 1);
	/* greedy: each datagram was sent only because the next line did not fit */
	for (size_t k = 0; k + 1 < d.n; k++)
		assert_true(d.len[k] + 1 + first_line_len[k + 1] > BUDGET);
}

/* With a budget too small for some lines, the loop still ends: those are dropped and
 * counted, everything else arrives once. */
static void test_loop_with_drops(void **state)
{
	(void)state;
	static char data[256][24 + SLACK];
	struct ops_statsd b;
	size_t n = 0, total_lines = 0;
	uint32_t dropped = 0;
	char name[32];
	memset(data, CANARY, sizeof data);
	ops_statsd_begin(&b, data[0], 24, "");
	for (unsigned i = 0; i < 100;) {
		snprintf(name, sizeof name, "m%0*u", (int)(i % 30), i); /* 1..30 chars */
		if (ops_statsd_gauge(&b, name, i)) {
			i++;
			continue;
		}
		assert_true(b.lines > 0);
		check_canary(data[n], 24);
		total_lines += b.lines;
		dropped += b.n_dropped;
		n++;
		assert_true(n < 256);
		ops_statsd_begin(&b, data[n], 24, "");
	}
	total_lines += b.lines;
	dropped += b.n_dropped;
	check_canary(data[n], 24);
	/* "m<i padded to w>:<i>|g" is longer than 24 when the name plus digits exceed 20 */
	unsigned want_dropped = 0;
	for (unsigned i = 0; i < 100; i++) {
		char line[48];
		snprintf(line, sizeof line, "m%0*u:%u|g", (int)(i % 30), i, i);
		want_dropped += strlen(line) > 24;
	}
	assert_true(want_dropped > 0);
	assert_int_equal(dropped, want_dropped);
	assert_int_equal(total_lines + dropped, 100);
}

/* The per-core droppers (ADR-075) as kernel/node/opsd.c sends them: for each of a core's
 * three biggest QoS 0 droppers one gauge per reason, named
 * core<N>.droppers.<device|service>.<id>.<links|fair|queue>; an identity's '.' and other
 * bytes statsd would split or retype on become '_' so it stays one level of the name, a
 * truncated one ends in '_', a name that cannot fit is refused (0), never cut. */
static void test_dropper_gauges(void **state)
{
	(void)state;
	struct mqtt_dropper d[3];
	memset(d, 0, sizeof d);
	d[0].kind = MQTT_ID_DEVICE;
	strcpy(d[0].id, "heavy-7");
	d[0].dropped[MQTT_DROP_LINKS] = 20;
	d[0].dropped[MQTT_DROP_FAIR] = 512;
	d[1].kind = MQTT_ID_SERVICE;
	strcpy(d[1].id, "ops.eu1:x?");
	d[1].dropped[MQTT_DROP_QUEUE] = 3;
	d[2].kind = MQTT_ID_DEVICE;
	strcpy(d[2].id, "gw-0123456789012345678901234567890");
	d[2].truncated = true;
	d[2].dropped[MQTT_DROP_LINKS] = 1;
	char buf[1472 + SLACK];
	memset(buf, CANARY, sizeof buf);
	struct ops_statsd b;
	ops_statsd_begin(&b, buf, 1472, "urmqtt.eu1");
	for (size_t i = 0; i < 3; i++)
		for (uint32_t r = 0; r < MQTT_DROP__COUNT; r++) {
			char name[128];
			int k = snprintf(name, sizeof name, "core%u.", 1u);
			assert_true(mqtt_dropper_metric(&d[i], (enum mqtt_drop_reason)r, name + k, sizeof name - (size_t)k) > 0);
			assert_true(ops_statsd_gauge(&b, name, d[i].dropped[r]));
		}
	assert_string_equal(str(&b), "urmqtt.eu1.core1.droppers.device.heavy-7.links:20|g\n"
				     "urmqtt.eu1.core1.droppers.device.heavy-7.fair:512|g\n"
				     "urmqtt.eu1.core1.droppers.device.heavy-7.queue:0|g\n"
				     "urmqtt.eu1.core1.droppers.service.ops_eu1_x_.links:0|g\n"
				     "urmqtt.eu1.core1.droppers.service.ops_eu1_x_.fair:0|g\n"
				     "urmqtt.eu1.core1.droppers.service.ops_eu1_x_.queue:3|g\n"
				     "urmqtt.eu1.core1.droppers.device.gw-0123456789012345678901234567890_.links:1|g\n"
				     "urmqtt.eu1.core1.droppers.device.gw-0123456789012345678901234567890_.fair:0|g\n"
				     "urmqtt.eu1.core1.droppers.device.gw-0123456789012345678901234567890_.queue:0|g");
	assert_int_equal(b.lines, 9);
	check_canary(buf, 1472);
	/* a name that does not fit is refused whole; an unknown reason too */
	char small[24];
	assert_int_equal(mqtt_dropper_metric(&d[0], MQTT_DROP_FAIR, small, sizeof small), 0);
	assert_int_equal(mqtt_dropper_metric(&d[0], MQTT_DROP__COUNT, buf, 128), 0);
	char exact[32];
	assert_int_equal(mqtt_dropper_metric(&d[0], MQTT_DROP_FAIR, exact, 28), 0);
	assert_int_equal(mqtt_dropper_metric(&d[0], MQTT_DROP_FAIR, exact, 29), 28);
	assert_string_equal(exact, "droppers.device.heavy-7.fair");
	/* the report line's and the console's text: whole entries only */
	char txt[256];
	size_t tn = mqtt_droppers_text(d, 3, txt, sizeof txt);
	assert_int_equal(tn, strlen(txt));
	assert_string_equal(txt, " heavy-7=20/512/0 svc:ops.eu1:x?=0/0/3 gw-0123456789012345678901234567890~=1/0/0");
	assert_int_equal(mqtt_droppers_text(d, 3, txt, 40), strlen(" heavy-7=20/512/0 svc:ops.eu1:x?=0/0/3"));
	assert_string_equal(txt, " heavy-7=20/512/0 svc:ops.eu1:x?=0/0/3");
	assert_int_equal(mqtt_droppers_text(d, 0, txt, sizeof txt), 0);
	assert_string_equal(txt, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_datagram),
		cmocka_unit_test(test_sanitise),
		cmocka_unit_test(test_boundary),
		cmocka_unit_test(test_count_total),
		cmocka_unit_test(test_many_datagrams),
		cmocka_unit_test(test_loop_with_drops),
		cmocka_unit_test(test_dropper_gauges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
