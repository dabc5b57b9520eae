# SPDX-License-Identifier: MIT
# plat/: the platform description (plat.h) and its parsers: ACPI (x86_64; aarch64 under
# UEFI: acpi_arm.c) and the flattened device tree (aarch64); all portable, host-tested and
# fuzzed.
PORTABLE_SRCS += plat/acpi.c plat/acpi_arm.c plat/dtb.c
