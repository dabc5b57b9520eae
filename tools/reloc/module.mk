# SPDX-License-Identifier: MIT
# tools/reloc: urmqtt-relocs, the relocation table each image carries for KASLR (x86_64's
# R_X86_64_64 sites, ADR-077; aarch64's R_AARCH64_ABS64 sites, ADR-084) and the check that
# the table names every absolute address (ADR-020).
TOOLS += urmqtt-relocs
TOOL_SRCS_urmqtt-relocs := tools/reloc/main.c tools/reloc/elfrel.c
# elfrel.c reads ELF files: implicit narrowing is an error there.
CFLAGS_tools_reloc_elfrel := -Wconversion
TEST_SRCS_tools_test_elfrel := tools/reloc/elfrel.c
FUZZ_SRCS_elfrel := tools/reloc/elfrel.c
