/* SPDX-License-Identifier: MIT
 * Fuzz target for tls/identity: byte 0 chooses the configuration (CN or SAN URI, service
 * prefix or none, maximum length), the rest is a DER certificate parsed by mbedTLS and
 * handed to the identity rules. Checks: no crash, an accepted identity is non-empty,
 * within max_len, NUL-terminated and free of topic-unsafe bytes; no allocation leaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls/handshake.h"
#include "tls/identity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long live;
static void *f_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx;
	(void)tag;
	live++;
	return malloc(len);
}
static void f_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	live--;
	free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	if (!init) {
		struct tls_hs_ops ops = { f_alloc, f_free, NULL, NULL, NULL, NULL, NULL };
		tls_hs_hooks_install(&ops);
		init = true;
	}
	if (size < 1)
		return 0;
	struct tls_id_config cfg = { (uint8_t)(data[0] & 1), (uint16_t)(((data[0] >> 2) & 63) + 1),
				     (data[0] & 2) ? "urn:urmqtt:svc:" : NULL };
	struct tls_identity id;
	if (tls_identity_from_der(&cfg, data + 1, size - 1, &id) == 0) {
		if (id.len == 0 || id.len > cfg.max_len || id.name[id.len] != 0 ||
		    strlen(id.name) != id.len)
			abort();
		for (size_t i = 0; i < id.len; i++)
			if (id.name[i] == '/' || id.name[i] == '+' || id.name[i] == '#' ||
			    (unsigned char)id.name[i] <= 0x20 || (unsigned char)id.name[i] >= 0x7f)
				abort();
	}
	if (live != 0)
		abort();
	return 0;
}
