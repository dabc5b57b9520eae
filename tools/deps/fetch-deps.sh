#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make deps: obtain the pinned third-party sources (tools/deps/pins.txt) from Debian's
# source archive (suite DEPS_SUITE, default trixie) through a private apt configuration
# generated from the Debian URIs this machine already uses; the system's apt sources are
# never changed. Every tarball's SHA-256 is checked before it is unpacked, on every run,
# so a tarball altered in the cache stops the build. URMQTT_DEPS_DIR=dir takes tarballs
# from dir instead (offline builds). Per pin, optionally (see the head of pins.txt):
#   tools/deps/members/<name>.txt      unpack only these members of the tarball
#   tools/deps/patches/<name>-<upstream-version>-*.patch
#                                      our own patches, applied in name order with
#                                      patch -p1 --forward --fuzz=0 after unpacking; one
#                                      that does not apply exactly stops make deps
# Outputs, under --out DIR:
#   DIR/cache/<tarball>             verified downloads (a second run downloads nothing)
#   DIR/<name>-<version>/           unpacked (and patched) upstream tree + .urmqtt-digest
#                                   stamp: the tarball's digest, then the member list's and
#                                   each patch's, so changing either unpacks again
#   DIR/sqlite-amalgamation/        sqlite3.c + sqlite3.h generated from the source tree
# --check: fetch and unpack nothing; compare every unpacked tree's stamp with what pins.txt,
# the member lists and the patches make it now, and fail naming `make deps` when one is
# missing or differs. The build runs it before compiling third-party code (tls/module.mk),
# so a changed patch is never compiled from a tree unpacked before. Silent when all match.
set -euo pipefail
out=build/deps
check=0
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--check) check=1; shift ;;
	*) echo "fetch-deps: unknown argument $1" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
pins=$here/pins.txt
suite=${DEPS_SUITE:-trixie}

stamp_of() { # name upver digest -> the stamp the unpacked tree must carry
	local s=$3 p
	if [ -f "$here/members/$1.txt" ]; then
		s+=" members=$(sha256sum "$here/members/$1.txt" | cut -d' ' -f1)"
	fi
	for p in "$here/patches/$1-$2-"*.patch; do
		if [ -f "$p" ]; then s+=" patch=$(basename "$p"):$(sha256sum "$p" | cut -d' ' -f1)"; fi
	done
	echo "$s"
}

