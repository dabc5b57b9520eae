/* SPDX-License-Identifier: MIT
 *
 * x86_64 boot entries: the PVH entry (ELF note XEN_ELFNOTE_PHYS32_ENTRY, used by
 * `qemu -kernel` and microVM monitors) and the Multiboot2 entry (GRUB). Both arrive in
 * 32-bit protected mode with paging off, record what the loader gave them, build a
 * throw-away identity + physmap + higher-half mapping of the first 1 GiB, enter long mode,
 * move the image to a random virtual base (x86_kaslr_boot, kaslr.c) and call
 * x86_boot_main(kind, info_phys) there. Also holds the exception
 * stubs and small helpers that cannot be written in C.
 * Never used after boot: the boot tables (RWX, 2 MiB) are replaced by mmu.c before any
 * device or external input is touched, and the low identity mapping is dropped then.
 */
#include "arch/x86_64/layout.h"

#define PHYS(x) ((x) - X86_KERNEL_VMA)
#define MB2_MAGIC_HDR  0xe85250d6
#define MB2_MAGIC_BOOT 0x36d76289
#define XEN_ELFNOTE_PHYS32_ENTRY 18

/* ---- Multiboot2 header (first 32 KiB of the file, 8-byte aligned) ---- */
	.section .multiboot2, "a"
	.align 8
mb2_header:
	.long MB2_MAGIC_HDR
	.long 0                                  /* architecture: i386 protected mode */
	.long mb2_header_end - mb2_header
	.long -(MB2_MAGIC_HDR + (mb2_header_end - mb2_header))
	.align 8                                 /* entry address tag: 32-bit physical entry */
	.short 3, 0
	.long 12
	.long PHYS(x86_mb2_start32)
	.align 8                                 /* end tag */
	.short 0, 0
	.long 8
mb2_header_end:

/* ---- PVH ELF note ---- */
	.section .note.pvh, "a"
	.align 4
	.long 4                                  /* namesz: "Xen\0" */
	.long 8                                  /* descsz */
	.long XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.align 4
	.quad PHYS(x86_pvh_start32)

/* ---- 32-bit entry code ---- */
	.section .boot.text, "ax"
	.code32
	.globl x86_pvh_start32
x86_pvh_start32:
	cli
	cld
	movl $X86_BOOT_PVH, %esi
	movl %ebx, %edi
	jmp common32

	.globl x86_mb2_start32
x86_mb2_start32:
	cli
	cld
	cmpl $MB2_MAGIC_BOOT, %eax
	jne hang32
	movl $X86_BOOT_MB2, %esi
	movl %ebx, %edi

common32:
	/* .data survives the bss wipe below */
	movl %esi, PHYS(x86_boot_kind)
	movl %edi, PHYS(x86_boot_info_phys)
	rdtsc
	movl %eax, PHYS(x86_boot_tsc0)
	movl %edx, PHYS(x86_boot_tsc0) + 4

	/* wipe .bss (the loader should have, but do not rely on it) */
	movl $PHYS(x86_bss_start), %edi
	movl $PHYS(x86_bss_end), %ecx
	subl %edi, %ecx
	xorl %eax, %eax
	rep stosb

	movl $PHYS(boot_stack_top), %esp

	/* long mode is required; NX is enabled here when present (C refuses to boot without) */
	movl $0x80000000, %eax
	cpuid
	cmpl $0x80000001, %eax
	jb no_long_mode
	movl $0x80000001, %eax
	cpuid
	btl $29, %edx
	jnc no_long_mode
	xorl %ebp, %ebp
	btl $20, %edx
	jnc 1f
	movl $(1 << 11), %ebp                    /* EFER.NXE */
1:
	/* boot PD: 512 x 2 MiB = first 1 GiB, shared by identity, physmap and -2 GiB */
	movl $PHYS(boot_pd), %edi
	xorl %ecx, %ecx
2:	movl %ecx, %eax
	shll $21, %eax
	orl $0x83, %eax                          /* P | W | PS */
	movl %eax, (%edi, %ecx, 8)
	movl $0, 4(%edi, %ecx, 8)
	incl %ecx
	cmpl $512, %ecx
	jne 2b

	movl $PHYS(boot_pd) + 3, %eax
	movl %eax, PHYS(boot_pdpt_low)
	movl %eax, PHYS(boot_pdpt_high) + 510 * 8
	movl $PHYS(boot_pdpt_low) + 3, %eax
	movl %eax, PHYS(boot_pml4)
	movl %eax, PHYS(boot_pml4) + 256 * 8
	movl $PHYS(boot_pdpt_high) + 3, %eax
	movl %eax, PHYS(boot_pml4) + 511 * 8

	movl %cr4, %eax
	orl $(1 << 5), %eax                      /* PAE */
	movl %eax, %cr4
	movl $PHYS(boot_pml4), %eax
	movl %eax, %cr3
	movl $0xc0000080, %ecx                   /* EFER */
	rdmsr
	orl $(1 << 8), %eax                      /* LME */
	orl %ebp, %eax
	wrmsr
	movl %cr0, %eax
	orl $0x80000001, %eax                    /* PG | PE */
	movl %eax, %cr0

	lgdt PHYS(boot_gdt_ptr)
	ljmp $X86_SEL_KCODE, $PHYS(start64_low)

