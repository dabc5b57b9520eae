#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make release (ADR-074): a production image with the site's configuration and PKI, packed as
# a hybrid ISO (x86_64 BIOS and UEFI, aarch64 UEFI), raw GPT and qcow2 disks for x86_64 and
# aarch64 (tools/release/images.sh), with SHA256SUMS,
# an SBOM (tools/release/sbom.py) and minisign signatures of every file.
#   1. the configuration must say core.profile = "prod" (checked by urmqtt-config first);
#   2. the PKI is checked and the development one refused (tools/release/pki-check.sh);
#   3. the kernels (x86_64, and aarch64 unless RELEASE_AARCH64=0) are built with PROFILE=prod
#      in a tree of their own (TREE, default
#      BUILD/release-tree), the PKI copied into TREE/pki and embedded; paths are mapped out of
#      the objects (-ffile-prefix-map) and the debug sections stripped from the booted ELF;
#   4. images, SBOM, SHA256SUMS and signatures go to OUT (default BUILD/release).
# SOURCE_DATE_EPOCH defaults to HEAD's commit time and the version to `git describe --tags
# --always --dirty`: two runs of one tree give the same ISO, raw and qcow2 bytes
# (tools/release/reproduce.sh checks). The images embed the server's private key: they are
# secrets, not public downloads (docs/DEPLOY.md).
# Usage: release.sh --config FILE --certs DIR [--build BUILD] [--out DIR] [--tree DIR]
#                   [--key SECRET_KEY] [--version V] [--disk-mb N] [--fresh] [--jobs N]
set -euo pipefail
orig=$PWD
src=$(cd "$(dirname "$0")/../.." && pwd)
cd "$src"
config="" certs="" build=build out="" tree="" version="" fresh=0 jobs=$(nproc) disk_mb=256
key=${URMQTT_RELEASE_KEY:-$HOME/.urmqtt/release.key}
while [ $# -gt 0 ]; do
	case $1 in
	--config) config=$2; shift 2 ;;
	--certs) certs=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--tree) tree=$2; shift 2 ;;
	--key) key=$2; shift 2 ;;
	--version) version=$2; shift 2 ;;
	--disk-mb) disk_mb=$2; shift 2 ;;
	--fresh) fresh=1; shift ;;
	--jobs) jobs=$2; shift 2 ;;
	*) echo "release: unknown argument $1" >&2; exit 2 ;;
	esac
