/* SPDX-License-Identifier: MIT
 *
 * Flattened device tree parser (plat/dtb.h): header -> /memreserve/ -> structure block,
 * walked twice (once for /chosen and /aliases, once for the devices, since stdout-path
 * may name a node that comes first). Owns only its rejection counters.
 *
 * Invariants:
 *  1. Every byte of the blob is read through a cursor or after an explicit length check
 *     against the block it belongs to: the header, the reserve map, the structure block
 *     [off_dt_struct, +size_dt_struct) or the strings block [off_dt_strings,
 *     +size_dt_strings), all checked to lie inside totalsize <= len.
 *  2. The walk is iterative: each turn consumes at least one 4-byte token, nesting is
 *     bounded by PLAT_DTB_MAX_DEPTH (an explicit stack), nodes and properties by
 *     PLAT_DTB_MAX_NODES / _PROPS; every search inside a property is bounded by its
 *     length and every `ranges` by RANGES_MAX entries. Nothing recurses and
 *     nothing follows a phandle, so no input can loop.
 *  3. Both walks make the same structural checks, so nothing validated by one is trusted
 *     by the other.
 *  4. A node's properties come before its children (spec 5.4.2); a property after a child
 *     is rejected, so a node's properties are one contiguous token range. A repeated
 *     property name is not rejected (that would cost O(n^2)): the first one counts.
 *
 * Format: Devicetree Specification v0.4, chapter 5 (header 5.2, memory reservation
 * block 5.3, structure block 5.4, strings block 5.5); property semantics from chapter 2
 * (#address-cells/#size-cells 2.3.5, reg 2.3.6, ranges 2.3.8, status 2.3.4), chapter 3
 * (/aliases, /memory, /reserved-memory, /chosen, /cpus) and the Linux bindings for the
 * GIC, the generic ECAM host, PSCI and the architected timer.
 */
#include "plat/dtb.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

#define FDT_MAGIC 0xd00dfeedu
#define FDT_BEGIN_NODE 1u
#define FDT_END_NODE 2u
#define FDT_PROP 3u
#define FDT_NOP 4u
#define FDT_END 9u
#define FDT_HDR_LEN_V16 36u /* no size_dt_struct */
#define FDT_HDR_LEN_V17 40u

#define CELLS_MAX 4u         /* #address-cells/#size-cells above this: unusable */
#define CELLS_BAD 0xffu
#define RANGES_MAX 32u       /* entries of one `ranges` looked at */
#define ECAM_BUS_SHIFT 20
#define GIC_PPI 1u           /* interrupt specifier type cell */

static struct plat_dtb_stats g_stats;

/* err: the error a fatal rejection at this site returns (0: the site only warns). */
static const struct {
	const char *why;
	const char *name;
	int err;
} sites[PLAT_DTB__SITES] = {
	[PLAT_DTB_HDR_SHORT] = { "DTB: shorter than its header", "hdr_short", -E_INVAL },
	[PLAT_DTB_HDR_MAGIC] = { "DTB: bad magic", "hdr_magic", -E_INVAL },
	[PLAT_DTB_HDR_VERSION] = { "DTB: unsupported version", "hdr_version", -E_NOSYS },
	[PLAT_DTB_HDR_SIZE] = { "DTB: totalsize invalid or beyond the blob", "hdr_size", -E_RANGE },
	[PLAT_DTB_HDR_BLOCK] = { "DTB: block offset or size outside the blob", "hdr_block", -E_RANGE },
	[PLAT_DTB_HDR_ALIGN] = { "DTB: block misaligned", "hdr_align", -E_INVAL },
	[PLAT_DTB_RSVMAP] = { "DTB: memory reservation block invalid", "rsvmap", -E_CORRUPT },
	[PLAT_DTB_STRUCT_TRUNC] = { "DTB: token past the structure block", "struct_trunc", -E_CORRUPT },
	[PLAT_DTB_STRUCT_TOKEN] = { "DTB: unknown or misplaced token", "struct_token", -E_CORRUPT },
	[PLAT_DTB_STRUCT_NAME] = { "DTB: node name unterminated", "struct_name", -E_CORRUPT },
	[PLAT_DTB_STRUCT_PROP_NAME] = { "DTB: property name outside the strings block",
					"struct_prop_name", -E_CORRUPT },
	[PLAT_DTB_STRUCT_PROP_ORDER] = { "DTB: property after a child node", "struct_prop_order",
					 -E_CORRUPT },
	[PLAT_DTB_STRUCT_DEPTH] = { "DTB: nodes nested too deep", "struct_depth", -E_RANGE },
	[PLAT_DTB_STRUCT_TOO_MANY] = { "DTB: too many nodes or properties", "struct_too_many",
				       -E_RANGE },
	[PLAT_DTB_STRUCT_NO_END] = { "DTB: structure block not closed by FDT_END", "struct_no_end",
				     -E_CORRUPT },
	[PLAT_DTB_CPU_REG] = { "DTB: cpu reg invalid", "cpu_reg", -E_INVAL },
	[PLAT_DTB_CPU_DUP] = { "DTB: duplicate cpu affinity (ignored)", "cpu_dup", 0 },
	[PLAT_DTB_CPU_TOO_MANY] = { "DTB: more cpus than supported (extra ignored)", "cpu_too_many", 0 },
	[PLAT_DTB_CPU_NONE] = { "DTB: no cpu node for the boot cpu", "cpu_none", -E_NOENT },
	[PLAT_DTB_CPU_BOOT_DISABLED] = { "DTB: boot cpu marked disabled (taken as enabled)",
					 "cpu_boot_disabled", 0 },
	[PLAT_DTB_MEM_REG] = { "DTB: memory reg invalid", "mem_reg", -E_INVAL },
	[PLAT_DTB_MEM_BAD] = { "DTB: memory range empty, wrapping or untranslatable (ignored)",
			       "mem_bad", 0 },
	[PLAT_DTB_MEM_TOO_MANY] = { "DTB: more memory ranges than supported (extra ignored)",
				    "mem_too_many", 0 },
	[PLAT_DTB_MEM_NONE] = { "DTB: no memory", "mem_none", -E_NOENT },
	[PLAT_DTB_RESERVED] = { "DTB: reserved memory invalid or too many ranges", "reserved",
				-E_RANGE },
	[PLAT_DTB_GIC_REG] = { "DTB: GIC reg invalid", "gic_reg", -E_INVAL },
	[PLAT_DTB_GIC_DUP] = { "DTB: second GIC (ignored)", "gic_dup", 0 },
	[PLAT_DTB_GIC_NONE] = { "DTB: no GICv2/GICv3 node", "gic_none", -E_NOENT },
	[PLAT_DTB_ECAM_BAD] = { "DTB: ECAM host invalid (ignored) or bus range clamped", "ecam_bad", 0 },
	[PLAT_DTB_ECAM_TOO_MANY] = { "DTB: more ECAM hosts than supported (extra ignored)",
				     "ecam_too_many", 0 },
	[PLAT_DTB_UART_STDOUT] = { "DTB: stdout-path unusable (first PL011 used)", "uart_stdout", 0 },
	[PLAT_DTB_UART_BAD] = { "DTB: PL011 reg invalid (ignored)", "uart_bad", 0 },
	[PLAT_DTB_EXTRA_BAD] = { "DTB: RTC/ITS/v2m/PSCI/timer node invalid (ignored)", "extra_bad", 0 },
	[PLAT_DTB_BOOTARGS_BAD] = { "DTB: bootargs not NUL-terminated (ignored)", "bootargs_bad", 0 },
};

