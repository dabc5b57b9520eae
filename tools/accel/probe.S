/* SPDX-License-Identifier: MIT
 *
 * The accelerator probe guest (tools/accel/accel.sh). A `qemu -kernel` PVH image of a few
 * hundred bytes that does what every urMQTT x86_64 image does first and what a broken
 * hypervisor cannot: it enters long mode with paging, enables SSE, and runs known-answer
 * checks on the instruction classes the image depends on — AES-NI (FIPS-197 C.1: key
 * expansion with AESKEYGENASSIST, AESENC, AESENCLAST), PCLMULQDQ, the SSE4.2 CRC32
 * (CRC-32C of "123456789") and RDRAND — each only when CPUID offers it, as the image does.
 * It then leaves through isa-debug-exit (port 0xf4): QEMU exits with PROBE_OK * 2 + 1 = 33
 * when every answer was right, with another code naming the first wrong answer.
 *
 * Not part of any urMQTT image and never given external input. It runs identity-mapped
 * with 2 MiB pages that are all writable and executable, interrupts off: acceptable for a
 * throw-away guest that only proves an accelerator runs our instructions, never for the
 * image (whose W^X audit would stop it).
 */
#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define DEBUG_EXIT_PORT 0xf4
#define COM1 0x3f8
#define PROBE_OK 0x10           /* QEMU exit code 33 */
#define PROBE_BAD_AES 0x11      /* 35 */
#define PROBE_BAD_PCLMUL 0x12   /* 37 */
#define PROBE_BAD_CRC32 0x13    /* 39 */
#define PROBE_BAD_RDRAND 0x14   /* 41 */

#define CR0_PE (1 << 0)
#define CR0_MP (1 << 1)
#define CR0_EM (1 << 2)
#define CR0_PG (1 << 31)
#define CR4_PAE (1 << 5)
#define CR4_OSFXSR (1 << 9)
#define CR4_OSXMMEXCPT (1 << 10)
#define MSR_EFER 0xc0000080
#define EFER_LME (1 << 8)
#define PTE_P_RW 0x3
#define PDE_2M_P_RW (0x80 | 0x3)
#define CPUID1_ECX_PCLMUL (1 << 1)
#define CPUID1_ECX_SSE42 (1 << 20)
#define CPUID1_ECX_AES (1 << 25)
#define CPUID1_ECX_RDRAND (1 << 30)

	.section .note.pvh, "a"
	.align 4
	.long 4                         /* namesz: "Xen\0" */
	.long 8                         /* descsz */
	.long XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.align 4
	.quad probe_start32

	.text
	.code32
	.globl probe_start32
probe_start32:
	cli
	cld
	movl $stack_top, %esp
	/* Identity-map the first 1 GiB with 2 MiB pages: PML4[0] -> PDPT[0] -> PD. */
	movl $(pdpt + PTE_P_RW), pml4
	movl $(pd + PTE_P_RW), pdpt
	xorl %ecx, %ecx
1:	movl %ecx, %eax
	shll $21, %eax
	orl $PDE_2M_P_RW, %eax
	movl %eax, pd(, %ecx, 8)
	movl $0, pd + 4(, %ecx, 8)
	incl %ecx
	cmpl $512, %ecx
	jb 1b
	movl $pml4, %eax
	movl %eax, %cr3
	movl %cr4, %eax
	orl $(CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT), %eax
	movl %eax, %cr4
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl %cr0, %eax
	andl $~CR0_EM, %eax
	orl $(CR0_PG | CR0_MP | CR0_PE), %eax
	movl %eax, %cr0
	lgdt gdt_ptr
	ljmp $0x08, $probe_start64

	.code64
probe_start64:
	movw $0x10, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	leaq stack_top(%rip), %rsp
	leaq msg_long(%rip), %rsi
	call puts
	movl $1, %eax
	cpuid
	movl %ecx, %r12d                /* CPUID.1:ECX, kept for every check below */

	/* SSE + AES-NI: FIPS-197 appendix C.1, AES-128. */
	testl $CPUID1_ECX_AES, %r12d
	jz no_aes
	movdqu aes_key(%rip), %xmm1     /* round key 0 */
	movdqu aes_pt(%rip), %xmm0
	pxor %xmm1, %xmm0
	.irp rcon, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1b
	aeskeygenassist $\rcon, %xmm1, %xmm2
	call aes_next_round_key
	aesenc %xmm1, %xmm0
	.endr
	aeskeygenassist $0x36, %xmm1, %xmm2
	call aes_next_round_key
	aesenclast %xmm1, %xmm0
	movdqu aes_ct(%rip), %xmm3
	pcmpeqb %xmm3, %xmm0
	pmovmskb %xmm0, %eax
	cmpl $0xffff, %eax
	movb $PROBE_BAD_AES, %bl
	jne finish
	leaq msg_aes(%rip), %rsi
	call puts
