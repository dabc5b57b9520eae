/* SPDX-License-Identifier: MIT
 *
 * The aarch64 entry: the arm64 Image header (a boot loader or QEMU's -kernel loads the
 * image 2 MiB into RAM and jumps to its first byte with the device tree's physical
 * address in x0, MMU off), the drop from EL2 to EL1 when entered at EL2, then with the
 * MMU still off: a check that the image runs where it is linked (no relocation yet),
 * .bss cleared, the exception stack on SP_EL1 and the boot stack on SP_EL0 (the kernel
 * runs in EL1t, so an exception always switches to its own stack, even when the kernel
 * stack overflowed into its guard page), the vector table installed, then a64_main.
 * Never returns; parks the core when entered at EL3 or at the wrong address.
 */
#define A64_SCTLR_EL1_BOOT 0x30d00800 /* RES1 bits only: MMU, caches, alignment checks off */

	.section .head.text, "ax"
	.globl	a64_start
a64_start:
	b	a64_entry		/* code0 */
	.long	0			/* code1 */
	.quad	0			/* text_offset: 2 MiB into RAM */
	.quad	a64_image_size		/* image_size, .bss and stacks included */
	.quad	0xa			/* flags: little endian, 4 KiB pages, placed anywhere */
	.quad	0, 0, 0
	.ascii	"ARM\x64"		/* magic */
	.long	0			/* no PE/COFF header (EFI entry: planned) */

/* From EL2 (when entered there) to EL1h with D A I F masked, continuing at label 1:
 * EL1 is AArch64, owns its pointer-authentication keys and instructions, its FP/SIMD
 * registers and (GICv3) the interrupt controller's system registers, may read the
 * counters, runs with its own SCTLR. x1-x2 clobbered. Parks the core at EL3. */
	.macro	a64_to_el1
	mrs	x1, CurrentEL
	lsr	x1, x1, #2
	cmp	x1, #1
	b.eq	1f
	cmp	x1, #2
	b.ne	a64_park		/* EL3: not supported */
	mov	x1, #(1 << 31)		/* HCR_EL2.RW */
	orr	x1, x1, #(3 << 40)	/* HCR_EL2.APK | API: no PAC traps to EL2 */
	msr	hcr_el2, x1
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
	ldr	x2, =a64_start		/* ... must be where we are linked */
	cmp	x1, x2
	b.ne	a64_park
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
