# SPDX-License-Identifier: MIT
# hosted/: the stack as a Linux process on a TAP device (build/hosted/urmqtt), host
# flavour with ASan/UBSan. Also unit-tested piecewise (tests/unit/hosted/).
HOSTED_SRCS += hosted/main.c hosted/args.c hosted/pool.c hosted/impair.c hosted/tap.c \
	hosted/echo.c hosted/pcap.c hosted/blk_file.c

$(B)/hosted/urmqtt: $$(call objs,host,t,$$(HOSTED_SRCS)) $$(HOST_LIB)
	@mkdir -p $(@D); echo "  LD [hosted] $@"
	$(Q)$(HOST_CC) $(HOST_LDFLAGS) -o $@ $(call objs,host,t,$(HOSTED_SRCS)) $(HOST_LIB)

TEST_DEPS += $(B)/hosted/urmqtt
SMOKE_SCRIPTS += tests/smoke/hosted-tcp.sh
TEST_SRCS_hosted_test_hosted := hosted/pool.c hosted/impair.c hosted/args.c
TEST_SRCS_hosted_test_blk_file := hosted/blk_file.c
