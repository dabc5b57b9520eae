# SPDX-License-Identifier: MIT
# arch/aarch64: the arm64 Image entry (EL2 -> EL1), exception vectors and decoded reports,
# the page tables with their W^X audit, WXN, PAN, BTI-guarded text and PAC return
# addresses, the PL011 console, the generic timer's counter, PSCI. The same image is a UEFI
# application (efi.c, ADR-076). The platform comes from the device tree (plat/dtb.c) or,
# under UEFI, from ACPI (plat/acpi_arm.c). Not ported yet: heap, CSPRNG, interrupts, SMP, PCI and
# virtio, the node (docs/PROGRESS.md, aarch64).
KERNEL_SRCS_aarch64 += arch/aarch64/boot.S arch/aarch64/vectors.S arch/aarch64/main.c \
	arch/aarch64/mmu.c arch/aarch64/trap.c arch/aarch64/uart.c arch/aarch64/clock.c \
	arch/aarch64/psci.c arch/aarch64/ssp.c arch/aarch64/gic.c arch/aarch64/gic_msi.c arch/aarch64/entropy.c arch/aarch64/libgcc.c arch/aarch64/mte.c \
	arch/aarch64/drv_port.c arch/aarch64/devices.c arch/aarch64/node_port.c arch/aarch64/efi.c arch/aarch64/efi_menu.c kernel/kstore.c
# The diagnostics mode's aarch64 port (urmqtt.mode=diag; kernel/diag/) and its smoke scenarios.
KERNEL_SRCS_aarch64 += arch/aarch64/diag_port.c
SMOKE_SCRIPTS += tests/smoke/aarch64-diag.sh
# KASLR (ADR-084): the boot's slide (kaslr.c) and the shared relocation applier.
KERNEL_SRCS_aarch64 += arch/aarch64/kaslr.c
PORTABLE_SRCS_aarch64 += kernel/kreloc.c
# Fault scenarios: development and test images only.
ifneq ($(PROFILE),prod)
KERNEL_SRCS_aarch64 += arch/aarch64/scenarios.c
endif

AARCH64_LDFLAGS := -nostdlib -static -no-pie -Wl,-T,arch/aarch64/kernel.ld \
	-Wl,-z,max-page-size=4096 -Wl,-z,noexecstack -Wl,--build-id=none
AARCH64_LIBGCC = $(shell $(AARCH64_CC) -print-libgcc-file-name)
AARCH64_LINK_INPUTS = $(filter $(B)/aarch64/k/%,$(AARCH64_OBJS)) $(AARCH64_LIB) $(B)/aarch64/libmbedtls.a \
	$(B)/aarch64/libsqlite.a $(AARCH64_LIBGCC)
AARCH64_LINK_DEPS = arch/aarch64/kernel.ld $(filter $(B)/aarch64/k/%,$(AARCH64_OBJS)) $(AARCH64_LIB) \
	$(B)/aarch64/libmbedtls.a $(B)/aarch64/libsqlite.a
# $(call aarch64_link,SLIDE,EXTRA FLAGS,TABLE OBJECT): the one link of the image, placed
# SLIDE higher, carrying the relocation table object. As on x86_64 (ADR-077): a first
# --emit-relocs link with an empty table gives the table (kernel.ld puts it after every
# site, so its size moves none); the image, urmqtt.reloc.elf (--emit-relocs) and
# urmqtt.slid.elf (+2 MiB, for tests/smoke/aarch64-boot.sh's relocatable) carry it.
aarch64_link = $(AARCH64_CC) $(AARCH64_LDFLAGS) -Wl,--defsym,a64_link_slide=$(1) $(2) -o $@ $(3) $(AARCH64_LINK_INPUTS)
aarch64_blob = $(AARCH64_CC) -c -x assembler-with-cpp -DKRELOC_BLOB='"$(1)"' arch/aarch64/relocs_blob.S -o $@
$(B)/aarch64/relocs-empty.bin:
	@mkdir -p $(@D); printf 'URMQREL1\000\000\000\000' >$@
