# SPDX-License-Identifier: MIT
# tools/config: the build-time configuration tool (urmqtt-config), its tests' sources, and
# the rule that turns config/$(PROFILE).conf into $(B)/gen/urmqtt_config.h.

CONF_SRCS := tools/config/confparse.c tools/config/schema.c tools/config/confgen.c
TOOLS += urmqtt-config
TOOL_SRCS_urmqtt-config := tools/config/main.c $(CONF_SRCS)
# The parser and the schema read hostile bytes: implicit narrowing is an error there too.
CFLAGS_tools_config_confparse := -Wconversion
CFLAGS_tools_config_schema := -Wconversion

TEST_SRCS_tools_test_confparse := tools/config/confparse.c tools/config/schema.c
TEST_SRCS_tools_test_confgen := $(CONF_SRCS)
FUZZ_SRCS_config := $(CONF_SRCS)

# ---- the constants header -------------------------------------------------------------
# Every object waits (order-only) for GENERATED_HEADERS, and build/host/tools/urmqtt-config
# is made of such objects plus $(HOST_LIB); generating the header with it would be a cycle.
# So the header is made by a bootstrap build of the same sources (plus the lib/ files they
# use, and mqtt/fleet.c, whose parser checks [fleet]) with rules of its own that wait for
# nothing generated. No sanitizers: it runs in every build; the sanitized tool and the unit
# tests cover the same code.
CONF_FILE ?= config/$(PROFILE).conf
CONF_BOOT_SRCS := tools/config/main.c $(CONF_SRCS) lib/cursor.c lib/fmt.c lib/mem.c lib/endpoint.c \
	mqtt/fleet.c lib/siphash.c
CONF_BOOT_OBJS := $(patsubst %.c,$(B)/host/confboot/%.o,$(CONF_BOOT_SRCS))
CONF_BOOT_TOOL := $(B)/host/confboot/urmqtt-config
CONF_HEADER := $(B)/gen/urmqtt_config.h
# Records which file the header came from, so switching PROFILE regenerates it; rewritten
# only when it changes, so an unchanged build does nothing.
CONF_STAMP := $(B)/gen/urmqtt_config.source

$(CONF_BOOT_OBJS): $(B)/host/confboot/%.o: %.c
	@mkdir -p $(@D); echo "  CC [boot]    $<"
	$(Q)$(HOST_CC) $(HOSTREL_CFLAGS) $(CFLAGS_$(subst /,_,$*)) -c $< -o $@
$(CONF_BOOT_TOOL): $(CONF_BOOT_OBJS)
	@mkdir -p $(@D); echo "  LD [boot]   $@"
	$(Q)$(HOST_CC) -o $@ $^

# Updated while the Makefile is read (not by a rule, so `make -q` stays truthful).
CONF_STAMP_UPDATE := $(shell mkdir -p $(B)/gen && \
	[ "$$(cat $(CONF_STAMP) 2>/dev/null)" = '$(CONF_FILE)' ] || echo '$(CONF_FILE)' > $(CONF_STAMP))

# The tool writes a temp file and renames it: a bad configuration leaves no header.
$(CONF_HEADER): $(CONF_FILE) $(CONF_STAMP) $(CONF_BOOT_TOOL)
	@mkdir -p $(@D); echo "  CONFIG      $@ <- $(CONF_FILE)"
	$(Q)$(CONF_BOOT_TOOL) gen-header $(CONF_FILE) $@

config/%.conf:
	@echo "config: $@ does not exist (PROFILE=$(PROFILE)); profiles are: $(notdir $(wildcard config/*.conf))" >&2; exit 1

GENERATED_HEADERS += $(CONF_HEADER)

.PHONY: config-doc config-check
# Regenerate the committed reference (test_confgen fails while it differs).
config-doc: $(CONF_BOOT_TOOL)
	$(Q)$(CONF_BOOT_TOOL) gen-doc > docs/CONFIGURATION.md.tmp && mv docs/CONFIGURATION.md.tmp docs/CONFIGURATION.md
# Validate every profile, not just the one being built.
config-check: $(CONF_BOOT_TOOL)
	$(Q)for f in config/*.conf; do $(CONF_BOOT_TOOL) check $$f || exit 1; done

# test_confgen compares docs/CONFIGURATION.md, reads config/*.conf from the source tree and
# runs the (sanitized) tool; the extra prerequisite only orders the build (the link rule
# names its inputs itself).
CFLAGS_tests_unit_tools_test_confgen := -DCONF_TEST_SRCDIR='"$(CURDIR)"' \
	-DCONF_TEST_TOOL='"$(abspath $(B)/host/tools/urmqtt-config)"'
$(B)/host/tests/unit/tools/test_confgen: $(B)/host/tools/urmqtt-config
