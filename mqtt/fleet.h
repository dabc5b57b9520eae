/* SPDX-License-Identifier: MIT
 *
 * A fleet of appliances behind one name (docs/SCALE-OUT.md, ADR-072): the consistent-hash
 * ring that gives every device identity its home appliance. The ring is configuration
 * ([fleet]: members "name=host:port", self, ring_key, vnodes), the same on every appliance,
 * so every appliance computes the same home for an identity without ever talking to
 * another. The broker redirects an MQTT 5.0 device that reached another appliance (CONNACK
 * 0x9C with the home's "host:port" as Server Reference); nothing else depends on it.
 *
 * Pure and allocation-free: the caller owns struct mqtt_fleet (fixed arrays, about 37 KiB)
 * and builds it once (mqtt_fleet_init); afterwards it is read-only, so any number of cores
 * may read one ring at once without synchronisation. The member strings are parsed here
 * for both the configuration tool (which refuses a bad value at build time) and the
 * broker (which reads the values the tool accepted).
 */
#ifndef MQTT_FLEET_H
#define MQTT_FLEET_H

#include "lib/compiler.h"

#define MQTT_FLEET_MAX_MEMBERS 16u  /* appliances in one ring */
#define MQTT_FLEET_MAX_VNODES 256u  /* points per appliance on the ring */
#define MQTT_FLEET_NAME_MAX 32u     /* bytes of an appliance's name */
#define MQTT_FLEET_HOST_MAX 253u    /* bytes of a host (a DNS name or a.b.c.d) */
#define MQTT_FLEET_KEY_LEN 16u      /* SipHash key */
#define MQTT_FLEET_MAX_POINTS (MQTT_FLEET_MAX_MEMBERS * MQTT_FLEET_MAX_VNODES)

/* One appliance as a member string "name=host:port" names it; views into that string
 * (linked: the string must outlive the ring). ref is "host:port": the Server Reference a
 * redirected device is given. */
struct mqtt_fleet_member {
	const char *name, *ref;
	uint16_t name_len, ref_len;
};

struct mqtt_fleet {
	uint32_t n_members, n_points, vnodes;
	uint32_t self; /* index of this appliance in m[] */
	uint8_t key[MQTT_FLEET_KEY_LEN];
	struct mqtt_fleet_member m[MQTT_FLEET_MAX_MEMBERS];
	uint64_t pt[MQTT_FLEET_MAX_POINTS];   /* sorted ascending (invariant 1) */
	uint8_t owner[MQTT_FLEET_MAX_POINTS]; /* the member index of pt[i] */
};

/* Parse one member string s[0..len) (borrowed; *out points into it, so it is linked into
 * whatever keeps *out): "name=host:port", name 1..MQTT_FLEET_NAME_MAX of [A-Za-z0-9_.-],
 * host 1..MQTT_FLEET_HOST_MAX of [A-Za-z0-9.-] not starting or ending with '.' or '-',
 * port 1..65535 in decimal without leading zeros. 0 or -E_INVAL. */
MUST_CHECK int mqtt_fleet_member_parse(const char *s, size_t len, struct mqtt_fleet_member *out /* out */);

/* Parse a ring key: exactly 32 hex digits (either case) into key (out). 0 or -E_INVAL. */
MUST_CHECK int mqtt_fleet_key_parse(const char *s, size_t len, uint8_t key[MQTT_FLEET_KEY_LEN] /* out */);

/* Check a member list without building the ring: 1..MQTT_FLEET_MAX_MEMBERS members (each
 * NUL-terminated, borrowed) that parse, no name twice, and self (self_len bytes, borrowed)
 * one of the names. 0, or -E_INVAL with *why (out, a static sentence) saying what is wrong. */
MUST_CHECK int mqtt_fleet_check_list(const char *const *members, size_t n, const char *self, size_t self_len,
				     const char **why /* out */);

/* Build the ring in f (out; owned by the caller): mqtt_fleet_check_list's rules, vnodes
 * 1..MQTT_FLEET_MAX_VNODES points per member. members are linked (they must outlive f),
 * self and key are copied. The result depends on the names, the key and vnodes only, not
 * on the order of the list. 0, or -E_INVAL with *why. Allocates nothing; boot time. */
MUST_CHECK int mqtt_fleet_init(struct mqtt_fleet *f, const char *const *members, size_t n, const char *self,
			       size_t self_len, const uint8_t key[MQTT_FLEET_KEY_LEN], uint32_t vnodes,
			       const char **why /* out */);

/* The home of identity id[0..len) (borrowed): an index of f->m. Read-only, any core. */
uint32_t mqtt_fleet_home(const struct mqtt_fleet *f, const uint8_t *id, size_t len);

/* The member at index i (< f->n_members), borrowed from f. */
const struct mqtt_fleet_member *mqtt_fleet_member(const struct mqtt_fleet *f, uint32_t i);

/* Check the ring's invariants (mqtt/fleet.c's design note): 0 or -E_CORRUPT. */
MUST_CHECK int mqtt_fleet_check(const struct mqtt_fleet *f);

#endif