const struct plat_dtb_stats *plat_dtb_stats(void)
{
	return &g_stats;
}

const char *plat_dtb_site_name(enum plat_dtb_site site)
{
	if ((unsigned)site >= PLAT_DTB__SITES)
		return "?";
	return sites[site].name;
}

/* A property value inside the structure block. */
struct prop {
	const uint8_t *val;
	size_t len;
};

/* One open node of the walk. Names and ranges point into the structure block. */
struct node {
	const char *name; /* NUL at name[name_len] */
	size_t name_len;
	size_t props, props_end; /* its property and NOP tokens: [props, props_end) */
	uint8_t ac, sc;          /* #address-cells/#size-cells of its children, or CELLS_BAD */
	bool avail;              /* status absent, "okay" or "ok" */
	bool has_ranges;         /* non-empty `ranges` (absent or empty: identity) */
	bool on_path;            /* a prefix of the stdout-path target */
	struct prop ranges;
};

struct parse {
	/* blocks (borrowed from the blob) */
	const uint8_t *st;
	size_t st_len;
	const uint8_t *str;
	size_t str_len;
	const char **why;
	struct node stack[PLAT_DTB_MAX_DEPTH];
	/* first walk: */
	bool have_chosen, have_aliases;
	struct node chosen, aliases;
	/* the stdout-path target split into components; n_comp == 0: none */
	uint32_t n_comp;
	const char *comp[PLAT_DTB_MAX_DEPTH];
	size_t comp_len[PLAT_DTB_MAX_DEPTH];
	/* second walk: */
	struct platform *out;
	struct plat_dtb_extra *extra;
	bool boot_first;
	uint32_t boot_aff;
	uint32_t n_cpu_nodes;
	uint32_t gic_icells;
	bool have_uart_stdout, have_uart_first, have_psci, have_timer_node;
	bool have_rtc, have_its, have_v2m;
	uint64_t uart_stdout, uart_first;
	struct prop timer_irqs;
};

typedef int (*visit_fn)(struct parse *p, uint32_t d);

/* A fatal rejection: count it, say why, return the site's error. */
static int fail(struct parse *p, enum plat_dtb_site site)
{
	g_stats.rejects[site]++;
	*p->why = sites[site].why;
	return sites[site].err;
}

/* A non-fatal problem: count it and remember it as the last warning. */
static void note(enum plat_dtb_site site)
{
	g_stats.rejects[site]++;
	g_stats.warning = sites[site].why;
}

static size_t pad4(size_t n)
{
	return (4u - (n & 3u)) & 3u;
}

/* ---- properties ------------------------------------------------------------------- */

/* Is the string at `off` of the strings block exactly name[0..nlen)? */
static bool str_at(const struct parse *p, uint32_t off, const char *name, size_t nlen)
{
	return off < p->str_len && p->str_len - off > nlen && memcmp(p->str + off, name, nlen) == 0 &&
	       p->str[off + nlen] == 0;
}

/* Property name[0..nlen) of n (the first, if repeated). Re-reads the tokens through a
 * cursor: it relies on nothing the walk checked. */
static bool prop_find(const struct parse *p, const struct node *n, const char *name, size_t nlen,
		      struct prop *out /* out */)
{
	struct cur c;
	if (n->props_end > p->st_len || n->props > n->props_end)
		return false;
	c = cur_make(p->st + n->props, n->props_end - n->props);
	while (cur_left(&c) >= 4) {
		uint32_t tok = cur_be32(&c);
		if (tok == FDT_NOP)
			continue;
		if (tok != FDT_PROP)
			break;
		uint32_t len = cur_be32(&c);
		uint32_t off = cur_be32(&c);
		const uint8_t *v = cur_ptr(&c, len);
		cur_skip(&c, pad4(len));
		if (!cur_ok(&c))
			break;
		if (str_at(p, off, name, nlen)) {
			out->val = v;
			out->len = len;
			return true;
		}
	}
	return false;
}

