# SPDX-License-Identifier: MIT
# arch/x86_64: boot entries (PVH, Multiboot2), page tables and W^X audit, descriptor
# tables and exception reports, serial console, TSC clock (calibrated against the ACPI PM
# timer), the wall clock (wall.c: RTC-disciplined, kernel/wallclock), the
# image link (with mbedTLS and SQLite). node_port.c: the x86_64 side of
# kernel/node/port.h. kernel/kstore.c: the storage core's glue, kernel-only, so listed here.
KERNEL_SRCS_x86_64 += arch/x86_64/boot.S arch/x86_64/main.c arch/x86_64/mmu.c \
	arch/x86_64/cpu.c arch/x86_64/trap.c arch/x86_64/serial.c arch/x86_64/clock.c \
	arch/x86_64/ssp.c \
	arch/x86_64/apic.c arch/x86_64/smp.c arch/x86_64/ap.S arch/x86_64/rtc.c \
	arch/x86_64/entropy.c arch/x86_64/libgcc.c \
	arch/x86_64/drv_port.c arch/x86_64/devices.c \
	arch/x86_64/node_port.c arch/x86_64/wall.c arch/x86_64/kaslr.c kernel/kstore.c
# Test scenarios (arch/x86_64/scenarios/): development and test images only; a production
# image neither links them nor reads test= from the command line.
ifneq ($(PROFILE),prod)
KERNEL_SRCS_x86_64 += arch/x86_64/scenarios/registry.c arch/x86_64/scenarios/cores.c \
	arch/x86_64/scenarios/faults.c arch/x86_64/scenarios/tls.c
CFLAGS_arch_x86_64_scenarios_tls = $(TLS_INC) -isystem $(TLS_MBEDTLS_DIR)/library
endif
# node_port.c asks mbedTLS (its library-internal aesni.h) which AES paths it takes.
# Deferred (=) and spelled out: tls/ and tools/certs/ module.mk are read after this one.
CFLAGS_arch_x86_64_node_port = $(TLS_INC) -isystem $(TLS_MBEDTLS_DIR)/library
GENERATED_HEADERS += $(B)/gen/urmqtt_certs.h # CERTS_HEADER of tools/certs/module.mk
# Boot-information parsers are host-tested (tests/unit/kernel/test_bootinfo.c).
PORTABLE_SRCS_x86_64 += arch/x86_64/bootinfo.c
# The KASLR relocation applier too (kernel/kreloc.c, arch-neutral; arch/x86_64/kreloc.h its x86_64
# layout; tests/unit/kernel/test_kreloc.c, tests/fuzz/fuzz_kreloc.c).
PORTABLE_SRCS_x86_64 += kernel/kreloc.c # shared with aarch64 (arch/aarch64/module.mk)
KERNEL_IMAGES += $(B)/x86_64/urmqtt.elf
TEST_DEPS += $(B)/x86_64/urmqtt.elf
SMOKE_SCRIPTS += tests/smoke/x86_64-boot.sh tests/smoke/x86_64-drivers.sh tests/smoke/x86_64-mqtt.sh \
	tests/smoke/x86_64-mqtt-smp4.sh \
	tests/smoke/x86_64-steer.sh tests/smoke/x86_64-store.sh tests/smoke/x86_64-store-1core.sh \
	tests/smoke/x86_64-telemetry.sh tests/smoke/x86_64-disk.sh tests/smoke/x86_64-memory.sh \
	tests/smoke/x86_64-clock.sh tests/smoke/x86_64-ops.sh
# The diagnostics mode (urmqtt.mode=diag): its x86_64 port, and its smoke scenarios.
KERNEL_SRCS_x86_64 += arch/x86_64/diag_port.c
SMOKE_SCRIPTS += tests/smoke/x86_64-diag.sh
# x86_64-telemetry drives the image with the load generator (the bench's, OpenSSL client).
TEST_DEPS += $(B)/hostrel/tools/loadgen

# No --emit-relocs in the image: GRUB refuses ELF files with relocation sections. The
# relocations come from another link of the same objects (urmqtt.reloc0.elf) as a table
# (urmqtt.relocs) the image carries for KASLR (ADR-077); a further link 2 MiB higher (urmqtt.slid.elf) lets
# tests/smoke/x86_64-boot.sh prove the table complete and boot the moved image (ADR-020).
X86_64_LDFLAGS := -nostdlib -static -no-pie -Wl,-T,arch/x86_64/kernel.ld \
	-Wl,-z,max-page-size=4096 -Wl,-z,noexecstack -Wl,--build-id=none

# Objects are listed by the top Makefile after every module.mk is read, hence the
# second expansion of the prerequisites (.SECONDEXPANSION is set before the includes).
# Link order: kernel objects, our portable library, mbedTLS (which needs lib/ from the
# former only through symbols the kernel objects already pull in), then libgcc for the
# 128-bit division helpers (__udivti3) mbedTLS's bignum code uses.
X86_64_LIBGCC = $(shell $(X86_64_CC) -print-libgcc-file-name)
X86_64_LINK_INPUTS = $(filter $(B)/x86_64/k/%,$(X86_64_OBJS)) $(X86_64_LIB) $(B)/x86_64/libmbedtls.a \
	$(B)/x86_64/libsqlite.a $(X86_64_LIBGCC)
