# SPDX-License-Identifier: MIT
# tools/bench: `make bench` — side-by-side measurements (never a pass/fail test). Builds
# the measuring binaries in the hostrel flavour (-O2, no sanitizers): the hosted broker
# ($(B)/hostrel/urmqtt), the load generator ($(B)/hostrel/tools/loadgen, OpenSSL client)
# and the in-process microbenchmarks; the x86_64 image (boot time, size); the
# Linux+Mosquitto guest for the virtual machines' table (tools/bench/linux-guest/build.sh,
# cached in $(B)/bench/linux-guest; skipped when BENCH_ONLY leaves out vm); then
# tools/bench/run.sh measures and prints.
BENCH_HOSTED_OBJS = $(call objs,hostrel,t,$(HOSTED_SRCS))
BENCH_LOADGEN_SRCS := tools/loadgen/loadgen.c tools/loadgen/certs.c
BENCH_MICRO_NAMES := micro_mqtt micro_rss micro_shard micro_tcp micro_tls
# Per-binary extra link inputs and compile flags (micro_tls: mbedTLS headers and archive for
# our tls/ module, OpenSSL as the in-memory client).
BENCH_MICRO_LIBS_micro_tls = $(call objs,hostrel,t,$(NODE_HOST_PORT_SRCS)) $(B)/hostrel/libmbedtls.a -lssl -lcrypto
CFLAGS_tools_bench_micro_tls = $(TLS_TEST_INC)
# micro_dpbench needs mbedTLS's client side: only in a tree built with URMQTT_DP_BENCH=1.
ifeq ($(URMQTT_DP_BENCH),1)
BENCH_MICRO_NAMES += micro_dpbench
BENCH_MICRO_LIBS_micro_dpbench = $(call objs,hostrel,t,$(NODE_HOST_PORT_SRCS)) $(B)/hostrel/libmbedtls.a
CFLAGS_tools_bench_micro_dpbench = $(TLS_TEST_INC)
$(B)/hostrel/tools/bench/micro_dpbench: $(B)/hostrel/libmbedtls.a $$(call objs,hostrel,t,$$(NODE_HOST_PORT_SRCS))
endif

$(B)/hostrel/urmqtt: $$(BENCH_HOSTED_OBJS) $$(HOSTREL_LIB) $(B)/hostrel/libmbedtls.a $(B)/hostrel/libsqlite.a
	@mkdir -p $(@D); echo "  LD [hostrel] $@"
	$(Q)$(HOST_CC) -o $@ $(BENCH_HOSTED_OBJS) $(HOSTREL_LIB) $(B)/hostrel/libmbedtls.a $(B)/hostrel/libsqlite.a

$(B)/hostrel/tools/loadgen: $$(call objs,hostrel,t,$$(BENCH_LOADGEN_SRCS))
	@mkdir -p $(@D); echo "  LD [hostrel] $@"
	$(Q)$(HOST_CC) -o $@ $^ -lssl -lcrypto

# In-process microbenchmarks: tools/bench/<name>.c linked with the hostrel portable code.
BENCH_MICRO_BINS = $(patsubst %,$(B)/hostrel/tools/bench/%,$(BENCH_MICRO_NAMES))
$(BENCH_MICRO_BINS): $(B)/hostrel/tools/bench/%: $(B)/hostrel/t/tools/bench/%.o $$(HOSTREL_LIB)
	@mkdir -p $(@D); echo "  LD [hostrel] $@"
	$(Q)$(HOST_CC) -o $@ $< $(HOSTREL_LIB) $(BENCH_MICRO_LIBS_$(notdir $@))
$(B)/hostrel/tools/bench/micro_tls: $(B)/hostrel/libmbedtls.a $$(call objs,hostrel,t,$$(NODE_HOST_PORT_SRCS))

BENCH_BINS = $(B)/hostrel/urmqtt $(B)/hostrel/tools/loadgen \
	$(BENCH_MICRO_BINS)
# The bench tree's image carries the in-guest dp-bench scenario (tools/dpbench).
ifeq ($(URMQTT_DP_BENCH),1)
BENCH_BINS += $(B)/x86_64/urmqtt.elf
endif

# The measuring tree: $(B)/bench/tree, built with tools/bench/bench.conf (the dev profile
# without the per-connection rate limits) so the main tree's configuration is untouched.
BENCH_OUT = $(B)/bench
BENCH_TREE = $(BENCH_OUT)/tree
BENCH_SCALE_TREE = $(BENCH_OUT)/scale

.PHONY: bench bench-build
bench-build: $(GENERATED_HEADERS)
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) $(BENCH_BINS)

