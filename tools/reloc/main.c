/* SPDX-License-Identifier: MIT
 *
 * urmqtt-relocs: the kernel image's relocation table and the build's relocatability proof.
 *   urmqtt-relocs table RELOC.elf OUT        write the site table of RELOC.elf (see elfrel.h)
 *   urmqtt-relocs check IMAGE.elf RELOC.elf SLID.elf
 *       IMAGE.elf (what loaders boot) and RELOC.elf (the same objects linked with
 *       --emit-relocs) must hold the same loadable bytes; then RELOC.elf's bytes with every
 *       site moved by the distance between the two links must equal SLID.elf's (the same
 *       objects linked elsewhere). Equal bytes mean the table names every address in the
 *       image: a loader can move it by applying the table alone. Then the boot's own
 *       applier (kernel/kreloc.c, with the image's architecture's layout) must accept the
 *       table for its smallest and largest slide (ADR-077; aarch64: ADR-084).
 * Exit status 0 on success, 1 with a message naming the first difference otherwise.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86_64/kreloc.h"
#include "lib/err.h"
#include "tools/reloc/elfrel.h"

struct loaded {
	uint8_t *file;
	size_t file_len;
	struct elfrel_image img;
	uint8_t *bytes; /* img.len flattened loadable bytes */
};

static void unload(struct loaded *l)
{
	free(l->file);
	free(l->bytes);
	l->file = l->bytes = NULL;
}

static int die(const char *what, const char *path, int rc)
{
	fprintf(stderr, "urmqtt-relocs: %s: %s (error %d)\n", path, what, rc);
	return 1;
}

static int load(const char *path, struct loaded *l)
{
	*l = (struct loaded){ 0 };
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || ftell(f) <= 0) {
		fclose(f);
		return die("cannot size the file", path, 0);
	}
	l->file_len = (size_t)ftell(f);
	rewind(f);
	l->file = malloc(l->file_len);
	if (!l->file || fread(l->file, 1, l->file_len, f) != l->file_len) {
		fclose(f);
		return die("cannot read the file", path, 0);
	}
	fclose(f);
	int rc = elfrel_image_extent(l->file, l->file_len, &l->img);
	if (rc)
		return die("not an x86_64 executable with loadable segments", path, rc);
	l->bytes = malloc(l->img.len);
	if (!l->bytes)
		return die("out of memory", path, 0);
	if ((rc = elfrel_image_flatten(l->file, l->file_len, &l->img, l->bytes)) != 0)
		return die("malformed program headers", path, rc);
	return 0;
}

static int sites(const char *path, const struct loaded *l, struct elfrel_site **out, size_t *n)
{
	size_t cap = 0, need = 0;
	int rc;
	*out = NULL;
	for (;;) {
		rc = elfrel_sites_collect(l->file, l->file_len, &l->img, *out, cap, &need);
		if (rc != -E_OVERFLOW)
			break;
		free(*out);
		cap = need;
		*out = malloc(cap * sizeof **out);
		if (!*out)
			return die("out of memory", path, 0);
	}
	if (rc == -E_NOSYS)
		return die("a relocation a slide cannot fix (PC-relative to a constant, or an unknown type)",
			   path, rc);
	if (rc)
		return die("malformed relocation or symbol table", path, rc);
	if (need == 0)
		return die("no relocations: link it with --emit-relocs", path, 0);
	*n = need;
	return 0;
}

static void count(const struct elfrel_site *s, size_t n, size_t by_width[4])
{
	memset(by_width, 0, 4 * sizeof *by_width);
	for (size_t i = 0; i < n; i++)
		by_width[s[i].width & 3]++;
}

static int cmd_table(const char *in, const char *out_path)
{
	struct loaded l;
	struct elfrel_site *s = NULL;
	uint8_t *buf = NULL;
	size_t n;
	int rc = 1;
	if (load(in, &l) || sites(in, &l, &s, &n))
		goto out;
	size_t cap = 12 + 8 * n;
	buf = malloc(cap);
	long len = buf ? elfrel_table_write(s, n, buf, cap) : -E_NOMEM;
	if (len < 0) {
		die("cannot encode the table", out_path, (int)len);
		goto out;
	}
	FILE *f = fopen(out_path, "wb");
	bool written = f && fwrite(buf, 1, (size_t)len, f) == (size_t)len;
	if (f && fclose(f) != 0)
		written = false;
	if (!written) {
		perror(out_path);
		goto out;
	}
	size_t w[4];
	count(s, n, w);
	printf("relocs: %zu sites (%zu 64-bit, %zu 32-bit, %zu 32-bit signed) in %zu KiB of image -> %s\n", n,
	       w[ELFREL_ABS64], w[ELFREL_ABS32], w[ELFREL_ABS32S], l.img.len / 1024, out_path);
	rc = 0;
out:
	free(buf);
	free(s);
	unload(&l);
	return rc;
}

static size_t first_difference(const uint8_t *a, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (a[i] != b[i])
			return i;
	return len;
}

static int check(const struct loaded *li, const struct loaded *lr, const struct loaded *ls,
		 const struct elfrel_site *s, size_t n, const char *image, const char *reloc, const char *slid);

