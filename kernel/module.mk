# SPDX-License-Identifier: MIT
# kernel/ (portable part): log with levels and per-site rate limiting, panic, command line, per-core loop + watchdog, calendar conversion.
# kernel/heap.c: the kernel heap accessor over kernel/mm; kernel/csprng.c: ChaCha20 DRBG.
# kernel/knet.c: virtio-net + net + TCP on one core, under the upper layer the caller gives.
PORTABLE_SRCS += kernel/log.c kernel/panic.c kernel/cmdline.c kernel/bootmode.c kernel/loop.c kernel/time.c \
	kernel/heap.c kernel/csprng.c kernel/knet.c
# kernel/kdemux.c: the per-core mesh demultiplexer (kind ranges); kernel/ksteer.c: the
# receive classifier of the multicore data plane (which core gets a frame).
PORTABLE_SRCS += kernel/kdemux.c kernel/ksteer.c
# kernel/knet is tested against the simulated virtio-net device of the drivers' tests.
TEST_SRCS_kernel_test_knet := tests/unit/drivers/fake_dev.c
# kernel/xcore.c: the core mesh (one SPSC ring per ordered pair of cores, credit flow control).
PORTABLE_SRCS += kernel/xcore.c
# Its test runs one thread per core (all-to-all stress), and again under ThreadSanitizer
# (tests/smoke/kernel-xcore-tsan.sh); TSAN_CFLAGS comes from lib/module.mk.
TEST_LIBS_kernel_test_xcore := -lpthread
$(B)/tsan/test_xcore: tests/unit/kernel/test_xcore.c kernel/xcore.c lib/ring.c lib/err.c kernel/xcore.h lib/ring.h
	@mkdir -p $(@D); echo "  CC [tsan]    $@"
	$(Q)$(HOST_CC) $(TSAN_CFLAGS) -o $@ tests/unit/kernel/test_xcore.c kernel/xcore.c lib/ring.c lib/err.c \
		-lcmocka -lpthread
TEST_DEPS += $(B)/tsan/test_xcore
SMOKE_SCRIPTS += tests/smoke/kernel-xcore-tsan.sh
# kernel/clockcal.c: counter calibration arithmetic (windows, discard, median);
# kernel/wallclock.c: the wall clock over the monotonic clock, its publication to every
# core and its discipline against the RTC (ADR-061).
PORTABLE_SRCS += kernel/clockcal.c kernel/wallclock.c
TEST_LIBS_kernel_test_wallclock := -lpthread
# The wall clock's publication (a sequence counter read by every core) under ThreadSanitizer.
$(B)/tsan/test_wallclock: tests/unit/kernel/test_wallclock.c kernel/wallclock.c kernel/wallclock.h
	@mkdir -p $(@D); echo "  CC [tsan]    $@"
	$(Q)$(HOST_CC) $(TSAN_CFLAGS) -o $@ tests/unit/kernel/test_wallclock.c kernel/wallclock.c -lcmocka -lpthread
TEST_DEPS += $(B)/tsan/test_wallclock
SMOKE_SCRIPTS += tests/smoke/kernel-wallclock-tsan.sh