static bool prop_get(const struct parse *p, const struct node *n, const char *name,
		     struct prop *out /* out */)
{
	return prop_find(p, n, name, strlen(name), out);
}

/* A string property: non-empty and NUL-terminated within its length. The string
 * returned (s, slen) stops at the first NUL. */
static bool prop_string(const struct prop *pr, const char **s /* out */, size_t *slen /* out */)
{
	const uint8_t *nul;
	if (pr->len == 0 || pr->val[pr->len - 1] != 0)
		return false;
	nul = memchr(pr->val, 0, pr->len);
	*s = (const char *)pr->val;
	*slen = (size_t)(nul - pr->val);
	return true;
}

static bool prop_is(const struct prop *pr, const char *want)
{
	const char *s;
	size_t n;
	return prop_string(pr, &s, &n) && n == strlen(want) && memcmp(s, want, n) == 0;
}

/* Does the string list (NUL-terminated strings back to back) hold `want`? */
static bool strlist_has(const struct prop *pr, const char *want)
{
	size_t wl = strlen(want), i = 0;
	if (pr->len == 0 || pr->val[pr->len - 1] != 0)
		return false;
	while (i < pr->len) {
		const uint8_t *nul = memchr(pr->val + i, 0, pr->len - i); /* found: last byte is 0 */
		size_t el = (size_t)(nul - (pr->val + i));
		if (el == wl && memcmp(pr->val + i, want, wl) == 0)
			return true;
		i += el + 1;
	}
	return false;
}

static bool prop_u32(const struct prop *pr, uint32_t *v /* out */)
{
	struct cur c = cur_make(pr->val, pr->len);
	*v = cur_be32(&c);
	return cur_done(&c);
}

/* n big-endian cells as one number; always consumes n cells. False if it does not fit
 * in 64 bits or the cursor ran out. */
static bool cells_read(struct cur *c, uint32_t n, uint64_t *v /* out */)
{
	uint64_t x = 0;
	bool fits = true;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t cell = cur_be32(c);
		if (x >> 32)
			fits = false;
		x = x << 32 | cell;
	}
	*v = x;
	return fits && cur_ok(c);
}

/* ---- nodes ------------------------------------------------------------------------ */

static bool name_is(const struct node *n, const char *want)
{
	size_t wl = strlen(want);
	return n->name_len == wl && memcmp(n->name, want, wl) == 0;
}

/* A path component matches a node name exactly, or, when it has no unit address, the
 * name's part before '@' (spec 2.2.3). */
static bool comp_match(const char *comp, size_t clen, const struct node *n)
{
	if (clen == n->name_len && memcmp(comp, n->name, clen) == 0)
		return true;
	return memchr(comp, '@', clen) == NULL && n->name_len > clen && n->name[clen] == '@' &&
	       memcmp(comp, n->name, clen) == 0;
}

static uint8_t cells_prop(const struct parse *p, const struct node *n, const char *name, uint8_t dflt)
{
	struct prop pr;
	uint32_t v;
	if (!prop_get(p, n, name, &pr))
		return dflt;
	if (!prop_u32(&pr, &v) || v > CELLS_MAX)
		return CELLS_BAD;
	return (uint8_t)v;
}

static bool node_available(const struct parse *p, const struct node *n)
{
	struct prop pr;
	if (!prop_get(p, n, "status", &pr))
		return true;
	return prop_is(&pr, "okay") || prop_is(&pr, "ok");
}

/* Fill what the visitors need about stack[d] once its properties are known. */
static void node_setup(struct parse *p, uint32_t d)
{
	struct node *n = &p->stack[d];
	n->ac = cells_prop(p, n, "#address-cells", 2); /* defaults: spec 2.3.5 */
	n->sc = cells_prop(p, n, "#size-cells", 1);
	n->avail = node_available(p, n);
	n->has_ranges = prop_get(p, n, "ranges", &n->ranges) && n->ranges.len > 0;
	if (d == 0)
		n->on_path = p->n_comp > 0;
	else
		n->on_path = p->stack[d - 1].on_path && d <= p->n_comp &&
			     comp_match(p->comp[d - 1], p->comp_len[d - 1], n);
}

/* ---- the walk --------------------------------------------------------------------- */

/* Consume the property (and NOP) tokens after a node's name, checking each. Stops before
 * the first other token, or with fewer than 4 bytes left (the caller then fails). */
static int scan_props(struct parse *p, struct cur *c, uint32_t *n_props)
{
	for (;;) {
		struct cur save = *c;
		uint32_t tok, len, off;
		if (cur_left(c) < 4)
			return 0;
		tok = cur_be32(c);
		if (tok == FDT_NOP)
			continue;
		if (tok != FDT_PROP) {
			*c = save;
			return 0;
		}
		if (++*n_props > PLAT_DTB_MAX_PROPS)
			return fail(p, PLAT_DTB_STRUCT_TOO_MANY);
		len = cur_be32(c);
		off = cur_be32(c);
		cur_skip(c, len);
		cur_skip(c, pad4(len));
		if (!cur_ok(c))
			return fail(p, PLAT_DTB_STRUCT_TRUNC);
		if (off >= p->str_len || memchr(p->str + off, 0, p->str_len - off) == NULL)
			return fail(p, PLAT_DTB_STRUCT_PROP_NAME);
	}
}

/* Walk the structure block, calling visit(p, depth) for each node once its properties
 * are known (stack[0..depth] are the node and its ancestors). */
