#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# urmqtt-disk (tools/disk, manual docs/DISK.md) on sparse image files: no network, no QEMU,
# no broker. Damage is made with tests/support/disk/disk_writer.c (the broker's own telemetry
# writer and bring-up) and dd. Results:
#   disk-tool/help                --help names every command and the exit codes (exit 0); an
#                                 unknown command or option, or a bad value, exits 2
#   disk-tool/format-blank        a sparse 256 MiB file: laid out, database created (exit 0)
#   disk-tool/inspect-formatted   inspect: both GPT copies, both superblock slots, the data
#                                 partition and every region, a database that passes quick_check
#                                 (schema version 5), the backup slots, the telemetry log (exit 0)
#   disk-tool/verify-formatted    verify: OK, exit 0
#   disk-tool/read-only           inspect, verify and telemetry change no byte (sha256)
#   disk-tool/format-refuses-ours format of our disk without --force: refused, exit 1, unchanged
#   disk-tool/foreign-ext4        inspect and verify of an ext4 image: the probe's words,
#                                 exit 1, unchanged
#   disk-tool/format-force-whole  data the probe samples past the first MiB: --force zeroes the
#                                 whole image, then formats; verify OK
#   disk-tool/damaged-untouched   our GPT, both superblock slots damaged: inspect names each
#                                 slot's rejection, format refuses; exit 1, unchanged
#   disk-tool/foreign-ff          the same as foreign-ext4 for a file of 0xFF bytes
#   disk-tool/format-refuses-ext4 format of the ext4 image: refused and named, exit 1, unchanged
#   disk-tool/format-force-ext4   format --force of it: ours, database created, verify OK
#   disk-tool/wal-recovery        a database whose last commits are only in its WAL (the writer
#                                 exits without a checkpoint, as a killed broker): inspect reads
#                                 them (more pages than the file's header says), quick_check ok,
#                                 verify OK, and no byte changes
#   disk-tool/telemetry-records   5 records written by the broker's writer: verify counts them,
#                                 inspect shows the newest segment and the count
#   disk-tool/telemetry-damage    a byte of the 3rd record flipped: verify exits 1 naming
#                                 partition 0, slot 0 and that record's image byte; unchanged
#   disk-tool/database-damage     a table's root page overwritten in the database region:
#                                 verify and inspect exit 1 with quick_check's message
#   disk-tool/backup-roundtrip    retained rows written by the broker's code (disk-writer), backup
#                                 -> slot A named; more rows, backup -> slot B named with a higher
#                                 generation, inspect shows both slots with their rows; more
#                                 rows, restore -> the second backup's rows are served (inspect
#                                 and the broker's bring-up read them back), verify OK
#   disk-tool/restore-after-damage a byte of a row's page flipped in the database region: verify
#                                 exits 1 with the page checksum's error code 8202; restore ->
#                                 verify OK, the backup's rows, the damaged page kept byte for
#                                 byte in the other slot
#   disk-tool/restore-refusals    restore with no backup, restore --slot of an empty slot, backup
#                                 of a damaged database, backup and restore of an ext4 image:
#                                 exit 1, the reason (the probe's words), sha256 unchanged
#   disk-tool/backup-to-file      backup --to FILE: a plain SQLite file that the stock sqlite3
#                                 (or python3's module) opens read only: integrity_check ok, the
#                                 rows, the stamp; a second --to onto it is refused (exit 1)
#   disk-tool/grown               a 64 MiB image grown to 96 MiB, the broker's growth cut short in
#                                 the primary GPT: inspect names the pending growth, verify OK;
#                                 the growth finished: the database's second extent, its rows,
#                                 verify OK
# Usage: disk-tool.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
tool=$build/host/tools/urmqtt-disk
writer=$build/host/tests/support/disk-writer
tmp=$(mktemp -d /tmp/urmqtt-disk-tool.XXXXXX)
failed=0

pass() { echo "PASS disk-tool/$1${2:+ ($2)}"; }
fail() { echo "FAIL disk-tool/$1${2:+ ($2)}"; failed=1; }
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in sha256sum mkfs.ext4 truncate dd; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
[ -x "$tool" ] && [ -x "$writer" ] || { fail setup "need $tool and $writer (make)"; exit 1; }

