# SPDX-License-Identifier: MIT
# store/: durable state on the raw disk. dev.c: synchronous block I/O for the database
# core over drivers/blk.h.
PORTABLE_SRCS += store/dev.c
PORTABLE_SRCS += store/ops.c store/link.c
# layout.c: disk layout v2 (docs/DISK-FORMAT.md): superblocks, plan, probe, format;
# gpt.c: the GPT it is built on.
PORTABLE_SRCS += store/layout.c store/gpt.c
PORTABLE_SRCS += store/db.c store/engine.c store/boot.c store/service.c store/backup.c
# service.c: the storage core's whole job over a small platform port (kernel/kstore.c,
# hosted/store.c); backup.c: the database's A/B backup and its restore at boot.
# Deferred (=): store/sqlite/module.mk, which defines STORE_SQLITE_INC, is read after this one.
CFLAGS_store_db = $(STORE_SQLITE_INC)
CFLAGS_store_backup = $(STORE_SQLITE_INC)
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
# The A/B backup and the restore at boot under power cuts at every request, and a backup of
# a database that keeps committing (tests/unit/store/test_backup.c).
CFLAGS_tests_unit_store_test_backup = $(STORE_SQLITE_INC)
TEST_LIBS_store_test_backup = $(B)/host/libsqlite.a
$(B)/host/tests/unit/store/test_backup: $(B)/host/libsqlite.a
# grow.c: the layout follows a larger disk (docs/DISK-FORMAT.md section 9): GPT, then superblock.
PORTABLE_SRCS += store/grow.c
# scrub.c: the scrubber: database and backup pages (through cksumvfs), telemetry records,
# within an I/O budget per second (storage.scrub_kb_per_s); its test runs over the
# simulated disk with SQLite.
PORTABLE_SRCS += store/scrub.c
CFLAGS_store_scrub = $(STORE_SQLITE_INC)
CFLAGS_tests_unit_store_test_scrub = $(STORE_SQLITE_INC)
TEST_LIBS_store_test_scrub = $(B)/host/libsqlite.a
$(B)/host/tests/unit/store/test_scrub: $(B)/host/libsqlite.a
# The growth over the simulated disk: plans, boots that grow, power cuts at every request.
CFLAGS_tests_unit_store_test_grow = $(STORE_SQLITE_INC)
TEST_LIBS_store_test_grow = $(B)/host/libsqlite.a
$(B)/host/tests/unit/store/test_grow: $(B)/host/libsqlite.a
# biosimg.c: the BIOS boot image the installer writes (GRUB's core and LBA 0's boot code,
# the ISO's "bios" module; format in store/biosimg.h).
PORTABLE_SRCS += store/biosimg.c
