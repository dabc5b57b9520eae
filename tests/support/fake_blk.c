/* SPDX-License-Identifier: MIT
 *
 * tests/support/fake_blk.h. Two images (cur: what reads see; dur: what is durable) and a
 * log of the writes completed since the last flush (the volatile cache). A flush applies
 * the log to dur in order and empties it; a power cut applies a seeded subset of the log
 * to a copy of dur in a seeded order.
 * Invariants: 1. cur == dur + the log applied in order. 2. Requests complete in the
 * order they were submitted. 3. After death every request fails and nothing changes.
 * 4. blank: nothing was written since creation (cur and dur hold zeros only).
 * Images are copied into blank ones chunk by chunk, all-zero chunks skipped (copy_to_blank),
 * and the image buffers of freed disks are kept for the next disk of that size (zeroed when
 * taken; poisoned for ASan while kept, so a use after fake_blk_free is still reported):
 * the tests make thousands of mostly empty disks, and faulting in and writing every page
 * of fresh ones was most of the store tests' time under ASan. The bytes are the same.
 */
#include "tests/support/fake_blk.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#include "lib/err.h"

#define SECTOR 512u
#define NONE UINT64_MAX

struct fb_write {
	uint64_t off;  /* bytes */
	uint32_t len;
	uint8_t *data; /* malloc'd */
};

