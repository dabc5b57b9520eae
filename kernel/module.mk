# SPDX-License-Identifier: MIT
# kernel/ (portable part): log with levels and per-site rate limiting, panic, command line, per-core loop + watchdog, calendar conversion.
# kernel/heap.c: the kernel heap accessor over kernel/mm; kernel/csprng.c: ChaCha20 DRBG.
PORTABLE_SRCS += kernel/log.c kernel/panic.c kernel/cmdline.c kernel/loop.c kernel/time.c \
	kernel/heap.c kernel/csprng.c
