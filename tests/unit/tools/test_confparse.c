/* SPDX-License-Identifier: MIT
 * Unit tests for the configuration parser and schema (tools/config/conf.h): defaults,
 * every value type, unit suffixes, ranges, and every error kind with its exact line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "tools/config/conf.h"

static struct conf_doc doc;
static struct conf_err err;

static int parse(const char *text)
{
	return conf_parse(&doc, text, strlen(text), &err);
}

static size_t idx(const char *section, const char *name)
{
	int i = conf_key_find(section, strlen(section), name, strlen(name));
	if (i < 0)
		fail_msg("no key %s.%s", section, name);
	return (size_t)i;
}

static int64_t ival(const char *section, const char *name)
{
	return doc.vals[idx(section, name)].i;
}

static void expect_ok(const char *text)
{
	if (parse(text) != 0)
		fail_msg("unexpected error at line %u (%s): %s\n--- input:\n%s", (unsigned)err.line,
			 conf_errkind_name(err.kind), err.msg, text);
}

/* ---- the schema itself ------------------------------------------------------------ */

static void test_schema_is_consistent(void **state)
{
	(void)state;
	assert_true(conf_schema_len > 0 && conf_schema_len <= CONF_MAX_KEYS);
	for (size_t i = 0; i < conf_schema_len; i++) {
		const struct conf_key *k = &conf_schema[i];
		char want[160];
		size_t n = (size_t)snprintf(want, sizeof want, "CONF_%s_%s", k->section, k->name);
		for (size_t j = 0; j < n; j++)
			if (want[j] >= 'a' && want[j] <= 'z')
				want[j] = (char)(want[j] - 'a' + 'A');
		assert_string_equal(k->cname, want);
		assert_non_null(k->doc);
		assert_null(strchr(k->doc, '|')); /* Markdown table cell */
		assert_null(strstr(k->doc, "*/")); /* C comment in the header */
		assert_true(strlen(k->name) <= CONF_NAME_MAX_LEN);
		assert_int_equal(conf_key_find(k->section, strlen(k->section), k->name,
					       strlen(k->name)),
				 (int)i);
		/* A section's keys are contiguous (the generators emit per section). */
		for (size_t j = i + 2; j < conf_schema_len; j++)
			if (strcmp(conf_schema[j].section, k->section) == 0)
				assert_string_equal(conf_schema[j - 1].section, k->section);
		switch (k->type) {
		case CONF_T_INT:
			assert_true(k->min >= 0 && k->min <= k->def && k->def <= k->max);
			break;
		case CONF_T_ENUM: {
			size_t n_vals = 0;
			while (k->allowed[n_vals])
				n_vals++;
			assert_true(k->def >= 0 && (size_t)k->def < n_vals);
			break;
		}
		case CONF_T_STR:
		case CONF_T_IPV4:
			assert_non_null(k->def_str);
			break;
		case CONF_T_LIST:
			assert_non_null(k->def_list);
			break;
		default:
			break;
		}
		if (k->cmdline)
			assert_true(k->type == CONF_T_INT || k->type == CONF_T_BOOL ||
				    k->type == CONF_T_ENUM);
	}
	assert_int_equal(conf_key_find("tcp", 3, "nope", 4), -1);
	assert_int_equal(conf_key_find("tc", 2, "port", 4), -1);
	assert_int_equal(conf_key_find("tcp", 3, "por", 3), -1);
}

/* ---- good input --------------------------------------------------------------------- */

static void test_empty_file_gives_every_default(void **state)
{
	(void)state;
	expect_ok("");
	for (size_t i = 0; i < conf_schema_len; i++) {
		const struct conf_key *k = &conf_schema[i];
		assert_int_equal(doc.vals[i].line, 0);
		switch (k->type) {
		case CONF_T_INT:
		case CONF_T_BOOL:
		case CONF_T_ENUM:
			assert_int_equal(doc.vals[i].i, k->def);
			break;
		case CONF_T_STR:
			assert_string_equal(conf_doc_str(&doc, i), k->def_str);
			break;
		case CONF_T_IPV4:
			break;
		case CONF_T_LIST: {
			size_t n = 0;
			for (; k->def_list[n]; n++)
				assert_string_equal(conf_doc_list_item(&doc, i, n), k->def_list[n]);
			assert_int_equal(conf_doc_list_len(&doc, i), n);
			break;
		}
		}
	}
	assert_int_equal(ival("tcp", "port"), 8883);
	assert_int_equal(ival("storage", "batch_ms"), 5);
	assert_int_equal(ival("storage", "batch_ops"), 512);
	assert_int_equal(ival("dev", "certs_devices"), 10);
	assert_int_equal(ival("net", "static_netmask"), 0xffffff00);
	/* Blank lines, tabs and comments alone are an empty configuration too. */
	expect_ok("\n\n# only a comment\n \t\n  # indented comment\n");
}

