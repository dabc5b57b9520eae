/* SPDX-License-Identifier: MIT
 *
 * The KASLR relocation applier (see kreloc.h): two passes over the image's relocation
 * table, the first checking every entry against the image, the layout and the slide, the
 * second writing. Runs in the kernels before the console exists (x86_64: at the link
 * address with the slid window mapped; aarch64: with the MMU off, writing the moved
 * copy), so it depends on nothing but its arguments; it never writes outside [img,
 * img + img_len) and never writes at all after a refusal.
 */
#include "kernel/kreloc.h"

#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

enum { W_ABS64 = 1, W_ABS32 = 2, W_ABS32S = 3 };

static uint64_t le_get(const uint8_t *p, uint32_t size)
{
	uint64_t v = 0;
	for (uint32_t i = size; i > 0; i--)
		v = v << 8 | p[i - 1];
	return v;
}

static void le_put(uint8_t *p, uint32_t size, uint64_t v)
{
	for (uint32_t i = 0; i < size; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

const char *kreloc_why_name(enum kreloc_why why)
{
	switch (why) {
	case KRELOC_OK: return "ok";
	case KRELOC_BAD_SLIDE: return "slide not aligned or beyond the window";
	case KRELOC_BAD_HEADER: return "bad header (magic or length)";
	case KRELOC_BAD_COUNT: return "count larger than the table";
	case KRELOC_BAD_WIDTH: return "unknown site width";
	case KRELOC_OUT_OF_IMAGE: return "site outside the image";
	case KRELOC_UNSORTED: return "sites out of order or overlapping";
	case KRELOC_OVERFLOW: return "moved address would leave the window";
	case KRELOC_OUTSIDE: return "site value outside the image's window";
	}
	return "?";
}

static int refuse(struct kreloc_report *r, enum kreloc_why why, uint32_t index)
{
	r->why = why;
	r->bad_index = index;
	return -E_INVAL;
}

/* One pass; writes only when img_w is non-NULL (then every entry was checked before). */
static int kreloc_pass(const struct kreloc_layout *lay, const uint8_t *table, size_t table_len, const uint8_t *img,
		       uint8_t *img_w, size_t img_len, uint64_t slide, struct kreloc_report *r)
{
	memset(r, 0, sizeof *r);
	if (lay->align == 0 || slide % lay->align || slide >= lay->win_len)
		return refuse(r, KRELOC_BAD_SLIDE, 0);
	struct cur c = cur_make(table, table_len);
	const uint8_t *magic = cur_ptr(&c, 8);
	uint32_t n = cur_le32(&c);
	if (!cur_ok(&c) || memcmp(magic, KRELOC_MAGIC, 8) != 0)
		return refuse(r, KRELOC_BAD_HEADER, 0);
	if (cur_left(&c) / KRELOC_ENTRY_LEN < n)
		return refuse(r, KRELOC_BAD_COUNT, 0);
	r->n_sites = n;
	uint64_t next_free = 0; /* sites must start at or after the previous one's end */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = cur_le32(&c), width = cur_le32(&c);
		if (!cur_ok(&c))
			return refuse(r, KRELOC_BAD_COUNT, i); /* unreachable: count checked */
		if ((width != W_ABS64 && width != W_ABS32 && width != W_ABS32S) ||
		    (width == W_ABS32 && !lay->abs32_stays))
			return refuse(r, KRELOC_BAD_WIDTH, i);
		uint32_t size = width == W_ABS64 ? 8u : 4u;
		if (off > img_len || img_len - off < size)
			return refuse(r, KRELOC_OUT_OF_IMAGE, i);
		if (off < next_free)
			return refuse(r, KRELOC_UNSORTED, i);
		next_free = (uint64_t)off + size;
		if (width == W_ABS32) {
			r->n_phys++; /* zero-extended 32 bits: an address that stays (x86_64 boot code) */
			continue;
		}
		uint64_t v = le_get(img + off, size);
		uint64_t addr = width == W_ABS64 ? v : (uint64_t)(int64_t)(int32_t)(uint32_t)v;
		uint64_t in = addr - lay->win_lo; /* wraps to a huge value below the window */
		if (in >= lay->win_len) {
			if (!lay->outside_stays)
				return refuse(r, KRELOC_OUTSIDE, i);
			r->n_phys++;
			continue;
		}
		/* in < win_len and slide < win_len: the sum cannot wrap for any sane window. */
		if (in + slide >= lay->win_len || in + slide < in)
			return refuse(r, KRELOC_OVERFLOW, i);
		if (slide)
			r->n_moved++;
		if (img_w && slide)
			le_put(img_w + off, size, v + slide);
	}
	return 0;
}

int kreloc_check_in(const struct kreloc_layout *lay, const uint8_t *table, size_t table_len, const uint8_t *img,
		    size_t img_len, uint64_t slide, struct kreloc_report *report)
{
	return kreloc_pass(lay, table, table_len, img, NULL, img_len, slide, report);
}

int kreloc_apply_in(const struct kreloc_layout *lay, const uint8_t *table, size_t table_len, uint8_t *img,
		    size_t img_len, uint64_t slide, struct kreloc_report *report)
{
	int rc = kreloc_pass(lay, table, table_len, img, NULL, img_len, slide, report);
	if (rc)
		return rc;
	return kreloc_pass(lay, table, table_len, img, img, img_len, slide, report);
}
