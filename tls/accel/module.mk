# SPDX-License-Identifier: MIT
# tls/accel: urMQTT's PSA transparent driver for the handshake's elliptic curves (P-256, X25519)
# on OpenSSL's perlasm arithmetic (tls/accel/accel.h), and SHA-256's block function for
# mbedTLS. Its objects go into each flavour's $(B)/<flavour>/libmbedtls.a (tls/module.mk),
# because mbedTLS's patched driver wrappers (tools/deps/patches/mbedtls-3.6.6-accel-hooks.patch)
# call urmqtt_accel_* and its sha256.c calls mbedtls_internal_sha256_process (ours: sha256_process.c, so that no
# member of the archive shares a name with one of mbedTLS's): every link that
# takes mbedTLS then resolves them, with no link line changed. The assembly is generated at
# build time by perl from OpenSSL's source (make deps unpacks the members listed in
# tools/deps/members/openssl.txt); nothing generated or third-party is committed.
# On aarch64 it also answers mbedTLS's aesce.c, which asks Linux's getauxval whether the CPU
# has the AES and PMULL instructions: shim/sys/auxv.h (on the path of aes.c, aesce.c and gcm.c
# only, tls/module.mk) sends the question to cpu_aarch64.c, which reads the ID registers.
#
# Our C files are compiled by the top Makefile's portable pattern rules ($(B)/<fl>/p/...): the
# flavour's strict flags (-Werror, -Wconversion, freestanding) plus TLS_ACCEL_CFLAGS.
# This file is read before tls/module.mk (sorted names), which uses the TLS_ACCEL_OBJS_<fl>
# lists below at parse time: so no $(call objs,...) here (defined after the module files).

# ---- what is built: edit these lists ---------------------------------------------------
# Our C for every architecture.
TLS_ACCEL_SRCS := tls/accel/p256.c tls/accel/x25519.c tls/accel/psa_driver.c
# SHA-256's block function for mbedTLS (MBEDTLS_SHA256_PROCESS_ALT): not reached through the
# driver wrappers but by name from mbedTLS's sha256.c, which the same archive resolves.
TLS_ACCEL_SRCS += tls/accel/sha256_process.c
# Our C for one architecture (a variant replaces the generic file by path, not by #ifdef).
TLS_ACCEL_SRCS_x86_64 := tls/accel/fe25519_x86_64.c tls/accel/cpu_x86_64.c
TLS_ACCEL_SRCS_aarch64 := tls/accel/fe25519_generic.c tls/accel/cpu_aarch64.c
# Generated assembly per architecture: names of $(TLS_ACCEL_GEN)/<name>.S (rules below).
TLS_ACCEL_ASM_x86_64 := nistz256-x86_64 x25519-x86_64
TLS_ACCEL_ASM_aarch64 := nistz256-armv8
TLS_ACCEL_ASM_x86_64 += sha256-x86_64
TLS_ACCEL_ASM_aarch64 += sha256-armv8
# Every file above must exist: a missing one fails the build.
tls_accel_have = $(1)
# Flags our C files get on top of the flavour's: mbedTLS's headers (PSA types) and its config.
TLS_ACCEL_CFLAGS = $(TLS_INC)
# Unit tests tests/unit/accel/test_*.c: host libc build, mbedTLS's headers, host libmbedtls.a.
TLS_ACCEL_TEST_CFLAGS = $(TLS_TEST_INC)

# ---- flavours and architectures ------------------------------------------------------
TLS_ACCEL_HOST_ARCH := $(shell uname -m)
TLS_ACCEL_ARCH_host := $(TLS_ACCEL_HOST_ARCH)
TLS_ACCEL_ARCH_hostrel := $(TLS_ACCEL_HOST_ARCH)
TLS_ACCEL_ARCH_fuzz := $(TLS_ACCEL_HOST_ARCH)
TLS_ACCEL_ARCH_x86_64 := x86_64
TLS_ACCEL_ARCH_aarch64 := aarch64
TLS_ACCEL_FLAVOURS := host hostrel fuzz x86_64 aarch64

# $(call tls_accel_objs,flavour): our C objects and the assembly objects of its archive.
tls_accel_objs = $(patsubst %.c,$(B)/$(1)/p/%.o,$(call tls_accel_have,$(TLS_ACCEL_SRCS) \
		$(TLS_ACCEL_SRCS_$(TLS_ACCEL_ARCH_$(1))))) \
	$(patsubst %,$(B)/$(1)/accel/%.o,$(TLS_ACCEL_ASM_$(TLS_ACCEL_ARCH_$(1))))