static void test_every_type_parses(void **state)
{
	(void)state;
	expect_ok("# header comment\n"
		  "[core]\n"
		  "profile = \"dev\"   # trailing comment\n"
		  "\tlog_level=\"trace\"\n"
		  "cmdline_overrides = [\"core.heap_limit_mb\", \"core.log_level\"]\n"
		  "\n"
		  "[net]\n"
		  "dhcp = false\n"
		  "static_ip = \"192.168.1.20\"\n"
		  "static_netmask = \"255.255.254.0\"\n"
		  "static_gateway = \"192.168.0.1\"\n"
		  "[tls]\n"
		  "rsa_allowed = true\n"
		  "service_uri_prefix = \"urn:a\\\"b\\\\c:\"\n"
		  "identity_source = \"san_uri\"\n"
		  "[acl]\n"
		  "service_publish = []\n"
		  "service_subscribe = [   # comment inside a list\n"
		  "    \"a/+/b\",\n"
		  "\n"
		  "    # a comment line\n"
		  "    \"#\" ,\n"
		  "]\n"
		  "[tcp]\n"
		  "port = 1883\n");
	assert_int_equal(ival("core", "profile"), 0);
	assert_int_equal(ival("core", "log_level"), 4);
	assert_int_equal(conf_doc_list_len(&doc, idx("core", "cmdline_overrides")), 2);
	assert_string_equal(conf_doc_list_item(&doc, idx("core", "cmdline_overrides"), 1),
			    "core.log_level");
	assert_int_equal(ival("net", "dhcp"), 0);
	assert_int_equal(ival("net", "static_ip"), 0xc0a80114);
	assert_int_equal(ival("net", "static_netmask"), 0xfffffe00);
	assert_int_equal(ival("net", "static_gateway"), 0xc0a80001);
	assert_int_equal(ival("tls", "rsa_allowed"), 1);
	assert_string_equal(conf_doc_str(&doc, idx("tls", "service_uri_prefix")),
			    "urn:a\"b\\c:");
	assert_int_equal(ival("tls", "identity_source"), 1);
	assert_int_equal(conf_doc_list_len(&doc, idx("acl", "service_publish")), 0);
	assert_int_equal(conf_doc_list_len(&doc, idx("acl", "service_subscribe")), 2);
	assert_string_equal(conf_doc_list_item(&doc, idx("acl", "service_subscribe"), 0), "a/+/b");
	assert_string_equal(conf_doc_list_item(&doc, idx("acl", "service_subscribe"), 1), "#");
	assert_int_equal(ival("tcp", "port"), 1883);
	assert_int_equal(doc.vals[idx("tcp", "port")].line, 25);
	assert_int_equal(doc.vals[idx("acl", "service_subscribe")].line, 18);
	/* Keys not given keep their defaults next to given ones. */
	assert_int_equal(ival("tcp", "mss"), 1460);
}

static void test_crlf_and_no_final_newline(void **state)
{
	(void)state;
	expect_ok("[tcp]\r\nport = 1000\r\n# c\r\nmss = 1000");
	assert_int_equal(ival("tcp", "port"), 1000);
	assert_int_equal(ival("tcp", "mss"), 1000);
	/* UTF-8 is allowed in comments only. */
	expect_ok("# caf\xc3\xa9 \xe2\x9c\x93\n[tcp] # \xc3\xa9\nport = 5 # \xc3\xa9\n");
}

