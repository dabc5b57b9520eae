#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The deployable images of the x86_64 kernel and, when given, the aarch64 one (tools/release,
# ADR-074, ADR-088, ADR-089), bit for bit the same on
# every run with the same inputs: GRUB 2 from Debian's packages loads the kernel by Multiboot2.
#   NAME.iso          hybrid ISO 9660: BIOS El Torito (i386-pc-eltorito core), UEFI El Torito
#                     (a FAT image holding BOOTX64.EFI), and an MBR (GRUB's boot_hybrid.img)
#                     with an EFI partition, so the same file boots as a CD and as a USB disk
#                     on BIOS and on UEFI machines. GRUB finds the ISO by its volume UUID (the
#                     modification date below), never another disk's files.
#   NAME-x86_64.raw   a GPT disk of docs/DISK-FORMAT.md's layout v2 for storage.esp_mb: the
#                     ESP (FAT16: EFI/BOOT/BOOTX64.EFI, /boot/grub/grub.cfg, /boot/urmqtt.elf)
#                     and the urMQTT data partition with both superblock slots zero, which the
#                     kernel's probe calls INTERRUPTED and formats at first boot (same plan, so
#                     the ESP stays where it is and is never written); a BIOS boot partition
#                     (LBA 34 to the ESP) holding GRUB's i386-pc core and GRUB's boot.img in
#                     LBA 0, both kept by that format: boots by UEFI and by BIOS.
#   NAME-x86_64.qcow2 the same disk as qcow2 (uncompressed: compressed clusters depend on zlib).
# What makes it reproducible: every timestamp is SOURCE_DATE_EPOCH (file mtimes, the ISO's
# volume dates and UUID, FAT timestamps through mtools' SOURCE_DATE_EPOCH and mkfs.fat
# --invariant), volume ids and GUIDs are derived from NAME and the epoch, xorriso sorts the
# tree itself, and grub-mkimage writes no time.
# With AARCH64.EFI (the aarch64 Image, a PE32+ EFI application: arch/aarch64/efi.c, ADR-088):
#   the ISO's EFI image also holds it as EFI/BOOT/BOOTAA64.EFI (aarch64 UEFI, CD and USB disk:
#                     the firmware starts the kernel itself; that copy's default options,
#                     written below, say "menu:live", so it shows the x86_64 menu's four
#                     entries itself: arch/aarch64/efi_menu.c, ADR-094) and, for its install
#                     entries, EFI/urmqtt/esp.img: the aarch64 disk's ESP image without its
#                     trailing zeros (the installer writes it into the target's ESP), and
#   NAME-aarch64.raw  the same GPT disk for aarch64 UEFI: the ESP holding only
#                     EFI/BOOT/BOOTAA64.EFI, the data partition as above; and .qcow2.
# Usage: images.sh KERNEL.elf OUTDIR NAME ESP_MB DISK_MB [AARCH64.EFI]
#   (SOURCE_DATE_EPOCH in the environment; NAME like urmqtt-1.2.3)
set -euo pipefail
kernel=$1 out=$2 name=$3 esp_mb=$4 disk_mb=$5 a64efi=${6:-}
: "${SOURCE_DATE_EPOCH:?images.sh: SOURCE_DATE_EPOCH must be set}"
export SOURCE_DATE_EPOCH TZ=UTC LC_ALL=C
grub_lib=/usr/lib/grub
for t in grub-mkimage xorriso mkfs.fat mcopy mmd sfdisk qemu-img; do
	command -v "$t" >/dev/null || { echo "release: $t missing (make setup installs it)" >&2; exit 1; }
done
for d in i386-pc x86_64-efi; do
	[ -d "$grub_lib/$d" ] || { echo "release: $grub_lib/$d missing (packages grub-pc-bin, grub-efi-amd64-bin)" >&2; exit 1; }
