# SPDX-License-Identifier: MIT
# kernel/ (portable part): log with levels and per-site rate limiting, panic, command line, per-core loop + watchdog, calendar conversion.
# kernel/heap.c: the kernel heap accessor over kernel/mm; kernel/csprng.c: ChaCha20 DRBG.
# kernel/knet.c: virtio-net + net + TCP on one core; kernel/knet_echo_tmp.c: TEMPORARY echo upper layer.
PORTABLE_SRCS += kernel/log.c kernel/panic.c kernel/cmdline.c kernel/loop.c kernel/time.c \
	kernel/heap.c kernel/csprng.c kernel/knet.c kernel/knet_echo_tmp.c
# kernel/knet is tested against the simulated virtio-net device of the drivers' tests.
TEST_SRCS_kernel_test_knet := tests/unit/drivers/fake_dev.c
