/* SPDX-License-Identifier: MIT
 *
 * One core's allowlist (kernel/node/allowlist.h). Owns its region and the set in it; the
 * set is keyed with this core's own random key (no other core reads it).
 */
#include "kernel/node/allowlist.h"

#include "kernel/node/port.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "lib/nameset.h"
#include "tls/identity.h"
#include "urmqtt_config.h"

static struct nameset_config allow_config(void)
{
	return (struct nameset_config){
		.max_names = CONF_TLS_REGISTRY_MAX,
		.name_bytes = (uint32_t)CONF_TLS_REGISTRY_NAME_KB << 10,
		.max_len = (uint16_t)TLS_IDENTITY_CAP,
	};
}

int node_allowlist_init(struct node_allowlist *a, bool on)
{
	memset(a, 0, sizeof *a);
	if (!on)
		return 0;
	struct nameset_config nc = allow_config();
	size_t need = nameset_mem_size(&nc);
	uint8_t key[16];
	int rc;
	if (!need || !(a->mem = node_port_region(need, &a->mem_len)))
		return -E_NOMEM;
	if ((rc = node_port_random(key, sizeof key)) != 0 || (rc = nameset_init(&a->set, a->mem, a->mem_len, &nc, key)))
		goto fail;
	mem_wipe(key, sizeof key);
	for (size_t i = 0; conf_tls_registry[i]; i++) {
		rc = nameset_add(a->set, conf_tls_registry[i], strlen(conf_tls_registry[i]));
		if (rc && rc != -E_EXIST)
			goto fail;
	}
	return 0;
fail:
	mem_wipe(key, sizeof key);
	node_allowlist_fini(a);
	return rc ? rc : -E_NOMEM;
}

void node_allowlist_fini(struct node_allowlist *a)
{
	if (a->mem)
		node_port_region_free(a->mem, a->mem_len);
	memset(a, 0, sizeof *a);
}

bool node_allowlist_on(const struct node_allowlist *a)
{
	return a->set != NULL;
}

bool node_allowlist_in_image(const char *name, size_t len)
{
	for (size_t i = 0; conf_tls_registry[i]; i++)
		if (strlen(conf_tls_registry[i]) == len && memcmp(conf_tls_registry[i], name, len) == 0)
			return true;
	return false;
}

int node_allowlist_add(struct node_allowlist *a, const char *name, size_t len)
{
	return a->set ? nameset_add(a->set, name, len) : -E_NOSYS;
}

int node_allowlist_remove(struct node_allowlist *a, const char *name, size_t len)
{
	return a->set ? nameset_remove(a->set, name, len) : -E_NOSYS;
}

const struct nameset *node_allowlist_set(const struct node_allowlist *a)
{
	return a->set;
}
