/* SPDX-License-Identifier: MIT
 *
 * Parser of configuration files against the schema (tools/config/conf.h, format in
 * docs/CONFIGURATION.md). One pass, line by line, through a bounds-checked cursor: a
 * byte is only ever looked at through cur_peek_u8/cur_ptr after cur_left said it is
 * there. Values are checked against their key's type, unit, range and validator while
 * they are read; defaults fill what the file does not set; cross-key constraints last.
 *
 * Never: allocate, recurse, assert on input, or read outside the given bytes. The first
 * error stops the parse and is reported with its kind and 1-based line.
 */
#include <stdarg.h>

#include "tools/config/conf.h"
#include "lib/cursor.h"
#include "lib/endpoint.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "mqtt/fleet.h"

struct parser {
	struct cur c;
	struct conf_doc *doc;
	struct conf_err *err;
	uint32_t line;
	int section; /* index of the current section's first key; -1 before any */
};

static const char *const errkind_names[CONF_E__COUNT] = {
	[CONF_E_NONE] = "no error",
	[CONF_E_MALFORMED] = "malformed line",
	[CONF_E_UNKNOWN_SECTION] = "unknown section",
	[CONF_E_UNKNOWN_KEY] = "unknown key",
	[CONF_E_TYPE] = "wrong type",
	[CONF_E_RANGE] = "out of range",
	[CONF_E_DUPLICATE] = "duplicate",
	[CONF_E_CONSTRAINT] = "constraint",
	[CONF_E_CAPACITY] = "too large",
};

const char *conf_errkind_name(enum conf_errkind kind)
{
	if ((unsigned)kind >= CONF_E__COUNT)
		return "?";
	return errkind_names[kind];
}

static int perr(struct parser *p, enum conf_errkind kind, const char *fmt, ...)
	PRINTF_LIKE(3, 4);

static int perr(struct parser *p, enum conf_errkind kind, const char *fmt, ...)
{
	va_list ap;
	p->err->kind = kind;
	p->err->line = p->line;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(p->err->msg, sizeof p->err->msg, fmt, ap);
	va_end(ap);
	return -E_INVAL;
}

/* ---- characters ------------------------------------------------------------------ */

/* The next byte, or -1 at the end of input. */
static int peek(struct parser *p)
{
	if (!cur_left(&p->c))
		return -1;
	return cur_peek_u8(&p->c);
}

static void adv(struct parser *p)
{
	cur_skip(&p->c, 1);
}

static bool is_name_char(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
}

static bool is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_blank(int ch)
{
	return ch == ' ' || ch == '\t';
}

static void skip_blanks(struct parser *p)
{
	while (is_blank(peek(p)))
		adv(p);
}

/* After a value or header: blanks, an optional comment, then the end of the line (or of
 * the input). Consumes the newline. */
static int end_line(struct parser *p)
{
	int ch;
	skip_blanks(p);
	if (peek(p) == '#') {
		while ((ch = peek(p)) != -1 && ch != '\n' && ch != '\r') {
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				return perr(p, CONF_E_MALFORMED, "control character 0x%02x in comment",
					    (unsigned)ch);
			adv(p);
		}
	}
	ch = peek(p);
	if (ch == -1)
		return 0;
	if (ch == '\r') {
		adv(p);
		if (peek(p) != '\n')
			return perr(p, CONF_E_MALFORMED, "carriage return not followed by newline");
		ch = '\n';
	}
	if (ch != '\n') {
		if (ch < 0x20 || ch >= 0x7f)
			return perr(p, CONF_E_MALFORMED, "unexpected byte 0x%02x", (unsigned)ch);
		return perr(p, CONF_E_MALFORMED, "unexpected '%c' after the value", ch);
	}
	adv(p);
	p->line++;
	return 0;
}

/* Inside a list: blanks, comments and newlines in any number. */
static int skip_space_in_list(struct parser *p)
{
	for (;;) {
		int ch = peek(p);
		if (is_blank(ch)) {
			adv(p);
		} else if (ch == '#' || ch == '\r' || ch == '\n') {
			int rc = end_line(p);
			if (rc)
				return rc;
		} else {
			return 0;
		}
	}
}

