#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build.sh OUTDIR: the Linux+Mosquitto guest for `make bench` (issue 9), built once and cached.
# It owns OUTDIR (normally build/bench/linux-guest): the debootstrap root, the staging tree
# and the two boot files; it must never touch anything outside OUTDIR except installing the
# Debian packages `debootstrap` and `cpio` on the host when they are missing.
#
# What it does
#   1. debootstrap --variant=minbase Debian 12 (bookworm) from http://deb.debian.org/debian
#      (LINUX_GUEST_MIRROR overrides) with mosquitto, iproute2, openssl and linux-image-amd64
#      into OUTDIR/root (kept: a second build with other guest files skips this step).
#   2. Takes from that root Debian's kernel (OUTDIR/vmlinuz as shipped, and OUTDIR/vmlinux, its
#      uncompressed ELF, which QEMU boots through the PVH entry) and, for the initramfs, only
#      what the guest runs: dash as /bin/sh, mount, insmod, sleep, ip, mosquitto, their shared
#      libraries (ldd inside the root), the virtio-net/virtio-pci modules with their
#      dependencies (modprobe --show-depends inside the root), passwd/group/nsswitch.conf,
#      /init (guest-init.sh beside this script) and /etc/mosquitto/bench.conf: the same
#      settings as tools/bench/run.sh's native Mosquitto (TLS 1.3 only, require_certificate,
#      use_identity_as_username, persistence off, max_inflight_messages 64,
#      max_queued_messages 1000, set_tcp_nodelay) with its one listener on 8883 (all guest
#      addresses) and cafile/certfile/keyfile in /certs, which boot.sh fills at each boot.
#      No udev, no systemd, no getty: /init configures eth0 and execs Mosquitto.
#   3. Packs it as OUTDIR/initrd.base (newc cpio, zstd -19; LINUX_GUEST_COMP=none|zstd|lz4|gzip).
# Output: OUTDIR/vmlinux (booted), OUTDIR/vmlinuz (size figure), OUTDIR/initrd.base,
# OUTDIR/kernel.version, OUTDIR/stamp (a digest of this script, guest-init.sh, the package
# list, the suite, the mirror and the compression). A second run with the same digest prints
# "up to date" and does nothing; OUTDIR/stage is the unpacked initramfs tree, for reading.
# Needs: root (debootstrap, chroot, mknod), network to the Debian mirror on the first run.
# Time here (2 shared, busy cores): first run 352 s (debootstrap ~5.5 min, of which ~2 min is
# initramfs-tools' own hook running inside the root, twice, for an initrd we do not use);
# repacking from a kept root 15-35 s (zstd -19); cached 0.1 s.
# Size: OUTDIR ~ 670 MB, almost all the kept root (~ 580 MB, for rebuilds; delete OUTDIR/root
# after a build to save it). The guest: vmlinux 65.9 MB (as shipped: vmlinuz 8.2 MB) and
# initrd.base 6.6 MB (zstd; 18.6 MB unpacked: Mosquitto 2.0.11, OpenSSL 3, glibc, dash,
# iproute2, kmod, util-linux mount, 8 virtio modules).
set -euo pipefail
out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
suite=bookworm
mirror=${LINUX_GUEST_MIRROR:-http://deb.debian.org/debian}
pkgs=mosquitto,iproute2,openssl,linux-image-amd64
comp=${LINUX_GUEST_COMP:-zstd}
# virtio-pci transport and the NIC; the rest of what the guest needs is built into Debian's
# kernel (8250 serial console, devtmpfs, initramfs decompressors).
mods="virtio_pci virtio_net"
say() { echo "linux-guest: $*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
digest=$({ cat "${BASH_SOURCE[0]}" "$here/guest-init.sh" "$here/../mosquitto-bench.conf"; echo "$suite $mirror $pkgs $comp"; } |
	sha256sum | cut -d' ' -f1)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$digest" ] &&
	[ -f "$out/vmlinux" ] && [ -f "$out/initrd.base" ]; then
	say "up to date ($out)"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
t0=$(date +%s)
need_pkgs=()
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
command -v cpio >/dev/null || need_pkgs+=(cpio)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	say "installing ${need_pkgs[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${need_pkgs[@]}" >&2 ||
		die "could not install ${need_pkgs[*]}"
fi
case $comp in
none) compress=(cat) ;;
zstd) compress=(zstd -q -19 -T0 -c) ;;
lz4) compress=(lz4 -q -l -9 -c) ;;
gzip) compress=(gzip -9 -n -c) ;;
*) die "LINUX_GUEST_COMP: none, zstd, lz4 or gzip" ;;
esac

