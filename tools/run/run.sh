#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make run: boot the urMQTT image in QEMU (KVM when /dev/kvm works, TCG otherwise) with
# user-mode networking forwarding 127.0.0.1:${URMQTT_PORT:-8883} to the guest's 8883, and
# show the serial console. Ctrl-C stops it. URMQTT_SMP / URMQTT_MEM choose vCPUs / MiB.
#
# TEMPORARY (named in docs/PROGRESS.md): the image does not yet contain the network
# drivers, TCP, TLS and MQTT data path, so nothing answers on the port. This script says so
# loudly instead of printing client commands that would not work.
set -euo pipefail
image=${1:?usage: run.sh IMAGE}
port=${URMQTT_PORT:-8883}
smp=${URMQTT_SMP:-2}
mem=${URMQTT_MEM:-256}
if [ -r /dev/kvm ] && [ -c /dev/kvm ] && [ -w /dev/kvm ]; then
	accel=(-enable-kvm -cpu host,-arch-capabilities); how=KVM
else
	accel=(-accel tcg -cpu max); how="TCG (no usable /dev/kvm)"
fi
cat <<MSG
urMQTT: booting $image with $smp vCPU(s), $mem MiB, $how; serial console below, Ctrl-C stops.
MSG
cat >&2 <<'MSG'
************************************************************************************
* NOT YET A BROKER: this image boots the kernel (page tables, W^X audit, SMP, per-  *
* core loops) but the virtio-net driver, our TCP, TLS 1.3 and the MQTT broker are   *
* not linked into it yet, so no client can connect. See docs/PROGRESS.md.           *
************************************************************************************
MSG
exec qemu-system-x86_64 "${accel[@]}" -m "$mem" -smp "$smp" -display none -no-reboot \
	-nodefaults -serial stdio \
	-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" -device virtio-net-pci,netdev=n0 \
	-kernel "$image"
