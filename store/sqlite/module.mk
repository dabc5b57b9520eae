# SPDX-License-Identifier: MIT
# store/sqlite/: the SQLite library set-up (glue.c), the VFS stack over the DB, WAL and
# backup regions (vfs.c), the string functions SQLite needs in the image (libc.c,
# libc_kernel.c), and the rules that build SQLite 3.46.1's amalgamation and its page
# checksum shim ext/misc/cksumvfs.c (third-party, from the tree `make deps` unpacks and
# digest-checks in $(B)/deps, never committed) into one archive per flavour,
# $(B)/<flavour>/libsqlite.a: freestanding, our shim headers (store/sqlite/shim/, then
# tls/shim/ for the headers that already fit) instead of libc's, our configuration
# store/sqlite/sqlite_config.h, warnings shown but not errors (our own files keep -Werror).

STORE_SQLITE_DIR := $(B)/deps/sqlite-amalgamation
STORE_SQLITE_SRC := $(STORE_SQLITE_DIR)/sqlite3.c
# SQLite's page-checksum VFS shim (ext/misc/cksumvfs.c), from the same pinned and
# digest-checked source tree `make deps` unpacked (never copied into the repository),
# compiled like the amalgamation into the same archive. SQLITE_CKSUMVFS_STATIC: linked
# statically, started by sqlite3_register_cksumvfs (store_vfs_register calls it). It
# includes "sqlite3.h" itself, so our configuration is forced in first, as sqlite_int.h
# does for our files.
STORE_CKSUMVFS_SRC := $(B)/deps/sqlite3-3.46.1/ext/misc/cksumvfs.c
STORE_CKSUMVFS_FLAGS := -DSQLITE_CKSUMVFS_STATIC -include store/sqlite/sqlite_config.h -isystem $(STORE_SQLITE_DIR)
STORE_SQLITE_CONFIG := -DSQLITE_CUSTOM_INCLUDE=store/sqlite/sqlite_config.h
# Flags our files need to include sqlite3.h (a system include: its warnings are not ours);
# store/sqlite/sqlite_int.h includes the configuration first.
STORE_SQLITE_INC := -isystem $(STORE_SQLITE_DIR)

# Our files pass and return no double, so they are portable (general registers only in
# the image) like every other layer.
PORTABLE_SRCS += store/sqlite/glue.c store/sqlite/vfs.c store/sqlite/libc.c
CFLAGS_store_sqlite_glue := $(STORE_SQLITE_INC)
CFLAGS_store_sqlite_vfs := $(STORE_SQLITE_INC)
# The image has no libc: strspn/strcspn/strrchr for SQLite come from store/sqlite/libc.c.
KERNEL_SRCS_x86_64 += store/sqlite/libc_kernel.c
KERNEL_SRCS_aarch64 += store/sqlite/libc_kernel.c

# ---- SQLite, one archive per flavour ----
# -Werror=implicit-function-declaration: a C function SQLite needs and no shim declares
# fails the build (it would otherwise link to whatever has the name). The unused-*
# warnings are the trace of the SQLITE_OMIT_* options (functions and variables left
# without a caller): silenced as for mbedTLS; every other warning is shown.
STORE_SQLITE_BASE := -std=c11 -g -Wall -Werror=implicit-function-declaration \
	-Wno-unused-function -Wno-unused-variable -Wno-unused-but-set-variable -Wno-unused-value \
	-I store/sqlite/shim -I tls/shim -I . $(STORE_SQLITE_CONFIG) $(DEPFLAGS)
# -fno-sanitize=object-size: GCC 12's object-size check misjudges btree.c's balance_nonroot,
# which reads element nOld-1 of `(nNew>nOld ? apNew : apOld)` (both arrays hold it): UBSan
# stops the host build there once interior table pages split (ADR-044). Every other
# UBSan check stays on for SQLite, and clang's build (fuzz) keeps object-size too.
STORE_SQLITE_CFLAGS_host = -O1 $(STORE_SQLITE_BASE) $(HARDEN) $(SANITIZE) -fno-sanitize=object-size \
	$(call gcc_freestanding,$(HOST_CC))