struct int_case {
	const char *section, *name, *value;
	int64_t want;                /* when kind == CONF_E_NONE */
	enum conf_errkind kind;
};

static const struct int_case int_cases[] = {
	/* sizes: k m g are x1024 and must land on a whole unit of the key */
	{ "core", "heap_limit_mb", "2g", 2048, CONF_E_NONE },
	{ "core", "heap_limit_mb", "32768k", 32, CONF_E_NONE },
	{ "core", "heap_limit_mb", "1000k", 0, CONF_E_RANGE },
	{ "core", "heap_limit_mb", "64m", 64, CONF_E_NONE },
	{ "core", "heap_limit_mb", "15", 0, CONF_E_RANGE },
	{ "core", "heap_limit_mb", "65537", 0, CONF_E_RANGE },
	{ "core", "heap_limit_mb", "5s", 0, CONF_E_TYPE },
	{ "core", "heap_limit_mb", "9223372036854775807g", 0, CONF_E_RANGE },
	{ "tls", "heap_low_watermark_kb", "8m", 8192, CONF_E_NONE },
	{ "tls", "heap_low_watermark_kb", "1k", 1, CONF_E_NONE },
	{ "mqtt", "max_packet_bytes", "64k", 65536, CONF_E_NONE },
	{ "mqtt", "rate_bytes_per_s", "1g", 1073741824, CONF_E_NONE },
	{ "mqtt", "rate_bytes_per_s", "2g", 0, CONF_E_RANGE },
	{ "tcp", "mss", "1k", 1024, CONF_E_NONE },
	{ "tcp", "mss", "1kb", 0, CONF_E_TYPE },
	{ "tcp", "mss", "1K", 0, CONF_E_MALFORMED },
	/* times: ms s m h */
	{ "tcp", "rto_min_ms", "2s", 2000, CONF_E_NONE },
	{ "tcp", "rto_min_ms", "250ms", 250, CONF_E_NONE },
	{ "tcp", "rto_max_ms", "1m", 60000, CONF_E_NONE },
	{ "tcp", "rto_max_ms", "2m", 0, CONF_E_RANGE },
	{ "net", "arp_expiry_s", "1h", 3600, CONF_E_NONE },
	{ "net", "arp_expiry_s", "2000ms", 0, CONF_E_RANGE }, /* 2 s < min 10 */
	{ "net", "arp_expiry_s", "20000ms", 20, CONF_E_NONE },
	{ "net", "arp_expiry_s", "1500ms", 0, CONF_E_RANGE },
	{ "net", "arp_expiry_s", "10k", 0, CONF_E_TYPE },
	{ "net", "arp_expiry_s", "10d", 0, CONF_E_TYPE },
	{ "storage", "batch_ms", "1s", 1000, CONF_E_NONE },
	{ "storage", "batch_ms", "0", 0, CONF_E_RANGE },
	{ "tcp", "delayed_ack_ms", "0", 0, CONF_E_NONE },
	/* counts take no suffix */
	{ "tcp", "port", "8k", 0, CONF_E_TYPE },
	{ "tcp", "port", "65535", 65535, CONF_E_NONE },
	{ "tcp", "port", "0008", 8, CONF_E_NONE },
	{ "tcp", "port", "65536", 0, CONF_E_RANGE },
	{ "tcp", "port", "0", 0, CONF_E_RANGE },
	{ "tcp", "port", "-1", 0, CONF_E_RANGE },
	{ "tcp", "port", "99999999999999999999999", 0, CONF_E_RANGE },
	{ "tcp", "port", "9223372036854775807", 0, CONF_E_RANGE },
	{ "tcp", "port", "-", 0, CONF_E_MALFORMED },
	{ "tcp", "port", "1.5", 0, CONF_E_MALFORMED },
	{ "tcp", "port", "0x10", 0, CONF_E_MALFORMED },
	{ "tcp", "port", "+5", 0, CONF_E_TYPE },
	{ "tcp", "port", "1e3", 0, CONF_E_MALFORMED },
	{ "tcp", "port", "12abcde", 0, CONF_E_MALFORMED },
	{ "tcp", "port", "true", 0, CONF_E_TYPE },
	{ "tcp", "port", "\"8883\"", 0, CONF_E_TYPE },
	{ "tcp", "port", "[1]", 0, CONF_E_TYPE },
	/* powers of two */
	{ "tcp", "table_slots", "262144", 262144, CONF_E_NONE },
	{ "tcp", "table_slots", "200000", 0, CONF_E_RANGE },
	{ "tcp", "table_slots", "8", 0, CONF_E_RANGE },
	/* booleans */
	{ "net", "dhcp", "true", 1, CONF_E_NONE },
	{ "net", "dhcp", "1", 0, CONF_E_TYPE },
	{ "net", "dhcp", "yes", 0, CONF_E_TYPE },
	{ "net", "dhcp", "truex", 0, CONF_E_TYPE },
	{ "net", "dhcp", "True", 0, CONF_E_TYPE },
	{ "net", "dhcp", "\"true\"", 0, CONF_E_TYPE },
	/* enums */
	{ "core", "profile", "\"prod\"", 1, CONF_E_NONE },
	{ "core", "profile", "\"test\"", 0, CONF_E_RANGE },
	{ "core", "profile", "\"Prod\"", 0, CONF_E_RANGE },
	{ "core", "profile", "prod", 0, CONF_E_TYPE },
	{ "mqtt", "offline_queue_policy", "\"refuse_newest\"", 1, CONF_E_NONE },
	{ "mqtt", "rate_policy", "\"disconnect\"", 1, CONF_E_NONE },
	{ "mqtt", "rate_policy", "\"\"", 0, CONF_E_RANGE },
	/* IPv4 */
	{ "net", "static_gateway", "\"10.0.0.1\"", 0x0a000001, CONF_E_NONE },
	{ "net", "static_gateway", "\"255.255.255.255\"", 0xffffffff, CONF_E_NONE },
	{ "net", "static_gateway", "\"1.2.3\"", 0, CONF_E_TYPE },
	{ "net", "static_gateway", "\"1.2.3.4.5\"", 0, CONF_E_TYPE },
	{ "net", "static_gateway", "\"1.2.3.256\"", 0, CONF_E_TYPE },
	{ "net", "static_gateway", "\"1.2.3.0001\"", 0, CONF_E_TYPE },
	{ "net", "static_gateway", "\"1..3.4\"", 0, CONF_E_TYPE },
	{ "net", "static_gateway", "\"1.2.3.4 \"", 0, CONF_E_TYPE },
	{ "net", "static_gateway", "\"\"", 0, CONF_E_TYPE },
	{ "net", "static_gateway", "10.0.0.1", 0, CONF_E_TYPE },
	{ "net", "static_netmask", "\"255.255.255.252\"", 0xfffffffc, CONF_E_NONE },
	{ "net", "static_netmask", "\"0.0.0.0\"", 0, CONF_E_NONE },
	{ "net", "static_netmask", "\"255.0.255.0\"", 0, CONF_E_RANGE },
	{ "net", "static_netmask", "\"255.255.255.253\"", 0, CONF_E_RANGE },
};

