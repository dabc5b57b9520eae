# SPDX-License-Identifier: MIT
# Toolchains and flags for the flavours. Every flavour gets -Werror and the hardening
# flags of docs/ARCHITECTURE.md (Memory); portable code is compiled freestanding (-nostdinc) everywhere so a
# stray libc header fails on the host too.

HOST_CC      ?= gcc
FUZZ_CC      ?= clang
X86_64_CC    ?= gcc
AARCH64_CC   ?= aarch64-linux-gnu-gcc
AARCH64_LD   ?= aarch64-linux-gnu-ld
AARCH64_OBJCOPY ?= aarch64-linux-gnu-objcopy

WARN := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wcast-qual -Wwrite-strings \
        -Wmissing-prototypes -Wstrict-prototypes -Wundef -Wvla -Wimplicit-fallthrough \
        -Wformat=2
# Portable layers are parsers and codecs almost throughout: implicit narrowing is an error.
WARN_PORTABLE := $(WARN) -Wconversion
HARDEN := -fstack-protector-strong -fno-common -ftrivial-auto-var-init=zero
DEPFLAGS := -MMD -MP
INCLUDES := -I.

# Generated headers (configuration constants) live under $(B)/gen.
GEN_INCLUDES = -I$(B)/gen

gcc_freestanding = -ffreestanding -nostdinc -isystem $(shell $(1) -print-file-name=include)
clang_freestanding = -ffreestanding -nostdinc -isystem $(shell $(1) -print-resource-dir)/include

SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# host: unit tests, fuzz replay, tools and the hosted platform (ASan+UBSan).
HOST_PORTABLE_CFLAGS = -std=c11 -g -O1 $(WARN_PORTABLE) $(HARDEN) $(SANITIZE) \
        $(call gcc_freestanding,$(HOST_CC)) $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS)
HOST_CFLAGS = -std=gnu11 -g -O1 $(WARN) $(HARDEN) $(SANITIZE) $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS)
HOST_LDFLAGS = $(SANITIZE)

# host-release: tools and benchmarks without sanitizers (measurements only).
HOSTREL_PORTABLE_CFLAGS = -std=c11 -g -O2 $(WARN_PORTABLE) $(HARDEN) \
        $(call gcc_freestanding,$(HOST_CC)) $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS)
HOSTREL_CFLAGS = -std=gnu11 -g -O2 $(WARN) $(HARDEN) $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS)

# fuzz: libFuzzer with ASan+UBSan (clang 14 still needs the opt-in for auto-var-init).
CLANG_HARDEN := -fstack-protector-strong -fno-common -ftrivial-auto-var-init=zero \
        -enable-trivial-auto-var-init-zero-knowing-it-will-be-removed-from-clang
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_PORTABLE_CFLAGS = -std=c11 -g -O1 $(WARN_PORTABLE) $(CLANG_HARDEN) $(FUZZ_SAN) \
        $(call clang_freestanding,$(FUZZ_CC)) $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS)
FUZZ_CFLAGS = -std=gnu11 -g -O1 $(WARN) $(CLANG_HARDEN) $(FUZZ_SAN) $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS)
FUZZ_LDFLAGS = -fsanitize=fuzzer,address,undefined

# Production images drop addresses and registers from every report.
PROFILE_DEFS := $(if $(filter prod,$(PROFILE)),-DURMQTT_PROD=1)

# x86_64 kernel. The image has no thread pointer: the stack protector reads the global
# __stack_chk_guard (arch/x86_64/ssp.c), not %fs:0x28. Interrupt-safe default: general
# registers only; the only SSE code is mbedTLS's AES/GCM with AES-NI (tls/module.mk,
# ADR-021) and tls/accel's generated assembly (P-256 table gathers, SHA-NI; ADR-056, ADR-058),
# all run from the cores' loops, never from an interrupt. Kernel code model for the higher half.
X86_64_CFLAGS = -std=c11 -g -O2 $(WARN_PORTABLE) $(HARDEN) -fcf-protection \
        $(call gcc_freestanding,$(X86_64_CC)) -fno-pie -mcmodel=kernel -mno-red-zone \
        -mgeneral-regs-only -fno-omit-frame-pointer -fno-asynchronous-unwind-tables \
        -mstack-protector-guard=global \
        $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS) -DURMQTT_KERNEL=1 $(PROFILE_DEFS)
X86_64_ASFLAGS = -g $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS) -DURMQTT_KERNEL=1 -D__ASSEMBLY__ $(PROFILE_DEFS)

# aarch64 kernel (cross). PAC/BTI landing pads through -mbranch-protection=standard.
AARCH64_CFLAGS = -std=c11 -g -O2 $(WARN_PORTABLE) $(HARDEN) -mbranch-protection=standard \
        $(call gcc_freestanding,$(AARCH64_CC)) -fno-pie -mgeneral-regs-only -mstrict-align -mno-outline-atomics \
        -fno-omit-frame-pointer -fno-asynchronous-unwind-tables \
        $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS) -DURMQTT_KERNEL=1 $(PROFILE_DEFS)
AARCH64_ASFLAGS = -g $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS) -DURMQTT_KERNEL=1 -D__ASSEMBLY__