STORE_SQLITE_CFLAGS_hostrel = -O2 $(STORE_SQLITE_BASE) $(HARDEN) $(call gcc_freestanding,$(HOST_CC))
STORE_SQLITE_CFLAGS_fuzz = -O1 $(STORE_SQLITE_BASE) $(CLANG_HARDEN) -fsanitize=address,undefined \
	-fno-sanitize-recover=all $(call clang_freestanding,$(FUZZ_CC))
# The kernels: exactly the kernel's flags (mk/toolchain.mk) without our warning set and
# include paths and without -mgeneral-regs-only, because SQLite computes with double
# (cksumvfs.c gets the same flags: its xCurrentTime passes a double).
# x86_64: SSE2 for double, -mno-80387 so that any x87 instruction fails to compile, and
# -mlong-double-64 because util.c multiplies by long double literals (1.0e+100L) in
# branches that LONGDOUBLE_TYPE=double leaves dead: long double is then double, computed
# in SSE registers. Like mbedTLS's AES-NI files (ADR-021), this code runs only in a core's
# loop, never in an interrupt handler, so no vector state needs saving.
# aarch64: FP/SIMD allowed; long double stays IEEE quad there, so those dead branches
# reference libgcc's soft-float helpers (__multf3...), which the image's link provides.
STORE_SQLITE_KERNEL_DROP = $(WARN_PORTABLE) -mgeneral-regs-only $(INCLUDES) $(GEN_INCLUDES) $(DEPFLAGS)
STORE_SQLITE_CFLAGS_x86_64 = $(filter-out $(STORE_SQLITE_KERNEL_DROP),$(X86_64_CFLAGS)) \
	$(STORE_SQLITE_BASE) -msse2 -mno-80387 -mlong-double-64
STORE_SQLITE_CFLAGS_aarch64 = $(filter-out $(STORE_SQLITE_KERNEL_DROP),$(AARCH64_CFLAGS)) \
	$(STORE_SQLITE_BASE)
STORE_SQLITE_CC_host = $(HOST_CC)
STORE_SQLITE_CC_hostrel = $(HOST_CC)
STORE_SQLITE_CC_fuzz = $(FUZZ_CC)
STORE_SQLITE_CC_x86_64 = $(X86_64_CC)
STORE_SQLITE_CC_aarch64 = $(AARCH64_CC)

define store_sqlite_rules
$$(B)/$(1)/sqlite/sqlite3.o: $$(STORE_SQLITE_SRC) store/sqlite/sqlite_config.h store/sqlite/module.mk
	@mkdir -p $$(@D); echo "  CC [sqlite $(1)] sqlite3.c"
	$$(Q)$$(STORE_SQLITE_CC_$(1)) $$(STORE_SQLITE_CFLAGS_$(1)) -c $$< -o $$@
$$(B)/$(1)/sqlite/cksumvfs.o: $$(STORE_CKSUMVFS_SRC) $$(STORE_SQLITE_SRC) store/sqlite/sqlite_config.h store/sqlite/module.mk
	@mkdir -p $$(@D); echo "  CC [sqlite $(1)] cksumvfs.c"
	$$(Q)$$(STORE_SQLITE_CC_$(1)) $$(STORE_SQLITE_CFLAGS_$(1)) $$(STORE_CKSUMVFS_FLAGS) -c $$< -o $$@
$$(B)/$(1)/libsqlite.a: $$(B)/$(1)/sqlite/sqlite3.o $$(B)/$(1)/sqlite/cksumvfs.o
	@mkdir -p $$(@D); echo "  AR          $$@"
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach fl,host hostrel fuzz x86_64 aarch64,$(eval $(call store_sqlite_rules,$(fl))))

# The kernels' archives are built by `make kernels` (and so `make all`); the x86_64 image
# links its archive (arch/x86_64/module.mk), the aarch64 one is built for the port to come:
# their undefined symbols must stay covered by lib/, tls/shim/, store/sqlite/libc_kernel.c
# and libgcc.
KERNEL_IMAGES += $(B)/x86_64/libsqlite.a $(B)/aarch64/libsqlite.a

# ---- tests that need SQLite ----
CFLAGS_tests_unit_store_test_vfs := $(STORE_SQLITE_INC)
TEST_LIBS_store_test_vfs := $(B)/host/libsqlite.a
$(B)/host/tests/unit/store/test_vfs: $(B)/host/libsqlite.a
