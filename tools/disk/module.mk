# SPDX-License-Identifier: MIT
# tools/disk: urmqtt-disk, the operator's tool for an urMQTT data disk image (inspect, verify,
# format, telemetry; manual docs/DISK.md). The disk through hosted/blk_file, the format through
# store/ (the host flavour of the broker's own code), the database through SQLite's host
# archive. Only `format` writes an image.
TOOLS += urmqtt-disk
TOOL_SRCS_urmqtt-disk := tools/disk/main.c tools/disk/image.c tools/disk/facts.c tools/disk/db.c \
	tools/disk/inspect.c tools/disk/verify.c tools/disk/format.c tools/disk/telemetry.c \
	tools/disk/check.c hosted/blk_file.c
# backup and restore write an image too (backup.c), through the broker's bring-up (bringup.c).
TOOL_SRCS_urmqtt-disk += tools/disk/backup.c tools/disk/bringup.c
TOOL_LIBS_urmqtt-disk := $(B)/host/libsqlite.a
$(B)/host/tools/urmqtt-disk: $(B)/host/libsqlite.a
# Files that include sqlite3.h (through store/sqlite/sqlite_int.h).
CFLAGS_tools_disk_db := $(STORE_SQLITE_INC)

# The pure pieces (segment ends, SQLite headers, GUID and time text, numbers).
TEST_SRCS_tools_test_disk_check := tools/disk/check.c

# A test helper, never installed: writes telemetry records with the broker's writer
# (store/tlog.h) and runs SQL on the database through the broker's bring-up (store/boot.h), so
# tests/smoke/disk-tool.sh can make the damage verify must find. tests/support/disk/ keeps it
# out of the fakes every unit test links (tests/support/*.c).
DISK_WRITER := $(B)/host/tests/support/disk-writer
DISK_WRITER_SRCS := tests/support/disk/disk_writer.c hosted/blk_file.c
CFLAGS_tests_support_disk_disk_writer := $(STORE_SQLITE_INC)
$(DISK_WRITER): $$(call objs,host,t,$$(DISK_WRITER_SRCS)) $$(HOST_LIB) $(B)/host/libsqlite.a
	@mkdir -p $(@D); echo "  LD [test]   $@"
	$(Q)$(HOST_CC) $(HOST_LDFLAGS) -o $@ $(call objs,host,t,$(DISK_WRITER_SRCS)) $(HOST_LIB) $(B)/host/libsqlite.a

TEST_DEPS += $(DISK_WRITER)
SMOKE_SCRIPTS += tests/smoke/disk-tool.sh
# `make host` builds the helper too, so tests/smoke/disk-tool.sh runs after it alone.
host: $(DISK_WRITER)
