# SPDX-License-Identifier: MIT
# urMQTT: one non-recursive Makefile. Each directory contributes a module.mk that appends
# to the variables below; this file owns the pattern rules per flavour. `make help`.
#
# Flavours (output under $(BUILD_DIR)/<flavour>/):
#   host     portable code freestanding + ASan/UBSan; unit tests, fuzz replay, tools
#   hostrel  the same without sanitizers, -O2 (benchmarks, measuring tools)
#   fuzz     clang + libFuzzer + ASan/UBSan
#   x86_64   freestanding kernel
#   aarch64  freestanding kernel (cross)

.DEFAULT_GOAL := all
SHELL := /bin/bash
.SUFFIXES:
.DELETE_ON_ERROR:
# Keep chained objects (tests, fuzzers) for a no-op rebuild. Not .SECONDARY: that would
# also let an archive count as up to date while a newly added object does not exist.
.PRECIOUS: %.o

BUILD_DIR ?= build
B := $(BUILD_DIR)
PROFILE ?= dev

ifeq ($(V),1)
Q :=
else
Q := @
endif

include mk/toolchain.mk

# ---- variables the module.mk files append to ---------------------------------------
PORTABLE_SRCS :=          # portable C, compiled for every flavour
PORTABLE_SRCS_x86_64 :=   # arch variants of portable code (host x86_64 + x86_64 kernel)
PORTABLE_SRCS_aarch64 :=  # arch variants (aarch64 kernel)
KERNEL_SRCS_x86_64 :=     # arch/x86_64 + kernel glue: .c and .S
KERNEL_SRCS_aarch64 :=
HOSTED_SRCS :=            # the hosted platform (Linux process), libc allowed
TEST_SUPPORT_SRCS :=      # tests/support fakes linked into every unit test
TOOLS :=                  # host tools: TOOL_SRCS_<name>, TOOL_LIBS_<name>
SMOKE_SCRIPTS :=          # scripts run by `make test` after unit tests
KERNEL_IMAGES :=          # kernel images the arch modules build
GENERATED_HEADERS :=      # headers under $(B)/gen that compiles depend on
TEST_DEPS :=              # extra targets `make test` must build first
UNIT_TESTS_BG :=          # long unit runs (cmocka, TAP) under $(B)/<flavour>/tests/unit/: run by
                          # `make test` in the background beside the unit and fuzz phases

# An archive is rebuilt when its member list changes (a module added or removed), not only
# when a member is newer: each has a .list file rewritten at parse time only on change.
# Defined before the module files, which use it too (tls/module.mk: libmbedtls.a).
member_list = $(shell mkdir -p $(dir $(1)) && { [ "$$(cat $(1) 2>/dev/null)" = "$(strip $(2))" ] || \
	echo "$(strip $(2))" > $(1); })

