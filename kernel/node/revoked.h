/* SPDX-License-Identifier: MIT
 *
 * One core's revocations: certificate serials (the image's list embedded at build time,
 * $(B)/gen/urmqtt_certs.h, parsed once; those storage restores; those the console adds at
 * run time) and certificate identities revoked at run time, in bounded sets. The core's
 * handshakes ask them (node_revoked_hooks); each core holds its own copy, changed only by
 * that core (the console's changes reach every core as a message).
 */
#ifndef KERNEL_NODE_REVOKED_H
#define KERNEL_NODE_REVOKED_H

#include "lib/compiler.h"
#include "tls/identity.h"
#include "tls/revoke.h"

struct nameset;

#define NODE_MAX_REVOKED 64u     /* serials one set holds: the image's, storage's, the console's */
#define NODE_MAX_REVOKED_IDS 64u /* identities revoked at run time */

struct node_revoked {
	struct tls_revoke_entry entries[NODE_MAX_REVOKED];
	uint8_t bytes[NODE_MAX_REVOKED][TLS_REVOKE_SERIAL_MAX];
	struct tls_revoke_set set;
	uint32_t n_ids;
	uint8_t id_len[NODE_MAX_REVOKED_IDS];
	char ids[NODE_MAX_REVOKED_IDS][TLS_IDENTITY_CAP];
	/* The allowlist (kernel/node/allowlist.h), linked by the broker after
	 * node_revoked_image; NULL: open registry. */
	const struct nameset *allowed;
};

/* r emptied, then the image's serials added. 0, or tls_revoke_set_add_hex's error (a
 * malformed list, or more than NODE_MAX_REVOKED serials). */
MUST_CHECK int node_revoked_image(struct node_revoked *r);
/* Whether the image's own list revokes this serial (DER bytes, borrowed). */
bool node_revoked_in_image(const uint8_t *serial, size_t len);
/* The handshake's revocation hooks over r (linked), with the allowlist when r->allowed. */
struct tls_revoke node_revoked_hooks(struct node_revoked *r);
/* An identity (1..TLS_IDENTITY_CAP bytes, borrowed). Add: 0, -E_EXIST, -E_RANGE, -E_NOMEM
 * (full); remove: 0 or -E_NOENT. */
MUST_CHECK int node_revoked_add_id(struct node_revoked *r, const char *name, size_t len);
MUST_CHECK int node_revoked_remove_id(struct node_revoked *r, const char *name, size_t len);
bool node_revoked_id(const struct node_revoked *r, const char *name, size_t len);

#endif