no_aes:
	/* PCLMULQDQ: (x^7 + ... + 1)^2 without carries is 0x5555. */
	testl $CPUID1_ECX_PCLMUL, %r12d
	jz no_pclmul
	movl $0xff, %eax
	movq %rax, %xmm0
	movq %rax, %xmm1
	pclmulqdq $0x00, %xmm1, %xmm0
	movq %xmm0, %rax
	cmpq $0x5555, %rax
	movb $PROBE_BAD_PCLMUL, %bl
	jne finish
	leaq msg_pclmul(%rip), %rsi
	call puts
no_pclmul:
	/* SSE4.2 CRC32: CRC-32C("123456789") = 0xe3069283. */
	testl $CPUID1_ECX_SSE42, %r12d
	jz no_crc
	movl $0xffffffff, %eax
	leaq crc_input(%rip), %rsi
	movl $9, %ecx
2:	crc32b (%rsi), %eax
	incq %rsi
	decl %ecx
	jnz 2b
	notl %eax
	cmpl $0xe3069283, %eax
	movb $PROBE_BAD_CRC32, %bl
	jne finish
	leaq msg_crc(%rip), %rsi
	call puts
no_crc:
	/* RDRAND: the image seeds its CSPRNG from it; a few tries, as the SDM advises. */
	testl $CPUID1_ECX_RDRAND, %r12d
	jz no_rdrand
	movl $16, %ecx
3:	rdrand %rax
	jc 4f
	decl %ecx
	jnz 3b
	movb $PROBE_BAD_RDRAND, %bl
	jmp finish
4:	leaq msg_rdrand(%rip), %rsi
	call puts
no_rdrand:
	movb $PROBE_OK, %bl
	leaq msg_ok(%rip), %rsi
	call puts
finish:
	movb %bl, %al
	outb %al, $DEBUG_EXIT_PORT
5:	hlt
	jmp 5b

/* xmm1 = the next AES-128 round key from xmm1 (this one) and xmm2 (AESKEYGENASSIST of
 * it): each word is the XOR of the words before it in this key with the assist word. */
aes_next_round_key:
	pshufd $0xff, %xmm2, %xmm2
	movdqa %xmm1, %xmm3
	pslldq $4, %xmm3
	pxor %xmm3, %xmm1
	pslldq $4, %xmm3
	pxor %xmm3, %xmm1
	pslldq $4, %xmm3
	pxor %xmm3, %xmm1
	pxor %xmm2, %xmm1
	ret

/* puts: the NUL-terminated string at %rsi to COM1 (QEMU's UART needs no pacing). */
puts:
	movw $COM1, %dx
6:	lodsb
	testb %al, %al
	jz 7f
	outb %al, %dx
	jmp 6b
7:	ret

	.section .rodata
	.align 16
aes_key: .byte 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
	 .byte 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f
aes_pt:  .byte 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77
	 .byte 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff
aes_ct:  .byte 0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30
	 .byte 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a
crc_input: .ascii "123456789"
msg_long:   .asciz "urmqtt accel probe: long mode, SSE on\n"
msg_aes:    .asciz "urmqtt accel probe: AES-NI known answer\n"
msg_pclmul: .asciz "urmqtt accel probe: PCLMULQDQ known answer\n"
msg_crc:    .asciz "urmqtt accel probe: CRC32 known answer\n"
msg_rdrand: .asciz "urmqtt accel probe: RDRAND\n"
msg_ok:     .asciz "urmqtt accel probe: ok\n"
	.align 8
gdt:
	.quad 0
	.quad 0x00af9b000000ffff        /* 0x08: 64-bit code, accessed (no write-back) */
	.quad 0x00cf93000000ffff        /* 0x10: data, accessed */
gdt_ptr:
	.word gdt_ptr - gdt - 1
	.long gdt

	.bss
	.align 4096
pml4: .skip 4096
pdpt: .skip 4096
pd:   .skip 4096
	.skip 4096
stack_top:

	.section .note.GNU-stack, "", @progbits