$(B)/aarch64/relocs-empty.o: arch/aarch64/relocs_blob.S $(B)/aarch64/relocs-empty.bin
	$(Q)$(call aarch64_blob,$(B)/aarch64/relocs-empty.bin)
$(B)/aarch64/relocs-table.o: arch/aarch64/relocs_blob.S $(B)/aarch64/urmqtt.relocs
	$(Q)$(call aarch64_blob,$(B)/aarch64/urmqtt.relocs)
$(B)/aarch64/urmqtt.reloc0.elf: $$(AARCH64_LINK_DEPS) $(B)/aarch64/relocs-empty.o
	@mkdir -p $(@D); echo "  LD [aarch64] $@ (--emit-relocs, empty table)"
	$(Q)$(call aarch64_link,0,-Xlinker --emit-relocs,$(B)/aarch64/relocs-empty.o)
$(B)/aarch64/urmqtt.relocs: $(B)/aarch64/urmqtt.reloc0.elf $(B)/host/tools/urmqtt-relocs
	$(Q)$(B)/host/tools/urmqtt-relocs table $< $@ >/dev/null
$(B)/aarch64/urmqtt.elf: $$(AARCH64_LINK_DEPS) $(B)/aarch64/relocs-table.o
	@mkdir -p $(@D); echo "  LD [aarch64] $@"
	$(Q)$(call aarch64_link,0,,$(B)/aarch64/relocs-table.o)
$(B)/aarch64/urmqtt.reloc.elf: $(B)/aarch64/urmqtt.elf
	@echo "  LD [aarch64] $@ (--emit-relocs)"
	$(Q)$(call aarch64_link,0,-Xlinker --emit-relocs,$(B)/aarch64/relocs-table.o)
$(B)/aarch64/urmqtt.slid.elf: $(B)/aarch64/urmqtt.elf
	@echo "  LD [aarch64] $@ (+0x200000)"
	$(Q)$(call aarch64_link,0x200000,,$(B)/aarch64/relocs-table.o)
KERNEL_IMAGES += $(B)/aarch64/urmqtt.relocs $(B)/aarch64/urmqtt.reloc.elf $(B)/aarch64/urmqtt.slid.elf
TEST_DEPS += $(B)/aarch64/urmqtt.relocs $(B)/aarch64/urmqtt.reloc.elf $(B)/aarch64/urmqtt.slid.elf \
	$(B)/host/tools/urmqtt-relocs
# The arm64 Image QEMU's -kernel (and a boot loader) takes: the loadable bytes from the
# header on; .bss, the tables and the stacks are counted by the header's image_size.
$(B)/aarch64/urmqtt.img: $(B)/aarch64/urmqtt.elf
	@echo "  IMAGE [aarch64] $@"
	$(Q)$(AARCH64_OBJCOPY) -O binary $< $@

KERNEL_IMAGES += $(B)/aarch64/urmqtt.img
TEST_DEPS += $(B)/aarch64/urmqtt.img
SMOKE_SCRIPTS += tests/smoke/aarch64-boot.sh tests/smoke/aarch64-acpi.sh tests/smoke/aarch64-msi.sh tests/smoke/aarch64-mqtt.sh \
	tests/smoke/aarch64-store.sh tests/smoke/aarch64-ops.sh

# The production aarch64 image, built in the tree of the x86_64 one (arch/x86_64/module.mk:
# PROFILE=prod flags are not tracked by the objects, so it has its own tree) and booted by
# tests/smoke/aarch64-prod.sh. The two images' makes share that tree, so each holds its lock
# (flock): under -j they would otherwise build its PKI and headers at the same time.
.PHONY: aarch64-prod
aarch64-prod:
	$(Q)mkdir -p $(B)/prod && ln -sfn $(abspath $(B)/deps) $(B)/prod/deps
	$(Q)flock $(B)/prod/.make.lock $(MAKE) --no-print-directory BUILD_DIR=$(B)/prod PROFILE=prod \
		CONF_FILE=config/prod.conf $(B)/prod/aarch64/urmqtt.img
TEST_DEPS += aarch64-prod
SMOKE_SCRIPTS += tests/smoke/aarch64-prod.sh