/* A section or key name; borrowed from the input. */
static int read_name(struct parser *p, const char **name /* out */, size_t *len /* out */)
{
	struct cur start = p->c;
	size_t n = 0;
	while (is_name_char(peek(p))) {
		adv(p);
		n++;
	}
	if (n == 0)
		return perr(p, CONF_E_MALFORMED, "expected [section], key = value or # comment");
	if (n > CONF_NAME_MAX_LEN)
		return perr(p, CONF_E_MALFORMED, "name longer than %d characters",
			    CONF_NAME_MAX_LEN);
	*name = (const char *)cur_ptr(&start, n);
	*len = n;
	return *name ? 0 : perr(p, CONF_E_MALFORMED, "name cut short");
}

/* ---- storage ----------------------------------------------------------------------- */

static int store_byte(struct parser *p, char ch)
{
	if (p->doc->store_used >= sizeof p->doc->store)
		return perr(p, CONF_E_CAPACITY, "strings exceed %d bytes in total",
			    CONF_STORE_BYTES);
	p->doc->store[p->doc->store_used++] = ch;
	return 0;
}

/* Copy a NUL-terminated schema default into the store. */
static int store_cstr(struct parser *p, const char *s, struct conf_span *out /* out */)
{
	size_t off = p->doc->store_used;
	size_t n = strlen(s);
	if (n > CONF_ITEM_MAX_LEN)
		return perr(p, CONF_E_CAPACITY, "schema default longer than %d", CONF_ITEM_MAX_LEN);
	for (size_t i = 0; i <= n; i++) {
		int rc = store_byte(p, s[i]);
		if (rc)
			return rc;
	}
	out->off = (uint16_t)off;
	out->len = (uint16_t)n;
	return 0;
}

static int add_item(struct parser *p, struct conf_span item)
{
	if (p->doc->n_items >= CONF_MAX_ITEMS)
		return perr(p, CONF_E_CAPACITY, "more than %d list items in total", CONF_MAX_ITEMS);
	p->doc->items[p->doc->n_items++] = item;
	return 0;
}

/* ---- values -------------------------------------------------------------------------- */

static const char *type_desc(const struct conf_key *k)
{
	switch (k->type) {
	case CONF_T_INT: return "an integer";
	case CONF_T_BOOL: return "true or false";
	case CONF_T_ENUM: return "a quoted string naming one of its values";
	case CONF_T_STR: return "a quoted string";
	case CONF_T_IPV4: return "a quoted IPv4 address";
	case CONF_T_LIST: return "a list of quoted strings";
	}
	return "?";
}

/* "section.key" of schema key k, for messages. */
#define KFMT "%s.%s"
#define KARG(k) (k)->section, (k)->name

/* A quoted string (the cursor is on the opening quote) into the store, NUL-terminated. */
static int read_string(struct parser *p, const struct conf_key *k, struct conf_span *out /* out */)
{
	size_t off = p->doc->store_used;
	size_t n = 0;
	int rc;
	adv(p);
	for (;;) {
		int ch = peek(p);
		if (ch == -1 || ch == '\n' || ch == '\r')
			return perr(p, CONF_E_MALFORMED, "unterminated string");
		adv(p);
		if (ch == '"')
			break;
		if (ch == '\\') {
			ch = peek(p);
			if (ch != '"' && ch != '\\')
				return perr(p, CONF_E_MALFORMED,
					    "unknown escape in string (only \\\" and \\\\)");
			adv(p);
		} else if (ch < 0x20 || ch >= 0x7f) {
			return perr(p, CONF_E_MALFORMED,
				    "byte 0x%02x in string (printable ASCII only)", (unsigned)ch);
		}
		if (n >= CONF_ITEM_MAX_LEN)
			return perr(p, CONF_E_RANGE, KFMT ": string longer than %d characters",
				    KARG(k), CONF_ITEM_MAX_LEN);
		rc = store_byte(p, (char)ch);
		if (rc)
			return rc;
		n++;
	}
	rc = store_byte(p, '\0');
	if (rc)
		return rc;
	out->off = (uint16_t)off;
	out->len = (uint16_t)n;
	return 0;
}