sum() { sha256sum <"$1" | cut -d' ' -f1; }
# run NAME CMD...: output (stdout and stderr) in $tmp/NAME.out, exit code in $rc
run() {
	local name=$1
	shift
	"$@" >"$tmp/$name.out" 2>&1
	rc=$?
}
has() { grep -qE -- "$2" "$tmp/$1.out"; }
first() { tr '\n' ' ' <"$tmp/$1.out" | cut -c1-300; }

# ---- help and usage
run help "$tool" --help
if [ $rc = 0 ] && has help 'inspect IMAGE' && has help 'verify IMAGE' && has help 'format IMAGE' &&
	has help 'telemetry IMAGE' && has help 'backup IMAGE \[--to FILE\]' && has help 'restore IMAGE \[--slot A\|B\]' &&
	has help '--force' && has help '--full' && has help 'exit codes'; then
	run bad-cmd "$tool" frobnicate x.img
	bad1=$rc
	run bad-opt "$tool" inspect x.img --force
	bad2=$rc
	run bad-val "$tool" format x.img --telemetry-pct 95
	bad3=$rc
	run bad-slot "$tool" restore x.img --slot C
	bad4=$rc
	run bad-to "$tool" restore x.img --to y.sqlite
	bad5=$rc
	if [ "$bad1$bad2$bad3$bad4$bad5" = 22222 ]; then
		pass help "every command, option and exit code; usage errors exit 2"
	else
		fail help "usage errors exited $bad1 $bad2 $bad3 $bad4 $bad5, want 2 2 2 2 2"
	fi
else
	fail help "exit $rc: $(first help)"
fi

# ---- a fresh image
img=$tmp/data.img
truncate -s 256M "$img"
run format "$tool" format "$img"
if [ $rc = 0 ] && has format 'blank disk formatted; database created'; then
	pass format-blank "$(grep -m1 'formatted' "$tmp/format.out" | sed 's/^format: [^:]*: //')"
else
	fail format-blank "exit $rc: $(first format)"
fi

before=$(sum "$img")
run inspect "$tool" inspect "$img"
missing=""
for want in '^disk: ours' '^gpt: primary copy used; primary \(LBA 1\) valid, backup \(LBA [0-9]+\) valid' \
	'^gpt partition 1: EFI system partition' '^gpt partition 2: urMQTT data' \
	'^superblock A: .*generation 1, valid' '^superblock B: .*generation 2, valid.*IN CHARGE' \
	'^partition: LBA' '^region meta: LBA [0-9]+\.\.[0-9]+ \(1 MiB\): superblock slots' '^region database: LBA' '^region wal: LBA' '^region telemetry: LBA' \
	'^region backup-a: LBA' '^region backup-b: LBA' '^database: header: 4096-byte pages' \
	'schema version 5, boot generation 1' '^database: quick_check: ok' '^wal: ' \
	'^backup: the superblock names none' '^backup A: no database' '^backup B: no database' '^telemetry: never used'; do
	has inspect "$want" || missing="$missing '$want'"
done
if [ $rc = 0 ] && [ -z "$missing" ]; then
	pass inspect-formatted "meta area and $(grep -c '^region [a-z-]*: LBA [0-9]*\.\.[0-9]* ([0-9]* MiB)$' "$tmp/inspect.out") regions; $(grep '^database: as SQLite' "$tmp/inspect.out" | sed 's/.*: \([0-9]* pages\)/\1/' | cut -d, -f1); quick_check ok"
else
	fail inspect-formatted "exit $rc; missing:$missing"
fi

run verify "$tool" verify "$img"
if [ $rc = 0 ] && has verify '^verify: OK' && has verify '^database: ok: quick_check passed'; then
	pass verify-formatted "$(tail -n 1 "$tmp/verify.out")"
else
	fail verify-formatted "exit $rc: $(first verify)"
fi

run verify-full "$tool" verify "$img" --full --verbose
run telemetry "$tool" telemetry "$img"
after=$(sum "$img")
if [ "$before" = "$after" ]; then
	pass read-only "inspect, verify, verify --full and telemetry: sha256 unchanged"
