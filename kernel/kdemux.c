/* SPDX-License-Identifier: MIT
 *
 * kdemux (kernel/kdemux.h): a sorted table of disjoint kind ranges and the dispatch of
 * mesh messages by kind. Owns nothing but the caller's table; never reads a payload.
 */
#include "kernel/kdemux.h"
#include "lib/err.h"
#include "lib/mem.h"

int kdemux_init(struct kdemux *d, struct kdemux_entry *tab, uint32_t cap)
{
	if (!d || !tab || cap == 0)
		return -E_INVAL;
	memset(d, 0, sizeof *d);
	memset(tab, 0, (size_t)cap * sizeof *tab);
	d->tab = tab;
	d->cap = cap;
	return 0;
}

int kdemux_register(struct kdemux *d, uint16_t first, uint16_t last, xcore_recv_fn fn, void *ctx)
{
	if (!d || !fn || first > last)
		return -E_INVAL;
	uint32_t at = 0;
	while (at < d->n && d->tab[at].first < first)
		at++;
	/* Sorted and disjoint (invariant 1): only the neighbours can overlap. */
	if (at > 0 && d->tab[at - 1].last >= first)
		return -E_EXIST;
	if (at < d->n && d->tab[at].first <= last)
		return -E_EXIST;
	if (d->n == d->cap)
		return -E_NOMEM;
	for (uint32_t i = d->n; i > at; i--)
		d->tab[i] = d->tab[i - 1];
	d->tab[at] = (struct kdemux_entry){ .first = first, .last = last, .fn = fn, .ctx = ctx };
	d->n++;
	return 0;
}

static struct kdemux_entry *kdemux_find(const struct kdemux *d, uint16_t kind)
{
	for (uint32_t i = 0; i < d->n; i++) {
		if (kind < d->tab[i].first)
			return NULL; /* sorted: no later range can hold it */
		if (kind <= d->tab[i].last)
			return &d->tab[i];
	}
	return NULL;
}

void kdemux_recv(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct kdemux *d = ctx;
	struct kdemux_entry *e = kdemux_find(d, msg->kind);
	if (!e) {
		d->n_unclaimed++;
		return;
	}
	e->n_msgs++;
	e->fn(e->ctx, src, msg);
}

uint32_t kdemux_poll(struct kdemux *d, struct xcore_mesh *m, uint32_t self)
{
	return xcore_poll(m, self, kdemux_recv, d);
}

uint64_t kdemux_count(const struct kdemux *d, uint16_t kind)
{
	const struct kdemux_entry *e = kdemux_find(d, kind);
	return e ? e->n_msgs : 0;
}
