/* SPDX-License-Identifier: MIT
 *
 * The aarch64 entry: the arm64 Image header (a boot loader or QEMU's -kernel loads the
 * image 2 MiB into RAM and jumps to its first byte with the device tree's physical
 * address in x0, MMU off), which is also a PE32+ header for UEFI firmware (a64_efi_entry,
 * efi.c: it joins this path at a64_entry with the MMU off, ADR-076), the drop from EL2 to EL1 when entered at EL2, then with the
 * MMU still off: a check that the image runs where it is linked (or where a boot path
 * moved it), KASLR (kaslr.c: a relocated copy higher up, continued in), .bss cleared, the exception stack on SP_EL1 and the boot stack on SP_EL0 (the kernel
 * runs in EL1t, so an exception always switches to its own stack, even when the kernel
 * stack overflowed into its guard page), the vector table installed, then a64_main.
 * Never returns; parks the core when entered at EL3 or at the wrong address.
 */
#define A64_SCTLR_EL1_BOOT 0x30d00800 /* RES1 bits only: MMU, caches, alignment checks off */
#define A64_EFI_N_ACPI_OFF 544        /* offsetof(struct a64_efi_boot, n_acpi): efi.c asserts */
#define A64_EFI_ACPI_OFF 552          /* offsetof(struct a64_efi_boot, acpi) */

	.section .head.text, "ax"
	.globl	a64_start
a64_start:
	/* code0: "MZ", the DOS signature a PE loader looks for, as an instruction that only
	 * sets flags (ccmp x18, #0, #0xd, pl), so the -kernel path runs through it. */
	.long	0xfa405a4d
	b	a64_entry		/* code1 */
	.quad	0			/* text_offset: 2 MiB into RAM */
	.quad	a64_image_size		/* image_size, .bss and stacks included */
	.quad	0xa			/* flags: little endian, 4 KiB pages, placed anywhere */
	.quad	0, 0, 0
	.ascii	"ARM\x64"		/* magic */
	.long	a64_pe - a64_start	/* offset of the PE header (the DOS header's e_lfanew) */

/* A minimal PE32+ header (PE/COFF specification: COFF file header, optional header with
 * 6 empty data directories, one section), so UEFI firmware loads the same file as an EFI
 * application: the headers are the first page, one RWX ".text" section covers the rest,
 * .bss and the stacks included (zero-filled by the loader). No relocations: ImageBase is
 * the link address; a64_efi_main moves the image there if the firmware put it elsewhere.
 * W^X is ours to enforce after the move (the audit of mmu.c), not the loader's. */
	.balign	8
a64_pe:
	.ascii	"PE\0\0"
	.short	0xaa64			/* Machine: ARM64 */
	.short	1			/* NumberOfSections */
	.long	0			/* TimeDateStamp: reproducible */
	.long	0, 0			/* no symbol table */
	.short	a64_pe_sections - a64_pe_opt	/* SizeOfOptionalHeader */
	.short	0x206			/* EXECUTABLE_IMAGE | LINE_NUMS_STRIPPED | DEBUG_STRIPPED */
a64_pe_opt:
	.short	0x20b			/* PE32+ */
	.byte	0, 0			/* linker version */
	.long	a64_pe_raw_size		/* SizeOfCode */
	.long	0, 0			/* SizeOfInitializedData, SizeOfUninitializedData */
	.long	a64_pe_entry		/* AddressOfEntryPoint (RVA of a64_efi_entry) */
	.long	a64_pe_headers		/* BaseOfCode */
	.quad	a64_start		/* ImageBase: the link address */
	.long	4096			/* SectionAlignment */
	.long	4096			/* FileAlignment */
	.short	0, 0, 0, 0, 0, 0	/* OS, image and subsystem versions */
	.long	0			/* Win32VersionValue */
	.long	a64_image_size		/* SizeOfImage */
	.long	a64_pe_headers		/* SizeOfHeaders */
	.long	0			/* CheckSum */
	.short	10			/* Subsystem: EFI application */
	.short	0			/* DllCharacteristics */
	.quad	0, 0, 0, 0		/* stack and heap reserve/commit: unused by UEFI */
	.long	0			/* LoaderFlags */
	.long	6			/* NumberOfRvaAndSizes */
	.quad	0, 0, 0, 0, 0, 0	/* export, import, resource, exception, certificate, base relocation */