else
	fail read-only "the image changed"
fi

cp --sparse=always "$img" "$tmp/ours.img"
before=$(sum "$tmp/ours.img")
run format-ours "$tool" format "$tmp/ours.img"
if [ $rc = 1 ] && has format-ours 'refused: ours' && [ "$(sum "$tmp/ours.img")" = "$before" ]; then
	pass format-refuses-ours "$(grep -m1 refused "$tmp/format-ours.out" | sed 's/^urmqtt-disk: [^:]*: //')"
else
	fail format-refuses-ours "exit $rc: $(first format-ours)"
fi

# ---- foreign images
ext=$tmp/ext4.img
truncate -s 256M "$ext"
if ! mkfs.ext4 -q -F -L notours "$ext" >/dev/null 2>&1; then
	fail foreign-ext4 "mkfs.ext4 failed"
else
	before=$(sum "$ext")
	run ext-inspect "$tool" inspect "$ext"
	r1=$rc
	run ext-verify "$tool" verify "$ext"
	r2=$rc
	if [ $r1 = 1 ] && [ $r2 = 1 ] && has ext-inspect 'ext2/3/4 filesystem' && has ext-verify 'ext2/3/4 filesystem' &&
		[ "$(sum "$ext")" = "$before" ]; then
		pass foreign-ext4 "$(grep -m1 '^disk:' "$tmp/ext-inspect.out"); exit 1; sha256 unchanged"
	else
		fail foreign-ext4 "exit $r1/$r2: $(first ext-inspect)"
	fi

	run ext-format "$tool" format "$ext"
	if [ $rc = 1 ] && has ext-format 'refused: foreign: an ext2/3/4 filesystem' && [ "$(sum "$ext")" = "$before" ]; then
		pass format-refuses-ext4 "exit 1; sha256 unchanged"
	else
		fail format-refuses-ext4 "exit $rc: $(first ext-format)"
	fi

	run ext-force "$tool" format "$ext" --force
	run ext-force-verify "$tool" verify "$ext"
	if [ $rc = 0 ] && has ext-force 'zeroed the first MiB' && has ext-force 'blank disk formatted; database created' &&
		has ext-force-verify '^verify: OK'; then
		pass format-force-ext4 "$(grep -c '^format: zeroed' "$tmp/ext-force.out") ranges zeroed, then formatted; verify OK"
	else
		fail format-force-ext4 "exit $rc: $(first ext-force) / $(first ext-force-verify)"
	fi
fi

# Data the probe samples beyond the first and last MiB: --force zeroes the whole image.
sc=$tmp/scattered.img
truncate -s 256M "$sc"
head -c 4096 /dev/zero | tr '\0' '\377' | dd of="$sc" bs=4096 seek=256 conv=notrunc status=none # byte 1 MiB
run sc-force "$tool" format "$sc" --force
run sc-verify "$tool" verify "$sc"
if [ $rc = 0 ] && has sc-force 'foreign: non-zero data at byte 1048576' && has sc-force 'zeroing the whole image' &&
	has sc-force 'blank disk formatted; database created' && has sc-verify '^verify: OK'; then
	pass format-force-whole "data at byte 1 MiB: the probe still saw it after the first and last MiB, so the whole image was zeroed; verify OK"
else
	fail format-force-whole "exit $rc: $(first sc-force) / $(first sc-verify)"
fi

# Our GPT with both superblock slots damaged: described, refused, never written.
dmg=$tmp/damaged.img
cp --sparse=always "$img" "$dmg"
part=$(sed -n 's/^partition: LBA \([0-9]*\)\.\..*/\1/p' "$tmp/inspect.out")
for slot in 0 1; do printf '\x55' | dd of="$dmg" bs=1 seek=$((part * 512 + slot * 4096 + 100)) conv=notrunc status=none; done
before=$(sum "$dmg")
run dmg-inspect "$tool" inspect "$dmg"
r1=$rc
run dmg-format "$tool" format "$dmg"
if [ $r1 = 1 ] && [ $rc = 1 ] && has dmg-inspect '^disk: damaged: our GPT, but neither superblock slot is valid' &&
	has dmg-inspect '^superblock A: LBA [0-9]+, rejected: CRC mismatch' && has dmg-inspect '^superblock B: LBA [0-9]+, rejected: CRC mismatch' &&
	has dmg-format 'refused: damaged' && [ "$(sum "$dmg")" = "$before" ]; then
	pass damaged-untouched "both slots' CRCs broken: inspect names each rejection, format refuses; exit 1; sha256 unchanged"
