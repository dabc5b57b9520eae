# SPDX-License-Identifier: MIT
# store/: durable state on the raw disk. dev.c: synchronous block I/O for the database
# core over drivers/blk.h.
PORTABLE_SRCS += store/dev.c
# layout.c: disk layout v2 (docs/DISK-FORMAT.md): superblocks, plan, probe, format;
# gpt.c: the GPT it is built on.
PORTABLE_SRCS += store/layout.c store/gpt.c
