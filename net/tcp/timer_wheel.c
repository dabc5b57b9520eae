/* SPDX-License-Identifier: MIT
 *
 * Hierarchical timer wheel (see timer_wheel.h for the design note). Owns only the slot
 * sentinels; nodes live in the caller's objects. Never allocates, never recurses.
 */
#include "net/tcp/timer_wheel.h"
#include "lib/err.h"

#define SCRATCH (TCP_TW_LEVELS * TCP_TW_SLOTS)
#define MASK (TCP_TW_SLOTS - 1u)

static struct tcp_tw_node *node(const struct tcp_tw_wheel *w, uint32_t idx)
{
	if (idx >= w->n_nodes)
		return (struct tcp_tw_node *)(uintptr_t)&w->heads[idx - w->n_nodes]; /* NOLINT(performance-no-int-to-ptr): drops const of the list head on purpose */
	return (struct tcp_tw_node *)(void *)(w->base + (size_t)idx * w->stride + w->node_off);
}

static uint32_t head_idx(const struct tcp_tw_wheel *w, uint32_t slot)
{
	return w->n_nodes + slot;
}

void tcp_tw_init(struct tcp_tw_wheel *w, void *base, size_t stride, size_t node_off,
		 uint32_t n_nodes, uint32_t now_tick)
{
	w->base = base;
	w->stride = stride;
	w->node_off = node_off;
	w->n_nodes = n_nodes;
	w->now = now_tick;
	w->n_linked = 0;
	for (uint32_t l = 0; l < TCP_TW_LEVELS; l++)
		w->occupied[l] = 0;
	for (uint32_t s = 0; s <= SCRATCH; s++) {
		uint32_t h = head_idx(w, s);
		w->heads[s].next = h;
		w->heads[s].prev = h;
		w->heads[s].expires = 0;
	}
	for (uint32_t i = 0; i < n_nodes; i++)
		tcp_tw_node_reset(w, i);
}

void tcp_tw_node_reset(struct tcp_tw_wheel *w, uint32_t idx)
{
	struct tcp_tw_node *n = node(w, idx);
	n->next = n->prev = TCP_TW_NIL;
	n->expires = 0;
}

static void link_tail(struct tcp_tw_wheel *w, uint32_t h, uint32_t idx)
{
	struct tcp_tw_node *hd = node(w, h), *n = node(w, idx);
	n->next = h;
	n->prev = hd->prev;
	node(w, hd->prev)->next = idx;
	hd->prev = idx;
	uint32_t slot = h - w->n_nodes;
	if (slot < SCRATCH)
		w->occupied[slot / TCP_TW_SLOTS] |= 1ull << (slot % TCP_TW_SLOTS);
}

static void unlink(struct tcp_tw_wheel *w, uint32_t idx)
{
	struct tcp_tw_node *n = node(w, idx);
	uint32_t prev = n->prev, next = n->next;
	node(w, prev)->next = next;
	node(w, next)->prev = prev;
	n->next = n->prev = TCP_TW_NIL;
	if (prev == next && prev >= w->n_nodes) { /* only the sentinel is left */
		uint32_t slot = prev - w->n_nodes;
		if (slot < SCRATCH)
			w->occupied[slot / TCP_TW_SLOTS] &= ~(1ull << (slot % TCP_TW_SLOTS));
	}
}

/* Slot for a node expiring at `expires`, relative to w->now (invariants 2 and 3). */
static uint32_t slot_for(const struct tcp_tw_wheel *w, uint32_t expires)
{
	uint32_t delta = expires - w->now;
	if ((int32_t)delta < 0) {
		delta = 0;
		expires = w->now;
	}
	for (uint32_t lvl = 0; lvl < TCP_TW_LEVELS; lvl++) {
		uint32_t shift = lvl * TCP_TW_SLOT_BITS;
		if (delta < (TCP_TW_SLOTS << shift) || lvl == TCP_TW_LEVELS - 1) {
			if (lvl == TCP_TW_LEVELS - 1 && delta >= (TCP_TW_SLOTS << shift))
				expires = w->now + ((TCP_TW_SLOTS - 1u) << shift); /* clamp; re-cascaded */
			return lvl * TCP_TW_SLOTS + ((expires >> shift) & MASK);
		}
	}
	return 0; /* not reached */
}

