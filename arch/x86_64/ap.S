/* SPDX-License-Identifier: MIT
 *
 * Application-processor start-up trampoline. smp.c copies the bytes between
 * x86_ap_tramp_start and x86_ap_tramp_end to physical X86_AP_TRAMP_PHYS, fills the
 * parameter block (page tables, entry, stack) and sends INIT-SIPI-SIPI; the AP goes from
 * real mode through protected mode to long mode on a throw-away PML4 (kernel half plus
 * this one page, read-only and executable) and jumps to x86_ap_entry64 in the higher
 * half, which switches to the live tables. Never writes to its own page.
 */
#include "arch/x86_64/layout.h"

#define X86_AP_TRAMP_PHYS 0x8000
#define TR(x) (X86_AP_TRAMP_PHYS + ((x) - x86_ap_tramp_start))

	.section .rodata
	.align 16
	.globl x86_ap_tramp_start, x86_ap_tramp_end, x86_ap_tramp_params
	.code16
x86_ap_tramp_start:
	cli
	cld
	xorw %ax, %ax
	movw %ax, %ds
	lgdtl TR(tr_gdtr)
	movl %cr0, %eax
	orl $1, %eax                             /* PE */
	movl %eax, %cr0
	ljmpl $0x08, $TR(tr_pm32)

	.code32
tr_pm32:
	movw $0x10, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movl %cr4, %eax
	orl $(1 << 5), %eax                      /* PAE */
	movl %eax, %cr4
	movl TR(tr_cr3), %eax
	movl %eax, %cr3
	movl $0xc0000080, %ecx
	rdmsr
	orl $((1 << 8) | (1 << 11)), %eax        /* LME | NXE (the boot core required NX) */
	wrmsr
	movl %cr0, %eax
	orl $0x80010000, %eax                    /* PG | WP */
	movl %eax, %cr0
	ljmpl $0x18, $TR(tr_lm64)

	.code64
tr_lm64:
	movw $0x10, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movq TR(tr_stack), %rsp
	movq TR(tr_entry), %rax
	jmp *%rax

	.align 8
tr_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff                 /* 0x08: 32-bit code */
	.quad 0x00cf92000000ffff                 /* 0x10: data */
	.quad 0x00af9a000000ffff                 /* 0x18: 64-bit code */
tr_gdtr:
	.short tr_gdtr - tr_gdt - 1
	.long TR(tr_gdt)
	.align 8
x86_ap_tramp_params:
tr_cr3:   .quad 0
tr_entry: .quad 0
tr_stack: .quad 0
x86_ap_tramp_end:

	.text
	.globl x86_ap_entry64
x86_ap_entry64:
	endbr64
	xorl %ebp, %ebp
	call x86_ap_main
	ud2

	.section .note.GNU-stack, "", @progbits
