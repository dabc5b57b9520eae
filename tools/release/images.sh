#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The deployable images of one x86_64 kernel (tools/release, ADR-074), bit for bit the same on
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
#                     the ESP stays where it is and is never written). Boots by UEFI only: the
#                     format rewrites the protective MBR, so BIOS boot code there would not
#                     survive the first boot.
#   NAME-x86_64.qcow2 the same disk as qcow2 (uncompressed: compressed clusters depend on zlib).
# What makes it reproducible: every timestamp is SOURCE_DATE_EPOCH (file mtimes, the ISO's
# volume dates and UUID, FAT timestamps through mtools' SOURCE_DATE_EPOCH and mkfs.fat
# --invariant), volume ids and GUIDs are derived from NAME and the epoch, xorriso sorts the
# tree itself, and grub-mkimage writes no time.
# Usage: images.sh KERNEL.elf OUTDIR NAME ESP_MB DISK_MB
#   (SOURCE_DATE_EPOCH in the environment; NAME like urmqtt-1.2.3)
set -euo pipefail
kernel=$1 out=$2 name=$3 esp_mb=$4 disk_mb=$5
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

# The menu, shared by the ISO and the disk. GRUB talks on the first serial port and the
# screen; the kernel's console is the serial port. Install and diagnostics entries need
# kernel work (issue 20) and are not offered yet.
menu() {
	cat <<-CFG
	# urMQTT $name: GRUB menu (tools/release/images.sh)
	serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1
	terminal_input serial console
	terminal_output serial console
	set timeout=3
	set default=0
	menuentry "urMQTT live" {
	  echo "Loading urMQTT $name ..."
	  multiboot2 /boot/urmqtt.elf
	  boot
	}
	CFG
}
mods_common="multiboot2 normal configfile echo test serial terminal search search_fs_uuid search_fs_file part_gpt part_msdos fat iso9660 boot sleep"
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

# ---- the ISO
iso_root=$work/iso
mkdir -p "$iso_root/boot/grub" "$work/efi-iso/EFI/BOOT"
cp "$kernel" "$iso_root/boot/urmqtt.elf"
menu >"$iso_root/boot/grub/grub.cfg"
cat >"$work/early-iso.cfg" <<-CFG
search --no-floppy --fs-uuid --set=root $iso_uuid
set prefix=(\$root)/boot/grub
configfile \$prefix/grub.cfg
CFG
mkimage i386-pc-eltorito "$iso_root/boot/grub/bios.img" "$work/early-iso.cfg" biosdisk
mkimage x86_64-efi "$work/efi-iso/EFI/BOOT/BOOTX64.EFI" "$work/early-iso.cfg"
stamp "$work/efi-iso"
efi_kib=$(($(stat -c %s "$work/efi-iso/EFI/BOOT/BOOTX64.EFI") / 1024 + 512))
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
esp_root=$work/esp
mkdir -p "$esp_root/EFI/BOOT" "$esp_root/boot/grub"
mkimage x86_64-efi "$esp_root/EFI/BOOT/BOOTX64.EFI" ""
cp "$kernel" "$esp_root/boot/urmqtt.elf"
menu >"$esp_root/boot/grub/grub.cfg"
stamp "$esp_root"
esp=$work/esp.img
fat "$esp" $((esp_mb * 1024)) URMQTT-ESP "$esp_root"
raw=$out/$name-x86_64.raw
rm -f "$raw"
truncate -s "${disk_mb}M" "$raw"
# docs/DISK-FORMAT.md section 4: U = 1 MiB; the ESP from 1 MiB; the data partition from the
# next MiB to the last usable LBA rounded down to a MiB (2048 sectors of 512).
sectors=$((disk_mb * 2048))
last_usable=$((sectors - 34))
esp_start=2048
esp_size=$((esp_mb * 2048))
data_start=$((esp_start + esp_size))
data_size=$(((last_usable + 1) / 2048 * 2048 - data_start))
sfdisk --quiet --no-reread --no-tell-kernel "$raw" >/dev/null <<-SF
label: gpt
label-id: $(guid disk)
unit: sectors
first-lba: 34
last-lba: $last_usable
start=$esp_start, size=$esp_size, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, uuid=$(guid esp), name="EFI system partition"
start=$data_start, size=$data_size, type=E115A373-FB22-4A52-96F0-86C11C6FB76C, uuid=$(guid data), name="urMQTT data"
SF
dd if="$esp" of="$raw" bs=1M seek=1 conv=notrunc,sparse status=none
qcow=$out/$name-x86_64.qcow2
rm -f "$qcow"
qemu-img convert -q -f raw -O qcow2 -o compat=1.1 "$raw" "$qcow"
stamp "$iso" "$raw" "$qcow"
