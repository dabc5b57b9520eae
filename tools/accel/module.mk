# SPDX-License-Identifier: MIT
# tools/accel: the accelerator decision for x86_64 guests (accel.sh) and its probe guest
# (probe.S, a PVH image of a few hundred bytes). `make test`, `make run` and `make bench`
# decide once per invocation (ACCEL_DECIDE) and export URMQTT_ACCEL to every script.
ACCEL_PROBE := $(B)/accel/probe.elf
$(ACCEL_PROBE): tools/accel/probe.S tools/accel/probe.ld
	@mkdir -p $(@D); echo "  AS+LD       $@"
	$(Q)$(X86_64_CC) -nostdlib -static -no-pie -Wl,-T,tools/accel/probe.ld -Wl,--build-id=none \
		-Wl,-z,noexecstack -o $@ tools/accel/probe.S
TEST_DEPS += $(ACCEL_PROBE)
SMOKE_SCRIPTS += tests/smoke/accel-probe.sh
# A recipe prefix: the decision (probe or URMQTT_ACCEL) into URMQTT_ACCEL, exported.
ACCEL_DECIDE = URMQTT_ACCEL=$$(tools/accel/accel.sh $(ACCEL_PROBE)) || exit 2; export URMQTT_ACCEL;
