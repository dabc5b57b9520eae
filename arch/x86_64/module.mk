# SPDX-License-Identifier: MIT
# arch/x86_64: boot entries (PVH, Multiboot2), page tables and W^X audit, descriptor
# tables and exception reports, serial console, TSC clock, test scenarios; the image link.
KERNEL_SRCS_x86_64 += arch/x86_64/boot.S arch/x86_64/main.c arch/x86_64/mmu.c \
	arch/x86_64/cpu.c arch/x86_64/trap.c arch/x86_64/serial.c arch/x86_64/clock.c \
	arch/x86_64/ssp.c arch/x86_64/scenario.c \
	arch/x86_64/apic.c arch/x86_64/smp.c arch/x86_64/ap.S arch/x86_64/rtc.c \
	arch/x86_64/entropy.c arch/x86_64/libgcc.c \
	arch/x86_64/drv_port.c arch/x86_64/devices.c
# Boot-information parsers are host-tested (tests/unit/kernel/test_bootinfo.c).
PORTABLE_SRCS_x86_64 += arch/x86_64/bootinfo.c
KERNEL_IMAGES += $(B)/x86_64/urmqtt.elf
TEST_DEPS += $(B)/x86_64/urmqtt.elf
SMOKE_SCRIPTS += tests/smoke/x86_64-boot.sh tests/smoke/x86_64-drivers.sh

# No --emit-relocs in the image: GRUB refuses ELF files with relocation sections. A later
# KASLR step needs the relocations from a second link (or a -pie build) instead.
X86_64_LDFLAGS := -nostdlib -static -no-pie -Wl,-T,arch/x86_64/kernel.ld \
	-Wl,-z,max-page-size=4096 -Wl,-z,noexecstack -Wl,--build-id=none

# Objects are listed by the top Makefile after every module.mk is read, hence the
# second expansion of the prerequisites (.SECONDEXPANSION is set before the includes).
$(B)/x86_64/urmqtt.elf: arch/x86_64/kernel.ld $$(filter $$(B)/x86_64/k/%,$$(X86_64_OBJS)) $$(X86_64_LIB)
	@mkdir -p $(@D); echo "  LD [x86_64]  $@"
	$(Q)$(X86_64_CC) $(X86_64_LDFLAGS) -o $@ $(filter $(B)/x86_64/k/%,$(X86_64_OBJS)) $(X86_64_LIB)