static int walk(struct parse *p, visit_fn visit)
{
	struct cur c = cur_make(p->st, p->st_len);
	uint32_t depth = 0, n_nodes = 0, n_props = 0;
	bool root_done = false;
	int err;

	for (;;) {
		uint32_t tok;
		if (cur_left(&c) < 4)
			return fail(p, PLAT_DTB_STRUCT_NO_END);
		tok = cur_be32(&c);
		switch (tok) {
		case FDT_NOP:
			break;
		case FDT_BEGIN_NODE: {
			struct node *n;
			const uint8_t *name, *nul;
			size_t left = cur_left(&c);
			if (root_done)
				return fail(p, PLAT_DTB_STRUCT_TOKEN); /* a second root */
			if (depth >= PLAT_DTB_MAX_DEPTH)
				return fail(p, PLAT_DTB_STRUCT_DEPTH);
			if (++n_nodes > PLAT_DTB_MAX_NODES)
				return fail(p, PLAT_DTB_STRUCT_TOO_MANY);
			name = cur_ptr(&c, 0);
			nul = name && left > 0 ? memchr(name, 0, left) : NULL;
			if (!nul)
				return fail(p, PLAT_DTB_STRUCT_NAME);
			n = &p->stack[depth];
			memset(n, 0, sizeof *n);
			n->name = (const char *)name;
			n->name_len = (size_t)(nul - name);
			cur_skip(&c, n->name_len + 1);
			cur_skip(&c, pad4(n->name_len + 1));
			if (!cur_ok(&c))
				return fail(p, PLAT_DTB_STRUCT_TRUNC);
			n->props = c.pos;
			err = scan_props(p, &c, &n_props);
			if (err)
				return err;
			n->props_end = c.pos;
			node_setup(p, depth);
			depth++;
			err = visit(p, depth - 1);
			if (err)
				return err;
			break;
		}
		case FDT_END_NODE:
			if (depth == 0)
				return fail(p, PLAT_DTB_STRUCT_TOKEN);
			if (--depth == 0)
				root_done = true;
			break;
		case FDT_PROP:
			return fail(p, PLAT_DTB_STRUCT_PROP_ORDER);
		case FDT_END:
			if (!root_done)
				return fail(p, PLAT_DTB_STRUCT_TOKEN); /* inside a node, or no root */
			return 0;
		default:
			return fail(p, PLAT_DTB_STRUCT_TOKEN);
		}
	}
}

/* ---- addresses -------------------------------------------------------------------- */

/* Translate a bus address of a child of stack[d - 1] to a CPU physical address through the
 * `ranges` of every ancestor below the root (spec 2.3.8). */
static bool xlate(const struct parse *p, uint32_t d, uint64_t *addr)
{
	for (uint32_t k = d - 1; k > 0; k--) {
		const struct node *bus = &p->stack[k];
		uint32_t cac = bus->ac, csc = bus->sc, pac = p->stack[k - 1].ac;
		struct cur c;
		size_t ent;
		bool found = false;
		if (!bus->has_ranges)
			continue; /* identity (absent: lenient, see dtb.h) */
		if (cac == CELLS_BAD || csc == CELLS_BAD || pac == CELLS_BAD || cac == 0 || pac == 0)
			return false;
		ent = (size_t)(cac + pac + csc) * 4;
		if (bus->ranges.len % ent != 0)
			return false;
		c = cur_make(bus->ranges.val, bus->ranges.len);
		for (uint32_t i = 0; i < RANGES_MAX && cur_left(&c) >= ent; i++) {
			uint64_t cb, pb, sz;
			bool ok = cells_read(&c, cac, &cb);
			ok = cells_read(&c, pac, &pb) && ok;
			ok = cells_read(&c, csc, &sz) && ok;
			if (ok && *addr >= cb && *addr - cb < sz) {
				uint64_t off = *addr - cb;
				if (pb > UINT64_MAX - off)
					return false;
				*addr = pb + off;
				found = true;
				break;
			}
		}
		if (!found)
			return false;
	}
	return true;
}

/* The reg property of stack[d] (d >= 1), in its parent's cells. */
struct reg {
	struct prop pr;
	uint32_t ac, sc;
	size_t n;
};

/* 0, -E_NOENT (no reg), -E_INVAL (cells unusable, empty, not whole entries). */
static int reg_open(const struct parse *p, uint32_t d, struct reg *r /* out */)
{
	const struct node *parent;
	size_t ent;
	if (d == 0 || d >= PLAT_DTB_MAX_DEPTH)
		return -E_INVAL; /* the root has no parent bus (callers never ask) */
	parent = &p->stack[d - 1];
	if (!prop_get(p, &p->stack[d], "reg", &r->pr))
		return -E_NOENT;
	r->ac = parent->ac;
	r->sc = parent->sc;
	if (r->ac == CELLS_BAD || r->sc == CELLS_BAD || r->ac == 0)
		return -E_INVAL;
	ent = (size_t)(r->ac + r->sc) * 4;
	if (r->pr.len == 0 || r->pr.len % ent != 0)
		return -E_INVAL;
	r->n = r->pr.len / ent;
	return 0;
}

/* Entry i: 0, or -E_RANGE (i past the end, a value over 64 bits, wrapping, or an
 * address no parent range covers). */
static int reg_entry(const struct parse *p, uint32_t d, const struct reg *r, size_t i,
		     uint64_t *base /* out */, uint64_t *size /* out */)
{
	struct cur c = cur_make(r->pr.val, r->pr.len);
	if (i >= r->n)
		return -E_RANGE;
	cur_skip(&c, i * (size_t)(r->ac + r->sc) * 4);
	bool ok = cells_read(&c, r->ac, base);
	ok = cells_read(&c, r->sc, size) && ok;
	if (!ok || !xlate(p, d, base) || *size > UINT64_MAX - *base)
		return -E_RANGE;
	return 0;
}

/* Base of reg entry 0 of stack[d], or false. */
static bool reg_base(const struct parse *p, uint32_t d, uint64_t *base /* out */)
{
	struct reg r;
	uint64_t size;
	return reg_open(p, d, &r) == 0 && reg_entry(p, d, &r, 0, base, &size) == 0;
}

