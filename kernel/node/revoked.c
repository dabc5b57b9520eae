/* SPDX-License-Identifier: MIT
 *
 * One core's revocations (kernel/node/revoked.h). Owns nothing but its bounded sets;
 * linear scans: revocations are few, and asked once per handshake.
 */
#include "kernel/node/revoked.h"

#include "lib/err.h"
#include "lib/mem.h"
#include "lib/nameset.h"
#include "urmqtt_certs.h"

int node_revoked_image(struct node_revoked *r)
{
	memset(r, 0, sizeof *r);
	tls_revoke_set_init(&r->set, r->entries, r->bytes, NODE_MAX_REVOKED);
	return tls_revoke_set_add_hex(&r->set, urmqtt_revoked_serials);
}

bool node_revoked_in_image(const uint8_t *serial, size_t len)
{
	for (size_t i = 0; urmqtt_revoked_serials[i]; i++) {
		uint8_t b[TLS_REVOKE_SERIAL_MAX];
		size_t n;
		struct tls_revoke_entry e = { b, 0 };
		struct tls_revoke_list l = { &e, 1 };
		const char *h = urmqtt_revoked_serials[i];
		if (tls_revoke_serial_from_hex(h, strlen(h), b, &n) != 0)
			continue;
		e.len = (uint8_t)n;
		if (tls_revoke_list_check(&l, serial, len))
			return true;
	}
	return false;
}

static bool revoked_serial(void *ctx, const uint8_t *serial, size_t len)
{
	struct node_revoked *r = ctx;
	return tls_revoke_list_check(&r->set.list, serial, len);
}

static bool revoked_id(void *ctx, const char *name, size_t len)
{
	return node_revoked_id(ctx, name, len);
}

static bool listed_id(void *ctx, const char *name, size_t len)
{
	const struct node_revoked *r = ctx;
	return nameset_has(r->allowed, name, len);
}

struct tls_revoke node_revoked_hooks(struct node_revoked *r)
{
	return (struct tls_revoke){ .is_revoked = revoked_serial, .is_revoked_id = revoked_id,
				    .is_listed_id = r->allowed ? listed_id : NULL, .ctx = r };
}

static int find_id(const struct node_revoked *r, const char *name, size_t len)
{
	for (uint32_t i = 0; i < r->n_ids; i++)
		if (r->id_len[i] == len && memcmp(r->ids[i], name, len) == 0)
			return (int)i;
	return -1;
}

bool node_revoked_id(const struct node_revoked *r, const char *name, size_t len)
{
	return find_id(r, name, len) >= 0;
}

int node_revoked_add_id(struct node_revoked *r, const char *name, size_t len)
{
	if (!len || len > TLS_IDENTITY_CAP)
		return -E_RANGE;
	if (find_id(r, name, len) >= 0)
		return -E_EXIST;
	if (r->n_ids >= NODE_MAX_REVOKED_IDS)
		return -E_NOMEM;
	memcpy(r->ids[r->n_ids], name, len);
	r->id_len[r->n_ids++] = (uint8_t)len;
	return 0;
}

int node_revoked_remove_id(struct node_revoked *r, const char *name, size_t len)
{
	int i = find_id(r, name, len);
	if (i < 0)
		return -E_NOENT;
	uint32_t last = --r->n_ids;
	memcpy(r->ids[i], r->ids[last], TLS_IDENTITY_CAP);
	r->id_len[i] = r->id_len[last];
	return 0;
}
