/* SPDX-License-Identifier: MIT
 *
 * One core's allowlist (tls.registry_mode = "allowlist"): the device identities that may
 * connect, from the image (tls.registry), from storage (restored at boot) and from the
 * console (at run time), in a lib/nameset sized by tls.registry_max and
 * tls.registry_name_kb, in a region of its own. Each core holds its own copy, changed only
 * by that core (the console's changes reach every core as a message). In open mode nothing
 * is allocated and node_allowlist_on says false: every identity is admitted.
 */
#ifndef KERNEL_NODE_ALLOWLIST_H
#define KERNEL_NODE_ALLOWLIST_H

#include "lib/compiler.h"

struct nameset;

struct node_allowlist {
	struct nameset *set; /* NULL in open mode */
	void *mem;           /* node_port_region */
	size_t mem_len;
};

/* Open mode (on false): a, zeroed, 0. Allowlist mode: the set made and the image's names added: 0,
 * -E_NOMEM (no region, or tls.registry does not fit the configured size), or the random
 * source's error. */
MUST_CHECK int node_allowlist_init(struct node_allowlist *a, bool on);
void node_allowlist_fini(struct node_allowlist *a);
bool node_allowlist_on(const struct node_allowlist *a);
/* Whether the image's own tls.registry names this identity (the console cannot remove it). */
bool node_allowlist_in_image(const char *name, size_t len);
/* Add: 0, -E_EXIST, -E_RANGE, -E_NOMEM (full); remove: 0, -E_NOENT. -E_NOSYS in open mode. */
MUST_CHECK int node_allowlist_add(struct node_allowlist *a, const char *name, size_t len);
MUST_CHECK int node_allowlist_remove(struct node_allowlist *a, const char *name, size_t len);
/* The set the handshakes ask (NULL in open mode). */
const struct nameset *node_allowlist_set(const struct node_allowlist *a);

#endif