/* ---- first walk: /chosen and /aliases ---------------------------------------------- */

static int visit_top(struct parse *p, uint32_t d)
{
	const struct node *n = &p->stack[d];
	if (d != 1)
		return 0;
	if (!p->have_chosen && name_is(n, "chosen")) {
		p->chosen = *n;
		p->have_chosen = true;
	} else if (!p->have_aliases && name_is(n, "aliases")) {
		p->aliases = *n;
		p->have_aliases = true;
	}
	return 0;
}

/* Split the stdout-path target into components; n_comp stays 0 when there is none. */
static void stdout_target(struct parse *p)
{
	struct prop pr;
	const char *s, *colon;
	size_t n, i;

	p->n_comp = 0;
	if (!p->have_chosen || (!prop_get(p, &p->chosen, "stdout-path", &pr) &&
				!prop_get(p, &p->chosen, "linux,stdout-path", &pr)))
		return;
	if (!prop_string(&pr, &s, &n))
		goto bad;
	colon = memchr(s, ':', n); /* "path:options" */
	if (colon)
		n = (size_t)(colon - s);
	if (n == 0)
		goto bad;
	if (s[0] != '/') {
		/* An alias: a property of /aliases whose value is a full path. */
		if (!p->have_aliases || !prop_find(p, &p->aliases, s, n, &pr) || !prop_string(&pr, &s, &n) ||
		    n == 0 || s[0] != '/')
			goto bad;
	}
	i = 1;
	while (i < n) {
		const char *slash = memchr(s + i, '/', n - i);
		size_t end = slash ? (size_t)(slash - s) : n;
		if (end == i || p->n_comp >= PLAT_DTB_MAX_DEPTH - 1)
			goto bad;
		p->comp[p->n_comp] = s + i;
		p->comp_len[p->n_comp] = end - i;
		p->n_comp++;
		i = end + 1;
	}
	if (p->n_comp == 0)
		goto bad;
	return;
bad:
	p->n_comp = 0;
	note(PLAT_DTB_UART_STDOUT);
}

/* ---- second walk: devices ---------------------------------------------------------- */

static int add_cpu(struct parse *p, uint32_t d)
{
	const struct node *n = &p->stack[d];
	const struct node *cpus = &p->stack[1];
	struct platform *out = p->out;
	uint32_t uid = p->n_cpu_nodes++;
	struct prop pr;
	struct cur c;
	uint32_t hi = 0, lo, aff, slot;
	bool is_boot;

	if (!prop_get(p, n, "reg", &pr) || (cpus->ac != 1 && cpus->ac != 2) || cpus->sc == CELLS_BAD ||
	    pr.len == 0 || pr.len % ((size_t)(cpus->ac + cpus->sc) * 4) != 0)
		return fail(p, PLAT_DTB_CPU_REG);
	c = cur_make(pr.val, pr.len);
	if (cpus->ac == 2)
		hi = cur_be32(&c);
	lo = cur_be32(&c);
	/* Only affinity bits: MPIDR[39:32] in the high cell, MPIDR[23:0] in the low one. */
	if (!cur_ok(&c) || hi > 0xffu || lo > 0xffffffu)
		return fail(p, PLAT_DTB_CPU_REG);
	aff = hi << 24 | lo;
	for (uint32_t i = 0; i < out->n_cpus; i++) {
		if (out->cpus[i].apic_id == aff) {
			note(PLAT_DTB_CPU_DUP);
			return 0;
		}
	}
	is_boot = !p->boot_first && aff == p->boot_aff;
	if (out->n_cpus >= PLAT_MAX_CPUS) {
		note(PLAT_DTB_CPU_TOO_MANY);
		if (!is_boot)
			return 0;
		slot = PLAT_MAX_CPUS - 1; /* the boot cpu keeps a slot; the one there is dropped */
	} else {
		slot = out->n_cpus++;
	}
	out->cpus[slot].apic_id = aff;
	out->cpus[slot].acpi_uid = uid;
	out->cpus[slot].enabled = n->avail;
	out->cpus[slot].boot_cpu = false;
	return 0;
}

static int add_memory(struct parse *p, uint32_t d)
{
	struct platform *out = p->out;
	struct reg r;
	int err = reg_open(p, d, &r);
	if (err == -E_NOENT) {
		note(PLAT_DTB_MEM_BAD);
		return 0;
	}
	if (err)
		return fail(p, PLAT_DTB_MEM_REG);
	for (size_t i = 0; i < r.n; i++) {
		uint64_t base, size;
		if (out->n_mem >= PLAT_MAX_MEM_RANGES) {
			note(PLAT_DTB_MEM_TOO_MANY); /* once per node: the rest is not looked at */
			break;
		}
		if (reg_entry(p, d, &r, i, &base, &size) != 0 || size == 0) {
			note(PLAT_DTB_MEM_BAD);
			continue;
		}
		out->mem[out->n_mem].base = base;
		out->mem[out->n_mem].len = size;
		out->n_mem++;
	}
	return 0;
}

static int add_reserved_range(struct parse *p, uint64_t base, uint64_t size)
{
	struct plat_dtb_extra *ex = p->extra;
	if (size == 0)
		return 0;
	if (size > UINT64_MAX - base || ex->n_reserved >= PLAT_DTB_MAX_RESERVED)
		return fail(p, PLAT_DTB_RESERVED);
	ex->reserved[ex->n_reserved].base = base;
	ex->reserved[ex->n_reserved].len = size;
	ex->n_reserved++;
	return 0;
}

/* A child of /reserved-memory: every reg range is kept from the kernel. One without reg
 * (a dynamic "size" request) reserves nothing yet; one we cannot read fails closed. */