static int cmd_check(const char *image, const char *reloc, const char *slid)
{
	struct loaded li = { 0 }, lr = { 0 }, ls = { 0 };
	struct elfrel_site *s = NULL;
	size_t n;
	int rc = 1;
	if (!load(image, &li) && !load(reloc, &lr) && !load(slid, &ls) && !sites(reloc, &lr, &s, &n))
		rc = check(&li, &lr, &ls, s, n, image, reloc, slid);
	free(s);
	unload(&li);
	unload(&lr);
	unload(&ls);
	return rc;
}

/* lr's bytes are moved in place. */
static int check(const struct loaded *li, const struct loaded *lr, const struct loaded *ls,
		 const struct elfrel_site *s, size_t n, const char *image, const char *reloc, const char *slid)
{
	if (li->img.base != lr->img.base || li->img.len != lr->img.len ||
	    first_difference(li->bytes, lr->bytes, li->img.len) != li->img.len) {
		fprintf(stderr, "urmqtt-relocs: %s and %s differ: the table would not describe the image\n", image,
			reloc);
		return 1;
	}
	if (ls->img.len != lr->img.len) {
		fprintf(stderr, "urmqtt-relocs: %s is %zu bytes long, %s %zu: not the same objects\n", slid,
			ls->img.len, reloc, lr->img.len);
		return 1;
	}
	int64_t delta = (int64_t)(ls->img.base - lr->img.base);
	if (delta == 0) {
		fprintf(stderr, "urmqtt-relocs: %s is not linked elsewhere than %s\n", slid, reloc);
		return 1;
	}
	int rc = elfrel_sites_apply(lr->bytes, lr->img.len, s, n, delta);
	if (rc)
		return die("a site overflows when moved", reloc, rc);
	size_t at = first_difference(lr->bytes, ls->bytes, lr->img.len);
	if (at != lr->img.len) {
		fprintf(stderr,
			"urmqtt-relocs: after moving by %+lld bytes, byte at 0x%llx (offset 0x%zx) differs from %s: "
			"an address the table does not name\n",
			(long long)delta, (unsigned long long)(lr->img.base + at), at, slid);
		return 1;
	}
	/* The boot's applier (kernel/kreloc.c) must accept this table on the image for the
	 * smallest and the largest slide it may draw: x86_64 (ADR-077) 2 MiB per image page
	 * up to the top of its window; aarch64 (ADR-084) the image's extent (rounded to
	 * 64 KiB) up to its 1 GiB window less that extent. */
	struct kreloc_layout lay;
	uint64_t min_slide, max_slide;
	if (li->img.machine == 183u) { /* EM_AARCH64 */
		lay = (struct kreloc_layout){ .win_lo = li->img.base, .win_len = 1ull << 30, .align = 64ull << 10 };
		uint64_t ext = ((uint64_t)li->img.len + lay.align - 1) & ~(lay.align - 1);
		min_slide = ext;
		max_slide = lay.win_len - 2 * ext;
	} else {
		lay = kreloc_x86_64;
		uint64_t phys_end = li->img.base + li->img.len - KRELOC_WINDOW_LO;
		uint64_t m = (phys_end + KRELOC_ALIGN - 1) / KRELOC_ALIGN;
		min_slide = m * KRELOC_ALIGN;
		max_slide = (KRELOC_WINDOW_LEN / KRELOC_ALIGN - 1 - m) * KRELOC_ALIGN;
	}
	size_t tlen = 12 + 8 * n;
	uint8_t *table = malloc(tlen);
	struct kreloc_report kr = { 0 };
	long tl = table ? elfrel_table_write(s, n, table, tlen) : -E_NOMEM;
	int krc = tl < 0 ? (int)tl : kreloc_check_in(&lay, table, (size_t)tl, li->bytes, li->img.len, max_slide, &kr);
	if (krc == 0)
		krc = kreloc_check_in(&lay, table, (size_t)tl, li->bytes, li->img.len, min_slide, &kr);
	free(table);
	if (krc) {
		fprintf(stderr, "urmqtt-relocs: %s: the boot's applier refuses the table (%s, entry %u)\n", image,
			kreloc_why_name(kr.why), (unsigned)kr.bad_index);
		return 1;
	}
	size_t w[4];
	count(s, n, w);
	printf("relocs: boot applier accepts slides 0x%llx..0x%llx; %u sites hold physical addresses and stay\n",
	       (unsigned long long)min_slide, (unsigned long long)max_slide, (unsigned)kr.n_phys);
	printf("relocs: PASS: %zu sites (%zu 64-bit, %zu 32-bit, %zu 32-bit signed) move %zu KiB of image by "
	       "%+lld bytes to exactly the bytes of a link at 0x%llx\n",
	       n, w[ELFREL_ABS64], w[ELFREL_ABS32], w[ELFREL_ABS32S], lr->img.len / 1024, (long long)delta,
	       (unsigned long long)ls->img.base);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "table") == 0)
		return cmd_table(argv[2], argv[3]);
	if (argc == 5 && strcmp(argv[1], "check") == 0)
		return cmd_check(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: urmqtt-relocs table RELOC.elf OUT\n"
			"       urmqtt-relocs check IMAGE.elf RELOC.elf SLID.elf\n");
	return 2;
}
