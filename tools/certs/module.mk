# SPDX-License-Identifier: MIT
# tools/certs: development PKI (make certs) and the header embedding it into images.
CERTS_DIR ?= $(B)/dev/certs
CERTS_HEADER := $(B)/gen/urmqtt_certs.h
# A constant's value from the generated configuration header, without quotes or the u suffix.
CONF_VALUE = $(shell sed -n 's/^\#define $(1) \(.*\)$$/\1/p' $(CONF_HEADER) 2>/dev/null | \
	sed -E 's/^"(.*)"$$/\1/; s/^([0-9]+)u$$/\1/')

.PHONY: certs
certs: $(CERTS_DIR)/ca.crt
$(CERTS_DIR)/ca.crt $(CERTS_DIR)/server.crt $(CERTS_DIR)/server.key $(CERTS_DIR)/revoked.serials &: $(CONF_HEADER) tools/certs/mkcerts.sh
	$(Q)tools/certs/mkcerts.sh $(CERTS_DIR) $(call CONF_VALUE,CONF_DEV_CERTS_DEVICES) \
		$(call CONF_VALUE,CONF_TLS_SERVICE_URI_PREFIX)
	$(Q)touch $(CERTS_DIR)/ca.crt $(CERTS_DIR)/server.crt $(CERTS_DIR)/server.key $(CERTS_DIR)/revoked.serials

$(CERTS_HEADER): $(CERTS_DIR)/ca.crt $(CERTS_DIR)/server.crt $(CERTS_DIR)/server.key \
		$(CERTS_DIR)/revoked.serials tools/certs/embed.sh
	@mkdir -p $(@D); echo "  EMBED       $@"
	$(Q)tools/certs/embed.sh $(CERTS_DIR) $@
GENERATED_HEADERS += $(CERTS_HEADER)
