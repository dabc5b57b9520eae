/* SPDX-License-Identifier: MIT
 *
 * Build-time configuration: the schema (every key, its type, default, range and one line
 * of documentation) and the parser of configuration files (`[section]`, `key = value`,
 * `#` comments). Shared by the host tool `urmqtt-config`, its unit tests and its fuzz
 * target. The parser and the schema are libc-free (lib/ only) so the same code could
 * parse kernel command-line overrides later; the generators (confgen.c) use stdio.
 *
 * The parser reads only through a bounds-checked cursor (lib/cursor.h), allocates
 * nothing (the caller owns `struct conf_doc`), never asserts on input, and stops at the
 * first error with its line number and kind. File format: docs/CONFIGURATION.md.
 */
#ifndef TOOLS_CONFIG_CONF_H
#define TOOLS_CONFIG_CONF_H

#include "lib/compiler.h"

/* Capacities of one parsed document. The schema has fewer keys (checked statically in
 * schema.c); stores hold every string and list item of one file, defaults included. */
#define CONF_MAX_KEYS 160
#define CONF_STORE_BYTES 16384
#define CONF_MAX_ITEMS 256
#define CONF_ITEM_MAX_LEN 255 /* longest string, list item or enum value */
#define CONF_NAME_MAX_LEN 63  /* longest section or key name */
#define CONF_FILE_MAX_BYTES 1048576

enum conf_type {
	CONF_T_INT,  /* decimal integer, optional unit suffix (see enum conf_unit) */
	CONF_T_BOOL, /* true | false */
	CONF_T_ENUM, /* quoted string out of conf_key.allowed; stored as its index */
	CONF_T_STR,  /* quoted string; min/max bound its length */
	CONF_T_IPV4, /* quoted dotted quad; stored as a host-order uint32 */
	CONF_T_LIST, /* [ "a", "b" ] of quoted strings; min/max bound the item count */
};

/* The unit of an integer key. A value without suffix is in this unit; a suffix of the
 * same kind is converted and must land on a whole number of it. */
enum conf_unit {
	CONF_U_NONE, /* a count or rate: no suffix */
	CONF_U_B,    /* bytes: k m g (x1024) */
	CONF_U_KIB,
	CONF_U_MIB,
	CONF_U_MS, /* time: ms s m h */
	CONF_U_S,
};

/* Extra validation of one value (or of each list item). */
enum conf_check {
	CONF_CK_NONE,
	CONF_CK_POW2,         /* int: a power of two */
	CONF_CK_NETMASK,      /* ipv4: contiguous ones then zeros */
	CONF_CK_TOPIC_FILTER, /* str/list item: an MQTT topic filter (+ and # whole levels) */
	CONF_CK_URI_PREFIX,   /* str: non-empty, no spaces, contains ':' */
	CONF_CK_KEYREF,       /* list item: "section.key" naming an overridable key */
	CONF_CK_UDP_ENDPOINT, /* list item: "a.b.c.d[:port]", a unicast address (lib/endpoint.h) */
	CONF_CK_NTP_SERVER,   /* list item: the same, on a private network (lib/endpoint.h) */
	CONF_CK_PRINTABLE,    /* str: printable ASCII, no spaces (a syslog header field) */
	CONF_CK_FLEET_MEMBER, /* list item: "name=host:port" (mqtt/fleet.h) */
	CONF_CK_HEX_KEY,      /* str: hex digits only (a key; its length from min/max) */
};

/* One key of the schema. Ownership: everything is static data. */
struct conf_key {
	const char *section;
	const char *name;
	const char *cname; /* generated constant, CONF_<SECTION>_<NAME> */
	const char *doc;   /* one line, Markdown-safe (no '|') */
	enum conf_type type;
	enum conf_unit unit;
	enum conf_check check;
	int64_t def;                    /* int, bool, enum index */
	int64_t min, max;               /* int: value; str: length; list: item count */
	const char *def_str;            /* str, ipv4 */
	const char *const *def_list;    /* list: NULL-terminated */
	const char *const *allowed;     /* enum: NULL-terminated value names */
	bool cmdline;                   /* may be named in core.cmdline_overrides */
};

extern const struct conf_key conf_schema[];
extern const size_t conf_schema_len;

/* Index of key section.name in conf_schema, or -1. Names are borrowed, not
 * NUL-terminated (lengths given). */
int conf_key_find(const char *section, size_t section_len, const char *name, size_t name_len);

enum conf_errkind {
	CONF_E_NONE,
	CONF_E_MALFORMED,       /* line is not a comment, section header or key = value */
	CONF_E_UNKNOWN_SECTION,
	CONF_E_UNKNOWN_KEY,
	CONF_E_TYPE,            /* value of the wrong type (or a suffix of the wrong kind) */
	CONF_E_RANGE,           /* out of range, not allowed, or fails its check */
	CONF_E_DUPLICATE,       /* key (or section) given twice */
	CONF_E_CONSTRAINT,      /* two keys contradict each other */
	CONF_E_CAPACITY,        /* the document does not fit struct conf_doc */
	CONF_E__COUNT
};

struct conf_err {
	enum conf_errkind kind;
	uint32_t line; /* 1-based; the line where parsing stopped */
	char msg[192]; /* NUL-terminated, without file or line */
};

/* A value: `i` for int, bool, enum (index) and ipv4; [off, off+len) of store for a
 * string (NUL-terminated there too); [off, off+len) of items for a list. */
struct conf_val {
	int64_t i;
	uint32_t line; /* where it was set; 0 = default */
	uint16_t off, len;
};

struct conf_span {
	uint16_t off, len; /* into store; NUL-terminated there too */
};

/* A parsed configuration: every schema key has a value (given or default). */
struct conf_doc {
	struct conf_val vals[CONF_MAX_KEYS];
	uint32_t section_line[CONF_MAX_KEYS]; /* indexed by a section's first key */
	struct conf_span items[CONF_MAX_ITEMS];
	size_t n_items;
	char store[CONF_STORE_BYTES];
	size_t store_used;
};

/* Parse `text` (borrowed, `len` bytes, need not be NUL-terminated) into `doc` (out),
 * fill defaults, then check cross-key constraints. Returns 0, or -E_INVAL with `err`
 * (out) saying where and why. Deterministic, allocation-free, any input is safe. */
int conf_parse(struct conf_doc *doc, const void *text, size_t len,
	       struct conf_err *err) MUST_CHECK;

/* Accessors (idx from conf_key_find or a loop over conf_schema). Borrowed results live
 * as long as `doc`. */
const char *conf_doc_str(const struct conf_doc *doc, size_t idx);
size_t conf_doc_list_len(const struct conf_doc *doc, size_t idx);
const char *conf_doc_list_item(const struct conf_doc *doc, size_t idx, size_t i);

/* Cross-key constraints (schema.c); called by conf_parse. 0 or -E_INVAL with err. */
int conf_schema_cross_check(const struct conf_doc *doc, struct conf_err *err) MUST_CHECK;

/* The constraints conf_schema_cross_check enforces, as sentences; NULL-terminated. */
extern const char *const conf_constraints[];

/* Name of an error kind ("unknown key", ...); never NULL. */
const char *conf_errkind_name(enum conf_errkind kind);

#endif