static int64_t unit_factor(enum conf_unit u)
{
	switch (u) {
	case CONF_U_KIB: return 1024;
	case CONF_U_MIB: return INT64_C(1024) * 1024;
	case CONF_U_S: return 1000;
	default: return 1;
	}
}

static const char *unit_name(enum conf_unit u)
{
	switch (u) {
	case CONF_U_B: return "bytes";
	case CONF_U_KIB: return "KiB";
	case CONF_U_MIB: return "MiB";
	case CONF_U_MS: return "ms";
	case CONF_U_S: return "s";
	default: return "";
	}
}

static bool is_size(enum conf_unit u)
{
	return u == CONF_U_B || u == CONF_U_KIB || u == CONF_U_MIB;
}

/* Multiplier of a suffix into the base unit of the key's kind (bytes or ms); 0 if the
 * suffix does not belong to that kind. */
static int64_t suffix_factor(enum conf_unit u, const char *s, size_t n)
{
	if (is_size(u) && n == 1) {
		switch (s[0]) {
		case 'k': return 1024;
		case 'm': return INT64_C(1024) * 1024;
		case 'g': return INT64_C(1024) * 1024 * 1024;
		default: return 0;
		}
	}
	if (u == CONF_U_MS || u == CONF_U_S) {
		if (n == 2 && s[0] == 'm' && s[1] == 's')
			return 1;
		if (n == 1 && s[0] == 's')
			return 1000;
		if (n == 1 && s[0] == 'm')
			return INT64_C(60) * 1000;
		if (n == 1 && s[0] == 'h')
			return INT64_C(3600) * 1000;
	}
	return 0;
}

static bool is_value_end(int ch)
{
	return ch == -1 || is_blank(ch) || ch == '#' || ch == '\r' || ch == '\n' || ch == ',' ||
	       ch == ']';
}

static int read_int(struct parser *p, const struct conf_key *k, int64_t *out /* out */)
{
	bool neg = false;
	int64_t v = 0;
	size_t n_digits = 0;
	char sfx[4];
	size_t n_sfx = 0;
	if (peek(p) == '-') {
		neg = true;
		adv(p);
	}
	while (is_digit(peek(p))) {
		int d = peek(p) - '0';
		if (v > (INT64_MAX - d) / 10)
			return perr(p, CONF_E_RANGE, KFMT ": number too large", KARG(k));
		v = v * 10 + d;
		adv(p);
		n_digits++;
	}
	while (peek(p) >= 'a' && peek(p) <= 'z') {
		if (n_sfx >= sizeof sfx)
			return perr(p, CONF_E_MALFORMED, "malformed number");
		sfx[n_sfx++] = (char)peek(p);
		adv(p);
	}
	if (n_digits == 0 || !is_value_end(peek(p)))
		return perr(p, CONF_E_MALFORMED, "malformed number");
	if (n_sfx) {
		int64_t f = suffix_factor(k->unit, sfx, n_sfx);
		int64_t unit = unit_factor(k->unit);
		if (k->unit == CONF_U_NONE)
			return perr(p, CONF_E_TYPE, KFMT " is a plain number: no unit suffix",
				    KARG(k));
		if (!f)
			return perr(p, CONF_E_TYPE, KFMT ": unit suffix '%.*s' not valid here (%s)",
				    KARG(k), (int)n_sfx, sfx,
				    is_size(k->unit) ? "use k, m or g" : "use ms, s, m or h");
		if (v > INT64_MAX / f)
			return perr(p, CONF_E_RANGE, KFMT ": number too large", KARG(k));
		v *= f;
		if (v % unit)
			return perr(p, CONF_E_RANGE, KFMT ": not a whole number of %s", KARG(k),
				    unit_name(k->unit));
		v /= unit;
	}
	if (neg)
		v = -v;
	if (v < k->min || v > k->max)
		return perr(p, CONF_E_RANGE, KFMT " = %lld is out of range %lld..%lld%s%s", KARG(k),
			    (long long)v, (long long)k->min, (long long)k->max,
			    k->unit == CONF_U_NONE ? "" : " ", unit_name(k->unit));
	if (k->check == CONF_CK_POW2 && (v <= 0 || (v & (v - 1))))
		return perr(p, CONF_E_RANGE, KFMT " = %lld is not a power of two", KARG(k),
			    (long long)v);
	*out = v;
	return 0;
}