else
	fail damaged-untouched "exit $r1/$rc (partition at LBA '$part'): $(first dmg-inspect)"
fi

ff=$tmp/ff.img
head -c $((16 << 20)) /dev/zero | tr '\0' '\377' >"$ff"
before=$(sum "$ff")
run ff-inspect "$tool" inspect "$ff"
r1=$rc
run ff-verify "$tool" verify "$ff"
if [ $r1 = 1 ] && [ $rc = 1 ] && has ff-inspect '^disk: foreign: non-zero data at byte 0' && [ "$(sum "$ff")" = "$before" ]; then
	pass foreign-ff "$(grep -m1 '^disk:' "$tmp/ff-inspect.out"); exit 1; sha256 unchanged"
else
	fail foreign-ff "exit $r1/$rc: $(first ff-inspect)"
fi

# ---- a WAL that needs recovery: read in memory, never written back
wal=$tmp/wal.img
cp --sparse=always "$img" "$wal"
fill="CREATE TABLE junk(a INTEGER PRIMARY KEY, b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<2000) INSERT INTO junk SELECT i, randomblob(100) FROM n; SELECT rootpage FROM sqlite_schema WHERE name='junk'"
run wal-writer "$writer" sql "$wal" "$fill" --keep-wal
before=$(sum "$wal")
run wal-inspect "$tool" inspect "$wal"
r1=$rc
run wal-verify "$tool" verify "$wal" --full
hdr_pages=$(sed -n 's/^database: header: [0-9]*-byte pages, \([0-9]*\) pages.*/\1/p' "$tmp/wal-inspect.out")
live_pages=$(sed -n 's/^database: as SQLite reads it[^:]*: \([0-9]*\) pages.*/\1/p' "$tmp/wal-inspect.out")
if [ $r1 = 0 ] && [ $rc = 0 ] && [ -n "$hdr_pages" ] && [ -n "$live_pages" ] && [ "$live_pages" -gt "$hdr_pages" ] &&
	has wal-inspect '^database: quick_check: ok' && has wal-inspect '^wal: a WAL header \(4096-byte pages' &&
	has wal-verify '^database: ok: integrity_check passed' && [ "$(sum "$wal")" = "$before" ]; then
	pass wal-recovery "the file's header says $hdr_pages pages, SQLite reads $live_pages through the WAL; quick_check and integrity_check ok; sha256 unchanged"
else
	fail wal-recovery "exit $r1/$rc; header $hdr_pages, live $live_pages; $(first wal-writer) / $(first wal-inspect)"
fi

# ---- telemetry written by the broker's writer, then damaged
tel=$tmp/tel.img
cp --sparse=always "$img" "$tel"
run tel-writer "$writer" telemetry "$tel" 5
run tel-verify "$tool" verify "$tel"
r1=$rc
run tel-inspect "$tool" inspect "$tel"
if [ $r1 = 0 ] && [ $rc = 0 ] && has tel-verify '^telemetry: ok: 5 valid records in 1 segments' &&
	has tel-inspect '^telemetry partition 0: 5 valid records in 1 segment; newest segment: sequence [0-9]+, slot 0'; then
	pass telemetry-records "$(grep -m1 '^telemetry partition 0' "$tmp/tel-inspect.out")"
else
	fail telemetry-records "exit $r1/$rc: $(first tel-writer) / $(first tel-verify)"
fi
rec3=$(sed -n 's/^record 3 at image byte \([0-9]*\) .*/\1/p' "$tmp/tel-writer.out")
if [ -z "$rec3" ]; then
	fail telemetry-damage "the writer named no record 3: $(first tel-writer)"
