# SPDX-License-Identifier: MIT
# kernel/ (portable part): log with levels and per-site rate limiting, panic, command line, per-core loop + watchdog, calendar conversion.
PORTABLE_SRCS += kernel/log.c kernel/panic.c kernel/cmdline.c kernel/loop.c kernel/time.c
