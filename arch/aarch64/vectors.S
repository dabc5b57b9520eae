/* SPDX-License-Identifier: MIT
 *
 * The EL1 exception vector table: 16 entries of 128 bytes (current EL with SP_EL0,
 * current EL with SP_ELx, lower EL AArch64, lower EL AArch32; each synchronous, IRQ, FIQ,
 * SError). Every entry saves the interrupted state into a struct a64_frame (a64.h) on
 * SP_EL1 (the exception stack: the kernel itself runs on SP_EL0), calls
 * a64_trap(frame, entry index) and restores what the frame then holds. Owns no state.
 */
#define A64_FRAME_SIZE 288 /* sizeof(struct a64_frame): 31 registers, sp, elr, spsr, esr, far */

	.macro	a64_vector n
	.balign	0x80
	sub	sp, sp, #A64_FRAME_SIZE
	stp	x0, x1, [sp, #0]
	mov	x0, #\n
	b	a64_vector_common
	.endm

	.section .text.vectors, "ax"
	.balign	2048
	.globl	a64_vectors
a64_vectors:
	a64_vector 0
	a64_vector 1
	a64_vector 2
	a64_vector 3
	a64_vector 4
	a64_vector 5
	a64_vector 6
	a64_vector 7
	a64_vector 8
	a64_vector 9
	a64_vector 10
	a64_vector 11
	a64_vector 12
	a64_vector 13
	a64_vector 14
	a64_vector 15

a64_vector_common:
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	stp	x6, x7, [sp, #48]
	stp	x8, x9, [sp, #64]
	stp	x10, x11, [sp, #80]
	stp	x12, x13, [sp, #96]
	stp	x14, x15, [sp, #112]
	stp	x16, x17, [sp, #128]
	stp	x18, x19, [sp, #144]
	stp	x20, x21, [sp, #160]
	stp	x22, x23, [sp, #176]
	stp	x24, x25, [sp, #192]
	stp	x26, x27, [sp, #208]
	stp	x28, x29, [sp, #224]
	mrs	x1, sp_el0
	stp	x30, x1, [sp, #240]
	mrs	x2, elr_el1
	mrs	x3, spsr_el1
	stp	x2, x3, [sp, #256]
	mrs	x4, esr_el1
	mrs	x5, far_el1
	stp	x4, x5, [sp, #272]
	mov	x1, x0
	mov	x0, sp
	bl	a64_trap
	ldp	x2, x3, [sp, #256]
	msr	elr_el1, x2
	msr	spsr_el1, x3
	ldp	x30, x1, [sp, #240]
	msr	sp_el0, x1
	ldp	x0, x1, [sp, #0]
	ldp	x2, x3, [sp, #16]
	ldp	x4, x5, [sp, #32]
	ldp	x6, x7, [sp, #48]
	ldp	x8, x9, [sp, #64]
	ldp	x10, x11, [sp, #80]
	ldp	x12, x13, [sp, #96]
	ldp	x14, x15, [sp, #112]
	ldp	x16, x17, [sp, #128]
	ldp	x18, x19, [sp, #144]
	ldp	x20, x21, [sp, #160]
	ldp	x22, x23, [sp, #176]
	ldp	x24, x25, [sp, #192]
	ldp	x26, x27, [sp, #208]
	ldp	x28, x29, [sp, #224]
	add	sp, sp, #A64_FRAME_SIZE
	eret
