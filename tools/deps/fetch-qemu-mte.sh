#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A QEMU that emulates Arm MTE correctly, for the aarch64 MTE scenarios of make test
# (ADR-082). Debian 12's qemu-system-arm (7.2) keeps one allocation tag for several 16-byte
# granules under TCG, so its MTE cannot be tested; bookworm-backports' qemu-system-arm runs
# with bookworm's libraries. This script downloads that one binary package at the pinned
# version, checks its SHA-256 and unpacks it (dpkg -x: nothing is installed, no system apt
# configuration changes) to OUT/qemu-mte, where tests/smoke/aarch64-boot.sh looks for
# usr/bin/qemu-system-aarch64. Never fatal: when the archive is unreachable or the digest
# differs it says so and exits 0, and the MTE scenarios SKIP naming the missing file.
# Usage: fetch-qemu-mte.sh --out BUILD/deps
set -uo pipefail
out=""
[ "${1:-}" = --out ] && out=${2:-}
[ -n "$out" ] || { echo "usage: fetch-qemu-mte.sh --out DIR" >&2; exit 2; }
mkdir -p "$out" && out=$(cd "$out" && pwd) # apt reads relative paths from /etc/apt
pkg=qemu-system-arm
ver='1:10.0.2+ds-2+deb13u1~bpo12+1'
sha=edebbab09db3882c48ef9c00049c7c6a2d76d195cb88d830baadd1fb705bbc66
dest=$out/qemu-mte
stamp=$dest/.pinned
[ -x "$dest/usr/bin/qemu-system-aarch64" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sha" ] && exit 0
skip() { echo "  DEPS        qemu-mte: $* (the MTE scenarios will SKIP)"; exit 0; }
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || skip "not an amd64 host"
apt_dir=$out/apt-bpo
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/deb"
echo "deb http://deb.debian.org/debian bookworm-backports main" >"$apt_dir/sources.list"
opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
echo "  DEPS        apt-get download $pkg=$ver (bookworm-backports, private configuration)"
apt-get "${opts[@]}" -q update >"$apt_dir/update.log" 2>&1 || skip "bookworm-backports unreachable (see $apt_dir/update.log)"
rm -f "$apt_dir/deb/"*.deb
(cd "$apt_dir/deb" && apt-get "${opts[@]}" -q download "$pkg=$ver") >"$apt_dir/download.log" 2>&1 ||
	skip "$pkg=$ver not downloadable (see $apt_dir/download.log)"
deb=$(find "$apt_dir/deb" -name '*.deb' | head -n 1)
got=$(sha256sum "$deb" | cut -d' ' -f1)
[ "$got" = "$sha" ] || skip "$deb has SHA-256 $got, pinned $sha: not used"
rm -rf "$dest"
dpkg -x "$deb" "$dest" || skip "dpkg -x failed"
"$dest/usr/bin/qemu-system-aarch64" --version >/dev/null 2>&1 || { rm -rf "$dest"; skip "the unpacked QEMU does not run here"; }
echo "$sha" >"$stamp"
echo "  DEPS        qemu-mte: $("$dest/usr/bin/qemu-system-aarch64" --version | head -n 1)"
