# SPDX-License-Identifier: MIT
# store/: durable state on the raw disk. dev.c: synchronous block I/O for the database
# core over drivers/blk.h.
PORTABLE_SRCS += store/dev.c
PORTABLE_SRCS += store/ops.c store/link.c
# layout.c: disk layout v2 (docs/DISK-FORMAT.md): superblocks, plan, probe, format;
# gpt.c: the GPT it is built on.
PORTABLE_SRCS += store/layout.c store/gpt.c
PORTABLE_SRCS += store/db.c store/engine.c store/boot.c store/service.c
# service.c: the storage core's whole job over a small platform port (kernel/kstore.c,
# hosted/store.c).
# Deferred (=): store/sqlite/module.mk, which defines STORE_SQLITE_INC, is read after this one.
CFLAGS_store_db = $(STORE_SQLITE_INC)
# The randomized power-cut test runs the whole durable path (broker, link, engine,
# database, VFS) over the simulated disk.
CFLAGS_tests_unit_store_test_crash = $(STORE_SQLITE_INC)
TEST_LIBS_store_test_crash = $(B)/host/libsqlite.a
$(B)/host/tests/unit/store/test_crash: $(B)/host/libsqlite.a
# The service over the simulated disk: no disk, foreign, blank, too small, restart.
TEST_LIBS_store_test_service = $(B)/host/libsqlite.a
$(B)/host/tests/unit/store/test_service: $(B)/host/libsqlite.a
# tlog.c: the telemetry log (docs/DISK-FORMAT.md section 8): codec, writer, recovery, retention.
PORTABLE_SRCS += store/tlog.c
# tlog_scan.c: reading the log back (urmqtt-disk, queries); tlq.c: queries on the storage core.
PORTABLE_SRCS += store/tlog_scan.c store/tlq.c