MODULE_MKS := $(sort $(wildcard */module.mk */*/module.mk))
# Module rules may name objects listed only after every module.mk is read.
.SECONDEXPANSION:
include $(MODULE_MKS)

HOST_ARCH := $(shell uname -m)
ifeq ($(HOST_ARCH),x86_64)
HOST_PORTABLE_SRCS := $(PORTABLE_SRCS) $(PORTABLE_SRCS_x86_64)
else
HOST_PORTABLE_SRCS := $(PORTABLE_SRCS)
endif

# ---- object naming ---------------------------------------------------------------
# $(call objs,flavour,subdir,srcs)
objs = $(patsubst %,$(B)/$(1)/$(2)/%.o,$(basename $(3)))

HOST_P_OBJS    := $(call objs,host,p,$(HOST_PORTABLE_SRCS))
HOSTREL_P_OBJS := $(call objs,hostrel,p,$(HOST_PORTABLE_SRCS))
FUZZ_P_OBJS    := $(call objs,fuzz,p,$(HOST_PORTABLE_SRCS))
X86_64_OBJS    := $(call objs,x86_64,p,$(PORTABLE_SRCS) $(PORTABLE_SRCS_x86_64)) \
                  $(call objs,x86_64,k,$(KERNEL_SRCS_x86_64))
AARCH64_OBJS   := $(call objs,aarch64,p,$(PORTABLE_SRCS) $(PORTABLE_SRCS_aarch64)) \
                  $(call objs,aarch64,k,$(KERNEL_SRCS_aarch64))
X86_64_P_OBJS  := $(call objs,x86_64,p,$(PORTABLE_SRCS) $(PORTABLE_SRCS_x86_64))
AARCH64_P_OBJS := $(call objs,aarch64,p,$(PORTABLE_SRCS) $(PORTABLE_SRCS_aarch64))

HOST_LIB    := $(B)/host/libportable.a
HOSTREL_LIB := $(B)/hostrel/libportable.a
FUZZ_LIB    := $(B)/fuzz/libportable.a
X86_64_LIB  := $(B)/x86_64/libportable.a
AARCH64_LIB := $(B)/aarch64/libportable.a

# ---- unit tests, fuzzers, tools (discovered) ---------------------------------------
UNIT_TEST_SRCS := $(sort $(wildcard tests/unit/*/test_*.c))
UNIT_TESTS := $(patsubst %.c,$(B)/host/%,$(UNIT_TEST_SRCS))
TEST_SUPPORT_SRCS += $(wildcard tests/support/*.c)
TEST_SUPPORT_OBJS := $(call objs,host,t,$(TEST_SUPPORT_SRCS))

FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZERS := $(patsubst %,$(B)/fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_REPLAYS := $(patsubst %,$(B)/host/tests/fuzz/replay_%,$(FUZZ_NAMES))

TOOL_BINS := $(patsubst %,$(B)/host/tools/%,$(TOOLS))

# ---- pattern rules --------------------------------------------------------------
$(B)/host/p/%.o: %.c | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  CC [host]    $<"
	$(Q)$(HOST_CC) $(HOST_PORTABLE_CFLAGS) $(CFLAGS_$(subst /,_,$*)) -c $< -o $@
$(B)/host/t/%.o: %.c | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  CC [host-t]  $<"
	$(Q)$(HOST_CC) $(HOST_CFLAGS) $(CFLAGS_$(subst /,_,$*)) -c $< -o $@
$(B)/hostrel/p/%.o: %.c | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  CC [hostrel] $<"
	$(Q)$(HOST_CC) $(HOSTREL_PORTABLE_CFLAGS) $(CFLAGS_$(subst /,_,$*)) -c $< -o $@
$(B)/hostrel/t/%.o: %.c | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  CC [hostrel] $<"
	$(Q)$(HOST_CC) $(HOSTREL_CFLAGS) $(CFLAGS_$(subst /,_,$*)) -c $< -o $@
$(B)/fuzz/p/%.o: %.c | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  CC [fuzz]    $<"
	$(Q)$(FUZZ_CC) $(FUZZ_PORTABLE_CFLAGS) $(CFLAGS_$(subst /,_,$*)) -c $< -o $@
$(B)/fuzz/t/%.o: %.c | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  CC [fuzz-t]  $<"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(CFLAGS_$(subst /,_,$*)) -c $< -o $@
$(B)/x86_64/p/%.o $(B)/x86_64/k/%.o: %.c | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  CC [x86_64]  $<"
	$(Q)$(X86_64_CC) $(X86_64_CFLAGS) $(CFLAGS_$(subst /,_,$*)) $(KCFLAGS_$(subst /,_,$*)) -c $< -o $@
$(B)/x86_64/k/%.o: %.S | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  AS [x86_64]  $<"
	$(Q)$(X86_64_CC) $(X86_64_ASFLAGS) -c $< -o $@
$(B)/aarch64/p/%.o $(B)/aarch64/k/%.o: %.c | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  CC [aarch64] $<"
	$(Q)$(AARCH64_CC) $(AARCH64_CFLAGS) $(CFLAGS_$(subst /,_,$*)) $(KCFLAGS_$(subst /,_,$*)) -c $< -o $@
$(B)/aarch64/k/%.o: %.S | $(GENERATED_HEADERS)
	@mkdir -p $(@D); echo "  AS [aarch64] $<"
	$(Q)$(AARCH64_CC) $(AARCH64_ASFLAGS) -c $< -o $@

$(call member_list,$(B)/host/libportable.list,$(HOST_P_OBJS))
$(call member_list,$(B)/hostrel/libportable.list,$(HOSTREL_P_OBJS))
$(call member_list,$(B)/fuzz/libportable.list,$(FUZZ_P_OBJS))
$(call member_list,$(B)/x86_64/libportable.list,$(X86_64_P_OBJS))
$(call member_list,$(B)/aarch64/libportable.list,$(AARCH64_P_OBJS))

%/libportable.a: %/libportable.list
	@mkdir -p $(@D); echo "  AR          $@"
	$(Q)rm -f $@ && ar rcs $@ $(filter %.o,$^)
$(HOST_LIB): $(HOST_P_OBJS)
$(HOSTREL_LIB): $(HOSTREL_P_OBJS)
$(FUZZ_LIB): $(FUZZ_P_OBJS)
$(X86_64_LIB): $(X86_64_P_OBJS)
$(AARCH64_LIB): $(AARCH64_P_OBJS)

# Unit tests: one binary per tests/unit/<layer>/test_<module>.c, linked with the fakes,
# the portable archive and cmocka. TEST_LIBS_<layer>_test_<module> adds libraries.
# TEST_SRCS_<layer>_test_<module> adds non-portable sources (e.g. a host tool's parser).
$(B)/host/tests/unit/%: $(B)/host/t/tests/unit/%.o $$(call objs,host,t,$$(TEST_SRCS_$$(subst /,_,$$*))) \
		$(TEST_SUPPORT_OBJS) $(HOST_LIB)
	@mkdir -p $(@D); echo "  LD [test]   $@"
	$(Q)$(HOST_CC) $(HOST_LDFLAGS) -o $@ $< $(call objs,host,t,$(TEST_SRCS_$(subst /,_,$*))) \
		$(TEST_SUPPORT_OBJS) $(HOST_LIB) $(TEST_LIBS_$(subst /,_,$*)) -lcmocka

# Fuzz targets: the libFuzzer binary and a replay binary (gcc ASan) for `make test`.
# FUZZ_SRCS_<name> adds non-portable sources to one fuzz target. The archives are linked as
# a group: a target's extra archive (libmbedtls.a, which holds tls/accel) may need lib/ back.
$(B)/fuzz/fuzz_%: $(B)/fuzz/t/tests/fuzz/fuzz_%.o $$(call objs,fuzz,t,$$(FUZZ_SRCS_$$*)) $(FUZZ_LIB)
	@mkdir -p $(@D); echo "  LD [fuzz]   $@"
	$(Q)$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ -Wl,--start-group $^ -Wl,--end-group
$(B)/host/tests/fuzz/replay_%: $(B)/host/t/tests/fuzz/fuzz_%.o $(B)/host/t/tests/fuzz/replay_main.o \
		$$(call objs,host,t,$$(FUZZ_SRCS_$$*)) $(HOST_LIB)
	@mkdir -p $(@D); echo "  LD [replay] $@"
	$(Q)$(HOST_CC) $(HOST_LDFLAGS) -o $@ -Wl,--start-group $^ -Wl,--end-group

# Host tools.
define tool_rule
$(B)/host/tools/$(1): $(call objs,host,t,$(TOOL_SRCS_$(1))) $(HOST_LIB)
	@mkdir -p $$(@D); echo "  LD [tool]   $$@"
	$$(Q)$$(HOST_CC) $$(HOST_LDFLAGS) -o $$@ $$^ $$(TOOL_LIBS_$(1))
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

# ---- top-level targets ------------------------------------------------------------
.PHONY: all host kernels x86_64-lib aarch64-lib tests fuzzers test fuzz lint deps \
        setup clean distclean help compile_commands run bench certs

all: host kernels compile_commands
host: $(HOST_LIB) $(UNIT_TESTS) $(FUZZ_REPLAYS) $(TOOL_BINS)
kernels: $(X86_64_LIB) $(AARCH64_LIB) $(KERNEL_IMAGES)
tests: $(UNIT_TESTS) $(UNIT_TESTS_BG) $(FUZZ_REPLAYS)
fuzzers: $(FUZZERS)

# setup: install missing Debian packages (as root) — used by every entry point.
setup:
	$(Q)tools/setup/ensure-packages.sh

JOBS ?= $(shell nproc)
FUZZ_SMOKE_SECONDS ?= 3
test: setup
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)tools/deps/fetch-qemu-mte.sh --out $(B)/deps
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) all tests fuzzers $(TEST_DEPS)
	$(Q)$(ACCEL_DECIDE) tests/run-all.sh --build $(B) --fuzz-seconds $(FUZZ_SMOKE_SECONDS) \
		--unit "$(UNIT_TESTS)" --unit-bg "$(UNIT_TESTS_BG)" --fuzz "$(FUZZ_NAMES)" \
		--smoke "$(SMOKE_SCRIPTS)"

FUZZ_SECONDS ?= 300
.PHONY: test-mutants
# Breaks chosen behaviours one at a time in a scratch copy and shows the suite fails for each
# (tools/mutants/run.sh); not part of make test.
test-mutants: setup
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) host $(B)/hosted/urmqtt
	$(Q)tools/mutants/run.sh $(B)

fuzz: setup
	$(Q)$(MAKE) --no-print-directory fuzzers
	$(Q)tests/fuzz/run-fuzzers.sh --build $(B) --seconds $(FUZZ_SECONDS) $(FUZZ_NAMES)

deps:
	$(Q)tools/deps/fetch-deps.sh --out $(B)/deps

# ARCH=aarch64 boots the aarch64 image instead (TCG on this host).
ARCH ?= x86_64
RUN_IMAGE_x86_64 = $(B)/x86_64/urmqtt.elf
RUN_IMAGE_aarch64 = $(B)/aarch64/urmqtt.img
run: setup
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) $(RUN_IMAGE_$(ARCH)) $(ACCEL_PROBE)
	$(Q)$(ACCEL_DECIDE) tools/run/run.sh $(RUN_IMAGE_$(ARCH))

lint:
	$(Q)tools/lint/lint.sh $(B)

compile_commands: $(B)/compile_commands.json
$(B)/compile_commands.json: $(MODULE_MKS) Makefile mk/toolchain.mk
	@mkdir -p $(@D); echo "  GEN         $@"
	$(Q)tools/build/compile-commands.sh "$(CURDIR)" \
		"$(HOST_CC) $(HOST_PORTABLE_CFLAGS)" "$(HOST_PORTABLE_SRCS)" \
		"$(HOST_CC) $(HOST_CFLAGS)" "$(UNIT_TEST_SRCS) $(FUZZ_SRCS) $(TEST_SUPPORT_SRCS) $(HOSTED_SRCS) $(foreach t,$(TOOLS),$(TOOL_SRCS_$(t)))" \
		"$(X86_64_CC) $(X86_64_CFLAGS)" "$(filter %.c,$(KERNEL_SRCS_x86_64))" \
		"$(AARCH64_CC) $(AARCH64_CFLAGS)" "$(filter %.c,$(KERNEL_SRCS_aarch64))" > $@.tmp && mv $@.tmp $@

clean:
	rm -rf $(B)/host $(B)/hostrel $(B)/fuzz $(B)/x86_64 $(B)/aarch64 $(B)/hosted $(B)/gen $(B)/compile_commands.json
distclean:
	rm -rf $(B)

help:
	@echo "urMQTT make targets:"
	@echo "  make run        boot the broker in QEMU with development certificates (ARCH=aarch64: the Arm image)"
	@echo "  make test       set up, build and run every test; last line 'N passed, N failed, N skipped'"
	@echo "  make deps       fetch pinned mbedTLS/SQLite sources (URMQTT_DEPS_DIR=dir: offline)"
	@echo "  make fuzz       long libFuzzer runs (FUZZ_SECONDS per target, default 300)"
	@echo "  make bench      side-by-side benchmarks (not a test)"
	@echo "  make bench-report  build/bench/report.html from the last results (BENCH_SVG_DIR=docs/bench: the charts as SVG too)"
	@echo "  make bench-record  append the last results to docs/bench/history.csv (COMMIT=, NOTE=)"
	@echo "  make test-mutants  break chosen behaviours one at a time: the suite must fail for each"
	@echo "  make certs      development CA, server, dev-1..N, ops and revoked-1 certificates (build/dev/certs)"
	@echo "  make lint       cppcheck + clang-tidy on our code"
	@echo "  make release CONFIG=site.conf CERTS=pki-dir  signed ISO, raw and qcow2 images + SBOM (docs/DEPLOY.md)"
	@echo "  make release-key   minisign key pair outside the tree (RELEASE_KEY=, default ~/.urmqtt/release.key)"
	@echo "  make reproduce  build the release twice from scratch and compare the images byte for byte"
	@echo "  make all        build host tests/tools and both kernel flavours"
	@echo "  PROFILE=prod    build with config/prod.conf (default dev); make config-doc / config-check"
	@echo "  V=1             show full commands; BUILD_DIR=dir for another build tree"

# Dependency files of the flavours only: other trees under $(B) (the bench's Linux guest
# root, third-party sources) may hold files that merely end in .d.
DEP_DIRS := $(wildcard $(addprefix $(B)/,host hostrel fuzz x86_64 aarch64 hosted))
-include $(if $(DEP_DIRS),$(shell find $(DEP_DIRS) -name '*.d' -type f -print 2>/dev/null))
