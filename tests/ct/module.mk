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

# On x86_64 the portable X25519 is linked in too, renamed as the unit tests' copy is
# (tls/accel/module.mk, $(B)/host/accel/x25519_generic.o): x25519.c and fe25519_generic.c in
# one object whose global names get `generic_` after their prefix. The same recipe, for the
# hostrel objects; any other global name stops the build.
ifeq ($(shell uname -m),x86_64)
CT_ACCEL_GENERIC := $(B)/hostrel/tests/ct/x25519_generic.o
CT_ACCEL_GENERIC_SRCS := tls/accel/x25519.c tls/accel/fe25519_generic.c
$(CT_ACCEL_GENERIC): $(patsubst %.c,$(B)/hostrel/p/%.o,$(CT_ACCEL_GENERIC_SRCS))
	@mkdir -p $(@D); echo "  LD -r       $@"
	$(Q)ld -r -o $@.tmp.o $^ && syms=$$(nm -g --defined-only $@.tmp.o | awk '{ print $$3 }') && \
	args=() && for s in $$syms; do case $$s in \
		x25519_*|fe25519_*) args+=(--redefine-sym "$$s=$${s%%_*}_generic_$${s#*_}") ;; \
		*) echo "$@: no generic_ name for global $$s (tests/ct/module.mk)" >&2; rm -f $@.tmp.o; exit 1 ;; \
		esac; done && objcopy "$${args[@]}" $@.tmp.o $@ && rm -f $@.tmp.o
else
CT_ACCEL_GENERIC :=
endif

$(CT_ACCEL): $(B)/hostrel/t/tests/ct/ct_accel.o $$(CT_ACCEL_OBJS) $(CT_ACCEL_GENERIC) $$(HOSTREL_LIB)
	@mkdir -p $(@D); echo "  LD [hostrel] $@"
	$(Q)$(HOST_CC) -o $@ $^

TEST_DEPS += $(CT_ACCEL)
SMOKE_SCRIPTS += tests/smoke/ct-accel.sh