a64_pe_sections:
	.ascii	".text\0\0\0"
	.long	a64_pe_virt_size	/* VirtualSize */
	.long	a64_pe_headers		/* VirtualAddress */
	.long	a64_pe_raw_size		/* SizeOfRawData */
	.long	a64_pe_headers		/* PointerToRawData */
	.long	0, 0			/* relocations, line numbers */
	.short	0, 0
	.long	0xe0000020		/* CODE | EXECUTE | READ | WRITE */

/* From EL2 (when entered there) to EL1h with D A I F masked, continuing at label 1:
 * EL1 is AArch64, owns its pointer-authentication keys and instructions, its FP/SIMD
 * registers and (GICv3) the interrupt controller's system registers, may read the
 * counters, runs with its own SCTLR, and (with FEAT_MTE2) may use allocation tags. x1-x2
 * clobbered. Parks the core at EL3. */
	.macro	a64_to_el1
	mrs	x1, CurrentEL
	lsr	x1, x1, #2
	cmp	x1, #1
	b.eq	1f
	cmp	x1, #2
	b.ne	a64_park		/* EL3: not supported */
	mov	x1, #(1 << 31)		/* HCR_EL2.RW */
	orr	x1, x1, #(3 << 40)	/* HCR_EL2.APK | API: no PAC traps to EL2 */
	mrs	x2, id_aa64pfr1_el1
	ubfx	x2, x2, #8, #4		/* MTE: 2 or more is FEAT_MTE2 */
	cmp	x2, #2
	b.lo	3f
	orr	x1, x1, #(1 << 56)	/* HCR_EL2.ATA: EL1 may use allocation tags */
3:	msr	hcr_el2, x1
	mov	x1, #0x33ff		/* CPTR_EL2: RES1 bits only, TFP clear */
	msr	cptr_el2, x1
	mov	x1, #3			/* CNTHCTL_EL2.EL1PCTEN | EL1PCEN */
	msr	cnthctl_el2, x1
	msr	cntvoff_el2, xzr
	msr	vttbr_el2, xzr
	mrs	x1, id_aa64pfr0_el1
	ubfx	x1, x1, #24, #4		/* GIC system registers implemented? */
	cbz	x1, 2f
	mrs	x1, s3_4_c12_c9_5	/* ICC_SRE_EL2 */
	mov	x2, #0x9		/* SRE | Enable: EL1 may use them */
	orr	x1, x1, x2
	msr	s3_4_c12_c9_5, x1
	isb
2:	ldr	x1, =A64_SCTLR_EL1_BOOT
	msr	sctlr_el1, x1
	mov	x1, #0x3c5		/* SPSR: EL1h, D A I F masked */
	msr	spsr_el2, x1
	adr	x1, 1f
	msr	elr_el2, x1
	eret
1:	ldr	x1, =A64_SCTLR_EL1_BOOT
	msr	sctlr_el1, x1
	msr	daifset, #0xf
	isb
	.endm