$(foreach fl,$(TLS_ACCEL_FLAVOURS),$(eval TLS_ACCEL_OBJS_$(fl) := $(call tls_accel_objs,$(fl))))
$(foreach s,$(TLS_ACCEL_SRCS) $(TLS_ACCEL_SRCS_x86_64) $(TLS_ACCEL_SRCS_aarch64), \
	$(eval CFLAGS_$(subst /,_,$(basename $(s))) = $$(TLS_ACCEL_CFLAGS)))

# ---- OpenSSL's perlasm, generated once per tree ---------------------------------------
# The generators run from the unpacked members. The tree's stamp (rewritten by every unpack)
# stands for all of them; deps-check (tls/module.mk) stops the build on a stale tree.
TLS_ACCEL_OSSL := $(B)/deps/openssl-3.5.7
TLS_ACCEL_OSSL_STAMP := $(TLS_ACCEL_OSSL)/.urmqtt-digest
TLS_ACCEL_GEN := $(B)/gen/openssl
# Per output: generator, perlasm flavour, CC the generator probes, a word the output must hold.
# The x86_64 generators ask $CC's assembler (`$CC -Wa,-v`) whether it takes MULX/ADX and AVX:
# a GNU as answers yes, and without `mulx` in the output (the probe failed) the build stops
# rather than ship the slower path silently. The AVX2 code is emitted too; accel_cpu_init()
# reports AVX2 absent, so it never runs (tls/accel/accel.h).
TLS_ACCEL_PL_nistz256-x86_64 := crypto/ec/asm/ecp_nistz256-x86_64.pl
TLS_ACCEL_PLFL_nistz256-x86_64 := elf
TLS_ACCEL_PLCC_nistz256-x86_64 = $(X86_64_CC)
TLS_ACCEL_MUST_nistz256-x86_64 := mulx
TLS_ACCEL_PL_x25519-x86_64 := crypto/ec/asm/x25519-x86_64.pl
TLS_ACCEL_PLFL_x25519-x86_64 := elf
TLS_ACCEL_PLCC_x25519-x86_64 = $(X86_64_CC)
TLS_ACCEL_MUST_x25519-x86_64 := mulx
TLS_ACCEL_PL_nistz256-armv8 := crypto/ec/asm/ecp_nistz256-armv8.pl
TLS_ACCEL_PLFL_nistz256-armv8 := linux64
TLS_ACCEL_PLCC_nistz256-armv8 = $(AARCH64_CC)
TLS_ACCEL_MUST_nistz256-armv8 := AARCH64_VALID_CALL_TARGET
# SHA-256: sha512-*.pl writes SHA-512 code when its output's path contains "512", SHA-256
# code otherwise; so the name says sha256 (a build directory whose path holds "512" would
# get SHA-512 code: the MUST word then stops the build). Both outputs spell the
# SHA instructions as bytes, so the MUST words are what only the SHA-256 hardware path
# carries: its function's name (x86_64), the mnemonic in the comment of each .inst (armv8).
# The x86_64 SSSE3/AVX/AVX2 paths are emitted too and never run (tls/accel/cpu_x86_64.c).
TLS_ACCEL_PL_sha256-x86_64 := crypto/sha/asm/sha512-x86_64.pl
TLS_ACCEL_PLFL_sha256-x86_64 := elf
TLS_ACCEL_PLCC_sha256-x86_64 = $(X86_64_CC)
TLS_ACCEL_MUST_sha256-x86_64 := sha256_block_data_order_shaext
TLS_ACCEL_PL_sha256-armv8 := crypto/sha/asm/sha512-armv8.pl
TLS_ACCEL_PLFL_sha256-armv8 := linux64
TLS_ACCEL_PLCC_sha256-armv8 = $(AARCH64_CC)
TLS_ACCEL_MUST_sha256-armv8 := sha256h

TLS_ACCEL_PERL ?= perl
define tls_accel_gen_rule
$(TLS_ACCEL_GEN)/$(1).S: $(TLS_ACCEL_OSSL_STAMP) | deps-check
	@mkdir -p $$(@D); echo "  PERLASM     $$@"
	$$(Q)rm -f $$@.tmp.S && CC='$$(TLS_ACCEL_PLCC_$(1))' $$(TLS_ACCEL_PERL) \
		$(TLS_ACCEL_OSSL)/$(TLS_ACCEL_PL_$(1)) $(TLS_ACCEL_PLFL_$(1)) $$@.tmp.S
	$$(Q)grep -q '$(TLS_ACCEL_MUST_$(1))' $$@.tmp.S || { rm -f $$@.tmp.S; \
		echo "$$@: no '$(TLS_ACCEL_MUST_$(1))' in the output: is CC=$$(TLS_ACCEL_PLCC_$(1)) a gcc with GNU as?" >&2; exit 1; }
	$$(Q)mv $$@.tmp.S $$@
