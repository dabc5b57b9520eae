/* SPDX-License-Identifier: MIT
 *
 * The hosted platform's fixed frame pool: every frame the TAP reads into and every frame
 * the stack transmits from comes from one allocation made at start-up. Never allocates
 * after hosted_pool_init(); a put of a pointer it did not lend aborts (a bug, not input).
 */
#include <stdio.h>
#include <stdlib.h>

#include "hosted/hosted.h"
#include "lib/err.h"

int hosted_pool_init(struct hosted_pool *p, uint32_t n, size_t frame_size)
{
	*p = (struct hosted_pool){0};
	if (!n || frame_size < 64 || frame_size > 65536)
		return -E_INVAL;
	p->mem = calloc(n, frame_size);
	p->free_idx = calloc(n, sizeof p->free_idx[0]);
	p->in_use = calloc(n, 1);
	if (!p->mem || !p->free_idx || !p->in_use) {
		hosted_pool_fini(p);
		return -E_NOMEM;
	}
	p->n = n;
	p->frame_size = frame_size;
	for (uint32_t i = 0; i < n; i++)
		p->free_idx[i] = n - 1 - i;
	p->n_free = n;
	p->low_water = n;
	return 0;
}

void hosted_pool_fini(struct hosted_pool *p)
{
	free(p->mem);
	free(p->free_idx);
	free(p->in_use);
	*p = (struct hosted_pool){0};
}

uint8_t *hosted_pool_get(struct hosted_pool *p)
{
	if (!p->n_free) {
		p->exhausted++;
		return NULL;
	}
	uint32_t i = p->free_idx[--p->n_free];
	if (p->n_free < p->low_water)
		p->low_water = p->n_free;
	p->in_use[i] = 1;
	return p->mem + (size_t)i * p->frame_size;
}

void hosted_pool_put(struct hosted_pool *p, uint8_t *frame)
{
	uintptr_t a = (uintptr_t)frame, base = (uintptr_t)p->mem;
	size_t off = (size_t)(a - base);
	if (a < base || off % p->frame_size || off / p->frame_size >= p->n ||
	    !p->in_use[off / p->frame_size]) {
		fprintf(stderr, "hosted: bad frame put %p\n", (void *)frame);
		abort();
	}
	uint32_t i = (uint32_t)(off / p->frame_size);
	p->in_use[i] = 0;
	p->free_idx[p->n_free++] = i;
}