no_long_mode:
	movl $PHYS(msg_no_lm), %esi
3:	movb (%esi), %al
	testb %al, %al
	jz hang32
	movw $0x3f8, %dx
	outb %al, %dx
	incl %esi
	jmp 3b
hang32:
	cli
	hlt
	jmp hang32

	.code64
start64_low:
	movabsq $start64_high, %rax
	jmp *%rax
start64_high:
	movl $X86_SEL_KDATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	xorl %eax, %eax
	movl %eax, %fs
	movl %eax, %gs
	movabsq $boot_stack_top, %rsp
	xorl %ebp, %ebp
	/* KASLR (ADR-077): maps the image again at a random distance and rewrites every
	 * absolute address in it; the two immediates below are among them, so they lead
	 * to the moved copy (the link-address one goes with the boot tables). */
	call x86_kaslr_boot
	movabsq $start64_moved, %rax
	jmp *%rax
start64_moved:
	movabsq $boot_stack_top, %rsp
	xorl %ebp, %ebp
	movl x86_boot_kind(%rip), %edi
	movl x86_boot_info_phys(%rip), %esi
	call x86_boot_main
4:	cli
	hlt
	jmp 4b

/* ---- helpers ---- */
	.text
	/* void x86_stack_switch(uint64_t top, void (*fn)(void *), void *arg): never returns */
	.globl x86_stack_switch
x86_stack_switch:
	endbr64
	movq %rdi, %rsp
	xorl %ebp, %ebp
	movq %rdx, %rdi
	call *%rsi
	ud2

	/* void x86_gdt_load(const void *gdtr): lgdt, then reload every segment register */
	.globl x86_gdt_load
x86_gdt_load:
	endbr64
	lgdt (%rdi)
	movl $X86_SEL_KDATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	xorl %eax, %eax
	movl %eax, %fs
	movl %eax, %gs
	popq %rdi                                /* return address */
	pushq $X86_SEL_KCODE
	pushq %rdi
	lretq

/* ---- exception and interrupt stubs: one per vector, pushing (error, vector) ---- */
	.altmacro
.macro isr_stub n
	.align 16
isr_stub_\n:
	endbr64
	.if (\n == 8) || (\n == 10) || (\n == 11) || (\n == 12) || (\n == 13) || (\n == 14) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	.else
	pushq $0
	.endif
	pushq $\n
	jmp x86_isr_common
.endm
.macro isr_addr n
	.quad isr_stub_\n
.endm

	.text
	.set i, 0
	.rept 256
	isr_stub %i
	.set i, i + 1
	.endr

x86_isr_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	cld
	movq %rsp, %rdi
	call x86_trap
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp
	iretq

	.section .rodata
	.align 8
	.globl x86_isr_table
x86_isr_table:
	.set i, 0
	.rept 256
	isr_addr %i
	.set i, i + 1
	.endr

	.align 8
boot_gdt:
	.quad 0
	.quad 0x00af9a000000ffff                 /* 0x08: 64-bit code, DPL 0 */
	.quad 0x00cf92000000ffff                 /* 0x10: data */
boot_gdt_end:
boot_gdt_ptr:
	.short boot_gdt_end - boot_gdt - 1
	.long PHYS(boot_gdt)
msg_no_lm:
	.asciz "urMQTT: this CPU has no long mode; cannot boot\r\n"

	.data
	.align 8
	.globl x86_boot_tsc0, x86_boot_kind, x86_boot_info_phys
x86_boot_tsc0:      .quad 0
x86_boot_kind:      .long 0
x86_boot_info_phys: .long 0

	.bss
	.align 4096
	.globl x86_boot_pdpt_high, x86_boot_pd, x86_boot_pd_kaslr
boot_pml4:      .skip 4096
boot_pdpt_low:  .skip 4096
boot_pdpt_high:
x86_boot_pdpt_high: .skip 4096
boot_pd:
x86_boot_pd:    .skip 4096
x86_boot_pd_kaslr: .skip 8192          /* kaslr.c: the kernel window while both copies live */
boot_stack:     .skip 16384
boot_stack_top:

	.section .note.GNU-stack, "", @progbits