a64_entry:
	mov	x19, x0			/* the device tree's physical address */
	mrs	x20, CurrentEL
	lsr	x20, x20, #2		/* the EL we were entered at, for the banner */
	a64_to_el1
	adr	x1, a64_start		/* where we run ... */
	ldr	x2, =a64_start		/* ... must be where we are linked (or moved to: */
	cmp	x1, x2			/* the literal is in the relocation table) */
	b.ne	a64_park
	/* KASLR (kaslr.c, ADR-084): unless a boot path already decided (efi.c), draw a
	 * slide, move a relocated copy up and continue in it at a64_entry_moved; x19 and x20
	 * survive the call (callee-saved). */
	adrp	x1, a64_kaslr
	ldr	w1, [x1, #:lo12:a64_kaslr]	/* a64_kaslr.decided */
	cbnz	w1, a64_entry_moved
	ldr	x1, =a64_boot_stack_top
	mov	sp, x1			/* SP_EL1, at the link address: only for this call */
	mov	x0, x19
	bl	a64_kaslr_boot
	cbz	x0, a64_entry_moved	/* unslid: go on here */
	br	x0
	.globl	a64_entry_moved
a64_entry_moved:
	hint	#36			/* BTI J: reached by the BR above (MMU off: not enforced) */
	ldr	x1, =a64_bss_start
	ldr	x2, =a64_bss_end
3:	cmp	x1, x2
	b.hs	4f
	stp	xzr, xzr, [x1], #16
	b	3b
4:	ldr	x1, =a64_exc_stack_top
	mov	sp, x1			/* SPSel is 1 here: this is SP_EL1 */
	ldr	x1, =a64_boot_stack_top
	msr	sp_el0, x1
	msr	spsel, #0		/* the kernel runs on SP_EL0 */
	ldr	x1, =a64_vectors
	msr	vbar_el1, x1
	isb
	mov	x0, x19
	mov	x1, x20
	bl	a64_main
	b	a64_park

	.text				/* outside the PE headers' page: in the PE section */
/* The UEFI entry (the PE header's AddressOfEntryPoint): x0 ImageHandle, x1 SystemTable,
 * MMU and caches on, at EL2 or EL1, on the firmware's stack. a64_efi_main (efi.c) returns
 * only on failure, with the EFI status for the firmware. */
	.globl	a64_efi_entry
a64_efi_entry:
	hint	#34			/* BTI C: reached by the firmware's indirect call */
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	adr	x2, a64_start		/* where the firmware put us */
	ldr	x3, =a64_start		/* where we are linked */
	ldr	x4, =a64_image_size
	bl	a64_efi_main
	ldp	x29, x30, [sp], #16
	ret

/* After ExitBootServices (efi.c): x0 the device tree (or 0), x1 the struct a64_efi_boot.
 * Clean and invalidate to the point of coherency what the boot path will read or write
 * with the MMU off (the image with .bss, tables and stacks, the other cores' stacks after
 * it, the firmware's ACPI areas and device tree), turn the MMU and caches off at this EL,
 * then join the -kernel path with x0 as it expects. Never returns. */
	.globl	a64_efi_exit
a64_efi_exit:
	msr	daifset, #0xf
	mov	x19, x0
	mov	x20, x1
	ldr	x0, =a64_image_start
	ldr	x1, =a64_image_end
	add	x1, x1, #(4 << 20)	/* the other cores' stacks (efi.c reserved them) */
	bl	a64_dcache_civac
	cbz	x19, 5f
	mov	x0, x19
	add	x1, x19, #(2 << 20)	/* PLAT_DTB_MAX_SIZE */
	bl	a64_dcache_civac
5:	ldr	w21, [x20, #A64_EFI_N_ACPI_OFF]
	add	x22, x20, #A64_EFI_ACPI_OFF
6:	cbz	w21, 7f
	ldp	x0, x1, [x22], #16	/* base, len */
	add	x1, x0, x1
	bl	a64_dcache_civac
	sub	w21, w21, #1
	b	6b
7:	dsb	sy
	mrs	x1, CurrentEL
	cmp	x1, #(2 << 2)
	b.eq	8f
	mrs	x1, sctlr_el1
	bic	x1, x1, #1		/* M */
	bic	x1, x1, #(1 << 2)	/* C */
	bic	x1, x1, #(1 << 12)	/* I */
	msr	sctlr_el1, x1
	b	9f
8:	mrs	x1, sctlr_el2
	bic	x1, x1, #1
	bic	x1, x1, #(1 << 2)
	bic	x1, x1, #(1 << 12)
	msr	sctlr_el2, x1
9:	isb
	ic	iallu
	dsb	sy
	isb
	mov	x0, x19
	b	a64_entry

/* Clean and invalidate data cache lines [x0, x1) to the point of coherency. x2-x4
 * clobbered. */
a64_dcache_civac:
	mrs	x3, ctr_el0
	ubfx	x3, x3, #16, #4		/* DminLine: log2 of words */
	mov	x2, #4
	lsl	x2, x2, x3		/* line size in bytes */
	sub	x4, x2, #1
	bic	x0, x0, x4
1:	cmp	x0, x1
	b.hs	2f
	dc	civac, x0
	add	x0, x0, x2
	b	1b
2:	ret

/* Another core, started by PSCI CPU_ON with x0 = its struct a64_core (MMU off): its
 * exception stack top at offset 0, its loop stack top at offset 8 (a64.h asserts both). */
	.globl	a64_secondary_entry
a64_secondary_entry:
	mov	x19, x0
	a64_to_el1
	ldr	x1, [x19, #0]
	mov	sp, x1			/* SP_EL1 */
	ldr	x1, [x19, #8]
	msr	sp_el0, x1
	msr	spsel, #0
	ldr	x1, =a64_vectors
	msr	vbar_el1, x1
	isb
	mov	x0, x19
	bl	a64_secondary_main
	.globl	a64_park
a64_park:
	wfe
	b	a64_park
