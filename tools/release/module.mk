# SPDX-License-Identifier: MIT
# tools/release: deployable images (ADR-074, docs/DEPLOY.md).
#   make release CONFIG=site.conf CERTS=pki-dir [RELEASE_KEY=~/.urmqtt/release.key]
#                [RELEASE_VERSION=v] [RELEASE_DISK_MB=256]
#       $(B)/release/: urmqtt-V.iso (x86_64 BIOS and UEFI, aarch64 UEFI), urmqtt-V-x86_64.raw
#       and .qcow2 (UEFI and BIOS), urmqtt-V-aarch64.raw and .qcow2 (UEFI), urmqtt-V.cdx.json
#       (SBOM), SHA256SUMS, a .minisig for each, minisign.pub; the kernel tree is
#       $(B)/release-tree (RELEASE_AARCH64=0 in the environment: no aarch64 parts)
#   make release-key [RELEASE_KEY=path] [NOPASS=1]   the minisign key pair, outside the tree
#   make reproduce [CONFIG= CERTS=]   two builds from scratch, compared byte for byte (without
#       CONFIG/CERTS: a throwaway PKI and a minimal production configuration)
RELEASE_KEY ?= $(HOME)/.urmqtt/release.key
RELEASE_DISK_MB ?= 256
.PHONY: release release-key reproduce release-test-prep
release: setup
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)tools/release/release.sh --config "$(CONFIG)" --certs "$(CERTS)" --build $(B) --key "$(RELEASE_KEY)" \
		--jobs $(JOBS) --disk-mb $(RELEASE_DISK_MB) $(if $(RELEASE_VERSION),--version $(RELEASE_VERSION))
release-key:
	$(Q)tools/release/keygen.sh "$(RELEASE_KEY)"
reproduce: setup
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)if [ -n "$(CONFIG)$(CERTS)" ]; then tools/release/reproduce.sh $(B) "$(CONFIG)" "$(CERTS)" $(JOBS); else \
		mkdir -p $(B)/reproduce-input && { [ -f $(B)/reproduce-input/pki/ca.crt ] || \
		tools/release/mkpki.sh $(B)/reproduce-input/pki >/dev/null; } && \
		printf '[core]\nprofile = "prod"\n' >$(B)/reproduce-input/site.conf && \
		tools/release/reproduce.sh $(B) $(B)/reproduce-input/site.conf $(B)/reproduce-input/pki $(JOBS); fi
# make test: the release smoke test's kernel tree is built with the other test prerequisites,
# so that the smoke phase only re-embeds a fresh PKI (tests/smoke/release.sh).
release-test-prep:
	$(Q)tests/smoke/release.sh --prepare $(B)
TEST_DEPS += release-test-prep
# ... and the reproduce check's second tree, from scratch in another directory, after the
# first (release/reproduce compares the two trees' images).
.PHONY: release-repro-prep
release-repro-prep: release-test-prep
	$(Q)tests/smoke/release.sh --prepare-b $(B)
TEST_DEPS += release-repro-prep
SMOKE_SCRIPTS += tests/smoke/release.sh
