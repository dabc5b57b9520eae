/* SPDX-License-Identifier: MIT
 *
 * The fleet's consistent-hash ring (mqtt/fleet.h, ADR-072): which appliance is a device
 * identity's home. Layer mqtt/, pure: no broker state, no allocation, no I/O; external
 * input (member strings, the key) only through the parsers below, which never assert.
 *
 * Design note.
 *   Each member owns `vnodes` points: SipHash-2-4 (the ring key) of its name, a 0 byte and
 *   the point's number (2 bytes, little-endian). An identity's position is SipHash of its
 *   bytes with the same key; its home is the owner of the first point at or after that
 *   position, wrapping to the first point. Many points per member make the shares near
 *   equal (3 members x 256 points: each within a few percent of a third, tests/unit/mqtt/
 *   test_fleet.c); adding a member takes only the identities that now fall before one of
 *   its points (about 1/(n+1) of them, all to it), removing one moves only its own.
 * Invariants (mqtt_fleet_check):
 *   1. pt[] is sorted by (point, owner's name): the ring, and so every home, depends on
 *      the names, the key and vnodes only, never on the order the members were listed.
 *   2. n_points == n_members * vnodes, 1 <= n_members <= MAX_MEMBERS, every owner[i] and
 *      self < n_members, and no two members share a name.
 * States: ZERO -(mqtt_fleet_init)-> BUILT, read-only for good (any core reads it).
 */
#include "mqtt/fleet.h"

#include "lib/err.h"
#include "lib/mem.h"
#include "lib/siphash.h"

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
	       c == '-';
}

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