# The x86_64 image for boot time and size is the ordinary one ($(B)/x86_64/urmqtt.elf, the
# main configuration, not bench.conf); when it does not build, run.sh skips those rows.
bench: setup
	$(Q)tools/setup/ensure-packages.sh mosquitto gnuplot-nox libssl-dev debootstrap cpio zstd || \
		echo "bench: some packages could not be installed; run.sh says what it skips"
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)mkdir -p $(BENCH_TREE) && ln -sfn $(abspath $(B)/deps) $(BENCH_TREE)/deps
	@# The bench tree's mbedTLS has its client side (URMQTT_DP_BENCH=1), which changes struct
	@# layouts that the dependency files do not track: a tree built before without it is
	@# rebuilt from scratch once (the stamp records the flag).
	$(Q)if [ ! -f $(BENCH_TREE)/.dp-bench ]; then rm -rf $(addprefix $(BENCH_TREE)/,host hostrel fuzz x86_64 aarch64); \
		touch $(BENCH_TREE)/.dp-bench; fi
	$(Q)$(MAKE) --no-print-directory BUILD_DIR=$(BENCH_TREE) CONF_FILE=tools/bench/bench.conf \
		URMQTT_DP_BENCH=1 certs bench-build
	@# dp-bench's aarch64 image (the same scenario, tools/dpbench/guest.c): optional, as the
	@# rows it gives; a stale image is removed rather than measured.
	$(Q)case " $${BENCH_ONLY:-dpbench} " in *" dpbench "*) \
		$(MAKE) --no-print-directory -j$(JOBS) BUILD_DIR=$(BENCH_TREE) CONF_FILE=tools/bench/bench.conf \
			URMQTT_DP_BENCH=1 $(BENCH_TREE)/aarch64/urmqtt.img || { rm -f $(BENCH_TREE)/aarch64/urmqtt.img; \
		echo "bench: $(BENCH_TREE)/aarch64/urmqtt.img did not build; dp-bench has no aarch64 rows"; };; \
	esac
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) $(ACCEL_PROBE)
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) $(B)/x86_64/urmqtt.elf || \
		echo "bench: $(B)/x86_64/urmqtt.elf did not build; boot time and image size are skipped"
	$(Q)case " $${BENCH_ONLY:-vm} " in *" vm "* | *" cores "*) \
		tools/bench/linux-guest/build.sh $(BENCH_OUT)/linux-guest || \
		echo "bench: the Linux+Mosquitto guest did not build; the virtual machines' table has no Linux column";; \
	esac
	@# Group scale (BENCH_ONLY=scale only): the image with config/scale-100k.conf, in a tree of
	@# its own beside the bench tree (its certificates too; tools/bench/scale.sh uses both).
	$(Q)case " $${BENCH_ONLY:-} " in *" scale "*) \
		mkdir -p $(BENCH_SCALE_TREE) && ln -sfn $(abspath $(B)/deps) $(BENCH_SCALE_TREE)/deps && \
		$(MAKE) --no-print-directory -j$(JOBS) BUILD_DIR=$(BENCH_SCALE_TREE) CONF_FILE=config/scale-100k.conf \
			certs $(BENCH_SCALE_TREE)/x86_64/urmqtt.elf || \
		echo "bench: the scale image did not build; the group scale is skipped";; \
	esac
	$(Q)$(ACCEL_DECIDE) tools/bench/run.sh $(BENCH_TREE) $(BENCH_OUT) $(B)/x86_64/urmqtt.elf

# The report and the history (no measuring; seconds):
#   make bench-report  $(BENCH_OUT)/report.html from the last results.json and docs/bench/history.csv
#                      (tools/bench/report_html.py: inline SVG, no script, no network);
#                      BENCH_SVG_DIR=docs/bench also writes each chart as an .svg there
#   make bench-record  appends the last results.json's figures to docs/bench/history.csv
#                      (tools/bench/history.py); COMMIT=... when the run measured another commit
#                      than results.json names (or, for old results, than HEAD), NOTE=... a remark
# The last step of make bench (tools/bench/run.sh) names every figure that moved beyond its
# noise band since the last record on a machine of the same signature.
BENCH_HISTORY = docs/bench/history.csv
.PHONY: bench-report bench-record
bench-report:
	$(Q)python3 tools/bench/report_html.py --results $(BENCH_OUT)/results.json --history $(BENCH_HISTORY) \
		--out $(BENCH_OUT)/report.html $(if $(BENCH_SVG_DIR),--svg-dir $(BENCH_SVG_DIR))
bench-record:
	$(Q)python3 tools/bench/history.py record --results $(BENCH_OUT)/results.json --history $(BENCH_HISTORY) \
		$(if $(COMMIT),--commit '$(COMMIT)') $(if $(NOTE),--note '$(NOTE)')

# The report in a real browser, from tests/fixtures/bench/ (make test).
SMOKE_SCRIPTS += tests/smoke/bench-report.sh
