# SPDX-License-Identifier: MIT
# tests/ct: constant-time checks under valgrind memcheck (ctgrind style), run by `make test`
# through tests/smoke/ct-accel.sh. valgrind and ASan do not mix, so the program links the
# hostrel flavour's objects (-O2 -g, no sanitizer): tls/accel's C and generated assembly as
# the image's archives get them (TLS_ACCEL_OBJS_hostrel, tls/accel/module.mk) and lib/ from
# the hostrel libportable.a. psa_driver.o is left out: it needs mbedTLS, the check does not.
#
# This file is read before tls/accel/module.mk (sorted names), so its variables are used
# deferred: `=` assignments, and $$ in prerequisites (the top Makefile's .SECONDEXPANSION).

CT_ACCEL := $(B)/hostrel/tests/ct/ct_accel
CT_ACCEL_OBJS = $(filter-out %/psa_driver.o,$(TLS_ACCEL_OBJS_hostrel))
CFLAGS_tests_ct_ct_accel :=

# On x86_64 the portable X25519 is linked in too, renamed as the unit tests' copy is (one rule
# for both, tls/accel/module.mk: $(B)/<flavour>/accel/x25519_generic.o).
ifeq ($(shell uname -m),x86_64)
CT_ACCEL_GENERIC := $(B)/hostrel/accel/x25519_generic.o
else
CT_ACCEL_GENERIC :=
endif

$(CT_ACCEL): $(B)/hostrel/t/tests/ct/ct_accel.o $$(CT_ACCEL_OBJS) $(CT_ACCEL_GENERIC) $$(HOSTREL_LIB)
	@mkdir -p $(@D); echo "  LD [hostrel] $@"
	$(Q)$(HOST_CC) -o $@ $^

TEST_DEPS += $(CT_ACCEL)
SMOKE_SCRIPTS += tests/smoke/ct-accel.sh