done
die() { echo "release: $*" >&2; exit 1; }
# Paths given relative to where the script was started (make runs it from the source tree).
absolute() { case $1 in "" | /*) echo "$1" ;; *) echo "$orig/$1" ;; esac; }
config=$(absolute "$config") certs=$(absolute "$certs") key=$(absolute "$key")
[ -n "$config" ] || die "CONFIG= is required: make release CONFIG=path/to/site.conf CERTS=path/to/pki (docs/DEPLOY.md)"
[ -n "$certs" ] || die "CERTS= is required: make release CONFIG=path/to/site.conf CERTS=path/to/pki (docs/DEPLOY.md)"
[ -f "$config" ] || die "configuration $config does not exist"
[ -d "$certs" ] || die "PKI directory $certs does not exist"
out=${out:-$build/release}
tree=${tree:-$build/release-tree}
[[ $disk_mb =~ ^[0-9]+$ ]] || die "--disk-mb wants a number of MiB"
for t in openssl minisign python3 sha256sum objcopy; do
	command -v "$t" >/dev/null || die "$t missing (make setup installs it)"
done
export TZ=UTC LC_ALL=C
# The kernel build below is a make of its own: nothing of a calling make's command line or
# jobserver leaks into it (BUILD_DIR, PROFILE, CONFIG there mean other things).
unset MAKEFLAGS MFLAGS MAKEOVERRIDES MAKELEVEL
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null) || die "no git commit to take SOURCE_DATE_EPOCH from: set it"
fi
export SOURCE_DATE_EPOCH
version=${version:-$(git -C "$src" describe --tags --always --dirty 2>/dev/null || echo 0.0.0)}
[[ $version =~ ^[A-Za-z0-9._+-]+$ ]] || die "version '$version': letters, digits and . _ + - only"
name=urmqtt-$version

# The signing key: never under the source tree (the rule of issue 20).
[ -f "$key" ] || die "no signing key at $key: make release-key (RELEASE_KEY=path) first, or RELEASE_KEY= the one you have"
case $(realpath "$key")/ in "$src"/*) die "the secret key $key lies under the source tree $src: move it out (make release-key puts it in ~/.urmqtt)" ;; esac
pub=${key%.key}.pub
[ -f "$pub" ] || die "no public key $pub beside $key"

t0=$(date +%s)
echo "  RELEASE     $name (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH) from $config and $certs"
mkdir -p "$tree"
[ $fresh = 1 ] && find "$tree" -mindepth 1 -maxdepth 1 ! -name deps -exec rm -rf {} +
mkdir -p "$tree/pki"
ln -sfn "$(realpath "$build")/deps" "$tree/deps"
# Inputs are copied only when they differ, so an unchanged configuration rebuilds nothing.
put() { cmp -s "$1" "$2" 2>/dev/null || cp "$1" "$2"; }
put "$config" "$tree/site.conf"
common=(--no-print-directory -C "$src" BUILD_DIR="$tree" PROFILE=prod CONF_FILE="$tree/site.conf")

# 1. the configuration: valid, and a production one
make "${common[@]}" "$tree/host/confboot/urmqtt-config" >/dev/null
"$tree/host/confboot/urmqtt-config" check "$tree/site.conf" || die "$config: see the line above (docs/CONFIGURATION.md)"
"$tree/host/confboot/urmqtt-config" gen-header "$tree/site.conf" "$tree/site-check.h"
grep -q '^#define CONF_CORE_PROFILE_STR "prod"$' "$tree/site-check.h" ||
	die "$config: a release needs core.profile = \"prod\" in [core] (production: no command-line overrides, no test scenarios)"
esp_mb=$(sed -n 's/^#define CONF_STORAGE_ESP_MB \([0-9]*\)u$/\1/p' "$tree/site-check.h")
[ -n "$esp_mb" ] || die "cannot read storage.esp_mb from the configuration"

# 2. the PKI
ca_fp=$(tools/release/pki-check.sh "$certs" "$src" "$build") || die "the PKI in $certs is refused (above); docs/DEPLOY.md step 1 makes a production one"
for f in ca.crt server.crt server.key; do put "$certs/$f" "$tree/pki/$f"; done
if [ -f "$certs/revoked.serials" ]; then put "$certs/revoked.serials" "$tree/pki/revoked.serials"; else : >"$tree/pki/revoked.serials.new"; put "$tree/pki/revoked.serials.new" "$tree/pki/revoked.serials"; rm -f "$tree/pki/revoked.serials.new"; fi
chmod 600 "$tree/pki/server.key"

# 3. the kernel. The PKI files are never remade (-o: tools/certs/module.mk would otherwise
# run mkcerts.sh into them); the header embedding them is made again on every release.
rm -f "$tree/gen/urmqtt_certs.h"
abs_tree=$(realpath "$tree")
maps="-ffile-prefix-map=$abs_tree/=urmqtt-build/ -ffile-prefix-map=$tree/=urmqtt-build/ -ffile-prefix-map=$src/="
cc="${X86_64_CC:-gcc} $maps"
# The aarch64 image (ADR-088: the ISO's and the aarch64 disk's EFI/BOOT/BOOTAA64.EFI, the
# kernel's own UEFI entry) from the same tree, configuration and PKI; RELEASE_AARCH64=0 (or
# no cross compiler) leaves it out.
a64=${RELEASE_AARCH64:-1}
a64cc=${AARCH64_CC:-aarch64-linux-gnu-gcc}
if [ "$a64" = 1 ] && ! command -v "${a64cc%% *}" >/dev/null; then
	die "no aarch64 cross compiler ($a64cc; make setup installs it), or RELEASE_AARCH64=0 for a release without the aarch64 parts"
fi
targets=("$tree/x86_64/urmqtt.elf")
[ "$a64" = 1 ] && targets+=("$tree/aarch64/urmqtt.img")
make "${common[@]}" CERTS_DIR="$tree/pki" X86_64_CC="$cc" AARCH64_CC="$a64cc $maps" \
	-o "$tree/pki/ca.crt" -o "$tree/pki/server.crt" -o "$tree/pki/server.key" -o "$tree/pki/revoked.serials" \
	-j"$jobs" "${targets[@]}"
head -1 "$tree/gen/urmqtt_certs.h" | grep -qF "from $tree/pki:" ||
	die "the image does not embed $tree/pki (tools/certs/module.mk did not take CERTS_DIR)"
mkdir -p "$tree/release"
objcopy --strip-debug "$tree/x86_64/urmqtt.elf" "$tree/release/urmqtt.elf"
a64img=""
if [ "$a64" = 1 ]; then
	a64img=$tree/release/BOOTAA64.EFI # the Image is a PE32+ EFI application (arch/aarch64/efi.c)
	cp "$tree/aarch64/urmqtt.img" "$a64img"
fi

# 4. images, SBOM, sums, signatures
mkdir -p "$out"
rm -f "$out"/urmqtt-* "$out/SHA256SUMS" "$out"/SHA256SUMS.minisig "$out/minisign.pub"
umask 077 # the images hold the server's private key
tools/release/images.sh "$tree/release/urmqtt.elf" "$out" "$name" "$esp_mb" "$disk_mb" ${a64img:+"$a64img"}
umask 022
X86_64_CC_NAME=${X86_64_CC:-gcc} AARCH64_CC_NAME=$a64cc AARCH64_KERNEL=$a64img \
	python3 tools/release/sbom.py "$src" "$version" "$tree/release/urmqtt.elf" "$ca_fp" "$out/$name.cdx.json"
files=("$name.iso" "$name-x86_64.raw" "$name-x86_64.qcow2")
[ "$a64" = 1 ] && files+=("$name-aarch64.raw" "$name-aarch64.qcow2")
files+=("$name.cdx.json")
(cd "$out" && sha256sum "${files[@]}" >SHA256SUMS)
for f in "${files[@]}" SHA256SUMS; do
	minisign -S -s "$key" -m "$out/$f" -x "$out/$f.minisig" -t "urMQTT $version $f" ||
		die "minisign could not sign $f with $key"
done
cp "$pub" "$out/minisign.pub"
(cd "$out" && minisign -Vm SHA256SUMS -p minisign.pub -q) || die "the signature just made does not verify"
echo "  RELEASE     $out ($(($(date +%s) - t0)) s):"
(cd "$out" && for f in "${files[@]}"; do printf '              %-40s %10s bytes  sha256 %s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-16)"; done)
echo "              verify: cd $out && minisign -Vm SHA256SUMS -p minisign.pub && sha256sum -c SHA256SUMS"