done
[ "$esp_mb" -ge 8 ] || { echo "release: storage.esp_mb is $esp_mb; the images need an ESP of at least 8 MiB" >&2; exit 1; }
[ "$disk_mb" -ge $((esp_mb + 40)) ] || { echo "release: a disk of $disk_mb MiB cannot hold the ESP and a data partition" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/urmqtt-images.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# ISO 9660 dates as GRUB reads them: the volume modification date is its UUID.
iso_date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S00)
iso_uuid=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d-%H-%M-%S-00)
# guid TAG: a version-4-shaped GUID from the name, the epoch and TAG (stable per release).
guid() {
	local h
	h=$(printf '%s\n' "$name" "$SOURCE_DATE_EPOCH" "$1" | sha256sum | cut -c1-32)
	printf '%s-%s-4%s-%x%s-%s\n' "${h:0:8}" "${h:8:4}" "${h:13:3}" $(((0x${h:16:1} & 3) | 8)) "${h:17:3}" "${h:20:12}"
}
fat_serial=$(printf '%s\n' "$name" "$SOURCE_DATE_EPOCH" fat | sha256sum | cut -c1-8)
stamp() { find "$@" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +; }

# The menus (issue 20). GRUB talks on the first serial port and the screen; the kernel's
# console is the serial port. menu iso: the ISO's four entries, each naming its boot mode
# (kernel/bootmode.h: urmqtt.mode=); the install entries also load the ESP image (gzipped:
# GRUB's gzio unpacks a module unless told --nounzip) as a Multiboot2 module named "esp",
# which the installer writes into the target disk's ESP, and the BIOS boot image (below)
# as one named "bios", with which the installed disk boots by BIOS too. menu disk: the
# installed disk's one entry, normal serving (no mode). ISO_DEFAULT_ENTRY (tests only,
# tests/smoke/release.sh): which ISO entry GRUB boots when nobody chooses (0, the live
# entry, unless set); releases never set it.
menu() {
	cat <<-CFG
	# urMQTT $name: GRUB menu (tools/release/images.sh)
	serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1
	terminal_input serial console
	terminal_output serial console
	set timeout=3
	CFG
	if [ "$1" = disk ]; then
		cat <<-CFG
		set default=0
		menuentry "urMQTT" {
		  echo "Loading urMQTT $name ..."
		  multiboot2 /boot/urmqtt.elf
		  boot
		}
		CFG
		return
	fi
	cat <<-CFG
	set default=${ISO_DEFAULT_ENTRY:-0}
	menuentry "urMQTT live" {
	  echo "Loading urMQTT $name (live: from RAM, no disk written) ..."
	  multiboot2 /boot/urmqtt.elf urmqtt.mode=live
	  boot
	}
	menuentry "Install urMQTT to this machine's disk" {
	  echo "Loading urMQTT $name (install onto an empty disk) ..."
	  multiboot2 /boot/urmqtt.elf urmqtt.mode=install
	  module2 /boot/esp.img.gz esp
	  module2 /boot/bios-boot.img.gz bios
	  boot
	}
	menuentry "Install urMQTT, erasing the disk's data" {
	  echo "Loading urMQTT $name (install, ERASING the disk) ..."
	  multiboot2 /boot/urmqtt.elf urmqtt.mode=install-erase
	  module2 /boot/esp.img.gz esp
	  module2 /boot/bios-boot.img.gz bios
	  boot
	}
	menuentry "Diagnostics" {
	  echo "Loading urMQTT $name (diagnostics) ..."
	  multiboot2 /boot/urmqtt.elf urmqtt.mode=diag
	  boot
	}
	CFG
}
mods_common="multiboot2 normal configfile echo test serial terminal search search_fs_uuid search_fs_file part_gpt part_msdos fat iso9660 boot sleep gzio"
mkimage() { # FORMAT OUT EARLY_CFG EXTRA_MODULES...
	local fmt=$1 o=$2 cfg=$3
	shift 3
	# shellcheck disable=SC2086 # module lists are words
	grub-mkimage -O "$fmt" -p /boot/grub ${cfg:+-c "$cfg"} -o "$o" $mods_common "$@"
}
# fat IMAGE KiB LABEL SRCDIR: a FAT image holding SRCDIR's tree, every date the epoch.
fat() {
	local img=$1 kib=$2 label=$3 src=$4 f
	rm -f "$img"
	mkfs.fat -C --invariant -i "$fat_serial" -n "$label" "$img" "$kib" >/dev/null
	(cd "$src" && find . -mindepth 1 -type d | sort) | while read -r f; do
		MTOOLS_SKIP_CHECK=1 mmd -i "$img" "::/${f#./}"
	done
	(cd "$src" && find . -type f | sort) | while read -r f; do
		MTOOLS_SKIP_CHECK=1 mcopy -m -i "$img" "$src/${f#./}" "::/${f#./}"
	done
}

