/* SPDX-License-Identifier: MIT
 *
 * The image's revoked serials (kernel/node/revoked.h). Owns nothing but the parse.
 */
#include "kernel/node/revoked.h"

#include "lib/mem.h"
#include "urmqtt_certs.h"

int node_revoked_image(struct node_revoked *r)
{
	memset(r, 0, sizeof *r);
	tls_revoke_set_init(&r->set, r->entries, r->bytes, NODE_MAX_REVOKED);
	return tls_revoke_set_add_hex(&r->set, urmqtt_revoked_serials);
}
