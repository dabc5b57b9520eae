/* SPDX-License-Identifier: MIT
 *
 * The image's revoked certificate serials (the list embedded at build time,
 * $(B)/gen/urmqtt_certs.h), parsed once into a bounded set: the node's broker checks them
 * in every handshake, storage keeps them in its table. A set owns its storage; it is
 * filled on one core and then read there (or copied).
 */
#ifndef KERNEL_NODE_REVOKED_H
#define KERNEL_NODE_REVOKED_H

#include "lib/compiler.h"
#include "tls/revoke.h"

#define NODE_MAX_REVOKED 64u /* serials one set holds: the image's, then storage's */

struct node_revoked {
	struct tls_revoke_entry entries[NODE_MAX_REVOKED];
	uint8_t bytes[NODE_MAX_REVOKED][TLS_REVOKE_SERIAL_MAX];
	struct tls_revoke_set set;
};

/* r emptied, then the image's serials added. 0, or tls_revoke_set_add_hex's error (a
 * malformed list, or more than NODE_MAX_REVOKED serials). */
MUST_CHECK int node_revoked_image(struct node_revoked *r);

#endif
