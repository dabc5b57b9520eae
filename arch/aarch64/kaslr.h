/* SPDX-License-Identifier: MIT
 *
 * KASLR on aarch64 (ADR-084): the image moves physically (= virtually: the kernel
 * runs identity-mapped) by a random multiple of 64 KiB before anything in C uses an
 * absolute address. Two boot paths draw the slide: the -kernel path in boot.S, with the
 * MMU off (a64_kaslr_boot, kaslr.c), and the UEFI path in efi.c while boot services
 * last (EFI_RNG_PROTOCOL, else RNDR). Both copy the image to its link address + slide,
 * apply the table it carries (.urmqtt_relocs, kernel/kreloc.c) to the copy, record
 * what they did in the copy's `a64_kaslr` (.data: it survives the .bss clear) and
 * continue there; `decided` tells boot.S not to draw again.
 */
#ifndef ARCH_AARCH64_KASLR_H
#define ARCH_AARCH64_KASLR_H

#include "kernel/kreloc.h"
#include "plat/plat.h"

#define A64_KASLR_ALIGN (64ull << 10) /* slide step: see ADR-084 */
#define A64_KASLR_WINDOW (1ull << 30) /* slides, and moved addresses, within 1 GiB of the link address */
#define A64_KASLR_TRIES 16u           /* RNDR tries per draw; EFI: allocation tries */
/* Room after the image for the other cores' stacks (main.c lays out, per core beyond the
 * boot core, 2 guard pages, a 32 KiB loop stack and a 16 KiB exception stack). */
#define A64_OTHER_STACKS_BYTES ((uint64_t)(PLAT_MAX_CPUS - 1u) * (2u * 4096u + 32768u + 16384u))

enum a64_kaslr_state {
	A64_KASLR_UNSET = 0,   /* no boot path decided (never seen by a64_main) */
	A64_KASLR_SLID,        /* moved by `slide` */
	A64_KASLR_NO_ENTROPY,  /* the CPU lacks RNDR (and the firmware an RNG protocol) */
	A64_KASLR_RNG_FAILED,  /* the random source failed every try */
	A64_KASLR_NO_ROOM,     /* no free memory to move to (see where) */
	A64_KASLR_BAD_TABLE,   /* the table was refused (report) */
};

enum a64_kaslr_room { A64_KASLR_ROOM_NO_DTB, A64_KASLR_ROOM_RESERVED, A64_KASLR_ROOM_BELOW_DTB,
		     A64_KASLR_ROOM_EFI_MAP, A64_KASLR_ROOM_EFI_TAKEN };

enum a64_kaslr_source { A64_KASLR_SRC_NONE, A64_KASLR_SRC_RNDR, A64_KASLR_SRC_EFI_RNG };

struct a64_kaslr {
	uint32_t decided; /* offset 0, read by boot.S: nonzero once a boot path chose */
	uint32_t state;   /* enum a64_kaslr_state */
	uint32_t source;  /* enum a64_kaslr_source */
	uint32_t n_slots; /* positions the slide was drawn from */
	uint64_t slide;   /* bytes above the link address (0 unless SLID) */
	uint32_t room_why; /* A64_KASLR_NO_ROOM: enum a64_kaslr_room (numbers only: no address survives the move) */
	struct kreloc_report report;
};

extern struct a64_kaslr a64_kaslr;
/* kernel.ld: the end of the file bytes, the table; boot.S: where the moved copy goes on. */
extern char a64_file_end[], a64_relocs_start[], a64_relocs_end[], a64_entry_moved[];

/* The layout the applier uses: sites hold addresses in [link, link + 1 GiB). */
static inline struct kreloc_layout a64_kaslr_layout(uint64_t link)
{
	return (struct kreloc_layout){ .win_lo = link, .win_len = A64_KASLR_WINDOW, .align = A64_KASLR_ALIGN,
				       .outside_stays = false, .abs32_stays = false };
}

/* boot.S, -kernel path: MMU off, at the link address, on the boot stack, .bss not yet
 * cleared. Returns the moved copy's a64_entry_moved, or 0 to go on where it runs. */
uint64_t a64_kaslr_boot(uint64_t dtb_phys);

/* A draw of 64 bits from RNDR: 1, 0 (no RNDR), -1 (failed every try). */
int a64_kaslr_rndr(uint64_t *v /* out */);

/* a64_main, once the console exists: stops the boot on a refused table (and, in
 * production, on a failed draw), else says what happened (the slide only in development images). */
void a64_kaslr_report(void);

#endif