/* Dotted quad (exactly four decimal parts 0..255) from a NUL-terminated string; false if
 * it is not one. */
static bool parse_ipv4(const char *s, size_t len, int64_t *out /* out */)
{
	struct cur c = cur_make(s, len);
	uint32_t addr = 0;
	for (int part = 0; part < 4; part++) {
		uint32_t v = 0;
		size_t n = 0;
		if (part > 0) {
			if (!cur_left(&c) || cur_u8(&c) != '.')
				return false;
		}
		while (cur_left(&c) && is_digit(cur_peek_u8(&c))) {
			v = v * 10 + (uint32_t)(cur_u8(&c) - '0');
			if (++n > 3)
				return false;
		}
		if (n == 0 || v > 255)
			return false;
		addr = addr << 8 | v;
	}
	*out = addr;
	return cur_done(&c);
}

static bool valid_netmask(int64_t m)
{
	uint32_t inv = ~(uint32_t)m;
	return (inv & (inv + 1)) == 0; /* the zeros form one run at the bottom */
}

/* MQTT topic filter: non-empty, '+' and '#' only as whole levels, '#' last. */
static bool valid_topic_filter(const char *s, size_t len)
{
	size_t level_start = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '/')
			continue;
		size_t n = i - level_start;
		const char *lv = s + level_start;
		for (size_t j = 0; j < n; j++)
			if ((lv[j] == '+' || lv[j] == '#') && n != 1)
				return false;
		if (n == 1 && lv[0] == '#' && i != len)
			return false;
		level_start = i + 1;
	}
	return true;
}

