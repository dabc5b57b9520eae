# SPDX-License-Identifier: MIT
# store/: durable state on the raw disk. dev.c: synchronous block I/O for the database
# core over drivers/blk.h.
PORTABLE_SRCS += store/dev.c
