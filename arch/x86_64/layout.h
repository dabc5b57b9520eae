/* SPDX-License-Identifier: MIT
 *
 * x86_64 virtual address layout, shared by the linker script, assembly and C. Owns only
 * constants; never code. The lower half (user half) is never mapped after boot.
 *
 *   0xffff800000000000  physmap: usable RAM (RW+NX, no kernel image) and on-demand
 *                       read-only firmware tables (PML4 slots 256..)
 *   0xffffff0000000000  stacks: each stack followed from below by one unmapped guard page
 *   0xffffffff80000000  kernel image (-2 GiB, -mcmodel=kernel), loaded at 1 MiB physical
 */
#ifndef ARCH_X86_64_LAYOUT_H
#define ARCH_X86_64_LAYOUT_H

#define X86_KERNEL_VMA      0xffffffff80000000
#define X86_KERNEL_LOAD     0x100000
#define X86_PHYSMAP_BASE    0xffff800000000000
#define X86_STACK_AREA      0xffffff0000000000
#define X86_PAGE_SIZE       4096

/* Boot mapping built by boot.S: the first X86_BOOT_MAP_BYTES of physical memory. */
#define X86_BOOT_MAP_BYTES  0x40000000

/* GDT selectors. */
#define X86_SEL_KCODE 0x08
#define X86_SEL_KDATA 0x10
#define X86_SEL_TSS   0x18

/* IST slots (1-based, as in the IDT gate). */
#define X86_IST_DF  1
#define X86_IST_NMI 2
#define X86_IST_MC  3

/* Boot kinds passed from boot.S to C. */
#define X86_BOOT_PVH 1
#define X86_BOOT_MB2 2

#endif