static int add_reserved_node(struct parse *p, uint32_t d)
{
	struct reg r;
	int err = reg_open(p, d, &r);
	if (err == -E_NOENT)
		return 0;
	if (err)
		return fail(p, PLAT_DTB_RESERVED);
	for (size_t i = 0; i < r.n; i++) {
		uint64_t base, size;
		if (reg_entry(p, d, &r, i, &base, &size) != 0)
			return fail(p, PLAT_DTB_RESERVED);
		err = add_reserved_range(p, base, size);
		if (err)
			return err;
	}
	return 0;
}

static int add_gic(struct parse *p, uint32_t d, uint32_t version)
{
	struct platform *out = p->out;
	struct reg r;
	uint64_t b0, b1, size;
	struct prop pr;
	uint32_t icells;

	if (out->gic_version != 0) {
		note(PLAT_DTB_GIC_DUP);
		return 0;
	}
	if (reg_open(p, d, &r) != 0 || reg_entry(p, d, &r, 0, &b0, &size) != 0 ||
	    reg_entry(p, d, &r, 1, &b1, &size) != 0)
		return fail(p, PLAT_DTB_GIC_REG);
	out->gic_version = version;
	out->gicd_addr = b0;
	if (version == 3)
		out->gicr_addr = b1;
	else
		out->gicc_addr = b1;
	p->gic_icells = 3;
	if (prop_get(p, &p->stack[d], "#interrupt-cells", &pr))
		p->gic_icells = prop_u32(&pr, &icells) ? icells : 0;
	return 0;
}

/* PCI `ranges` entries (IEEE 1275 PCI binding): a 3-cell child address whose first cell's
 * bits 25:24 give the space (2: 32-bit memory, 3: 64-bit memory), a parent address in
 * the parent's cells (translated to the CPU's), a size in the node's cells. The first
 * usable entry of each memory space becomes its window. */
#define PCI_SPACE(hi) (((hi) >> 24) & 3u)
static void add_pci_windows(struct parse *p, uint32_t d)
{
	const struct node *n = &p->stack[d];
	uint32_t pac = p->stack[d - 1].ac;
	struct plat_dtb_extra *x = p->extra;
	if (!n->has_ranges || n->ac != 3 || n->sc == CELLS_BAD || n->sc == 0 || pac == CELLS_BAD || pac == 0) {
		if (n->has_ranges)
			note(PLAT_DTB_ECAM_BAD);
		return;
	}
	size_t ent = (size_t)(3u + pac + n->sc) * 4;
	if (n->ranges.len % ent != 0) {
		note(PLAT_DTB_ECAM_BAD);
		return;
	}
	struct cur c = cur_make(n->ranges.val, n->ranges.len);
	for (uint32_t i = 0; i < RANGES_MAX && cur_left(&c) >= ent; i++) {
		uint32_t hi = cur_be32(&c);
		uint64_t pci, cpu, len;
		bool ok = cells_read(&c, 2, &pci);
		ok = cells_read(&c, pac, &cpu) && ok;
		ok = cells_read(&c, n->sc, &len) && ok;
		uint32_t space = PCI_SPACE(hi);
		if (space < 2)
			continue; /* configuration or I/O space */
		struct plat_dtb_window *w = space == 2 ? &x->pci_mem32 : &x->pci_mem64;
		if (w->len)
			continue; /* the first of each space */
		if (!ok || len == 0 || pci > UINT64_MAX - len || !xlate(p, d, &cpu) || cpu > UINT64_MAX - len ||
		    (space == 2 && pci + len - 1 > 0xffffffffu)) {
			note(PLAT_DTB_ECAM_BAD);
			continue;
		}
		*w = (struct plat_dtb_window){ cpu, pci, len };
	}
}

static void add_ecam(struct parse *p, uint32_t d)
{
	struct platform *out = p->out;
	const struct node *n = &p->stack[d];
	struct reg r;
	struct prop pr;
	uint64_t base, size, buses;
	uint32_t domain = 0, start = 0, end = 255;

	if (reg_open(p, d, &r) != 0 || reg_entry(p, d, &r, 0, &base, &size) != 0)
		goto bad;
	if (prop_get(p, n, "linux,pci-domain", &pr) && (!prop_u32(&pr, &domain) || domain > 0xffffu))
		goto bad;
	if (prop_get(p, n, "bus-range", &pr)) {
		struct cur c = cur_make(pr.val, pr.len);
		start = cur_be32(&c);
		end = cur_be32(&c);
		if (!cur_done(&c) || end > 255 || start > end)
			goto bad;
	}
	/* reg covers buses start.. from its base (Linux's pci-host-generic): keep the bus-0
	 * address like MCFG, and clamp the range to what reg covers. */
	buses = size >> ECAM_BUS_SHIFT;
	if ((base & 0xfffu) != 0 || buses == 0 || base < ((uint64_t)start << ECAM_BUS_SHIFT) ||
	    base - ((uint64_t)start << ECAM_BUS_SHIFT) == 0)
		goto bad;
	if ((uint64_t)end - start + 1 > buses) {
		end = start + (uint32_t)buses - 1;
		note(PLAT_DTB_ECAM_BAD);
	}
	if (out->n_ecam >= PLAT_MAX_ECAM) {
		note(PLAT_DTB_ECAM_TOO_MANY);
		return;
	}
	if (out->n_ecam == 0)
		add_pci_windows(p, d);
	out->ecam[out->n_ecam].base = base - ((uint64_t)start << ECAM_BUS_SHIFT);
	out->ecam[out->n_ecam].segment = (uint16_t)domain;
	out->ecam[out->n_ecam].bus_start = (uint8_t)start;
	out->ecam[out->n_ecam].bus_end = (uint8_t)end;
	out->n_ecam++;
	return;
bad:
	note(PLAT_DTB_ECAM_BAD);
}

