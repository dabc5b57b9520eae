# SPDX-License-Identifier: MIT
# tools/reloc: urmqtt-relocs, the x86_64 image's relocation table (for a later KASLR) and
# the check that the table names every absolute address (ADR-020).
TOOLS += urmqtt-relocs
TOOL_SRCS_urmqtt-relocs := tools/reloc/main.c tools/reloc/elfrel.c
# elfrel.c reads ELF files: implicit narrowing is an error there.
CFLAGS_tools_reloc_elfrel := -Wconversion
TEST_SRCS_tools_test_elfrel := tools/reloc/elfrel.c
FUZZ_SRCS_elfrel := tools/reloc/elfrel.c
