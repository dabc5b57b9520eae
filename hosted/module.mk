# SPDX-License-Identifier: MIT
# hosted/: the stack as a Linux process on a TAP device (build/hosted/urmqtt), host
# flavour with ASan/UBSan. Also unit-tested piecewise (tests/unit/hosted/). --broker runs
# the data plane (dp/) with the development certificates embedded at build time.
HOSTED_SRCS += hosted/main.c hosted/args.c hosted/pool.c hosted/impair.c hosted/tap.c \
	hosted/pcap.c hosted/blk_file.c hosted/broker.c hosted/store.c hosted/node_port.c \
	tests/support/tcp_echo.c

GENERATED_HEADERS += $(CERTS_HEADER)

$(B)/hosted/urmqtt: $$(call objs,host,t,$$(HOSTED_SRCS)) $$(HOST_LIB) $(B)/host/libmbedtls.a $(B)/host/libsqlite.a
	@mkdir -p $(@D); echo "  LD [hosted] $@"
	$(Q)$(HOST_CC) $(HOST_LDFLAGS) -o $@ $(call objs,host,t,$(HOSTED_SRCS)) $(HOST_LIB) \
		$(B)/host/libmbedtls.a $(B)/host/libsqlite.a

TEST_DEPS += $(B)/hosted/urmqtt
SMOKE_SCRIPTS += tests/smoke/hosted-tcp.sh tests/smoke/hosted-mqtt.sh tests/smoke/hosted-store.sh
# The fleet simulation: three hosted brokers with one ring (ADR-072, docs/SCALE-OUT.md).
SMOKE_SCRIPTS += tests/smoke/hosted-fleet.sh
TEST_SRCS_hosted_test_hosted := hosted/pool.c hosted/impair.c hosted/args.c
TEST_SRCS_hosted_test_blk_file := hosted/blk_file.c

.PHONY: run-hosted
run-hosted: setup
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) $(B)/hosted/urmqtt
	$(Q)hosted/run-hosted.sh $(B)