static void test_int_bool_enum_ipv4_values(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(int_cases); i++) {
		const struct int_case *c = &int_cases[i];
		char text[256];
		int rc;
		/* Constraints are kept satisfied so only the value under test can fail. */
		snprintf(text, sizeof text, "[%s]\n\n%s = %s\n", c->section, c->name, c->value);
		rc = parse(text);
		if (c->kind == CONF_E_NONE) {
			if (rc != 0)
				fail_msg("case %zu %s.%s = %s: unexpected %s: %s", i, c->section,
					 c->name, c->value, conf_errkind_name(err.kind), err.msg);
			if (ival(c->section, c->name) != c->want)
				fail_msg("case %zu %s.%s = %s: got %lld want %lld", i, c->section,
					 c->name, c->value, (long long)ival(c->section, c->name),
					 (long long)c->want);
			assert_int_equal(doc.vals[idx(c->section, c->name)].line, 3);
		} else {
			if (rc == 0 || err.kind != c->kind || err.line != 3)
				fail_msg("case %zu %s.%s = %s: want %s at line 3, got rc %d %s at "
					 "line %u: %s",
					 i, c->section, c->name, c->value, conf_errkind_name(c->kind),
					 rc, conf_errkind_name(err.kind), (unsigned)err.line, err.msg);
		}
	}
}