else
	# A payload byte of record 3 (the body's last bytes hold the payload "m-3").
	printf '\xff' | dd of="$tel" bs=1 seek=$((rec3 + 60)) conv=notrunc status=none
	before=$(sum "$tel")
	run tel-bad "$tool" verify "$tel"
	if [ $rc = 1 ] && has tel-bad "^telemetry partition 0 slot 0 sequence [0-9]+ \(image byte $rec3, segment offset [0-9]+\): FAILED: a record does not validate .* after 2 valid records" &&
		has tel-bad '^verify: FAILED: 1 problem' && [ "$(sum "$tel")" = "$before" ]; then
		pass telemetry-damage "$(grep -m1 'FAILED: a record' "$tmp/tel-bad.out" | cut -c1-160)"
	else
		fail telemetry-damage "exit $rc (record 3 at $rec3): $(first tel-bad)"
	fi
fi

# ---- a damaged database page
dbi=$tmp/db.img
cp --sparse=always "$img" "$dbi"
run db-writer "$writer" sql "$dbi" "$fill"
root=$(sed -n 's/^rootpage=\([0-9]*\)$/\1/p' "$tmp/db-writer.out")
run db-inspect "$tool" inspect "$dbi"
db_lba=$(sed -n 's/^region database: LBA \([0-9]*\)\.\..*/\1/p' "$tmp/db-inspect.out")
if [ -z "$root" ] || [ -z "$db_lba" ] || ! has db-inspect '^database: quick_check: ok'; then
	fail database-damage "no table to damage: root '$root', database LBA '$db_lba': $(first db-writer)"
else
	# The first 16 bytes of the table's root page (its b-tree page header) become 0xFF.
	head -c 16 /dev/zero | tr '\0' '\377' | dd of="$dbi" bs=1 seek=$((db_lba * 512 + (root - 1) * 4096)) conv=notrunc status=none
	before=$(sum "$dbi")
	run db-verify "$tool" verify "$dbi"
	r1=$rc
	run db-inspect2 "$tool" inspect "$dbi"
	# quick_check's words; or, on a database with page checksums (store/sqlite/vfs.h), the
	# checksum that stopped SQLite reading that page.
	if [ $r1 = 1 ] && [ $rc = 1 ] &&
		has db-verify "^database: FAILED: quick_check (found [0-9]+ problems?, the first: .*page $root|did not pass: .*checksum does not match)" &&
		has db-inspect2 '^database: quick_check: FAILED' && [ "$(sum "$dbi")" = "$before" ]; then
		pass database-damage "$(grep -m1 '^database: FAILED' "$tmp/db-verify.out" | cut -c1-160)"
	else
		fail database-damage "exit $r1/$rc (root page $root): $(first db-verify)"
	fi
fi