static void place(struct tcp_tw_wheel *w, uint32_t idx)
{
	link_tail(w, head_idx(w, slot_for(w, node(w, idx)->expires)), idx);
}

bool tcp_tw_armed(const struct tcp_tw_wheel *w, uint32_t idx)
{
	return node(w, idx)->next != TCP_TW_NIL;
}

void tcp_tw_insert(struct tcp_tw_wheel *w, uint32_t idx, uint32_t expires_tick)
{
	if (tcp_tw_armed(w, idx))
		unlink(w, idx);
	else
		w->n_linked++;
	node(w, idx)->expires = expires_tick;
	place(w, idx);
}

void tcp_tw_cancel(struct tcp_tw_wheel *w, uint32_t idx)
{
	if (!tcp_tw_armed(w, idx))
		return;
	unlink(w, idx);
	w->n_linked--;
}

/* Move every node of one slot to where it belongs now. */
static void cascade(struct tcp_tw_wheel *w, uint32_t slot)
{
	uint32_t h = head_idx(w, slot);
	while (node(w, h)->next != h) {
		uint32_t idx = node(w, h)->next;
		unlink(w, idx);
		place(w, idx);
	}
}

size_t tcp_tw_advance(struct tcp_tw_wheel *w, uint32_t now_tick, tcp_tw_fire_fn fire, void *ctx)
{
	size_t fired = 0;
	uint32_t scratch = head_idx(w, SCRATCH);
	while ((int32_t)(now_tick - w->now) >= 0) {
		uint32_t t = w->now;
		if (w->n_linked == 0) {
			w->now = now_tick + 1; /* nothing armed: skip the idle stretch */
			break;
		}
		/* Cascade higher levels at their boundaries (invariant 2). */
		for (uint32_t lvl = 1; lvl < TCP_TW_LEVELS; lvl++) {
			uint32_t shift = lvl * TCP_TW_SLOT_BITS;
			if (t & ((1u << shift) - 1u))
				break;
			cascade(w, lvl * TCP_TW_SLOTS + ((t >> shift) & MASK));
		}
		uint32_t pos = t & MASK;
		if (!(w->occupied[0] >> pos & 1u)) {
			/* Nothing fires at t: jump to the next occupied level-0 slot, the next
			 * cascade boundary or past now_tick, whichever comes first. */
			uint64_t ahead = w->occupied[0] >> pos;
			uint32_t step = ahead ? (uint32_t)__builtin_ctzll(ahead) : TCP_TW_SLOTS - pos;
			uint32_t left = now_tick - t + 1u;
			w->now = t + MIN(step, left);
			continue;
		}
		/* Detach this tick's slot, then advance, so callbacks that re-arm at or before
		 * `t` land on the next tick instead of looping here (invariant 3). */
		uint32_t h = head_idx(w, t & MASK);
		while (node(w, h)->next != h) {
			uint32_t idx = node(w, h)->next;
			unlink(w, idx);
			link_tail(w, scratch, idx);
		}
		w->now = t + 1;
		while (node(w, scratch)->next != scratch) {
			uint32_t idx = node(w, scratch)->next;
			unlink(w, idx);
			w->n_linked--;
			fired++;
			fire(ctx, idx);
		}
	}
	return fired;
}

int tcp_tw_check(const struct tcp_tw_wheel *w)
{
	uint32_t count = 0;
	for (uint32_t s = 0; s < SCRATCH; s++) {
		uint32_t h = head_idx(w, s), prev = h;
		uint32_t it = node(w, h)->next;
		while (it != h) {
			if (it >= w->n_nodes || node(w, it)->prev != prev || count > w->n_nodes)
				return -E_CORRUPT;
			count++;
			prev = it;
			it = node(w, it)->next;
		}
	}
	if (count != w->n_linked)
		return -E_CORRUPT;
	for (uint32_t s = 0; s < SCRATCH; s++) {
		uint32_t h = head_idx(w, s);
		bool busy = node(w, h)->next != h;
		if (busy != (bool)(w->occupied[s / TCP_TW_SLOTS] >> (s % TCP_TW_SLOTS) & 1u))
			return -E_CORRUPT;
	}
	return 0;
}
