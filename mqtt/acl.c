/* SPDX-License-Identifier: MIT
 *
 * The ACL decision (see acl.h): pure functions of the configured rules and the asker. Owns
 * no state, allocates nothing, never keeps a pointer past the call. Topics and filters come
 * from peers: every comparison is bounded by the lengths given, never by a NUL.
 *
 * Invariants: 1. a device is allowed nothing outside devices/<id> and devices/<id>/...,
 * compared level-exactly (dev-1 is never a prefix of dev-10); 2. a service without a rule
 * is refused everything; 3. a service's subscription is allowed only when every topic the
 * filter can match is one its pattern matches, so a wildcard filter never widens a grant.
 */
#include "mqtt/acl.h"

#include "lib/mem.h"

static bool bytes_eq(const uint8_t *a, size_t al, const uint8_t *c, size_t cl)
{
	return al == cl && (al == 0 || memcmp(a, c, al) == 0);
}

static bool single_level(const uint8_t *p, size_t start, size_t end, uint8_t ch)
{
	return end - start == 1 && p[start] == ch;
}

/* Is every topic matched by `filter` also matched by `pattern`? */
static bool covered(const uint8_t *p, size_t pl, const uint8_t *f, size_t fl)
{
	size_t i = 0, j = 0;
	for (;;) {
		size_t pe = i, fe = j;
		while (pe < pl && p[pe] != '/')
			pe++;
		while (fe < fl && f[fe] != '/')
			fe++;
		if (single_level(p, i, pe, '#'))
			return true;
		if (single_level(f, j, fe, '#'))
			return false;
		if (single_level(p, i, pe, '+')) {
			if (j == 0 && fe - j >= 1 && f[0] == '$')
				return false;
		} else if (single_level(f, j, fe, '+') || !bytes_eq(p + i, pe - i, f + j, fe - j)) {
			return false;
		}
		bool pend = pe >= pl, fend = fe >= fl;
		if (pend || fend)
			return pend && fend;
		i = pe + 1;
		j = fe + 1;
	}
}

/* Under devices/<id>/ (filters), or also exactly devices/<id> (topics: the device's
 * own devices/<id>/# pattern matches its parent level too). */
static bool device_scope(const uint8_t *id, size_t idl, const uint8_t *t, size_t tl,
			 bool topic)
{
	const size_t pl = MQTT_ACL_DEV_PREFIX_LEN;
	if (tl < pl + idl || memcmp(t, MQTT_ACL_DEV_PREFIX, pl) != 0 ||
	    memcmp(t + pl, id, idl) != 0)
		return false;
	if (tl == pl + idl)
		return topic;
	return t[pl + idl] == '/';
}

bool mqtt_acl_device_topic(const uint8_t *id, size_t id_len, const uint8_t *topic, size_t len)
{
	return device_scope(id, id_len, topic, len, true);
}

bool mqtt_acl_device_filter(const uint8_t *id, size_t id_len, const uint8_t *filter, size_t len)
{
	return device_scope(id, id_len, filter, len, false);
}

/* Does one of the patterns match the topic? */
static bool any_matches(const char *const *patterns, uint16_t n, const uint8_t *t, size_t tl)
{
	for (uint16_t i = 0; i < n; i++)
		if (mqtt_filter_match((const uint8_t *)patterns[i], strlen(patterns[i]), t, tl))
			return true;
	return false;
}

uint16_t mqtt_acl_rule_find(const struct mqtt_acl_service *services, uint16_t n,
			    const uint8_t *id, size_t id_len)
{
	uint16_t any = MQTT_ACL_NO_RULE;
	for (uint16_t i = 0; i < n; i++) {
		const char *rid = services[i].identity;
		if (!rid)
			any = any == MQTT_ACL_NO_RULE ? i : any;
		else if (bytes_eq((const uint8_t *)rid, strlen(rid), id, id_len))
			return i;
	}
	return any;
}

bool mqtt_acl_pub_ok(const struct mqtt_acl_subject *who, const uint8_t *topic, size_t len)
{
	if (who->kind == MQTT_ID_DEVICE)
		return mqtt_acl_device_topic(who->id, who->id_len, topic, len);
	return who->rule && any_matches(who->rule->pub, who->rule->n_pub, topic, len);
}

bool mqtt_acl_sub_ok(const struct mqtt_acl_subject *who, const uint8_t *filter, size_t len)
{
	if (who->kind == MQTT_ID_DEVICE)
		return mqtt_acl_device_filter(who->id, who->id_len, filter, len);
	if (!who->rule)
		return false;
	for (uint16_t i = 0; i < who->rule->n_sub; i++) {
		const char *p = who->rule->sub[i];
		if (covered((const uint8_t *)p, strlen(p), filter, len))
			return true;
	}
	return false;
}

bool mqtt_acl_read_ok(const struct mqtt_acl_subject *who, const uint8_t *topic, size_t len)
{
	if (who->kind == MQTT_ID_DEVICE)
		return mqtt_acl_device_topic(who->id, who->id_len, topic, len);
	return who->rule && any_matches(who->rule->sub, who->rule->n_sub, topic, len);
}