endef
$(foreach a,$(sort $(TLS_ACCEL_ASM_x86_64) $(TLS_ACCEL_ASM_aarch64)),$(eval $(call tls_accel_gen_rule,$(a))))

# The unpacked tree is made by make deps, never by a build: say so when it is missing.
$(TLS_ACCEL_OSSL_STAMP):
	@echo "make: $(TLS_ACCEL_OSSL) is missing: run 'make deps'" >&2; exit 1

# ---- the fixed-base table of X25519 public keys (x25519.c's design note) ----------------
# 32 x 8 multiples of edwards25519's base point, computed by our generator from the curve's
# definition with exact integers (a second derivation checks them) into a header of const
# data that x25519.c includes: .rodata in every image, nothing computed at boot, nothing
# generated committed. Order-only for every compile (GENERATED_HEADERS), then -MMD tracks it.
TLS_ACCEL_X25519_TABLE := $(B)/gen/x25519_base_table.h
TLS_ACCEL_PYTHON ?= python3
$(TLS_ACCEL_X25519_TABLE): tls/accel/gen_x25519_base.py
	@mkdir -p $(@D); echo "  GEN         $@"
	$(Q)$(TLS_ACCEL_PYTHON) $< $@.tmp && mv $@.tmp $@
GENERATED_HEADERS += $(TLS_ACCEL_X25519_TABLE)

# ---- assembling, per flavour ----------------------------------------------------------
# The flavour's own compiler driver; -g and dependency files as for our .S; arm_arch.h from
# the OpenSSL tree. The generated x86_64 code carries no .note.GNU-stack: --noexecstack
# keeps the linker from asking for an executable stack. -mbranch-protection on aarch64
# defines __ARM_FEATURE_BTI_DEFAULT/__ARM_FEATURE_PAC_DEFAULT, which arm_arch.h turns into
# BTI landing pads and PAC-signed return addresses, as in the kernel's C.
TLS_ACCEL_ASFLAGS := -g -I $(TLS_ACCEL_OSSL)/crypto -Wa,--noexecstack $(DEPFLAGS)
TLS_ACCEL_AS_host = $(HOST_CC) $(TLS_ACCEL_ASFLAGS)
TLS_ACCEL_AS_hostrel = $(HOST_CC) $(TLS_ACCEL_ASFLAGS)
TLS_ACCEL_AS_fuzz = $(FUZZ_CC) $(TLS_ACCEL_ASFLAGS)
TLS_ACCEL_AS_x86_64 = $(X86_64_CC) $(TLS_ACCEL_ASFLAGS)
TLS_ACCEL_AS_aarch64 = $(AARCH64_CC) $(TLS_ACCEL_ASFLAGS) -mbranch-protection=standard

define tls_accel_as_rule
$(B)/$(1)/accel/%.o: $(TLS_ACCEL_GEN)/%.S | deps-check
	@mkdir -p $$(@D); echo "  AS [accel $(1)] $$*"
	$$(Q)$$(TLS_ACCEL_AS_$(1)) -c $$< -o $$@
endef
$(foreach fl,$(TLS_ACCEL_FLAVOURS),$(eval $(call tls_accel_as_rule,$(fl))))

# ---- unit tests: tests/unit/accel/test_<name>.c ---------------------------------------
# Discovered like every unit test (top Makefile); these also see mbedTLS's headers and link
# the host libmbedtls.a, which holds the driver and the assembly. The portable archive comes
# again after it: the driver's C uses lib/ (lib/mem.h, lib/bytes.h), which the test's own
# objects may not have pulled from the copy the top Makefile links before it.
# TLS_ACCEL_TEST_OBJS are linked into each of them as objects, before the archives.
TLS_ACCEL_TESTS := $(patsubst tests/unit/accel/%.c,%,$(wildcard tests/unit/accel/test_*.c))
TLS_ACCEL_TEST_OBJS := $(B)/host/accel/x25519_generic.o
$(foreach t,$(TLS_ACCEL_TESTS),$(eval CFLAGS_tests_unit_accel_$(t) = $$(TLS_ACCEL_TEST_CFLAGS)) \
	$(eval TEST_LIBS_accel_$(t) = $$(TLS_ACCEL_TEST_OBJS) $$(B)/host/libmbedtls.a $$(HOST_LIB)))