static int check_string(struct parser *p, const struct conf_key *k, struct conf_span sp)
{
	const char *s = p->doc->store + sp.off;
	switch (k->check) {
	case CONF_CK_TOPIC_FILTER:
		if (!valid_topic_filter(s, sp.len))
			return perr(p, CONF_E_RANGE, KFMT ": \"%.64s\" is not a valid topic filter",
				    KARG(k), s);
		break;
	case CONF_CK_URI_PREFIX:
		if (!memchr(s, ':', sp.len) || memchr(s, ' ', sp.len))
			return perr(p, CONF_E_RANGE,
				    KFMT ": \"%.64s\" is not a URI prefix (needs ':' and no spaces)",
				    KARG(k), s);
		break;
	case CONF_CK_UDP_ENDPOINT:
	case CONF_CK_NTP_SERVER: {
		struct endpoint e;
		if (endpoint_parse(s, sp.len, 1, &e) != 0 || !endpoint_unicast(e.ip))
			return perr(p, CONF_E_RANGE, KFMT ": \"%.64s\" is not a unicast a.b.c.d or a.b.c.d:port",
				    KARG(k), s);
		if (k->check == CONF_CK_NTP_SERVER && !endpoint_private(e.ip))
			return perr(p, CONF_E_RANGE,
				    KFMT ": \"%.64s\" is not on a private network (10/8, 172.16/12, 192.168/16, 100.64/10)",
				    KARG(k), s);
		break;
	}
	case CONF_CK_PRINTABLE:
		for (size_t i = 0; i < sp.len; i++)
			if (s[i] < 33 || s[i] > 126)
				return perr(p, CONF_E_RANGE, KFMT ": \"%.64s\" has a space or a byte outside printable ASCII",
					    KARG(k), s);
		break;
	case CONF_CK_FLEET_MEMBER: {
		struct mqtt_fleet_member m;
		if (mqtt_fleet_member_parse(s, sp.len, &m) != 0)
			return perr(p, CONF_E_RANGE,
				    KFMT ": \"%.64s\" is not name=host:port (name 1..32 of A-Z a-z 0-9 _ . -, host a DNS name or a.b.c.d, port 1..65535)",
				    KARG(k), s);
		break;
	}
	case CONF_CK_HEX_KEY:
		for (size_t i = 0; i < sp.len; i++)
			if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
				return perr(p, CONF_E_RANGE, KFMT ": \"%.64s\" has a byte that is not a hex digit", KARG(k), s);
		break;
	case CONF_CK_KEYREF: {
		const char *dot = memchr(s, '.', sp.len);
		int idx = dot ? conf_key_find(s, (size_t)(dot - s), dot + 1,
					      sp.len - (size_t)(dot - s) - 1)
			      : -1;
		if (idx < 0)
			return perr(p, CONF_E_RANGE, KFMT ": \"%.64s\" names no key (section.key)",
				    KARG(k), s);
		if (!conf_schema[idx].cmdline)
			return perr(p, CONF_E_RANGE,
				    KFMT ": \"%.64s\" cannot be overridden on the command line",
				    KARG(k), s);
		break;
	}
	default:
		break;
	}
	if (k->type == CONF_T_STR && (sp.len < k->min || sp.len > k->max))
		return perr(p, CONF_E_RANGE, KFMT ": length %u is out of range %lld..%lld",
			    KARG(k), (unsigned)sp.len, (long long)k->min, (long long)k->max);
	return 0;
}

static int read_list(struct parser *p, const struct conf_key *k, struct conf_val *v)
{
	uint32_t open_line = p->line;
	size_t first = p->doc->n_items;
	int rc;
	adv(p); /* '[' */
	for (;;) {
		struct conf_span item = { 0, 0 };
		int ch;
		rc = skip_space_in_list(p);
		if (rc)
			return rc;
		ch = peek(p);
		if (ch == ']')
			break;
		if (ch == -1) {
			p->line = open_line;
			return perr(p, CONF_E_MALFORMED, "unterminated list");
		}
		if (ch == ',')
			return perr(p, CONF_E_MALFORMED, "empty list element");
		if (ch != '"')
			return perr(p, CONF_E_TYPE, KFMT ": list items are quoted strings", KARG(k));
		rc = read_string(p, k, &item);
		if (rc)
			return rc;
		if (item.len == 0)
			return perr(p, CONF_E_RANGE, KFMT ": empty list item", KARG(k));
		if (p->doc->n_items - first >= (size_t)k->max)
			return perr(p, CONF_E_RANGE, KFMT ": more than %lld items", KARG(k),
				    (long long)k->max);
		rc = check_string(p, k, item);
		if (!rc)
			rc = add_item(p, item);
		if (!rc)
			rc = skip_space_in_list(p);
		if (rc)
			return rc;
		ch = peek(p);
		if (ch == ',') {
			adv(p);
		} else if (ch == -1) {
			p->line = open_line;
			return perr(p, CONF_E_MALFORMED, "unterminated list");
		} else if (ch != ']') {
			return perr(p, CONF_E_MALFORMED, "expected ',' or ']' in list");
		}
	}
	adv(p); /* ']' */
	v->off = (uint16_t)first;
	v->len = (uint16_t)(p->doc->n_items - first);
	return 0;
}