# ---- the ESP image, built once: the raw disk's ESP and, gzipped, the ISO's install module
esp_root=$work/esp
mkdir -p "$esp_root/EFI/BOOT" "$esp_root/boot/grub"
mkimage x86_64-efi "$esp_root/EFI/BOOT/BOOTX64.EFI" ""
cp "$kernel" "$esp_root/boot/urmqtt.elf"
menu disk >"$esp_root/boot/grub/grub.cfg"
stamp "$esp_root"
esp=$work/esp.img
fat "$esp" $((esp_mb * 1024)) URMQTT-ESP "$esp_root"

# ---- the BIOS boot code, built once: what the raw disk gets (below) and, as the ISO's
# install entries' "bios" module, what the installer writes (the same bytes). The BIOS boot
# partition: from the first usable LBA (34, 512-byte sectors) to the ESP at 1 MiB.
esp_start=2048
bios_start=34
bios_size=$((esp_start - bios_start))
# GRUB's i386-pc core for the BIOS boot partition, boot.img's code for LBA 0 (bytes 0..439;
# the kernel's format keeps them, DISK-FORMAT section 6), patched as grub-bios-setup
# patches them for a core embedded in consecutive sectors (offsets from GRUB's
# include/grub/i386/pc/boot.h and grub-core/boot/i386/pc/diskboot.S, checked below against
# the installed images before anything is patched):
#   boot.img   0x5c u64 LBA of the core's first sector; 0x64 the boot drive, 0xff: the one
#              the BIOS passes; 0x66 a 2-byte jump skipping the drive check, made two NOPs
#              for a hard disk
#   core.img   its first sector (diskboot) ends with a block list {u64 start, u16 sectors,
#              u16 segment} at 0x1f4: grub-mkimage fills sectors (the rest of the core) and
#              segment 0x820; start becomes the LBA after the first sector
mkdisk_core=$work/core.img
# shellcheck disable=SC2086 # module lists are words
grub-mkimage -O i386-pc -p '(,gpt1)/boot/grub' -o "$mkdisk_core" $mods_common biosdisk
core_sectors=$((($(stat -c %s "$mkdisk_core") + 511) / 512))
[ "$core_sectors" -le "$bios_size" ] || { echo "release: GRUB's BIOS core ($core_sectors sectors) does not fit its partition ($bios_size)" >&2; exit 1; }
hexat() { od -An -tx1 -v -j "$2" -N "$3" "$1" | tr -d ' \n'; }
le() { # N BYTES: N little-endian, as printf escapes
	local i s=""
	for ((i = 0; i < $2; i++)); do s+=$(printf '\\x%02x' $((($1 >> (8 * i)) & 255))); done
	printf '%s' "$s"
}
# shellcheck disable=SC2059 # the escapes are the format
poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; } # FILE OFFSET ESCAPES
cp "$grub_lib/i386-pc/boot.img" "$work/boot.img"
if ! { [ "$(stat -c %s "$work/boot.img")" = 512 ] && [ "$(hexat "$work/boot.img" 92 8)" = 0100000000000000 ] &&
	[ "$(hexat "$work/boot.img" 100 4)" = fffaeb05 ] &&
	[ "$(hexat "$mkdisk_core" 500 12)" = "0200000000000000$(printf '%02x%02x' $(((core_sectors - 1) & 255)) $(((core_sectors - 1) >> 8)))2008" ]; }; then
	echo "release: $grub_lib/i386-pc/boot.img or the core's block list is not laid out as this script expects" >&2
	exit 1
