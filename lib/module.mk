# SPDX-License-Identifier: MIT
# lib/: the freestanding runtime shared by the kernel, host tools and tests.
PORTABLE_SRCS += lib/cursor.c lib/err.c lib/mem.c lib/fmt.c lib/crc32c.c lib/siphash.c lib/ring.c
PORTABLE_SRCS_x86_64 += lib/crc32c_x86_64.c
PORTABLE_SRCS_aarch64 += lib/crc32c_aarch64.c
# The hardware CRC needs the instruction set extension for that one file.
CFLAGS_lib_crc32c_x86_64 := -msse4.2
CFLAGS_lib_crc32c_aarch64 := -march=armv8-a+crc
# In the image our implementations are the C library's symbols.
KERNEL_SRCS_x86_64 += lib/mem_kernel.c
KERNEL_SRCS_aarch64 += lib/mem_kernel.c
# Stop gcc turning the byte loops of mem.c back into calls to memcpy/memset.
KCFLAGS_lib_mem := -fno-tree-loop-distribute-patterns
KCFLAGS_lib_mem_kernel := -fno-tree-loop-distribute-patterns
