/* SPDX-License-Identifier: MIT
 *
 * Link impairment for one direction of the hosted NIC, following netem's model (loss,
 * then reorder = "send now, overtaking", else a fixed delay). It exists because the test
 * kernel may lack sch_netem; the smoke test uses netem when present and this otherwise.
 * Deterministic for a seed (splitmix64); the delay queue is a bounded ring sized at init,
 * and a frame that does not fit is dropped and counted, never allocated for.
 */
#include <stdlib.h>

#include "hosted/hosted.h"
#include "lib/err.h"

static uint64_t next_rand(struct hosted_impair *im)
{
	uint64_t z = (im->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool chance(struct hosted_impair *im, uint32_t pct)
{
	return pct && next_rand(im) % 100 < pct;
}

int hosted_impair_init(struct hosted_impair *im, uint32_t loss_pct, uint32_t reorder_pct,
		       uint32_t delay_ms, uint32_t cap, uint64_t seed)
{
	*im = (struct hosted_impair){0};
	if (loss_pct > 100 || reorder_pct > 100 || delay_ms > 60000 || !cap)
		return -E_INVAL;
	im->q = calloc(cap, sizeof im->q[0]);
	if (!im->q)
		return -E_NOMEM;
	im->cap = cap;
	im->loss_pct = loss_pct;
	im->reorder_pct = reorder_pct;
	im->delay_ms = delay_ms;
	im->rng = seed;
	return 0;
}

void hosted_impair_fini(struct hosted_impair *im)
{
	free(im->q);
	*im = (struct hosted_impair){0};
}

bool hosted_impair_on(const struct hosted_impair *im)
{
	return im->loss_pct || im->reorder_pct || im->delay_ms;
}

enum hosted_impair_verdict hosted_impair_offer(struct hosted_impair *im, uint8_t *frame,
					       size_t len, uint64_t now_ms)
{
	if (chance(im, im->loss_pct)) {
		im->dropped++;
		return HOSTED_IMPAIR_DROP;
	}
	/* Without a delay there is nothing to overtake: reorder by holding this frame back
	 * one period of 1 ms instead, so the next frames pass it. */
	uint32_t delay = im->delay_ms;
	if (im->reorder_pct && chance(im, im->reorder_pct)) {
		if (delay) {
			im->reordered++;
			return HOSTED_IMPAIR_PASS;
		}
		delay = 1;
		im->reordered++;
	}
	if (!delay)
		return HOSTED_IMPAIR_PASS;
	if (im->n == im->cap) {
		im->queue_full++;
		return HOSTED_IMPAIR_DROP;
	}
	/* The queue stays sorted by due time: delay is constant except for the 1 ms hold
	 * above, used only when delay_ms is 0 (then every queued item has delay 1). */
	struct hosted_impair_item *it = &im->q[(im->head + im->n) % im->cap];
	it->frame = frame;
	it->len = len;
	it->due_ms = now_ms + delay;
	im->n++;
	im->delayed++;
	return HOSTED_IMPAIR_QUEUED;
}

uint8_t *hosted_impair_pop(struct hosted_impair *im, uint64_t now_ms, size_t *len)
{
	if (!im->n || im->q[im->head].due_ms > now_ms)
		return NULL;
	struct hosted_impair_item *it = &im->q[im->head];
	uint8_t *f = it->frame;
	*len = it->len;
	*it = (struct hosted_impair_item){0};
	im->head = (im->head + 1) % im->cap;
	im->n--;
	return f;
}

uint64_t hosted_impair_next_ms(const struct hosted_impair *im)
{
	return im->n ? im->q[im->head].due_ms : UINT64_MAX;
}