# ---- backups: taken, named, restored (store/backup.h, offline)
# rows IMAGE: the retained rows inspect counts ("" when it prints none)
rows() { "$tool" inspect "$1" | sed -n 's/^database: rows: .* \([0-9][0-9]*\) retained,.*/\1/p'; }
bk=$tmp/backup.img
cp --sparse=always "$img" "$bk"
run bk-w1 "$writer" retained "$bk" a 30
run bk-1 "$tool" backup "$bk"
r1=$rc
gen1=$(sed -n 's/^backup: slot A now holds the database: .*(backup generation \([0-9]*\))$/\1/p' "$tmp/bk-1.out")
run bk-i1 "$tool" inspect "$bk"
run bk-w2 "$writer" retained "$bk" b 20
run bk-2 "$tool" backup "$bk"
r2=$rc
gen2=$(sed -n 's/^backup: slot B now holds the database: .*(backup generation \([0-9]*\))$/\1/p' "$tmp/bk-2.out")
run bk-i2 "$tool" inspect "$bk"
run bk-w3 "$writer" retained "$bk" c 10
cp --sparse=always "$bk" "$tmp/damaged-db.img" # for restore-after-damage: B holds 50 rows, the database 60
live=$(rows "$bk")
run bk-r "$tool" restore "$bk"
r3=$rc
run bk-i3 "$tool" inspect "$bk"
run bk-v "$tool" verify "$bk"
r4=$rc
run bk-q "$writer" sql "$bk" "SELECT count(*) AS b FROM retained WHERE CAST(topic AS TEXT) LIKE 'r/b/%'; SELECT count(*) AS c FROM retained WHERE CAST(topic AS TEXT) LIKE 'r/c/%'"
if [ $r1 = 0 ] && [ $r2 = 0 ] && [ $r3 = 0 ] && [ $r4 = 0 ] && [ -n "$gen1" ] && [ -n "$gen2" ] && [ "$gen2" -gt "$gen1" ] &&
	has bk-i1 "^backup: the superblock names slot A, backup generation $gen1\$" &&
	has bk-i1 "^backup A: a SQLite database: .*stamped as taken [0-9T:.-]+Z, .*quick_check ok; rows: .* 30 retained, .*; NAMED by the superblock, backup generation $gen1\$" &&
	has bk-i2 "^backup: the superblock names slot B, backup generation $gen2\$" &&
	has bk-i2 "^backup A: .*quick_check ok; rows: .* 30 retained, .*; not named" &&
	has bk-i2 "^backup B: .*quick_check ok; rows: .* 50 retained, .*; NAMED by the superblock, backup generation $gen2\$" &&
	[ "$live" = 60 ] && has bk-r "^restore: RESTORED from backup slot B \(backup generation $gen2, stamped as taken " &&
	has bk-r '^restore: the database now: .*quick_check ok; rows: .* 50 retained' &&
	has bk-i3 '^database: rows: .* 50 retained' && has bk-i3 '^database: restored from a backup stamped as taken ' &&
	has bk-i3 '^backup A: .* 60 retained, .*; not named' && has bk-q '^b=20$' && has bk-q '^c=0$' && has bk-v '^verify: OK'; then
	pass backup-roundtrip "30 rows -> slot A generation $gen1; 50 -> slot B generation $gen2; 60 rows, restore: slot B's 50 served (r/c rows: 0), the 60 kept in slot A; verify OK"
else
	fail backup-roundtrip "exit $r1/$r2/$r3/$r4, generations '$gen1' '$gen2', live rows '$live': $(first bk-1) / $(first bk-2) / $(first bk-r)"
fi

# A row's page damaged: found by its checksum, restored, the damaged copy kept.
dr=$tmp/damaged-db.img
run dr-root "$writer" sql "$dr" "SELECT rootpage FROM sqlite_schema WHERE name='retained'"
root=$(sed -n 's/^rootpage=\([0-9]*\)$/\1/p' "$tmp/dr-root.out")
run dr-i "$tool" inspect "$dr"
db_lba=$(sed -n 's/^region database: LBA \([0-9]*\)\.\..*/\1/p' "$tmp/dr-i.out")
ka_lba=$(sed -n 's/^region backup-a: LBA \([0-9]*\)\.\..*/\1/p' "$tmp/dr-i.out")
if [ -z "$root" ] || [ -z "$db_lba" ] || [ -z "$ka_lba" ] || ! has dr-i '^database: rows: .* 60 retained'; then
	fail restore-after-damage "no page to damage: root '$root', LBAs '$db_lba' '$ka_lba': $(first dr-root)"
else
	at=$(( (root - 1) * 4096 + 2000 )) # inside the page, before its 8 checksum bytes
	old=$(od -An -tu1 -j $((db_lba * 512 + at)) -N1 "$dr" | tr -d ' ')
	new=$(( old ^ 0x5a ))
	printf "\\$(printf %o $new)" | dd of="$dr" bs=1 seek=$((db_lba * 512 + at)) conv=notrunc status=none
	run dr-v1 "$tool" verify "$dr"
	r1=$rc
	run dr-r "$tool" restore "$dr"
	r2=$rc
	run dr-v2 "$tool" verify "$dr"
	r3=$rc
	run dr-i2 "$tool" inspect "$dr"
	kept=$(od -An -tu1 -j $((ka_lba * 512 + at)) -N1 "$dr" | tr -d ' ')
	if [ $r1 = 1 ] && has dr-v1 "^database: FAILED: quick_check .*(8202|checksum does not match)" && [ $r2 = 0 ] &&
		has dr-r '^restore: the database before: it FAILS quick_check' &&
		has dr-r '^restore: RESTORED from backup slot B .*; the database as it was is kept in slot A$' &&
		[ $r3 = 0 ] && has dr-v2 '^verify: OK' && has dr-i2 '^database: rows: .* 50 retained' &&
		has dr-i2 '^backup A: .*quick_check FAILED: .*8202' && [ "$kept" = "$new" ]; then
		pass restore-after-damage "page $root, byte 2000 (image byte $((db_lba * 512 + at))) flipped ($old -> $new): verify: $(grep -m1 -o 'error code=8202\|checksum does not match' "$tmp/dr-v1.out"); restored slot B, 50 rows, verify OK; slot A holds the damaged byte $kept"
	else
		fail restore-after-damage "exit $r1/$r2/$r3, kept byte '$kept' (want $new): $(first dr-v1) / $(first dr-r)"
	fi
