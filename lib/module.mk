# SPDX-License-Identifier: MIT
# lib/: the freestanding runtime shared by the kernel, host tools and tests.
PORTABLE_SRCS += lib/cursor.c lib/err.c lib/mem.c lib/fmt.c lib/crc32.c lib/crc32c.c lib/siphash.c lib/ring.c
PORTABLE_SRCS += lib/msgq.c lib/endpoint.c lib/nameset.c
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
TEST_LIBS_lib_test_ring := -lpthread

# The ring stress test again under ThreadSanitizer (run by tests/smoke/lib-ring-tsan.sh).
TSAN_CFLAGS = -std=gnu11 -g -O1 -fsanitize=thread $(WARN) $(INCLUDES) $(GEN_INCLUDES)
$(B)/tsan/test_ring: tests/unit/lib/test_ring.c lib/ring.c lib/err.c lib/ring.h
	@mkdir -p $(@D); echo "  CC [tsan]    $@"
	$(Q)$(HOST_CC) $(TSAN_CFLAGS) -o $@ tests/unit/lib/test_ring.c lib/ring.c lib/err.c -lcmocka -lpthread
TEST_DEPS += $(B)/tsan/test_ring
SMOKE_SCRIPTS += tests/smoke/lib-ring-tsan.sh