# ---- 1. the Debian root (kept while suite, mirror and package list are the same) ----------
root=$out/root
root_key="$suite $mirror $pkgs"
if [ ! -f "$root/.lg-root" ] || [ "$(cat "$root/.lg-root")" != "$root_key" ]; then
	say "debootstrap $suite ($pkgs) from $mirror into $root"
	rm -rf "$root"
	debootstrap --variant=minbase --include="$pkgs" "$suite" "$root" "$mirror" >"$out/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$out/debootstrap.log" >&2; die "debootstrap failed (log: $out/debootstrap.log)"; }
	rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/* "$root/boot"/initrd.img-*
	echo "$root_key" >"$root/.lg-root"
fi
kver=$(find "$root/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1)
if [ -z "$kver" ] || [ ! -f "$root/boot/vmlinuz-$kver" ]; then die "no kernel in $root/boot"; fi

# ---- 2. the guest's initramfs tree: only what /init runs --------------------------------
stage=$out/stage
rm -rf "$stage"
mkdir -p "$stage"/usr/{bin,sbin,lib,lib64} "$stage"/{proc,sys,dev,tmp,run,certs,etc/mosquitto,var/lib/mosquitto}
for l in bin sbin lib lib64; do ln -s "usr/$l" "$stage/$l"; done
mknod -m 600 "$stage/dev/console" c 5 1
mknod -m 666 "$stage/dev/null" c 1 3

# put PATH (a path inside the root, symlinks resolved inside the root): copy it and, when
# it is a symlink, what it points to, each at its canonical directory in the stage
put() {
	local p=$1 d c
	c=$(chroot "$root" realpath -e "$p" 2>/dev/null) || die "$p is not in the root"
	d=$(chroot "$root" realpath -e "$(dirname "$p")")
	mkdir -p "$stage$d"
	cp -a "$root$d/$(basename "$p")" "$stage$d/"
	[ "$d/$(basename "$p")" = "$c" ] || put "$c"
}
bins=(/bin/sh /usr/bin/dash /usr/bin/mount /usr/sbin/insmod /usr/bin/kmod /usr/bin/sleep
	/usr/bin/ip /usr/sbin/mosquitto)
for b in "${bins[@]}"; do put "$b"; done
# shared libraries: the loader's own list, inside the root
libs=$(for b in "${bins[@]}"; do chroot "$root" ldd "$b" 2>/dev/null; done |
	awk '/=> \// {print $3} /^\t\// {print $1}' | sort -u)
for l in $libs; do put "$l"; done
# kernel modules in load order
: >"$stage/etc/guest-modules"
for m in $mods; do
	chroot "$root" modprobe -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | awk '!seen[$0]++' | while read -r ko; do
	put "$ko"
	echo "$ko" >>"$stage/etc/guest-modules"
done
[ -s "$stage/etc/guest-modules" ] || die "no modules found for: $mods"
for f in /etc/passwd /etc/group /etc/nsswitch.conf; do put "$f"; done
install -m 755 "$here/guest-init.sh" "$stage/init"
# The same settings as the native one, written once (tools/bench/mosquitto-bench.conf).
sed -e "s|@LISTEN@||" -e "s|@CERTS@|/certs|" "$here/../mosquitto-bench.conf" >"$stage/etc/mosquitto/bench.conf"

# ---- 3. pack ---------------------------------------------------------------------------
cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz.tmp"
# The uncompressed kernel for QEMU's PVH entry (-kernel ELF with the XEN_ELFNOTE_PHYS32_ENTRY
# note, Debian sets CONFIG_PVH): no firmware real-mode setup and no in-guest xz
# decompression, which under TCG saves ~9 s of every boot. Debian's bzImage payload is xz.
python3 - "$out/vmlinuz.tmp" "$out/vmlinux.tmp" <<'PY' || die "could not extract vmlinux"
import lzma, sys
data = open(sys.argv[1], "rb").read()
pos = data.find(b"\xfd7zXZ\x00")
if pos < 0:
    sys.exit("no xz payload in the bzImage")
elf = lzma.LZMADecompressor().decompress(data[pos:])
if elf[:4] != b"\x7fELF":
    sys.exit("the xz payload is not an ELF")
open(sys.argv[2], "wb").write(elf)
PY
readelf -n "$out/vmlinux.tmp" | grep -q 'type: (0x00000012)' ||
	die "vmlinux has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY)"
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet) |
	"${compress[@]}" >"$out/initrd.base.tmp"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"
mv "$out/vmlinux.tmp" "$out/vmlinux"
mv "$out/initrd.base.tmp" "$out/initrd.base"
echo "$kver" >"$out/kernel.version"
echo "$digest" >"$out/stamp"
say "built in $(($(date +%s) - t0)) s: Linux $kver $out/vmlinux ($(stat -c %s "$out/vmlinux") bytes;" \
	"as shipped, vmlinuz $(stat -c %s "$out/vmlinuz") bytes)," \
	"$out/initrd.base ($(stat -c %s "$out/initrd.base") bytes $comp, $(du -sb "$stage" | cut -f1) bytes unpacked)"
