/* SPDX-License-Identifier: MIT
 *
 * The TLS hooks on the platform port (kernel/node/tls_port.h). Stateless adapters from the
 * hooks' (ctx, ...) shape to kernel/node/port.h; the heap here has no budget of its own
 * (the node's broker wraps it with one).
 */
#include "kernel/node/tls_port.h"

#include "kernel/node/port.h"

static void *tp_hs_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx;
	return node_port_alloc(len, tag);
}

static void tp_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	node_port_free(p, len);
}

static int tp_random(void *ctx, uint8_t *out, size_t len)
{
	(void)ctx;
	return node_port_random(out, len);
}

static int64_t tp_now_s(void *ctx)
{
	(void)ctx;
	return node_port_wall_s();
}

static int64_t tp_now_ms(void *ctx)
{
	(void)ctx;
	return (int64_t)node_port_now_ms();
}

/* mbedTLS's hooks are process-wide: they name the core that calls, not the one that
 * installed them. */
static uint32_t tp_core(void *ctx)
{
	(void)ctx;
	return node_port_core_self();
}

static void *tp_rec_alloc(void *ctx, size_t len)
{
	(void)ctx;
	return node_port_alloc(len, HEAP_TAG_TLS_RECORD);
}

struct tls_hs_ops node_tls_port_hs_ops(void)
{
	return (struct tls_hs_ops){
		.alloc = tp_hs_alloc, .free = tp_free, .random = tp_random,
		.now_s = tp_now_s, .now_ms = tp_now_ms, .ctx = NULL, .core = tp_core,
	};
}

struct tls_rec_ops node_tls_port_rec_ops(void)
{
	return (struct tls_rec_ops){ .alloc = tp_rec_alloc, .free = tp_free, .ctx = NULL };
}