/* ---- errors: kind and exact line ---------------------------------------------------- */

struct err_case {
	const char *text;
	enum conf_errkind kind;
	uint32_t line;
	const char *msg_part; /* substring of the message, or NULL */
};

static const struct err_case err_cases[] = {
	{ "[tcp]\nport = 1\nfoo = 2\n", CONF_E_UNKNOWN_KEY, 3, "unknown key 'foo' in [tcp]" },
	{ "[tcp]\ndhcp = true\n", CONF_E_UNKNOWN_KEY, 2, "'dhcp'" },
	{ "# c\n\n[bogus]\n", CONF_E_UNKNOWN_SECTION, 3, "[bogus]" },
	{ "[tc]\n", CONF_E_UNKNOWN_SECTION, 1, NULL },
	{ "[tcp]\nport = \"8883\"\n", CONF_E_TYPE, 2, "tcp.port expects an integer" },
	{ "[acl]\nservice_publish = \"a\"\n", CONF_E_TYPE, 2, NULL },
	{ "[acl]\nservice_publish = [\"a\", 5]\n", CONF_E_TYPE, 2, NULL },
	{ "[tls]\nservice_uri_prefix = [\"a:\"]\n", CONF_E_TYPE, 2, NULL },
	{ "[tcp]\nport = 0\n", CONF_E_RANGE, 2, "out of range 1..65535" },
	{ "[tcp]\nrto_min_ms = 5\n", CONF_E_RANGE, 2, "out of range 10..60000 ms" },
	{ "[acl]\nservice_publish = [\"a/#/b\"]\n", CONF_E_RANGE, 2, "topic filter" },
	{ "[acl]\nservice_publish = [\"a+/b\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[acl]\nservice_publish = [\"a/b#\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[acl]\nservice_publish = [\"\"]\n", CONF_E_RANGE, 2, "empty" },
	{ "[storage]\ntelemetry_topics = [\"a/+\", \"+/#\", \"b//c\", \"ok\", \"x/\", \"/\", \"##\"]\n",
	  CONF_E_RANGE, 2, "\"##\"" },
	{ "[tls]\nservice_uri_prefix = \"nocolon\"\n", CONF_E_RANGE, 2, "URI prefix" },
	{ "[tls]\nservice_uri_prefix = \"a: b\"\n", CONF_E_RANGE, 2, NULL },
	{ "[tls]\nservice_uri_prefix = \"\"\n", CONF_E_RANGE, 2, NULL },
	{ "[ops]\nsyslog_collectors = [\"10.0.2.2:514\", \"10.0.2\"]\n", CONF_E_RANGE, 2, "not a unicast" },
	{ "[ops]\nstatsd_servers = [\"10.0.2.2:0\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[ops]\nstatsd_servers = [\"127.0.0.1\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[ops]\nstatsd_servers = [\"239.1.1.1:8125\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[ntp]\nservers = [\"8.8.8.8\"]\n", CONF_E_RANGE, 2, "not on a private network" },
	{ "[ntp]\nservers = [\"10.1.1.1:123\", \"172.32.0.1\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[ops]\nhostname = \"my broker\"\n", CONF_E_RANGE, 2, "printable ASCII" },
	{ "[ops]\nstatsd_prefix = \"a b\"\n", CONF_E_RANGE, 2, NULL },
	{ "[core]\ncmdline_overrides = [\"tcp.port\"]\n", CONF_E_RANGE, 2, "cannot be overridden" },
	{ "[core]\ncmdline_overrides = [\"core.profile\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[core]\ncmdline_overrides = [\"heap_limit_mb\"]\n", CONF_E_RANGE, 2, "names no key" },
	{ "[core]\ncmdline_overrides = [\"core.nope\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[tcp]\nport = 1\n\nport = 2\n", CONF_E_DUPLICATE, 4, "first set at line 2" },
	{ "[tcp]\n[net]\n[tcp]\n", CONF_E_DUPLICATE, 3, "first at line 1" },
	{ "port = 1\n", CONF_E_MALFORMED, 1, "before any [section]" },
	{ "[tcp\n", CONF_E_MALFORMED, 1, NULL },
	{ "[tcp] x\n", CONF_E_MALFORMED, 1, NULL },
	{ "[ tcp ]\n", CONF_E_MALFORMED, 1, NULL },
	{ "[]\n", CONF_E_MALFORMED, 1, NULL },
	{ "[tcp]\nport 1\n", CONF_E_MALFORMED, 2, "expected '='" },
	{ "[tcp]\nport = 1 2\n", CONF_E_MALFORMED, 2, "after the value" },
	{ "[tcp]\nport =\n", CONF_E_MALFORMED, 2, "missing value" },
	{ "[tcp]\nport = # c\n", CONF_E_MALFORMED, 2, "missing value" },
	{ "[tcp]\nPort = 1\n", CONF_E_MALFORMED, 2, NULL },
	{ "[tcp]\n= 1\n", CONF_E_MALFORMED, 2, NULL },
	{ "[tcp]\nport-x = 1\n", CONF_E_MALFORMED, 2, NULL },
	{ "[tls]\nservice_uri_prefix = \"a:bc\n", CONF_E_MALFORMED, 2, "unterminated string" },
	{ "[tls]\nservice_uri_prefix = \"a:b\\qc\"\n", CONF_E_MALFORMED, 2, "escape" },
	{ "[tls]\nservice_uri_prefix = \"a:\tb\"\n", CONF_E_MALFORMED, 2, "printable ASCII" },
	{ "[tls]\nservice_uri_prefix = \"a:\xc3\xa9\"\n", CONF_E_MALFORMED, 2, NULL },
	{ "[tls]\nservice_uri_prefix = \"a:\" \"b\"\n", CONF_E_MALFORMED, 2, NULL },
	{ "[tcp]\n\x01port = 1\n", CONF_E_MALFORMED, 2, NULL },
	{ "[tcp]\nport = 1\rmss = 600\n", CONF_E_MALFORMED, 2, "carriage return" },
	{ "[tcp]\nport = 1 # bell \a\n", CONF_E_MALFORMED, 2, "control character" },
	{ "[tcp]\nport = 1\n\xef\xbb\xbf\n", CONF_E_MALFORMED, 3, NULL },
	{ "[acl]\nservice_publish = [\n\"a/b\",\n", CONF_E_MALFORMED, 2, "unterminated list" },
	{ "[acl]\nservice_publish = [\"a/b\"\n", CONF_E_MALFORMED, 2, "unterminated list" },
	{ "[acl]\nservice_publish = [\"a\" \"b\"]\n", CONF_E_MALFORMED, 2, "expected ','" },
	{ "[acl]\nservice_publish = [,]\n", CONF_E_MALFORMED, 2, NULL },
	{ "[acl]\nservice_publish = [\"a\",,]\n", CONF_E_MALFORMED, 2, NULL },
	{ "[acl]\nservice_publish = [\"a\"] x\n", CONF_E_MALFORMED, 2, NULL },
	/* Lines keep counting through a multi-line list. */
	{ "[acl]\nservice_publish = [\n  \"a\",\n  # c\n  \"b\",\n]\nbogus = 1\n", CONF_E_UNKNOWN_KEY,
	  7, NULL },
	{ "[acl]\nservice_publish = [\n  \"a\",\n  \"b/#/c\",\n]\n", CONF_E_RANGE, 4, NULL },
	{ "[acl]\nservice_publish = [\n  \"a\" x\n]\n", CONF_E_MALFORMED, 3, NULL },
	/* Constraints: the later of the two keys' lines. */
	{ "[core]\nprofile = \"prod\"\ncmdline_overrides = [\"core.log_level\"]\n",
	  CONF_E_CONSTRAINT, 3, "prod" },
	{ "[core]\ncmdline_overrides = [\"core.log_level\"]\n\nprofile = \"prod\"\n",
	  CONF_E_CONSTRAINT, 4, NULL },
	{ "[net]\ndhcp = false\n", CONF_E_CONSTRAINT, 2, "static_ip" },
	{ "[tcp]\nrto_max_ms = 1s\nrto_min_ms = 2s\n", CONF_E_CONSTRAINT, 3, "rto_min_ms" },
	{ "[tcp]\nmax_connections = 100000\n", CONF_E_CONSTRAINT, 2, "table_slots" },
	{ "[tls]\nhandshakes_per_source = 100\n", CONF_E_CONSTRAINT, 2, "handshakes_per_source" },
	{ "[core]\nheap_limit_mb = 16\n[tls]\nheap_low_watermark_kb = 16m\n", CONF_E_CONSTRAINT, 4,
	  "heap_low_watermark_kb" },
	{ "[tls]\nticket_lifetime_s = 2d\n", CONF_E_TYPE, 2, NULL },
	{ "[tls]\nticket_lifetime_s = 48h\n", CONF_E_CONSTRAINT, 2, "ticket_lifetime_s" },
	{ "[ops]\nhealth_heap_low_pct = 20\nhealth_heap_ok_pct = 20\n", CONF_E_CONSTRAINT, 3, "health_heap_ok_pct" },
	{ "[ntp]\nservers = [\"10.0.0.1\"]\nmin_agree = 2\n", CONF_E_CONSTRAINT, 3, "min_agree" },
	{ "[mqtt]\n\nmax_sessions = 1000\n", CONF_E_CONSTRAINT, 3, "max_sessions" },
	/* [fleet] (mqtt/fleet.c's parser): members name=host:port, self one of them */
	{ "[fleet]\nmembers = [\"a=h:1\", \"b=h\"]\n", CONF_E_RANGE, 2, "name=host:port" },
	{ "[fleet]\nmembers = [\"a=h:65536\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[fleet]\nmembers = [\"a b=h:1\"]\n", CONF_E_RANGE, 2, NULL },
	{ "[fleet]\nring_key = \"75726d7174742d666c6565742d6b657g\"\n", CONF_E_RANGE, 2, "hex digit" },
	{ "[fleet]\nring_key = \"75726d\"\n", CONF_E_RANGE, 2, NULL },
	{ "[fleet]\nvnodes = 257\n", CONF_E_RANGE, 2, NULL },
	{ "[fleet]\nmembers = [\"a=h:1\", \"b=h:2\"]\nself = \"c\"\n", CONF_E_CONSTRAINT, 3, "fleet.self" },
	{ "[fleet]\nmembers = [\"a=h:1\", \"b=h:2\"]\n", CONF_E_CONSTRAINT, 2, "fleet.self" },
	{ "[fleet]\nself = \"a\"\n", CONF_E_CONSTRAINT, 2, "fleet.self" },
	{ "[fleet]\nmembers = [\"a=h:1\", \"a=h:2\"]\nself = \"a\"\n", CONF_E_CONSTRAINT, 3, "fleet.self" },
};