static int read_enum(struct parser *p, const struct conf_key *k, struct conf_val *v)
{
	size_t mark = p->doc->store_used;
	struct conf_span sp = { 0, 0 };
	int rc = read_string(p, k, &sp);
	if (rc)
		return rc;
	p->doc->store_used = mark; /* only the index is kept */
	for (size_t i = 0; k->allowed[i]; i++) {
		if (strlen(k->allowed[i]) == sp.len &&
		    memcmp(k->allowed[i], p->doc->store + sp.off, sp.len) == 0) {
			v->i = (int64_t)i;
			return 0;
		}
	}
	return perr(p, CONF_E_RANGE, KFMT ": \"%.64s\" is not an allowed value", KARG(k),
		    p->doc->store + sp.off);
}

static int read_value(struct parser *p, const struct conf_key *k, struct conf_val *v)
{
	int ch = peek(p);
	int rc;
	if (ch == -1 || ch == '\n' || ch == '\r' || ch == '#')
		return perr(p, CONF_E_MALFORMED, "missing value after '='");
	switch (k->type) {
	case CONF_T_INT:
		if (!is_digit(ch) && ch != '-')
			break;
		return read_int(p, k, &v->i);
	case CONF_T_BOOL: {
		struct cur save = p->c;
		size_t n = 0;
		const uint8_t *w;
		while (peek(p) >= 'a' && peek(p) <= 'z') {
			adv(p);
			n++;
		}
		w = cur_ptr(&save, n);
		if (w && n == 4 && memcmp(w, "true", 4) == 0 && is_value_end(peek(p)))
			v->i = 1;
		else if (w && n == 5 && memcmp(w, "false", 5) == 0 && is_value_end(peek(p)))
			v->i = 0;
		else
			break;
		return 0;
	}
	case CONF_T_ENUM:
		if (ch != '"')
			break;
		return read_enum(p, k, v);
	case CONF_T_STR: {
		struct conf_span sp = { 0, 0 };
		if (ch != '"')
			break;
		rc = read_string(p, k, &sp);
		if (!rc)
			rc = check_string(p, k, sp);
		v->off = sp.off;
		v->len = sp.len;
		return rc;
	}
	case CONF_T_IPV4: {
		size_t mark = p->doc->store_used;
		struct conf_span sp = { 0, 0 };
		if (ch != '"')
			break;
		rc = read_string(p, k, &sp);
		if (rc)
			return rc;
		p->doc->store_used = mark;
		if (!parse_ipv4(p->doc->store + sp.off, sp.len, &v->i))
			return perr(p, CONF_E_TYPE, KFMT ": \"%.64s\" is not an IPv4 address a.b.c.d",
				    KARG(k), p->doc->store + sp.off);
		if (k->check == CONF_CK_NETMASK && !valid_netmask(v->i))
			return perr(p, CONF_E_RANGE, KFMT ": not a contiguous netmask", KARG(k));
		return 0;
	}
	case CONF_T_LIST:
		if (ch != '[')
			break;
		return read_list(p, k, v);
	}
	return perr(p, CONF_E_TYPE, KFMT " expects %s", KARG(k), type_desc(k));
}

/* ---- lines --------------------------------------------------------------------------- */

static int parse_section(struct parser *p)
{
	const char *name = NULL;
	size_t len = 0;
	int idx, rc;
	adv(p); /* '[' */
	rc = read_name(p, &name, &len);
	if (rc)
		return perr(p, CONF_E_MALFORMED, "malformed section header (want [name])");
	if (peek(p) != ']')
		return perr(p, CONF_E_MALFORMED, "malformed section header (want [name])");
	adv(p);
	idx = -1;
	for (size_t i = 0; i < conf_schema_len && idx < 0; i++)
		if (strnlen(conf_schema[i].section, len + 1) == len &&
		    memcmp(conf_schema[i].section, name, len) == 0)
			idx = (int)i;
	if (idx < 0)
		return perr(p, CONF_E_UNKNOWN_SECTION, "unknown section [%.*s]", (int)len, name);
	if (p->doc->section_line[idx])
		return perr(p, CONF_E_DUPLICATE, "section [%.*s] repeated (first at line %u)",
			    (int)len, name, (unsigned)p->doc->section_line[idx]);
	p->doc->section_line[idx] = p->line;
	p->section = idx;
	return end_line(p);
}