/* The first available node of a kind: its reg base into *slot. */
static void add_first(struct parse *p, uint32_t d, bool *have, uint64_t *slot, enum plat_dtb_site site)
{
	if (*have)
		return;
	if (!reg_base(p, d, slot)) {
		*slot = 0;
		note(site);
		return;
	}
	*have = true;
}

static void add_psci(struct parse *p, uint32_t d)
{
	struct prop pr;
	if (p->have_psci)
		return;
	p->have_psci = true;
	if (prop_get(p, &p->stack[d], "method", &pr) && prop_is(&pr, "hvc"))
		p->extra->psci = PLAT_DTB_PSCI_HVC;
	else if (prop_get(p, &p->stack[d], "method", &pr) && prop_is(&pr, "smc"))
		p->extra->psci = PLAT_DTB_PSCI_SMC;
	else
		note(PLAT_DTB_EXTRA_BAD);
}

static int visit_dev(struct parse *p, uint32_t d)
{
	const struct node *n = &p->stack[d];
	struct plat_dtb_extra *ex = p->extra;
	struct prop pr;

	if (d == 0)
		return 0;
	if (prop_get(p, n, "device_type", &pr)) {
		if (d == 2 && name_is(&p->stack[1], "cpus") && prop_is(&pr, "cpu"))
			return add_cpu(p, d);
		if (prop_is(&pr, "memory"))
			return n->avail ? add_memory(p, d) : 0;
	}
	if (!n->avail)
		return 0;
	if (d == 2 && name_is(&p->stack[1], "reserved-memory"))
		return add_reserved_node(p, d);
	if (!prop_get(p, n, "compatible", &pr))
		return 0;
	if (strlist_has(&pr, "arm,gic-v3"))
		return add_gic(p, d, 3);
	if (strlist_has(&pr, "arm,cortex-a15-gic") || strlist_has(&pr, "arm,gic-400"))
		return add_gic(p, d, 2);
	if (strlist_has(&pr, "pci-host-ecam-generic")) {
		add_ecam(p, d);
	} else if (strlist_has(&pr, "arm,pl011")) {
		uint64_t base;
		bool is_stdout = n->on_path && d == p->n_comp;
		if (!reg_base(p, d, &base)) {
			note(PLAT_DTB_UART_BAD);
		} else if (is_stdout && !p->have_uart_stdout) {
			p->uart_stdout = base;
			p->have_uart_stdout = true;
		} else if (!p->have_uart_first) {
			p->uart_first = base;
			p->have_uart_first = true;
		}
	} else if (strlist_has(&pr, "arm,pl031")) {
		add_first(p, d, &p->have_rtc, &ex->rtc_base, PLAT_DTB_EXTRA_BAD);
	} else if (strlist_has(&pr, "arm,gic-v3-its")) {
		add_first(p, d, &p->have_its, &ex->gits_base, PLAT_DTB_EXTRA_BAD);
	} else if (strlist_has(&pr, "arm,gic-v2m-frame")) {
		add_first(p, d, &p->have_v2m, &ex->gicv2m_base, PLAT_DTB_EXTRA_BAD);
	} else if (strlist_has(&pr, "arm,psci-1.0") || strlist_has(&pr, "arm,psci-0.2") ||
		   strlist_has(&pr, "arm,psci")) {
		add_psci(p, d);
	} else if (strlist_has(&pr, "arm,armv8-timer") && !p->have_timer_node) {
		p->have_timer_node = true;
		if (!prop_get(p, n, "interrupts", &p->timer_irqs))
			p->timer_irqs.len = 0;
	}
	return 0;
}

/* ---- after the walk ---------------------------------------------------------------- */

/* The timer's interrupts in the GIC's specifier format: type, number, flags (and a fourth
 * cell with #interrupt-cells = 4). Needs the GIC, which may come after the timer. */
static void finish_timer(struct parse *p)
{
	struct plat_dtb_extra *ex = p->extra;
	uint32_t ic = p->gic_icells, type[3], num[3];
	struct cur c;

	if (!p->have_timer_node)
		return;
	if ((ic != 3 && ic != 4) || p->timer_irqs.len < (size_t)ic * 4 * 3 ||
	    p->timer_irqs.len % ((size_t)ic * 4) != 0)
		goto bad;
	c = cur_make(p->timer_irqs.val, p->timer_irqs.len);
	for (uint32_t i = 0; i < 3; i++) {
		type[i] = cur_be32(&c);
		num[i] = cur_be32(&c);
		cur_skip(&c, (size_t)(ic - 2) * 4);
	}
	if (!cur_ok(&c) || type[1] != GIC_PPI || type[2] != GIC_PPI || num[1] > 15 || num[2] > 15)
		goto bad;
	ex->has_timer = true;
	ex->timer_phys_ppi = num[1];
	ex->timer_virt_ppi = num[2];
	return;
bad:
	note(PLAT_DTB_EXTRA_BAD);
}

static void finish_bootargs(struct parse *p)
{
	struct prop pr;
	const char *s;
	size_t n;
	if (!p->have_chosen || !prop_get(p, &p->chosen, "bootargs", &pr))
		return;
	if (!prop_string(&pr, &s, &n)) {
		note(PLAT_DTB_BOOTARGS_BAD);
		return;
	}
	p->extra->bootargs = s;
	p->extra->bootargs_len = n;
}

