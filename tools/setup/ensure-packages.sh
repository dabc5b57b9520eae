#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages the build and the tests need, when missing. As root it
# runs apt-get itself; otherwise it names the missing packages and stops.
# Usage: ensure-packages.sh [extra-package ...]
set -euo pipefail
packages=(
	make gcc libc6-dev clang-14 lld-14 libclang-rt-14-dev   # host, fuzz (libFuzzer runtime)
	gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu        # aarch64 kernel
	libcmocka-dev                                           # unit tests
	cppcheck clang-tidy-14                                  # make lint
	apt coreutils tar bzip2 xz-utils tcl                    # make deps (tclsh: SQLite amalgamation)
	patch                                                   # make deps: tools/deps/patches/ (mbedTLS)
	# OpenSSL's perlasm generators (tls/accel/module.mk) run on /usr/bin/perl from perl-base,
	# which is Essential (always installed) and holds all they use (strict, integer): no package.
	python3-cryptography-vectors valgrind                   # tls/accel tests: test vectors, valgrind runs
	libssl-dev                                              # tls/accel test_sha256: OpenSSL's SHA-256 as reference
	qemu-system-x86 qemu-system-arm qemu-utils              # kernel smoke tests
	grub-pc-bin grub-common xorriso mtools                  # Multiboot2 boot through GRUB
	grub-efi-amd64-bin dosfstools fdisk ovmf                # make release: hybrid ISO, GPT disk image, UEFI boots
	qemu-efi-aarch64                                        # aarch64 UEFI boot with ACPI (tests/smoke/aarch64-acpi.sh)
	minisign                                                # make release: signatures (tools/release)
	openssl python3 iproute2 procps dnsmasq-base            # TLS/real-client tests, netns, DHCP
	iputils-ping                                            # make run URMQTT_NET=tap: the printed ping example
	mosquitto-clients python3-paho-mqtt                     # MQTT client tests
	nodejs npm                                              # MQTT.js 5 client tests (npm ci, tests/smoke/lib/mqttjs5)
	tcpdump                                                 # host-side capture of guest frames (net-tap-frames)
	"$@"
)
# A Node.js >= 16 with its npm already on the PATH (NodeSource's nodejs, say, which bundles
# npm and conflicts with Debian's npm) stands for the nodejs and npm packages.
node_ok() {
	command -v npm >/dev/null &&
		[ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge 16 ]
}
missing=()
for p in "${packages[@]}"; do
	case $p in nodejs | npm) node_ok && continue ;; esac
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "setup: missing Debian packages: ${missing[*]}" >&2
	echo "setup: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "  SETUP       apt-get install ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Refresh the index when it is missing or older than a day (a fresh machine has none).
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -n 1)" ]; then
	apt-get -q update >/tmp/urmqtt-apt-update.log 2>&1 || { cat /tmp/urmqtt-apt-update.log >&2; echo "setup: apt-get update failed" >&2; exit 1; }
fi
if ! apt-get -q install -y --no-install-recommends "${missing[@]}" >/tmp/urmqtt-apt-install.log 2>&1; then
	tail -20 /tmp/urmqtt-apt-install.log >&2
	echo "setup: apt-get install failed for: ${missing[*]} (log: /tmp/urmqtt-apt-install.log)" >&2
	exit 1
fi