static int parse_key(struct parser *p)
{
	const char *name = NULL;
	size_t len = 0;
	const char *sec;
	const struct conf_key *k;
	struct conf_val *v;
	uint32_t line = p->line;
	int idx, rc;
	rc = read_name(p, &name, &len);
	if (rc)
		return rc;
	skip_blanks(p);
	if (peek(p) != '=')
		return perr(p, CONF_E_MALFORMED, "expected '=' after key '%.*s'", (int)len, name);
	adv(p);
	skip_blanks(p);
	if (p->section < 0)
		return perr(p, CONF_E_MALFORMED, "key '%.*s' before any [section]", (int)len, name);
	sec = conf_schema[p->section].section;
	idx = conf_key_find(sec, strlen(sec), name, len);
	if (idx < 0)
		return perr(p, CONF_E_UNKNOWN_KEY, "unknown key '%.*s' in [%s]", (int)len, name, sec);
	k = &conf_schema[idx];
	v = &p->doc->vals[idx];
	if (v->line)
		return perr(p, CONF_E_DUPLICATE, "duplicate key " KFMT " (first set at line %u)",
			    KARG(k), (unsigned)v->line);
	rc = read_value(p, k, v);
	if (rc)
		return rc;
	v->line = line; /* where the key is, even if its list ends lines later */
	return end_line(p);
}

static int fill_defaults(struct parser *p)
{
	for (size_t i = 0; i < conf_schema_len; i++) {
		const struct conf_key *k = &conf_schema[i];
		struct conf_val *v = &p->doc->vals[i];
		struct conf_span sp = { 0, 0 };
		int rc = 0;
		if (v->line)
			continue;
		v->i = k->def;
		if (k->type == CONF_T_STR) {
			rc = store_cstr(p, k->def_str, &sp);
			v->off = sp.off;
			v->len = sp.len;
		} else if (k->type == CONF_T_IPV4) {
			if (!parse_ipv4(k->def_str, strlen(k->def_str), &v->i))
				rc = perr(p, CONF_E_CAPACITY, KFMT ": bad schema default", KARG(k));
		} else if (k->type == CONF_T_LIST) {
			size_t first = p->doc->n_items;
			for (size_t j = 0; !rc && k->def_list[j]; j++) {
				rc = store_cstr(p, k->def_list[j], &sp);
				if (!rc)
					rc = add_item(p, sp);
			}
			v->off = (uint16_t)first;
			v->len = (uint16_t)(p->doc->n_items - first);
		}
		if (rc)
			return rc;
	}
	return 0;
}

int conf_parse(struct conf_doc *doc, const void *text, size_t len, struct conf_err *err)
{
	struct parser p = { cur_make(text, len), doc, err, 1, -1 };
	memset(doc, 0, sizeof *doc);
	memset(err, 0, sizeof *err);
	if (len > (size_t)CONF_FILE_MAX_BYTES)
		return perr(&p, CONF_E_CAPACITY, "file larger than %d bytes", CONF_FILE_MAX_BYTES);
	while (cur_left(&p.c)) {
		int rc;
		skip_blanks(&p);
		switch (peek(&p)) {
		case '#':
		case '\r':
		case '\n':
		case -1:
			rc = end_line(&p);
			break;
		case '[':
			rc = parse_section(&p);
			break;
		default:
			rc = parse_key(&p);
			break;
		}
		if (rc)
			return rc;
	}
	if (fill_defaults(&p))
		return -E_INVAL;
	return conf_schema_cross_check(doc, err);
}

const char *conf_doc_str(const struct conf_doc *doc, size_t idx)
{
	return doc->store + doc->vals[idx].off;
}

size_t conf_doc_list_len(const struct conf_doc *doc, size_t idx)
{
	return doc->vals[idx].len;
}

const char *conf_doc_list_item(const struct conf_doc *doc, size_t idx, size_t i)
{
	return doc->store + doc->items[doc->vals[idx].off + i].off;
}