static int finish(struct parse *p)
{
	struct platform *out = p->out;
	struct plat_cpu *boot = NULL;

	for (uint32_t i = 0; i < out->n_cpus && !boot; i++) {
		if (p->boot_first ? out->cpus[i].enabled : out->cpus[i].apic_id == p->boot_aff)
			boot = &out->cpus[i];
	}
	if (!boot)
		return fail(p, PLAT_DTB_CPU_NONE);
	boot->boot_cpu = true;
	if (!boot->enabled) {
		boot->enabled = true; /* it is running this code */
		note(PLAT_DTB_CPU_BOOT_DISABLED);
	}
	if (out->n_mem == 0)
		return fail(p, PLAT_DTB_MEM_NONE);
	if (out->gic_version == 0)
		return fail(p, PLAT_DTB_GIC_NONE);
	if (p->n_comp > 0 && !p->have_uart_stdout)
		note(PLAT_DTB_UART_STDOUT);
	out->uart_base = p->have_uart_stdout ? p->uart_stdout : p->have_uart_first ? p->uart_first : 0;
	finish_timer(p);
	finish_bootargs(p);
	return 0;
}

/* ---- header ------------------------------------------------------------------------ */

/* Check the header and the reserve map; point p at the two blocks. */
static int header(struct parse *p, const uint8_t *blob, size_t len)
{
	struct cur c = cur_make(blob, len);
	uint32_t magic, total, off_st, off_str, off_rsv, version, last_comp, size_str, size_st;
	size_t hdr_len;

	magic = cur_be32(&c);
	total = cur_be32(&c);
	off_st = cur_be32(&c);
	off_str = cur_be32(&c);
	off_rsv = cur_be32(&c);
	version = cur_be32(&c);
	last_comp = cur_be32(&c);
	(void)cur_be32(&c); /* boot_cpuid_phys: the caller's MPIDR is the truth */
	size_str = cur_be32(&c);
	if (!cur_ok(&c))
		return fail(p, magic == FDT_MAGIC || len < 4 ? PLAT_DTB_HDR_SHORT : PLAT_DTB_HDR_MAGIC);
	if (magic != FDT_MAGIC)
		return fail(p, PLAT_DTB_HDR_MAGIC);
	if (version < 16 || last_comp > 17)
		return fail(p, PLAT_DTB_HDR_VERSION);
	hdr_len = version >= 17 ? FDT_HDR_LEN_V17 : FDT_HDR_LEN_V16;
	size_st = version >= 17 ? cur_be32(&c) : 0;
	if (!cur_ok(&c))
		return fail(p, PLAT_DTB_HDR_SHORT);
	if (total < hdr_len || total > len || total > PLAT_DTB_MAX_SIZE)
		return fail(p, PLAT_DTB_HDR_SIZE);
	if (version < 17 && off_st <= total)
		size_st = total - off_st; /* v16 has no size_dt_struct: up to the end */
	if (off_st < hdr_len || off_st > total || size_st > total - off_st || off_str < hdr_len ||
	    off_str > total || size_str > total - off_str || off_rsv < hdr_len || off_rsv >= total)
		return fail(p, PLAT_DTB_HDR_BLOCK);
	if ((off_st & 3u) != 0 || (off_rsv & 7u) != 0)
		return fail(p, PLAT_DTB_HDR_ALIGN);
	p->st = blob + off_st;
	p->st_len = size_st;
	p->str = blob + off_str;
	p->str_len = size_str;

	/* /memreserve/: (address, size) pairs up to a (0, 0) terminator inside totalsize. */
	c = cur_make(blob + off_rsv, total - off_rsv);
	for (uint32_t i = 0;; i++) {
		uint64_t addr, size;
		int err;
		if (i > PLAT_DTB_MAX_RSVMAP)
			return fail(p, PLAT_DTB_RSVMAP);
		addr = cur_be64(&c);
		size = cur_be64(&c);
		if (!cur_ok(&c) || size > UINT64_MAX - addr)
			return fail(p, PLAT_DTB_RSVMAP);
		if (addr == 0 && size == 0)
			break;
		err = add_reserved_range(p, addr, size);
		if (err)
			return err;
	}
	return 0;
}

/* ---- entry ------------------------------------------------------------------------- */

void plat_arm_fields_clear(struct platform *out, struct plat_dtb_extra *extra)
{
	out->n_cpus = 0;
	memset(out->cpus, 0, sizeof out->cpus);
	out->gicd_addr = out->gicr_addr = out->gicc_addr = 0;
	out->gic_version = 0;
	out->n_ecam = 0;
	memset(out->ecam, 0, sizeof out->ecam);
	out->uart_base = 0;
	memset(extra, 0, sizeof *extra);
}

static void clear_dtb_fields(struct platform *out, struct plat_dtb_extra *extra)
{
	plat_arm_fields_clear(out, extra);
	out->n_mem = 0;
	memset(out->mem, 0, sizeof out->mem);
}

static int parse_blob(struct parse *p, const void *blob, size_t len)
{
	int err;
	if (!blob)
		return fail(p, PLAT_DTB_HDR_SHORT);
	err = header(p, blob, len);
	if (!err)
		err = walk(p, visit_top);
	if (err)
		return err;
	stdout_target(p);
	err = walk(p, visit_dev);
	if (!err)
		err = finish(p);
	return err;
}

int plat_dtb_parse(const void *blob, size_t len, uint64_t boot_mpidr, struct platform *out,
		   struct plat_dtb_extra *extra, const char **why)
{
	struct plat_dtb_extra scratch;
	struct parse p;
	const char *dummy;
	int err;

	if (!why)
		why = &dummy;
	if (!extra)
		extra = &scratch;
	*why = NULL;
	g_stats.warning = NULL;
	clear_dtb_fields(out, extra);
	memset(&p, 0, sizeof p);
	p.why = why;
	p.out = out;
	p.extra = extra;
	p.boot_first = boot_mpidr == PLAT_DTB_BOOT_FIRST;
	p.boot_aff = plat_dtb_mpidr_aff(boot_mpidr);
	err = parse_blob(&p, blob, len);
	if (err)
		clear_dtb_fields(out, extra);
	return err;
}
