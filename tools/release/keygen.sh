#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make release-key (ADR-074): a minisign key pair for signing releases. The secret key is
# never put under the source tree: by default ~/.urmqtt/release.key (mode 600, directory 700),
# the public key beside it as release.pub, which is what users verify with. minisign asks for
# a password for the secret key; NOPASS=1 (-W) makes one without (for CI and tests only).
# An existing key is never overwritten.
# Usage: keygen.sh [SECRET_KEY_PATH]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
key=${1:-$HOME/.urmqtt/release.key}
case $key in *.key) ;; *) echo "release-key: the secret key's name must end in .key (the public key is NAME.pub)" >&2; exit 1 ;; esac
command -v minisign >/dev/null || { echo "release-key: minisign missing (make setup, or apt-get install minisign)" >&2; exit 1; }
dir=$(dirname "$key")
case $(realpath -m "$dir")/ in "$src"/*)
	echo "release-key: $key lies under the source tree $src; a secret key never does (default: ~/.urmqtt/release.key)" >&2; exit 1 ;;
esac
mkdir -p "$dir"
pub=${key%.key}.pub
if [ -e "$key" ] || [ -e "$pub" ]; then
	echo "release-key: $key or $pub exists; not overwritten (remove both to make a new pair)" >&2; exit 1
fi
chmod 700 "$dir" 2>/dev/null || true
umask 077
minisign -G -s "$key" -p "$pub" ${NOPASS:+-W}
chmod 644 "$pub"
echo "  RELEASE-KEY secret $key (keep it private, back it up), public $pub (publish it)"
