# SPDX-License-Identifier: MIT
# tls/: the mbedTLS handshake adapter, our TLS 1.3 record layer, and the rules that build
# mbedTLS 3.6.6 (third-party, from $(B)/deps, never committed) into its own archive per
# flavour, $(B)/<flavour>/libmbedtls.a, with its own flag set: freestanding, our shim
# headers (tls/shim/) instead of libc's, our configuration tls/mbedtls_config.h, warnings
# shown but not errors (our own files keep -Werror).

TLS_MBEDTLS_DIR := $(B)/deps/mbedtls-3.6.6
TLS_MBEDTLS_SRCS := $(sort $(wildcard $(TLS_MBEDTLS_DIR)/library/*.c))
# URMQTT_DP_BENCH=1 (the benchmark tree of `make bench` only, never the main build): mbedTLS
# also gets its client side, for tools/dpbench's in-guest client. The define reaches every
# file that includes mbedTLS headers, so struct layouts agree.
TLS_MBEDTLS_CONFIG := -DMBEDTLS_CONFIG_FILE='"tls/mbedtls_config.h"' \
	$(if $(filter 1,$(URMQTT_DP_BENCH)),-DURMQTT_DP_BENCH=1)

# Flags our files need to include mbedTLS headers (system includes: their warnings are not ours).
TLS_INC := -isystem tls/shim -isystem $(TLS_MBEDTLS_DIR)/include $(TLS_MBEDTLS_CONFIG)

PORTABLE_SRCS += tls/record.c tls/handshake.c tls/identity.c tls/revoke.c tls/hello.c
CFLAGS_tls_record := $(TLS_INC)
CFLAGS_tls_handshake := $(TLS_INC)
CFLAGS_tls_identity := $(TLS_INC)
CFLAGS_tls_revoke := $(TLS_INC)
# The image has no libc: snprintf for mbedTLS's x509 name formatting comes from lib/fmt.
KERNEL_SRCS_x86_64 += tls/shim/libc_kernel.c
# mbedTLS's mutexes in the images (MBEDTLS_THREADING_ALT; ADR-026).
KERNEL_SRCS_x86_64 += tls/shim/threading_kernel.c
CFLAGS_tls_shim_threading_kernel = $(TLS_INC)
KERNEL_SRCS_aarch64 += tls/shim/libc_kernel.c tls/shim/threading_kernel.c

# ---- mbedTLS, one archive per flavour ----
TLS_MBEDTLS_BASE := -std=c11 -g -Wall -Werror=implicit-function-declaration -Wno-unused-function -Wno-unused-parameter \
	-I tls/shim -I . -I $(TLS_MBEDTLS_DIR)/include -I $(TLS_MBEDTLS_DIR)/library \
	$(TLS_MBEDTLS_CONFIG) $(DEPFLAGS)
TLS_MBEDTLS_CFLAGS_host = -O1 $(TLS_MBEDTLS_BASE) $(HARDEN) $(SANITIZE) $(call gcc_freestanding,$(HOST_CC))
TLS_MBEDTLS_CFLAGS_hostrel = -O2 $(TLS_MBEDTLS_BASE) $(HARDEN) $(call gcc_freestanding,$(HOST_CC))
TLS_MBEDTLS_CFLAGS_fuzz = -O1 $(TLS_MBEDTLS_BASE) $(CLANG_HARDEN) -fsanitize=address,undefined \
	-fno-sanitize-recover=all $(call clang_freestanding,$(FUZZ_CC))
TLS_MBEDTLS_CFLAGS_x86_64 = -O2 $(TLS_MBEDTLS_BASE) $(HARDEN) -fcf-protection \
	$(call gcc_freestanding,$(X86_64_CC)) -fno-pie -mcmodel=kernel -mno-red-zone \
	-mgeneral-regs-only -fno-asynchronous-unwind-tables -DURMQTT_KERNEL=1
TLS_MBEDTLS_CFLAGS_aarch64 = -O2 $(TLS_MBEDTLS_BASE) $(HARDEN) -mbranch-protection=standard \
	$(call gcc_freestanding,$(AARCH64_CC)) -fno-pie -mgeneral-regs-only -mstrict-align -mno-outline-atomics \
	-fno-asynchronous-unwind-tables -DURMQTT_KERNEL=1
TLS_MBEDTLS_CC_host = $(HOST_CC)
TLS_MBEDTLS_CC_hostrel = $(HOST_CC)
TLS_MBEDTLS_CC_fuzz = $(FUZZ_CC)
TLS_MBEDTLS_CC_x86_64 = $(X86_64_CC)
TLS_MBEDTLS_CC_aarch64 = $(AARCH64_CC)

# AES and GCM on the CPU's instructions (ADR-021 x86_64, ADR-071 aarch64): aes.c, gcm.c and
# the architecture's file (aesni.c: compiler intrinsics on the SSE register file; aesce.c:
# Advanced SIMD intrinsics) are built with vector registers allowed, and aes.c/gcm.c with
# the same target flags as that file, because aesni.h and aesce.h decide from them whether
# the accelerated code exists (and, on x86_64, the round keys' alignment). So these files
# are the kernel's only mbedTLS code with vector registers: they run in a core's loop, never
# in an interrupt handler (handlers are general-registers-only and there is no other
# context to save), and the instructions are used only after the CPU says it has them
# (x86_64: CPUID; aarch64: ID_AA64ISAR0_EL1, which tls/accel/cpu_aarch64.c reads for
# aesce.c through tls/accel/shim/sys/auxv.h, in place of Linux's getauxval).
TLS_MBEDTLS_SIMD_FILES := aes aesni aesce gcm
TLS_MBEDTLS_SIMD_x86_64 := -msse2 -maes -mpclmul
TLS_MBEDTLS_SIMD_aarch64 := -I tls/accel/shim
# Per flavour: its flags without -mgeneral-regs-only (the images'), plus its architecture's
# (TLS_ACCEL_ARCH_<flavour>, tls/accel/module.mk).
tls_mbedtls_simd_cflags = $(filter-out -mgeneral-regs-only,$(TLS_MBEDTLS_CFLAGS_$(1))) \
	$(TLS_MBEDTLS_SIMD_$(TLS_ACCEL_ARCH_$(1)))
tls_mbedtls_flags = $(if $(filter $(TLS_MBEDTLS_SIMD_FILES),$(2)),$(call tls_mbedtls_simd_cflags,$(1)),$(TLS_MBEDTLS_CFLAGS_$(1)))

# The unpacked tree is checked before anything of it is compiled: make deps applies our
# patches (tools/deps/patches/mbedtls-3.6.6-*.patch) when it unpacks, and `fetch-deps.sh
# --check` fails, naming make deps, when the tree was unpacked for another pin or patch. Its
# stamp is rewritten by every unpack, so every object depends on it: tar restores the
# tarball's old file times, so a re-unpack alone would not look newer than our objects.
TLS_MBEDTLS_STAMP := $(TLS_MBEDTLS_DIR)/.urmqtt-digest
.PHONY: deps-check
deps-check:
	$(Q)tools/deps/fetch-deps.sh --out $(B)/deps --check
$(TLS_MBEDTLS_STAMP):
	@echo "make: $(TLS_MBEDTLS_DIR) is missing: run 'make deps'" >&2; exit 1

# Each archive also holds tls/accel's objects for the flavour (TLS_ACCEL_OBJS_<fl>, from
# tls/accel/module.mk, which is read first): mbedTLS's patched driver wrappers call them.
# It is rebuilt when its member list changes, as libportable.a is (the top Makefile's
# member_list).
$(if $(TLS_ACCEL_FLAVOURS),,$(error tls/accel/module.mk must be read before tls/module.mk))
define tls_mbedtls_rules
TLS_MBEDTLS_OBJS_$(1) := $$(patsubst $$(TLS_MBEDTLS_DIR)/library/%.c,$$(B)/$(1)/mbedtls/%.o,$$(TLS_MBEDTLS_SRCS))
$$(B)/$(1)/mbedtls/%.o: $$(TLS_MBEDTLS_DIR)/library/%.c tls/mbedtls_config.h $$(TLS_MBEDTLS_STAMP) | deps-check
	@mkdir -p $$(@D); echo "  CC [mbedtls $(1)] $$*"
	$$(Q)$$(TLS_MBEDTLS_CC_$(1)) $$(call tls_mbedtls_flags,$(1),$$*) -c $$< -o $$@
$$(call member_list,$$(B)/$(1)/libmbedtls.list,$$(TLS_MBEDTLS_OBJS_$(1)) $$(TLS_ACCEL_OBJS_$(1)))
$$(B)/$(1)/libmbedtls.a: $$(TLS_MBEDTLS_OBJS_$(1)) $$(TLS_ACCEL_OBJS_$(1)) $$(B)/$(1)/libmbedtls.list \
		$$(TLS_MBEDTLS_STAMP) | deps-check
	@mkdir -p $$(@D); echo "  AR          $$@"
	$$(Q)rm -f $$@ && ar rcs $$@ $$(filter %.o,$$^)
endef
$(foreach fl,host hostrel fuzz x86_64 aarch64,$(eval $(call tls_mbedtls_rules,$(fl))))

# ---- tests, fuzzers, tools that need mbedTLS ----
TLS_TEST_INC := -isystem $(TLS_MBEDTLS_DIR)/include $(TLS_MBEDTLS_CONFIG)
CFLAGS_tests_unit_tls_test_record := $(TLS_TEST_INC)
CFLAGS_tests_unit_tls_test_identity := $(TLS_TEST_INC)
TEST_LIBS_tls_test_record := $(B)/host/libmbedtls.a
TEST_LIBS_tls_test_identity := $(B)/host/libmbedtls.a
TEST_LIBS_tls_test_handshake := $(B)/host/libmbedtls.a
$(B)/host/tests/unit/tls/test_record $(B)/host/tests/unit/tls/test_identity \
	$(B)/host/tests/unit/tls/test_handshake: $(B)/host/libmbedtls.a

# Fuzz targets (libFuzzer and the gcc replay): mbedTLS after libportable.a in the link.
CFLAGS_tests_fuzz_fuzz_tls_record := $(TLS_TEST_INC)
CFLAGS_tests_fuzz_fuzz_tls_identity := $(TLS_TEST_INC)
$(B)/fuzz/fuzz_tls_record $(B)/fuzz/fuzz_tls_identity: $(B)/fuzz/libmbedtls.a
$(B)/host/tests/fuzz/replay_tls_record $(B)/host/tests/fuzz/replay_tls_identity: $(B)/host/libmbedtls.a

TOOLS += tls-echo
TOOL_SRCS_tls-echo := tools/tls-echo/main.c $(NODE_HOST_PORT_SRCS)
TOOL_LIBS_tls-echo := $(B)/host/libmbedtls.a
$(B)/host/tools/tls-echo: $(B)/host/libmbedtls.a

SMOKE_SCRIPTS += tests/smoke/tls-echo.sh
TEST_DEPS += $(B)/host/tools/tls-echo
