# SPDX-License-Identifier: MIT
# plat/: the platform description (plat.h) and its parsers: ACPI (x86_64); DTB later.
PORTABLE_SRCS += plat/acpi.c
