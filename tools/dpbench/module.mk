# SPDX-License-Identifier: MIT
# tools/dpbench: the data-plane benchmark (an mbedTLS client against one dp per core, no
# network). Built only with URMQTT_DP_BENCH=1, which `make bench` sets for its own tree
# (mbedTLS then has its client side); the main build and the broker image never see it.
ifeq ($(URMQTT_DP_BENCH),1)
PORTABLE_SRCS += tools/dpbench/dpbench.c
CFLAGS_tools_dpbench_dpbench = $(TLS_INC)
endif

ifeq ($(URMQTT_DP_BENCH),1)
# The kernels of this tree know the scenario (arch/x86_64/scenarios/registry.c and
# arch/aarch64/scenarios.c list test=dpbench).
PROFILE_DEFS += -DURMQTT_DP_BENCH=1
# The in-guest scenario (tools/dpbench/guest.c, the same on both architectures: it needs
# the image's platform port, so it is image code, not in the portable library) and the
# client credentials it embeds.
KERNEL_SRCS_x86_64 += tools/dpbench/guest.c
KERNEL_SRCS_aarch64 += tools/dpbench/guest.c
DPB_CERTS_HEADER := $(B)/gen/urmqtt_dpbench_certs.h
$(DPB_CERTS_HEADER): $(CERTS_DIR)/ca.crt tools/dpbench/embed-client.sh
	@mkdir -p $(@D); echo "  EMBED       $@"
	$(Q)tools/dpbench/embed-client.sh $(CERTS_DIR) dev-1 $@
GENERATED_HEADERS += $(DPB_CERTS_HEADER)
endif