/* A fleet that the tool accepts. */
static void test_fleet_accepted(void **state)
{
	(void)state;
	assert_int_equal(parse("[fleet]\nmembers = [\"a=10.79.1.2:8883\", \"b=mqtt-b.example.com:8883\"]\n"
			       "self = \"b\"\nvnodes = 64\n"),
			 0);
}

static void test_errors_have_kind_and_line(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(err_cases); i++) {
		const struct err_case *c = &err_cases[i];
		int rc = parse(c->text);
		if (rc == 0 || err.kind != c->kind || err.line != c->line ||
		    (c->msg_part && !strstr(err.msg, c->msg_part)))
			fail_msg("case %zu: want %s at line %u (\"%s\"), got rc %d %s at line %u: "
				 "%s\n--- input:\n%s",
				 i, conf_errkind_name(c->kind), (unsigned)c->line,
				 c->msg_part ? c->msg_part : "", rc, conf_errkind_name(err.kind),
				 (unsigned)err.line, err.msg, c->text);
	}
}

static void test_string_and_list_limits(void **state)
{
	static char text[64 * 1024];
	char item[300];
	size_t n;
	(void)state;
	/* 128 characters fit service_uri_prefix, 129 do not. */
	memset(item, 'a', sizeof item);
	item[0] = ':';
	n = (size_t)snprintf(text, sizeof text, "[tls]\nservice_uri_prefix = \"%.128s\"\n", item);
	assert_true(n < sizeof text);
	expect_ok(text);
	snprintf(text, sizeof text, "[tls]\nservice_uri_prefix = \"%.129s\"\n", item);
	assert_int_equal(parse(text), -E_INVAL);
	assert_int_equal(err.kind, CONF_E_RANGE);
	/* 255 is the longest string at all. */
	snprintf(text, sizeof text, "[acl]\nservice_publish = [\"%.255s\"]\n", item);
	expect_ok(text);
	snprintf(text, sizeof text, "[acl]\nservice_publish = [\"%.256s\"]\n", item);
	assert_int_equal(parse(text), -E_INVAL);
	assert_int_equal(err.kind, CONF_E_RANGE);
	assert_int_equal(err.line, 2);
	/* 16 overrides fit, 17 do not. */
	n = (size_t)snprintf(text, sizeof text, "[core]\ncmdline_overrides = [");
	for (int i = 0; i < 17; i++) {
		n += (size_t)snprintf(text + n, sizeof text - n, "\"core.smp_max\",\n");
		if (i == 15) {
			memcpy(text + n, "]\n", 3);
			expect_ok(text);
		}
	}
	memcpy(text + n, "]\n", 3);
	assert_int_equal(parse(text), -E_INVAL);
	assert_int_equal(err.kind, CONF_E_RANGE);
	assert_int_equal(err.line, 18);
	/* The store is bounded: 64 + 64 items of 250 characters do not fit. */
	n = (size_t)snprintf(text, sizeof text, "[acl]\n");
	for (int list = 0; list < 2; list++) {
		n += (size_t)snprintf(text + n, sizeof text - n, "%s = [\n",
				      list ? "service_subscribe" : "service_publish");
		for (int i = 0; i < 64; i++)
			n += (size_t)snprintf(text + n, sizeof text - n, "\"%.250s\",\n", item + 1);
		n += (size_t)snprintf(text + n, sizeof text - n, "]\n");
	}
	assert_true(n < sizeof text);
	assert_int_equal(parse(text), -E_INVAL);
	assert_int_equal(err.kind, CONF_E_CAPACITY);
}

