# SPDX-License-Identifier: MIT
# plat/: the platform description (plat.h) and its parsers: ACPI (x86_64) and the
# flattened device tree (aarch64); both portable, host-tested and fuzzed.
PORTABLE_SRCS += plat/acpi.c plat/dtb.c
