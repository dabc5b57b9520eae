# SPDX-License-Identifier: MIT
# kernel/mm/: physical page frames and the kernel heap (size classes, per-core caches,
# exact accounting). Portable C, host-tested.
PORTABLE_SRCS += kernel/mm/pages.c kernel/mm/heap.c
# The heap test uses one thread per core (cross-core frees).
TEST_LIBS_kernel_test_heap := -lpthread

# The heap tests again under ThreadSanitizer (remote-free stacks, pending bits, the lock);
# TSAN_CFLAGS comes from lib/module.mk.
$(B)/tsan/test_heap: tests/unit/kernel/test_heap.c kernel/mm/heap.c kernel/mm/pages.c lib/ring.c lib/err.c \
		kernel/mm/heap.h kernel/mm/pages.h
	@mkdir -p $(@D); echo "  CC [tsan]    $@"
	$(Q)$(HOST_CC) $(TSAN_CFLAGS) -o $@ tests/unit/kernel/test_heap.c kernel/mm/heap.c kernel/mm/pages.c \
		lib/ring.c lib/err.c -lcmocka -lpthread
TEST_DEPS += $(B)/tsan/test_heap
SMOKE_SCRIPTS += tests/smoke/kernel-heap-tsan.sh