struct fake_blk {
	struct fake_blk_config cfg;
	struct blk_dev dev;
	uint8_t *cur, *dur;
	size_t size;
	struct fb_write *log;
	size_t n_log, cap_log;
	struct blk_req **q; /* submitted, not yet completed: FIFO */
	uint32_t q_head, q_n;
	uint32_t polls;     /* polls spent on the head request */
	uint64_t n_submit_calls, n_accepted;
	uint64_t fail_req, stall_req, die_req, fail_sub;
	int fail_req_err, fail_sub_err;
	uint64_t die_seed;
	bool dead;
	bool blank; /* invariant 4 */
	/* per queued request: its request number */
	uint64_t *q_num;
	struct fake_blk_counts cnt;
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* dst (len bytes, zeros) gets src's bytes: the all-zero chunks of src are not written. */
static void copy_to_blank(uint8_t *dst, const uint8_t *src, size_t len)
{
	static const uint8_t zeros[4096];
	for (size_t o = 0; o < len; o += sizeof zeros) {
		size_t n = len - o < sizeof zeros ? len - o : sizeof zeros;
		if (memcmp(src + o, zeros, n))
			memcpy(dst + o, src + o, n);
	}
}

/* The kept image buffers, oldest first (single-threaded, as the rest): at most POOL_N,
 * POOL_BYTES in all. */
#define POOL_N 16u
#define POOL_BYTES ((size_t)256 << 20)
static struct {
	uint8_t *p[POOL_N];
	size_t size[POOL_N];
	uint32_t n;
	size_t bytes;
} pool;

/* size bytes of zeros: a kept buffer of that size, else a fresh calloc. */
static uint8_t *image_alloc(size_t size)
{
	for (uint32_t i = 0; i < pool.n; i++) {
		if (pool.size[i] != size)
			continue;
		uint8_t *p = pool.p[i];
		pool.n--;
		memmove(&pool.p[i], &pool.p[i + 1], (pool.n - i) * sizeof pool.p[0]);
		memmove(&pool.size[i], &pool.size[i + 1], (pool.n - i) * sizeof pool.size[0]);
		pool.bytes -= size;
		UNPOISON(p, size);
		memset(p, 0, size);
		return p;
	}
	return calloc(1, size);
}

/* Keeps p: the oldest kept buffers are freed to make room (a test's disks change size). */
static void image_free(uint8_t *p, size_t size)
{
	if (!p)
		return;
	if (size > POOL_BYTES) {
		free(p);
		return;
	}
	while (pool.n && (pool.n == POOL_N || size > POOL_BYTES - pool.bytes)) {
		UNPOISON(pool.p[0], pool.size[0]);
		free(pool.p[0]);
		pool.bytes -= pool.size[0];
		pool.n--;
		memmove(&pool.p[0], &pool.p[1], pool.n * sizeof pool.p[0]);
		memmove(&pool.size[0], &pool.size[1], pool.n * sizeof pool.size[0]);
	}
	POISON(p, size);
	pool.p[pool.n] = p;
	pool.size[pool.n++] = size;
	pool.bytes += size;
}

static void fb_abort(const char *why)
{
	(void)why;
	abort(); /* a test bug or no memory: stop loudly */
}

static void log_push(struct fake_blk *f, uint64_t off, uint32_t len, const uint8_t *data)
{
	if (f->n_log == f->cap_log) {
		size_t cap = f->cap_log ? 2 * f->cap_log : 64;
		struct fb_write *l = realloc(f->log, cap * sizeof *l);
		if (!l)
			fb_abort("no memory");
		f->log = l;
		f->cap_log = cap;
	}
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		fb_abort("no memory");
	if (data)
		memcpy(copy, data, len);
	else
		memset(copy, 0, len);
	f->log[f->n_log++] = (struct fb_write){ off, len, copy };
	memcpy(f->cur + off, copy, len);
	f->cnt.unflushed = f->n_log;
}

static void log_clear(struct fake_blk *f)
{
	for (size_t i = 0; i < f->n_log; i++)
		free(f->log[i].data);
	f->n_log = 0;
	f->cnt.unflushed = 0;
}

/* A write reaching the disk: the cache (log) or, without one, the durable image too. */
static void apply_write(struct fake_blk *f, uint64_t off, uint32_t len, const uint8_t *data)
{
	if (f->cfg.no_cache) {
		if (data)
			memcpy(f->cur + off, data, len);
		else
			memset(f->cur + off, 0, len);
		memcpy(f->dur + off, f->cur + off, len);
		return;
	}
	log_push(f, off, len, data);
}

static void do_flush(struct fake_blk *f)
{
	for (size_t i = 0; i < f->n_log; i++)
		memcpy(f->dur + f->log[i].off, f->log[i].data, f->log[i].len);
	log_clear(f);
}

/* Power fails during this write: a seeded subset of its sectors reaches the cache. */
static void torn_write(struct fake_blk *f, const struct blk_req *r)
{
	uint64_t s = f->die_seed;
	size_t bytes = (size_t)r->n_blocks * f->cfg.block_size;
	uint64_t off = r->lba * f->cfg.block_size;
	for (size_t o = 0; o < bytes; o += SECTOR)
		if (rng_next(&s) & 1u)
			apply_write(f, off + o, SECTOR,
				    r->op == BLK_WRITE ? (const uint8_t *)r->buf + o : NULL);
}

static int fb_submit(void *impl, struct blk_req *r)
{
	struct fake_blk *f = impl;
	uint64_t call = f->n_submit_calls++;
	if (call == f->fail_sub)
		return f->fail_sub_err;
	if (f->q_n == f->cfg.depth)
		return -E_AGAIN;
	if (r->op > BLK_WRITE_ZEROES)
		return -E_INVAL;
	if (r->op == BLK_FLUSH) {
		if (f->cfg.no_cache)
			return -E_NOSYS;
	} else {
		if (r->n_blocks == 0 || r->lba > f->cfg.blocks || r->n_blocks > f->cfg.blocks - r->lba)
			return -E_RANGE;
		if ((r->op == BLK_READ || r->op == BLK_WRITE) && !r->buf)
			return -E_INVAL;
		if (r->op == BLK_DISCARD && !f->cfg.discard)
			return -E_NOSYS;
		if (r->op == BLK_WRITE_ZEROES && !f->cfg.write_zeroes)
			return -E_NOSYS;
		if (r->op != BLK_READ && f->cfg.read_only)
			return -E_PERM;
		if ((r->op == BLK_DISCARD || r->op == BLK_WRITE_ZEROES) && f->cfg.max_discard &&
		    r->n_blocks > f->cfg.max_discard)
			return -E_INVAL;
	}
	uint32_t at = (f->q_head + f->q_n) % f->cfg.depth;
	f->q[at] = r;
	f->q_num[at] = f->n_accepted++;
	f->q_n++;
	f->cnt.requests++;
	f->blank = false; /* conservative: any accepted request */
	return 0;
}

static void fb_kick(void *impl)
{
	(void)impl;
}

static void complete(struct fake_blk *f, struct blk_req *r, uint64_t num)
{
	r->status = 0;
	if (num == f->die_req && !f->dead) {
		f->dead = true;
		if (r->op == BLK_WRITE || r->op == BLK_DISCARD || r->op == BLK_WRITE_ZEROES)
			torn_write(f, r);
	}
	if (f->dead) {
		r->status = -E_IO;
		return;
	}
	if (num == f->fail_req) {
		r->status = f->fail_req_err;
		return;
	}
	size_t bs = f->cfg.block_size;
	uint64_t off = r->lba * bs;
	size_t len = (size_t)r->n_blocks * bs;
	switch (r->op) {
	case BLK_READ:
		memcpy(r->buf, f->cur + off, len);
		f->cnt.reads++;
		break;
	case BLK_WRITE:
		for (size_t o = 0; o < len; o += 65536u) /* one log entry per 64 KiB */
			apply_write(f, off + o, (uint32_t)(len - o < 65536u ? len - o : 65536u),
				    (const uint8_t *)r->buf + o);
		f->cnt.writes++;
		f->cnt.blocks_written += r->n_blocks;
		break;
	case BLK_DISCARD:
	case BLK_WRITE_ZEROES:
		for (size_t o = 0; o < len; o += 65536u)
			apply_write(f, off + o, (uint32_t)(len - o < 65536u ? len - o : 65536u), NULL);
		if (r->op == BLK_DISCARD)
			f->cnt.discards++;
		else
			f->cnt.zeroes++;
		f->cnt.blocks_written += r->n_blocks;
		break;
	case BLK_FLUSH:
		do_flush(f);
		f->cnt.flushes++;
		break;
	}
}

static int fb_poll(void *impl, struct blk_req **done)
{
	struct fake_blk *f = impl;
	if (!f->q_n)
		return -E_AGAIN;
	uint64_t num = f->q_num[f->q_head];
	if (num == f->stall_req)
		return -E_AGAIN;
	if (f->polls < f->cfg.delay_polls) {
		f->polls++;
		return -E_AGAIN;
	}
	f->polls = 0;
	struct blk_req *r = f->q[f->q_head];
	f->q_head = (f->q_head + 1) % f->cfg.depth;
	f->q_n--;
	complete(f, r, num);
	*done = r;
	return 0;
}

static const struct blk_ops fb_ops = { fb_submit, fb_kick, fb_poll };

struct fake_blk *fake_blk_new(const struct fake_blk_config *c)
{
	uint32_t bs = c->block_size;
	if (bs < 512u || bs > 65536u || (bs & (bs - 1u)) || c->blocks == 0 ||
	    c->blocks > (UINT64_C(1) << 40) / bs)
		return NULL;
	struct fake_blk *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->cfg = *c;
	if (!f->cfg.depth)
		f->cfg.depth = 64;
	if (!f->cfg.physical_block)
		f->cfg.physical_block = bs;
	f->size = (size_t)(c->blocks * bs);
	f->cur = image_alloc(f->size);
	f->dur = image_alloc(f->size);
	f->q = calloc(f->cfg.depth, sizeof *f->q);
	f->q_num = calloc(f->cfg.depth, sizeof *f->q_num);
	if (!f->cur || !f->dur || !f->q || !f->q_num) {
		fake_blk_free(f);
		return NULL;
	}
	f->fail_req = f->stall_req = f->die_req = f->fail_sub = NONE;
	f->blank = true;
	f->dev.ops = &fb_ops;
	f->dev.impl = f;
	f->dev.topo = (struct blk_topology){
		.capacity = c->blocks,
		.logical_block = bs,
		.physical_block = f->cfg.physical_block,
		.optimal_io = c->optimal_io,
		.max_discard = (c->discard || c->write_zeroes) ? (c->max_discard ? c->max_discard : UINT32_MAX) : 0,
		.read_only = c->read_only,
		.flush = !c->no_cache,
		.discard = c->discard,
		.write_zeroes = c->write_zeroes,
	};
	return f;
}

void fake_blk_free(struct fake_blk *f)
{
	if (!f)
		return;
	log_clear(f);
	free(f->log);
	image_free(f->cur, f->size);
	image_free(f->dur, f->size);
	free(f->q);
	free(f->q_num);
	free(f);
}

struct blk_dev *fake_blk_dev(struct fake_blk *f)
{
	return &f->dev;
}

const uint8_t *fake_blk_bytes(const struct fake_blk *f, size_t *size)
{
	*size = f->size;
	return f->cur;
}

void fake_blk_set(struct fake_blk *f, uint64_t off, const void *data, size_t len)
{
	if (off > f->size || len > f->size - off)
		fb_abort("fake_blk_set out of range");
	if (f->blank) {
		copy_to_blank(f->cur + off, data, len);
		copy_to_blank(f->dur + off, data, len);
		f->blank = false;
	} else {
		memcpy(f->cur + off, data, len);
		memcpy(f->dur + off, data, len);
	}
	/* Keep invariant 1 for logged writes that overlap: replay them over cur. */
	for (size_t i = 0; i < f->n_log; i++)
		memcpy(f->cur + f->log[i].off, f->log[i].data, f->log[i].len);
}

void fake_blk_grow(struct fake_blk *f, uint64_t blocks)
{
	if (blocks < f->cfg.blocks || blocks > (UINT64_C(1) << 40) / f->cfg.block_size)
		fb_abort("fake_blk_grow: shrink or too large");
	size_t size = (size_t)(blocks * f->cfg.block_size);
	/* New zeroed images with the old bytes copied in (not realloc and a memset of the new
	 * part: that writes every new page). */
	uint8_t *cur = image_alloc(size), *dur = image_alloc(size);
	if (!cur || !dur)
		fb_abort("no memory");
	copy_to_blank(cur, f->cur, f->size);
	copy_to_blank(dur, f->dur, f->size);
	image_free(f->cur, f->size);
	image_free(f->dur, f->size);
	f->cur = cur;
	f->dur = dur;
	f->size = size;
	f->cfg.blocks = blocks;
	f->dev.topo.capacity = blocks;
}

const uint8_t *fake_blk_durable(const struct fake_blk *f)
{
	return f->dur;
}

void fake_blk_counts(const struct fake_blk *f, struct fake_blk_counts *out)
{
	*out = f->cnt;
}

void fake_blk_fail_request(struct fake_blk *f, uint64_t n, int err)
{
	f->fail_req = n;
	f->fail_req_err = err;
}

void fake_blk_fail_submit(struct fake_blk *f, uint64_t n, int err)
{
	f->fail_sub = n;
	f->fail_sub_err = err;
}

void fake_blk_stall_request(struct fake_blk *f, uint64_t n)
{
	f->stall_req = n;
}

void fake_blk_die_at(struct fake_blk *f, uint64_t n, uint64_t seed)
{
	f->die_req = n;
	f->die_seed = seed;
}

bool fake_blk_dead(const struct fake_blk *f)
{
	return f->dead;
}

struct fake_blk *fake_blk_after_power_cut(const struct fake_blk *f, uint64_t seed,
					  struct fake_blk_cut_report *rep)
{
	struct fake_blk_config c = f->cfg;
	struct fake_blk *n = fake_blk_new(&c);
	if (!n)
		return NULL;
	copy_to_blank(n->dur, f->dur, f->size); /* n is blank: just made */
	uint64_t s = seed;
	size_t *order = malloc((f->n_log ? f->n_log : 1) * sizeof *order);
	if (!order) {
		fake_blk_free(n);
		return NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < f->n_log; i++)
		if (rng_next(&s) & 1u)
			order[k++] = i;
	for (size_t i = k; i > 1; i--) { /* Fisher-Yates: any order */
		size_t j = (size_t)(rng_next(&s) % i);
		size_t t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < k; i++) {
		const struct fb_write *w = &f->log[order[i]];
		memcpy(n->dur + w->off, w->data, w->len);
	}
	free(order);
	copy_to_blank(n->cur, n->dur, f->size); /* n->cur: still zeros */
	n->blank = false;
	if (rep) {
		rep->pending = f->n_log;
		rep->kept = k;
	}
	return n;
}