$(patsubst %,$(B)/host/tests/unit/accel/%,$(TLS_ACCEL_TESTS)): $(TLS_ACCEL_TEST_OBJS) $(B)/host/libmbedtls.a
# test_sha256's reference is the system's OpenSSL (libssl-dev), whose SHA-256 symbols are
# internal to libcrypto.so: no clash with the archive's sha256_block_data_order.
TEST_LIBS_accel_test_sha256 += -lcrypto

# The portable X25519 next to the architecture's in one test binary (tests/unit/accel/
# test_x25519.c compares both with mbedTLS): x25519.c and fe25519_generic.c linked into one
# object whose global names all get `generic_` after their prefix (x25519_scalarmult ->
# x25519_generic_scalarmult, fe25519_ops_get -> fe25519_generic_ops_get), so it cannot clash
# with the archive's copy. Any other global name stops the build: rename it here first.
# One rule for every host flavour: host for the unit test, hostrel for tests/ct.
$(B)/%/accel/x25519_generic.o: $(B)/%/p/tls/accel/x25519.o $(B)/%/p/tls/accel/fe25519_generic.o
	@mkdir -p $(@D); echo "  LD -r       $@"
	$(Q)ld -r -o $@.tmp.o $^ && syms=$$(nm -g --defined-only $@.tmp.o | awk '{ print $$3 }') && \
	args=() && for s in $$syms; do case $$s in \
		x25519_*|fe25519_*) args+=(--redefine-sym "$$s=$${s%%_*}_generic_$${s#*_}") ;; \
		*) echo "$@: no generic_ name for global $$s (tls/accel/module.mk)" >&2; rm -f $@.tmp.o; exit 1 ;; \
		esac; done && objcopy "$${args[@]}" $@.tmp.o $@ && rm -f $@.tmp.o

# ---- fuzz target tests/fuzz/fuzz_p256_verify.c: the driver's verify path vs mbedTLS ----------
CFLAGS_tests_fuzz_fuzz_p256_verify = $(TLS_TEST_INC)
$(B)/fuzz/fuzz_p256_verify: $(B)/fuzz/libmbedtls.a
$(B)/host/tests/fuzz/replay_p256_verify: $(B)/host/libmbedtls.a

# ---- the 100,000-case campaign (issue 22 item 6): test_p256 and test_x25519, hostrel -------------
# The same two sources built in the hostrel flavour (-O2, no sanitizers) against the hostrel
# libmbedtls.a, which holds the image's optimised driver objects and assembly. make test runs
# them with 100,000 random cases per operation, in the background beside the unit and fuzz
# phases (UNIT_TESTS_BG, tests/run-all.sh --unit-bg); the ASan builds above keep their default
# counts (under ASan, 100,000 would cost ~24 CPU-minutes; here ~7, mbedTLS's reference ~88%).
# Each run is a small script beside the binary that sets the count and execs it: the runner
# reads its TAP as any unit test's, named accel/test_<name>-100k.
TLS_ACCEL_REL_TESTS := test_p256 test_x25519
TLS_ACCEL_REL_ENV_test_p256 := URMQTT_P256_ITERS=100000
TLS_ACCEL_REL_ENV_test_x25519 := X25519_TEST_N=100000
TLS_ACCEL_REL_BINS := $(patsubst %,$(B)/hostrel/tests/unit/accel/%,$(TLS_ACCEL_REL_TESTS))
$(TLS_ACCEL_REL_BINS): $(B)/hostrel/tests/unit/accel/%: $(B)/hostrel/t/tests/unit/accel/%.o \
		$(B)/hostrel/accel/x25519_generic.o $(B)/hostrel/libmbedtls.a $$(HOSTREL_LIB)
	@mkdir -p $(@D); echo "  LD [hostrel] $@"
	$(Q)$(HOST_CC) -o $@ -Wl,--start-group $^ -Wl,--end-group -lcmocka
$(B)/hostrel/tests/unit/accel/%-100k: $(B)/hostrel/tests/unit/accel/% tls/accel/module.mk
	@echo "  GEN         $@"
	$(Q)printf '#!/bin/sh\n# generated by tls/accel/module.mk\n%s exec "$$(dirname "$$0")/%s" "$$@"\n' \
		'$(TLS_ACCEL_REL_ENV_$*)' '$*' > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
UNIT_TESTS_BG += $(patsubst %,%-100k,$(TLS_ACCEL_REL_BINS))