fi

# Refusals: nothing written, the reason said.
refused=""
nb=$tmp/nobackup.img
cp --sparse=always "$img" "$nb"
before=$(sum "$nb")
run rf-1 "$tool" restore "$nb"
[ $rc = 1 ] && has rf-1 'restore refused: no backup: the superblock names none' && [ "$(sum "$nb")" = "$before" ] ||
	refused="$refused no-backup(exit $rc)"
oa=$tmp/only-a.img
cp --sparse=always "$bk" "$oa" # B named, A holds the kept database: clear B's header to make it empty
run rf-i "$tool" inspect "$oa"
kb_lba=$(sed -n 's/^region backup-b: LBA \([0-9]*\)\.\..*/\1/p' "$tmp/rf-i.out")
[ -n "$kb_lba" ] && dd if=/dev/zero of="$oa" bs=512 seek="$kb_lba" count=8 conv=notrunc status=none
before=$(sum "$oa")
run rf-2 "$tool" restore "$oa" --slot B
[ $rc = 1 ] && has rf-2 'restore refused: backup slot B .* cannot be restored: it holds no database' &&
	[ "$(sum "$oa")" = "$before" ] || refused="$refused empty-slot(exit $rc)"
if [ -n "$root" ] && [ -n "$db_lba" ]; then # the image restore-after-damage restored, damaged again
	dd2=$tmp/damaged2.img
	cp --sparse=always "$dr" "$dd2"
	printf '\x5a' | dd of="$dd2" bs=1 seek=$((db_lba * 512 + (root - 1) * 4096 + 1000)) conv=notrunc status=none
	before=$(sum "$dd2")
	run rf-3 "$tool" backup "$dd2"
	[ $rc = 1 ] && has rf-3 'backup refused: the database is not fit to be copied \(it FAILS quick_check' &&
		[ "$(sum "$dd2")" = "$before" ] || refused="$refused damaged-backup(exit $rc)"
else
	refused="$refused damaged-backup(no page to damage)"
fi
truncate -s 256M "$tmp/ext-b.img"
if mkfs.ext4 -q -F -L notours "$tmp/ext-b.img" >/dev/null 2>&1; then
	before=$(sum "$tmp/ext-b.img")
	run rf-4 "$tool" backup "$tmp/ext-b.img"
	r1=$rc
	run rf-5 "$tool" restore "$tmp/ext-b.img"
	[ $r1 = 1 ] && [ $rc = 1 ] && has rf-4 'not a usable urMQTT data disk \(foreign\): an ext2/3/4 filesystem' &&
		has rf-5 'not a usable urMQTT data disk \(foreign\): an ext2/3/4 filesystem' &&
		[ "$(sum "$tmp/ext-b.img")" = "$before" ] || refused="$refused ext4(exit $r1/$rc)"
else
	refused="$refused ext4(mkfs.ext4 failed)"
fi
if [ -z "$refused" ]; then
	pass restore-refusals "no backup, an empty slot, a damaged database to back up, an ext4 image: exit 1, said, sha256 unchanged"
else
	fail restore-refusals "not refused as they should be:$refused"
fi