fi
poke "$mkdisk_core" 500 "$(le $((bios_start + 1)) 8)"
poke "$work/boot.img" 92 "$(le "$bios_start" 8)"
poke "$work/boot.img" 102 '\x90\x90'
# The module (store/biosimg.h, format version 1; the kernel checks every field): a 512-byte
# header (magic URMQBIOS, u32 version 1, u32 440 boot code bytes, u64 the LBA the core was
# patched for, u32 the core's sectors, zeros; little-endian), boot.img's 440 bytes, the core
# zero-padded to whole sectors.
bios_mod=$work/bios-boot.img
{
	printf 'URMQBIOS'
	# shellcheck disable=SC2059 # the escapes are the format
	printf "$(le 1 4)$(le 440 4)$(le "$bios_start" 8)$(le "$core_sectors" 4)"
	head -c 484 /dev/zero
	head -c 440 "$work/boot.img"
	cat "$mkdisk_core"
} >"$bios_mod"
truncate -s $((512 + 440 + core_sectors * 512)) "$bios_mod"

# ---- the ISO
iso_root=$work/iso
mkdir -p "$iso_root/boot/grub" "$work/efi-iso/EFI/BOOT"
cp "$kernel" "$iso_root/boot/urmqtt.elf"
menu iso >"$iso_root/boot/grub/grub.cfg"
gzip -9 -n <"$esp" >"$iso_root/boot/esp.img.gz"
gzip -9 -n <"$bios_mod" >"$iso_root/boot/bios-boot.img.gz"
cat >"$work/early-iso.cfg" <<-CFG
search --no-floppy --fs-uuid --set=root $iso_uuid
set prefix=(\$root)/boot/grub
configfile \$prefix/grub.cfg
CFG
mkimage i386-pc-eltorito "$iso_root/boot/grub/bios.img" "$work/early-iso.cfg" biosdisk
mkimage x86_64-efi "$work/efi-iso/EFI/BOOT/BOOTX64.EFI" "$work/early-iso.cfg"
# efi_options IN OUT TEXT: a copy of the aarch64 EFI image whose default options (what it
# runs with when the firmware gives none: arch/aarch64/efi.c, "URMQOPT1" then 56 bytes)
# are TEXT. Exactly one aligned marker followed by zeros, else the release stops.
efi_options() {
	local in=$1 o=$2 text=$3 offs
	offs=$(grep -obUaF URMQOPT1 "$in" | cut -d: -f1 | awk '$1 % 8 == 0')
	[ "$(wc -w <<<"$offs")" = 1 ] || { echo "release: $in: not exactly one default-options slot (URMQOPT1)" >&2; exit 1; }
	[ ${#text} -le 55 ] || { echo "release: default options longer than 55 bytes: $text" >&2; exit 1; }
	[ "$(tail -c +$((offs + 9)) "$in" | head -c 56 | tr -d '\0' | wc -c)" = 0 ] ||
		{ echo "release: $in: its default-options slot is not empty" >&2; exit 1; }
	cp "$in" "$o"
	printf '%s' "$text" | dd of="$o" bs=1 seek=$((offs + 8)) conv=notrunc status=none
}
# The aarch64 ESP: the aarch64 disk's (below) and, without its trailing zeros, the image the
# ISO's Arm install entries write (mkfs.fat and mcopy put every FAT structure and file
# cluster first, so nothing after the last non-zero byte is needed; the installer zeroes the
# rest of the partition).
a64_modes=(live install install-erase diag) # the x86_64 menu's entries, in order
if [ -n "$a64efi" ]; then
	a64_root=$work/esp-aarch64
	mkdir -p "$a64_root/EFI/BOOT" "$work/efi-iso/EFI/urmqtt"
	cp "$a64efi" "$a64_root/EFI/BOOT/BOOTAA64.EFI"
	stamp "$a64_root"
	fat "$work/esp-aarch64.img" $((esp_mb * 1024)) URMQTT-ESP "$a64_root"
	python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
n = (len(d.rstrip(b"\0")) + 511) // 512 * 512
open(sys.argv[2], "wb").write(d[:n])' "$work/esp-aarch64.img" "$work/efi-iso/EFI/urmqtt/esp.img"
	# The ISO's Arm copy shows the menu; its default is the x86_64 menu's (ISO_DEFAULT_ENTRY,
	# tests only, names the same entry on both).
	efi_options "$a64efi" "$work/efi-iso/EFI/BOOT/BOOTAA64.EFI" "menu:${a64_modes[${ISO_DEFAULT_ENTRY:-0}]}"
fi
stamp "$work/efi-iso"
efi_kib=$(($(du -b -s "$work/efi-iso" | cut -f1) / 1024 + 512))
fat "$iso_root/boot/grub/efi.img" "$efi_kib" URMQTT-EFI "$work/efi-iso"
stamp "$iso_root"
iso=$out/$name.iso
rm -f "$iso"
xorriso -as mkisofs -quiet -o "$iso" -iso-level 3 -r -V URMQTT \
	--modification-date="$iso_date" \
	-b boot/grub/bios.img -no-emul-boot -boot-load-size 4 -boot-info-table --grub2-boot-info \
	--grub2-mbr "$grub_lib/i386-pc/boot_hybrid.img" \
	--efi-boot boot/grub/efi.img -efi-boot-part --efi-boot-image --protective-msdos-label \
	"$iso_root" 2>"$work/xorriso.log" || { cat "$work/xorriso.log" >&2; exit 1; }

# ---- the disk
raw=$out/$name-x86_64.raw
# docs/DISK-FORMAT.md section 4: U = 1 MiB; the ESP from 1 MiB (esp_start, above); the data
# partition from the next MiB to the last usable LBA rounded down to a MiB (2048 sectors of 512).
sectors=$((disk_mb * 2048))
last_usable=$((sectors - 34))
esp_size=$((esp_mb * 2048))
data_start=$((esp_start + esp_size))
data_size=$(((last_usable + 1) / 2048 * 2048 - data_start))
# The BIOS boot partition (bios_start, bios_size: above): the third entry, as the kernel's
# format and installer write it (ESP first: GRUB's prefix names gpt1).
# gpt_disk RAW ESP_IMAGE TAG [bios]: a blank disk of DISK_MB with that GPT (GUIDs from TAG),
# the ESP image at 1 MiB; with "bios", the BIOS boot partition's entry too.
gpt_disk() {
	local img=$1 espimg=$2 tag=$3 bios=${4:-}
	rm -f "$img"
	truncate -s "${disk_mb}M" "$img"
	{
		cat <<-SF
		label: gpt
		label-id: $(guid "${tag}disk")
		unit: sectors
		first-lba: 34
		last-lba: $last_usable
		start=$esp_start, size=$esp_size, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, uuid=$(guid "${tag}esp"), name="EFI system partition"
		start=$data_start, size=$data_size, type=E115A373-FB22-4A52-96F0-86C11C6FB76C, uuid=$(guid "${tag}data"), name="urMQTT data"
		SF
		[ -z "$bios" ] || echo "start=$bios_start, size=$bios_size, type=21686148-6449-6E6F-744E-656564454649, uuid=$(guid "${tag}bios"), name=\"BIOS boot partition\""
	} | sfdisk --quiet --no-reread --no-tell-kernel "$img" >/dev/null
	dd if="$espimg" of="$img" bs=1M seek=1 conv=notrunc,sparse status=none
}
gpt_disk "$raw" "$esp" "" bios
# BIOS: GRUB's core in the BIOS boot partition, boot.img's code in LBA 0, as patched above.
dd if="$mkdisk_core" of="$raw" bs=512 seek="$bios_start" conv=notrunc status=none
dd if="$work/boot.img" of="$raw" bs=440 count=1 conv=notrunc status=none
qcow=$out/$name-x86_64.qcow2
rm -f "$qcow"
qemu-img convert -q -f raw -O qcow2 -o compat=1.1 "$raw" "$qcow"
stamp "$iso" "$raw" "$qcow"

# ---- the aarch64 disk: the ESP holds only the kernel as the removable-media loader
if [ -n "$a64efi" ]; then
	a64raw=$out/$name-aarch64.raw a64qcow=$out/$name-aarch64.qcow2
	gpt_disk "$a64raw" "$work/esp-aarch64.img" aarch64-
	rm -f "$a64qcow"
	qemu-img convert -q -f raw -O qcow2 -o compat=1.1 "$a64raw" "$a64qcow"
	stamp "$a64raw" "$a64qcow"
fi