static void test_file_size_limit(void **state)
{
	char *big = malloc(CONF_FILE_MAX_BYTES + 1);
	(void)state;
	assert_non_null(big);
	memset(big, '\n', CONF_FILE_MAX_BYTES + 1);
	assert_int_equal(conf_parse(&doc, big, CONF_FILE_MAX_BYTES, &err), 0);
	assert_int_equal(conf_parse(&doc, big, CONF_FILE_MAX_BYTES + 1, &err), -E_INVAL);
	assert_int_equal(err.kind, CONF_E_CAPACITY);
	free(big);
}

static void test_input_is_not_read_past_its_length(void **state)
{
	(void)state;
	/* The parser must stop at len even when the bytes after it would continue a value. */
	const char text[] = "[tcp]\nport = 12345";
	assert_int_equal(conf_parse(&doc, text, 14, &err), 0);
	assert_int_equal(ival("tcp", "port"), 1);
	assert_int_equal(parse("[tls]\nservice_uri_prefix = \"a:b"), -E_INVAL);
	assert_int_equal(err.kind, CONF_E_MALFORMED);
	assert_string_equal(err.msg, "unterminated string");
	/* An embedded NUL is a malformed byte, not the end of the file. */
	assert_int_equal(conf_parse(&doc, "[tcp]\n\0port = 1\n", 16, &err), -E_INVAL);
	assert_int_equal(err.line, 2);
	assert_string_equal(conf_errkind_name(CONF_E__COUNT), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schema_is_consistent),
		cmocka_unit_test(test_empty_file_gives_every_default),
		cmocka_unit_test(test_every_type_parses),
		cmocka_unit_test(test_crlf_and_no_final_newline),
		cmocka_unit_test(test_int_bool_enum_ipv4_values),
		cmocka_unit_test(test_errors_have_kind_and_line),
		cmocka_unit_test(test_fleet_accepted),
		cmocka_unit_test(test_string_and_list_limits),
		cmocka_unit_test(test_file_size_limit),
		cmocka_unit_test(test_input_is_not_read_past_its_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