if [ $check -eq 1 ]; then
	bad=()
	while read -r name pkg upver tarball digest; do
		case $name in ''|'#'*) continue ;; esac
		st=$out/$name-$upver/.urmqtt-digest
		if [ ! -f "$st" ]; then
			bad+=("$out/$name-$upver is missing")
		elif [ "$(cat "$st")" != "$(stamp_of "$name" "$upver" "$digest")" ]; then
			bad+=("$out/$name-$upver was unpacked for another pin, member list or patch")
		fi
	done <"$pins"
	[ ${#bad[@]} -eq 0 ] && exit 0
	printf 'make deps: %s\n' "${bad[@]}" >&2
	echo "make deps: run 'make deps' to fetch, unpack and patch again (tools/deps/pins.txt)" >&2
	exit 1
fi

mkdir -p "$out/cache"
out=$(cd "$out" && pwd)
# Leftovers of an interrupted run are never trusted: only renamed results count.
rm -rf "$out"/amalg.* "$out"/unpack.* "$out"/cache/dl.* "$out"/cache/*.part

die() { echo "make deps: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "missing tool '$1' (package $2): run 'make setup' as root or apt-get install $2"; }
need sha256sum coreutils; need tar tar; need bzip2 bzip2; need xz xz-utils

verify() { # file expected -> 0 or dies with both digests
	local got
	got=$(sha256sum "$1" | cut -d' ' -f1)
	if [ "$got" != "$2" ]; then
		die "SHA-256 mismatch for $1
  expected (tools/deps/pins.txt): $2
  actual:                         $got
Delete the file to download it again, or check URMQTT_DEPS_DIR."
	fi
}

apt_dir=$out/apt
apt_opts=()
apt_ready=0
prepare_apt() { # private apt config: deb-src lines for our suite on the machine's Debian URIs
	[ $apt_ready -eq 1 ] && return 0
	need apt-get apt
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
	local list=$apt_dir/sources.list uris=()
	: >"$list"
	# One-line format: deb [opts] URI suite components (main archive only, not -security).
	if compgen -G "/etc/apt/sources.list" >/dev/null || compgen -G "/etc/apt/sources.list.d/*.list" >/dev/null; then
		while read -r uri; do uris+=("$uri"); done < <(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1=="deb"{i=2; if ($2 ~ /^\[/) {while ($i !~ /\]$/) i++; i++} if ($(i+1) !~ /-(security|updates|backports)$/) print $i}' |
			grep -E '/debian/?$' || true)
	fi
	# deb822 format: URIs: lines of stanzas whose Suites include a plain release name.
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		while read -r uri; do uris+=("$uri"); done < <(awk -v RS= '
			/(^|\n)Suites:[^\n]*[ \t][a-z]+([ \t]|\n|$)/ || /(^|\n)Suites:[ \t]*[a-z]+([ \t]|\n|$)/ {
				n = split($0, L, "\n"); for (i = 1; i <= n; i++) if (L[i] ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", L[i]); print L[i] } }' "$f" |
			tr ' ' '\n' | grep -E '/debian/?$' || true)
	done
	[ ${#uris[@]} -gt 0 ] || die "found no Debian archive URI in /etc/apt: cannot reach Debian's source archive (set URMQTT_DEPS_DIR to a folder with the tarballs of tools/deps/pins.txt)"
	printf '%s\n' "${uris[@]}" | sort -u | while read -r u; do echo "deb-src $u $suite main"; done >"$list"
	apt_opts=(-o "Dir::Etc::SourceList=$list" -o "Dir::Etc::SourceParts=/dev/null"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o "APT::Sandbox::User=$(id -un)" -o "Debug::NoLocking=1")
	echo "  DEPS        apt-get update ($suite sources, private configuration in $apt_dir)"
	apt-get "${apt_opts[@]}" -q update >"$apt_dir/update.log" 2>&1 ||
		die "apt-get update of the $suite source index failed (unreachable archive?); see $apt_dir/update.log"
	apt_ready=1
}

fetch() { # name srcpkg upver tarball -> file in cache
	local name=$1 pkg=$2 upver=$3 tarball=$4 ver tmp
	prepare_apt
	ver=$(apt-cache "${apt_opts[@]}" showsrc "$pkg" 2>/dev/null | awk '/^Version:/{print $2}' |
		grep -E "^([0-9]+:)?${upver//./\\.}-" | sort -V | tail -n 1 || true)
	[ -n "$ver" ] || die "Debian $suite has no source package $pkg with upstream version $upver (pinned in tools/deps/pins.txt)"
	tmp=$(mktemp -d "$out/cache/dl.XXXXXX")
	echo "  DEPS        apt-get source --download-only $pkg=$ver"
	(cd "$tmp" && apt-get "${apt_opts[@]}" -q source --download-only "$pkg=$ver" >"$tmp/log" 2>&1) ||
		{ cat "$tmp/log" >&2; rm -rf "$tmp"; die "downloading $pkg=$ver failed (unreachable archive?)"; }
	[ -f "$tmp/$tarball" ] || { rm -rf "$tmp"; die "$pkg=$ver did not contain $tarball"; }
	mv "$tmp/$tarball" "$out/cache/$tarball.part"
	rm -rf "$tmp"
}

while read -r name pkg upver tarball digest; do
	case $name in ''|'#'*) continue ;; esac
	file=$out/cache/$tarball
	if [ -n "${URMQTT_DEPS_DIR:-}" ]; then
		[ -f "$URMQTT_DEPS_DIR/$tarball" ] || die "URMQTT_DEPS_DIR=$URMQTT_DEPS_DIR has no $tarball"
		verify "$URMQTT_DEPS_DIR/$tarball" "$digest"
		[ -f "$file" ] && cmp -s "$file" "$URMQTT_DEPS_DIR/$tarball" || cp "$URMQTT_DEPS_DIR/$tarball" "$file.part"
		[ -f "$file.part" ] && mv "$file.part" "$file"
	elif [ ! -f "$file" ]; then
		fetch "$name" "$pkg" "$upver" "$tarball"
		verify "$file.part" "$digest"
		mv "$file.part" "$file"
	fi
	verify "$file" "$digest"
	dest=$out/$name-$upver
	stamp=$(stamp_of "$name" "$upver" "$digest")
	if [ ! -f "$dest/.urmqtt-digest" ] || [ "$(cat "$dest/.urmqtt-digest")" != "$stamp" ]; then
		tmp=$(mktemp -d "$out/unpack.XXXXXX")
		members=$here/members/$name.txt
		if [ -f "$members" ]; then
			# Paths relative to the tarball's top folder, whatever its name: '*' stands for it
			# and, with --no-wildcards-match-slash, for nothing deeper; a folder brings its
			# contents. tar fails on a pattern that matches no member.
			pats=()
			while read -r m; do
				case $m in ''|'#'*) continue ;; esac
				pats+=("*/${m%/}")
			done <"$members"
			[ ${#pats[@]} -gt 0 ] || { rm -rf "$tmp"; die "tools/deps/members/$name.txt names no member"; }
			echo "  DEPS        unpack ${#pats[@]} members of $tarball (tools/deps/members/$name.txt)"
			tar -xf "$file" -C "$tmp" --wildcards --no-wildcards-match-slash --anchored "${pats[@]}" ||
				{ rm -rf "$tmp"; die "cannot unpack tools/deps/members/$name.txt from $file"; }
		else
			echo "  DEPS        unpack $tarball"
			tar -xf "$file" -C "$tmp" || { rm -rf "$tmp"; die "cannot unpack $file"; }
		fi
		top=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n 1)
		[ -n "$top" ] || { rm -rf "$tmp"; die "$file has no top-level folder"; }
		for p in "$here/patches/$name-$upver-"*.patch; do
			[ -f "$p" ] || continue
			need patch patch
			echo "  DEPS        patch $name-$upver with tools/deps/patches/$(basename "$p")"
			(cd "$top" && patch -p1 --forward --fuzz=0 --batch --no-backup-if-mismatch -r - <"$p") \
				>"$tmp/patch.log" 2>&1 || { cat "$tmp/patch.log" >&2; rm -rf "$tmp"
				die "tools/deps/patches/$(basename "$p") does not apply to $name $upver (output above)"; }
		done
		echo "$stamp" >"$top/.urmqtt-digest"
		rm -rf "$dest" && mv "$top" "$dest" && rm -rf "$tmp"
	fi
done <"$pins"

# SQLite's amalgamation, generated from its source tree (needs tclsh).
sq=$out/sqlite3-3.46.1
am=$out/sqlite-amalgamation
sq_digest=$(cat "$sq/.urmqtt-digest")
if [ ! -f "$am/.urmqtt-digest" ] || [ "$(cat "$am/.urmqtt-digest")" != "$sq_digest" ]; then
	need tclsh tcl; need gcc gcc; need make make
	echo "  DEPS        generate SQLite amalgamation"
	tmp=$(mktemp -d "$out/amalg.XXXXXX")
	(cd "$tmp" && "$sq/configure" --disable-tcl >configure.log 2>&1 && make sqlite3.c sqlite3.h >make.log 2>&1) ||
		{ tail -20 "$tmp"/*.log >&2; rm -rf "$tmp"; die "generating the SQLite amalgamation failed"; }
	mkdir -p "$tmp/out" && cp "$tmp/sqlite3.c" "$tmp/sqlite3.h" "$tmp/out/"
	echo "$sq_digest" >"$tmp/out/.urmqtt-digest"
	rm -rf "$am" && mv "$tmp/out" "$am" && rm -rf "$tmp"
fi
echo "  DEPS        ok: $(cut -c1-100 <<<"$(ls "$out" | grep -v -E '^(cache|apt)$' | tr '\n' ' ')")"