int mqtt_fleet_member_parse(const char *s, size_t len, struct mqtt_fleet_member *out)
{
	size_t eq = 0, colon = 0;
	while (eq < len && s[eq] != '=')
		eq++;
	if (eq == 0 || eq == len || eq > MQTT_FLEET_NAME_MAX)
		return -E_INVAL;
	for (size_t i = 0; i < eq; i++)
		if (!name_char(s[i]))
			return -E_INVAL;
	const char *ref = s + eq + 1;
	size_t ref_len = len - eq - 1;
	while (colon < ref_len && ref[colon] != ':')
		colon++;
	if (colon == 0 || colon == ref_len || colon > MQTT_FLEET_HOST_MAX)
		return -E_INVAL;
	for (size_t i = 0; i < colon; i++)
		if (!host_char(ref[i]))
			return -E_INVAL;
	if (ref[0] == '.' || ref[0] == '-' || ref[colon - 1] == '.' || ref[colon - 1] == '-')
		return -E_INVAL;
	size_t digits = ref_len - colon - 1;
	if (digits == 0 || digits > 5 || ref[colon + 1] == '0')
		return -E_INVAL;
	uint32_t port = 0;
	for (size_t i = colon + 1; i < ref_len; i++) {
		if (ref[i] < '0' || ref[i] > '9')
			return -E_INVAL;
		port = port * 10u + (uint32_t)(ref[i] - '0');
	}
	if (port > 65535u)
		return -E_INVAL;
	out->name = s;
	out->name_len = (uint16_t)eq;
	out->ref = ref;
	out->ref_len = (uint16_t)ref_len;
	return 0;
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int mqtt_fleet_key_parse(const char *s, size_t len, uint8_t key[MQTT_FLEET_KEY_LEN])
{
	if (len != (size_t)2 * MQTT_FLEET_KEY_LEN)
		return -E_INVAL;
	for (size_t i = 0; i < MQTT_FLEET_KEY_LEN; i++) {
		int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -E_INVAL;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static bool bytes_eq(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && memcmp(a, b, al) == 0;
}

/* The members parsed into m[] (at most MAX); self's index in *self. */
static int parse_list(struct mqtt_fleet_member *m, const char *const *members, size_t n, const char *self,
		      size_t self_len, uint32_t *self_idx, const char **why)
{
	*self_idx = UINT32_MAX;
	if (n == 0 || n > MQTT_FLEET_MAX_MEMBERS) {
		*why = "a fleet has 1 to 16 members";
		return -E_INVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!members[i] ||
		    mqtt_fleet_member_parse(members[i], strnlen(members[i], 1u + MQTT_FLEET_NAME_MAX + 1u +
										 MQTT_FLEET_HOST_MAX + 6u),
					    &m[i]) != 0) {
			*why = "a member is not name=host:port";
			return -E_INVAL;
		}
		for (size_t j = 0; j < i; j++)
			if (bytes_eq(m[i].name, m[i].name_len, m[j].name, m[j].name_len)) {
				*why = "two members have the same name";
				return -E_INVAL;
			}
		if (bytes_eq(m[i].name, m[i].name_len, self, self_len))
			*self_idx = (uint32_t)i;
	}
	if (*self_idx == UINT32_MAX) {
		*why = "self is not one of the members";
		return -E_INVAL;
	}
	return 0;
}

int mqtt_fleet_check_list(const char *const *members, size_t n, const char *self, size_t self_len, const char **why)
{
	struct mqtt_fleet_member m[MQTT_FLEET_MAX_MEMBERS];
	uint32_t self_idx;
	return parse_list(m, members, n, self, self_len, &self_idx, why);
}

/* Order of two points: by value, then by their owners' names (invariant 1). */
static int name_cmp(const struct mqtt_fleet_member *a, const struct mqtt_fleet_member *b)
{
	size_t n = MIN(a->name_len, b->name_len);
	int c = memcmp(a->name, b->name, n);
	if (c)
		return c;
	return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

static bool point_less(const struct mqtt_fleet *f, uint32_t i, uint32_t j)
{
	if (f->pt[i] != f->pt[j])
		return f->pt[i] < f->pt[j];
	return name_cmp(&f->m[f->owner[i]], &f->m[f->owner[j]]) < 0;
}

static void point_swap(struct mqtt_fleet *f, uint32_t i, uint32_t j)
{
	uint64_t p = f->pt[i];
	uint8_t o = f->owner[i];
	f->pt[i] = f->pt[j];
	f->owner[i] = f->owner[j];
	f->pt[j] = p;
	f->owner[j] = o;
}

static void sift_down(struct mqtt_fleet *f, uint32_t root, uint32_t end)
{
	for (;;) {
		uint32_t child = 2u * root + 1u;
		if (child >= end)
			return;
		if (child + 1u < end && point_less(f, child, child + 1u))
			child++;
		if (!point_less(f, root, child))
			return;
		point_swap(f, root, child);
		root = child;
	}
}

/* Heapsort: no recursion, no allocation, O(n log n) whatever the points are. */
static void sort_points(struct mqtt_fleet *f)
{
	uint32_t n = f->n_points;
	for (uint32_t i = n / 2u; i-- > 0;)
		sift_down(f, i, n);
	for (uint32_t end = n; end-- > 1;) {
		point_swap(f, 0, end);
		sift_down(f, 0, end);
	}
}

int mqtt_fleet_init(struct mqtt_fleet *f, const char *const *members, size_t n, const char *self, size_t self_len,
		    const uint8_t key[MQTT_FLEET_KEY_LEN], uint32_t vnodes, const char **why)
{
	memset(f, 0, sizeof *f);
	if (vnodes == 0 || vnodes > MQTT_FLEET_MAX_VNODES) {
		*why = "vnodes is 1 to 256";
		return -E_INVAL;
	}
	int rc = parse_list(f->m, members, n, self, self_len, &f->self, why);
	if (rc)
		return rc;
	f->n_members = (uint32_t)n;
	f->vnodes = vnodes;
	memcpy(f->key, key, MQTT_FLEET_KEY_LEN);
	struct siphash_key k = siphash_key_from_bytes(key);
	uint8_t buf[MQTT_FLEET_NAME_MAX + 3u];
	for (uint32_t i = 0; i < f->n_members; i++) {
		const struct mqtt_fleet_member *m = &f->m[i];
		memcpy(buf, m->name, m->name_len);
		buf[m->name_len] = 0;
		for (uint32_t v = 0; v < vnodes; v++) {
			buf[m->name_len + 1u] = (uint8_t)v;
			buf[m->name_len + 2u] = (uint8_t)(v >> 8);
			f->pt[f->n_points] = siphash24(&k, buf, m->name_len + 3u);
			f->owner[f->n_points] = (uint8_t)i;
			f->n_points++;
		}
	}
	sort_points(f);
	return 0;
}

uint32_t mqtt_fleet_home(const struct mqtt_fleet *f, const uint8_t *id, size_t len)
{
	struct siphash_key k = siphash_key_from_bytes(f->key);
	uint64_t h = siphash24(&k, id, len);
	/* the first point >= h: lo ends at it, or at n_points when there is none (wrap) */
	uint32_t lo = 0, hi = f->n_points;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2u;
		if (f->pt[mid] < h)
			lo = mid + 1u;
		else
			hi = mid;
	}
	return f->owner[lo == f->n_points ? 0 : lo];
}

const struct mqtt_fleet_member *mqtt_fleet_member(const struct mqtt_fleet *f, uint32_t i)
{
	return &f->m[i];
}

int mqtt_fleet_check(const struct mqtt_fleet *f)
{
	if (f->n_members == 0 || f->n_members > MQTT_FLEET_MAX_MEMBERS || f->self >= f->n_members ||
	    f->vnodes == 0 || f->vnodes > MQTT_FLEET_MAX_VNODES || f->n_points != f->n_members * f->vnodes)
		return -E_CORRUPT;
	for (uint32_t i = 0; i < f->n_members; i++)
		for (uint32_t j = 0; j < i; j++)
			if (name_cmp(&f->m[i], &f->m[j]) == 0)
				return -E_CORRUPT;
	for (uint32_t i = 0; i < f->n_points; i++) {
		if (f->owner[i] >= f->n_members)
			return -E_CORRUPT;
		if (i && point_less(f, i, i - 1u))
			return -E_CORRUPT;
	}
	return 0;
}