# backup --to FILE: a plain SQLite file for the stock sqlite3.
tf=$tmp/tofile.img
cp --sparse=always "$bk" "$tf"
run to-1 "$tool" backup "$tf" --to "$tmp/export.sqlite"
r1=$rc
if [ -x /usr/bin/sqlite3 ]; then
	reader="sqlite3 $(/usr/bin/sqlite3 -version | cut -d' ' -f1)"
	/usr/bin/sqlite3 -readonly "$tmp/export.sqlite" "PRAGMA integrity_check; SELECT count(*) FROM retained; SELECT count(*) FROM meta WHERE k='backup_ms' AND v > 0;" >"$tmp/to-read.out" 2>&1
else
	reader="python3 $(/usr/bin/python3 -c 'import sqlite3; print(sqlite3.sqlite_version)' 2>/dev/null)"
	/usr/bin/python3 -c '
import sqlite3, sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
for q in ("PRAGMA integrity_check", "SELECT count(*) FROM retained", "SELECT count(*) FROM meta WHERE k=\x27backup_ms\x27 AND v > 0"):
    print(c.execute(q).fetchone()[0])' "$tmp/export.sqlite" >"$tmp/to-read.out" 2>&1
fi
r2=$?
want=$(rows "$tf")
before=$(sum "$tf")
run to-2 "$tool" backup "$tf" --to "$tmp/export.sqlite"
r3=$rc
if [ $r1 = 0 ] && has to-1 "^backup: wrote slot [AB] to $tmp/export.sqlite: [0-9]+ bytes" && [ $r2 = 0 ] &&
	[ "$(tr '\n' ' ' <"$tmp/to-read.out")" = "ok $want 1 " ] && [ $r3 = 1 ] && has to-2 'exists: backup --to writes a new file' &&
	[ "$(sum "$tf")" = "$before" ]; then
	pass backup-to-file "$(grep -m1 -o 'wrote slot [AB] to [^:]*: [0-9]* bytes ([0-9]* pages' "$tmp/to-1.out" | sed "s|$tmp/||")); $reader read it: integrity_check ok, $want retained rows, stamped; a second --to refused"
else
	fail backup-to-file "exit $r1/$r2/$r3, read '$(tr '\n' ' ' <"$tmp/to-read.out")' (want 'ok $want 1'): $(first to-1)"
fi

# ---- a grown image file: the growth cut short in the primary GPT, then finished (store/grow.h)
gi=$tmp/grow.img
truncate -s 64M "$gi"
run gr-f "$tool" format "$gi"
run gr-w "$writer" retained "$gi" g 40
truncate -s 96M "$gi"
run gr-cut "$writer" grow "$gi" --stop-in-primary-gpt
r1=$rc
run gr-i1 "$tool" inspect "$gi"
run gr-v1 "$tool" verify "$gi"
r2=$rc
run gr-done "$writer" grow "$gi"
r3=$rc
run gr-i2 "$tool" inspect "$gi"
run gr-v2 "$tool" verify "$gi"
r4=$rc
if [ $r1 = 0 ] && [ $r2 = 0 ] && [ $r3 = 0 ] && [ $r4 = 0 ] &&
	has gr-i1 '^disk: ours: .*a growth of the partition to finish$' &&
	has gr-i1 '^gpt: the data partition is longer than the superblock.s .*a growth was cut short' &&
	has gr-done '^grow: the disk grew \(finishing a growth cut short\): data partition 30 MiB -> 62 MiB' &&
	has gr-i2 '^region database \(extent 2 of 2\): LBA [0-9]+\.\.[0-9]+ \([0-9]+ MiB\)$' &&
	has gr-i2 '^database: 2 extents, [0-9]+ MiB in all$' && has gr-i2 '^database: rows: .* 40 retained' &&
	! has gr-i2 'growth was cut short' && has gr-v2 '^verify: OK'; then
	pass grown "cut in the primary GPT: inspect names the pending growth, verify OK; finished: $(grep -m1 -o 'data partition [^;]*' "$tmp/gr-done.out"), $(grep -m1 '^database: 2 extents' "$tmp/gr-i2.out" | sed 's/^database: //'), 40 rows, verify OK"
else
	fail grown "exit $r1/$r2/$r3/$r4: $(first gr-cut) / $(first gr-i1) / $(first gr-done)"
fi

exit $failed