# $(call x86_64_link,SLIDE,EXTRA FLAGS,TABLE OBJECT): the one link of the image, placed
# SLIDE higher, carrying the relocation table object (ADR-077).
x86_64_link = $(X86_64_CC) $(X86_64_LDFLAGS) -Wl,--defsym,x86_link_slide=$(1) $(2) -o $@ $(3) $(X86_64_LINK_INPUTS)
X86_64_LINK_DEPS = arch/x86_64/kernel.ld $(filter $(B)/x86_64/k/%,$(X86_64_OBJS)) $(X86_64_LIB) \
	$(B)/x86_64/libmbedtls.a $(B)/x86_64/libsqlite.a
# The table travels in the image (its last segment, so its size moves nothing): a first
# --emit-relocs link with an empty table gives the table; every later link carries it.
x86_64_blob = $(X86_64_CC) -c -x assembler-with-cpp -DKRELOC_BLOB='"$(1)"' arch/x86_64/relocs_blob.S -o $@
$(B)/x86_64/relocs-empty.bin:
	@mkdir -p $(@D); printf 'URMQREL1\000\000\000\000' >$@
$(B)/x86_64/relocs-empty.o: arch/x86_64/relocs_blob.S $(B)/x86_64/relocs-empty.bin
	$(Q)$(call x86_64_blob,$(B)/x86_64/relocs-empty.bin)
$(B)/x86_64/relocs-table.o: arch/x86_64/relocs_blob.S $(B)/x86_64/urmqtt.relocs
	$(Q)$(call x86_64_blob,$(B)/x86_64/urmqtt.relocs)
$(B)/x86_64/urmqtt.reloc0.elf: $$(X86_64_LINK_DEPS) $(B)/x86_64/relocs-empty.o
	@mkdir -p $(@D); echo "  LD [x86_64]  $@ (--emit-relocs, empty table)"
	$(Q)$(call x86_64_link,0,-Xlinker --emit-relocs,$(B)/x86_64/relocs-empty.o)
$(B)/x86_64/urmqtt.relocs: $(B)/x86_64/urmqtt.reloc0.elf $(B)/host/tools/urmqtt-relocs
	$(Q)$(B)/host/tools/urmqtt-relocs table $< $@ >/dev/null
$(B)/x86_64/urmqtt.elf: $$(X86_64_LINK_DEPS) $(B)/x86_64/relocs-table.o
	@mkdir -p $(@D); echo "  LD [x86_64]  $@"
	$(Q)$(call x86_64_link,0,,$(B)/x86_64/relocs-table.o)

X86_64_SLIDE := 0x200000
$(B)/x86_64/urmqtt.reloc.elf: $(B)/x86_64/urmqtt.elf
	@echo "  LD [x86_64]  $@ (--emit-relocs)"
	$(Q)$(call x86_64_link,0,-Xlinker --emit-relocs,$(B)/x86_64/relocs-table.o)
$(B)/x86_64/urmqtt.slid.elf: $(B)/x86_64/urmqtt.elf
	@echo "  LD [x86_64]  $@ (+$(X86_64_SLIDE))"
	$(Q)$(call x86_64_link,$(X86_64_SLIDE),,$(B)/x86_64/relocs-table.o)
KERNEL_IMAGES += $(B)/x86_64/urmqtt.relocs $(B)/x86_64/urmqtt.reloc.elf $(B)/x86_64/urmqtt.slid.elf
TEST_DEPS += $(B)/x86_64/urmqtt.relocs $(B)/x86_64/urmqtt.reloc.elf $(B)/x86_64/urmqtt.slid.elf \
	$(B)/host/tools/urmqtt-relocs

# The production image (PROFILE=prod: config/prod.conf and -DURMQTT_PROD) in a tree of its
# own, $(B)/prod: objects do not depend on the flags, so the two profiles in one tree would
# mix their objects and replace the image every other test boots. A sub-make, as for the
# bench's tree; it makes its own development PKI ($(B)/prod/dev/certs) and shares the main
# tree's mbedTLS and SQLite sources. tests/smoke/x86_64-prod.sh boots it.
X86_64_PROD_TREE := $(B)/prod
.PHONY: x86_64-prod
x86_64-prod:
	$(Q)mkdir -p $(X86_64_PROD_TREE) && ln -sfn $(abspath $(B)/deps) $(X86_64_PROD_TREE)/deps
	$(Q)flock $(X86_64_PROD_TREE)/.make.lock $(MAKE) --no-print-directory BUILD_DIR=$(X86_64_PROD_TREE) \
		PROFILE=prod CONF_FILE=config/prod.conf $(X86_64_PROD_TREE)/x86_64/urmqtt.elf
TEST_DEPS += x86_64-prod
SMOKE_SCRIPTS += tests/smoke/x86_64-prod.sh
