#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# make bench: boot time and image size, one JSON line per figure on stdout (run.sh appends
# them to raw.jsonl). Measures only; it never judges a figure.
#   boot IMAGE N      boots the x86_64 image N times under QEMU (KVM when make bench's probe
#                     guest ran on it, else TCG), user networking, 1 vCPU, 256 MiB; per boot: ms from
#                     starting QEMU to the serial line "... ms from entry to the loop"
#                     (the first core's loop), the kernel's own figure on that line (from
#                     its entry point), and ms to the DHCP lease (listening with an address)
#   start N -- CMD..  starts CMD N times (Mosquitto, a Linux process: no OS boot) and gives
#                     the ms from exec to 127.0.0.1:8883 accepting a TCP connection
#   size IMAGE BIN    text/data/bss (`size`) and file bytes of IMAGE (as built, with debug
#                     sections, and stripped) against BIN plus every shared library ldd
#                     lists for it (the Linux kernel under Mosquitto is not counted)
# Every QEMU boot and every start is bounded by a timeout; the processes started here are
# killed before returning.
import json
import os
import re
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

LOOP_RE = re.compile(rb"boot: ([0-9]+)\.([0-9]+) ms from entry to the loop")
SERVE_RE = re.compile(rb"DHCP lease: |static address: ")


def kvm_usable():
    """KVM only when make bench's probe chose it (tools/accel/accel.sh exports URMQTT_ACCEL);
    run on its own, this asks the same script."""
    choice = os.environ.get("URMQTT_ACCEL")
    if not choice:
        choice = subprocess.run(["tools/accel/accel.sh", "build/accel/probe.elf"],
                                stdout=subprocess.PIPE, text=True).stdout.strip()
    return choice == "kvm"


def boot_once(image, timeout_s=60.0):
    accel = ["-enable-kvm", "-cpu", "host,-arch-capabilities"] if kvm_usable() else \
        ["-accel", "tcg", "-cpu", "max"]
    cmd = ["qemu-system-x86_64", "-M", "q35"] + accel + [
        "-m", "256", "-smp", "1", "-display", "none", "-no-reboot", "-nodefaults",
        "-serial", "stdio", "-netdev", "user,id=n0",
        "-device", "virtio-net-pci,netdev=n0,romfile=", "-kernel", image]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    res = {"loop_ms": None, "kernel_entry_to_loop_ms": None, "serving_ms": None}
    buf = b""
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    try:
        while time.monotonic() - t0 < timeout_s:
            if not sel.select(timeout=0.5):
                if p.poll() is not None:
                    break
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            now = time.monotonic()
            if not chunk:
                break
            buf += chunk
            if res["loop_ms"] is None:
                m = LOOP_RE.search(buf)
                if m:
                    res["loop_ms"] = (now - t0) * 1000
                    res["kernel_entry_to_loop_ms"] = float(m.group(1) + b"." + m.group(2))
            if res["serving_ms"] is None and SERVE_RE.search(buf):
                res["serving_ms"] = (now - t0) * 1000
            if res["loop_ms"] is not None and res["serving_ms"] is not None:
                break
    finally:
        p.kill()
        p.wait()
    return res, "kvm" if accel[0] == "-enable-kvm" else "tcg"


def cmd_boot(image, n):
    boots, accel = [], "tcg"
    for _ in range(n):
        r, accel = boot_once(image)
        boots.append(r)
        print("bench: boot %d: QEMU start -> loop %s ms (kernel entry -> loop %s ms), -> DHCP lease %s ms"
              % (len(boots), fmt(r["loop_ms"]), fmt(r["kernel_entry_to_loop_ms"]),
                 fmt(r["serving_ms"])), file=sys.stderr)

    def med(k):
        v = [b[k] for b in boots if b[k] is not None]
        return statistics.median(v) if v else None
    print(json.dumps({"broker": "urmqtt", "figure": "boot", "accel": accel, "boots": len(boots),
                      "loop_ms": med("loop_ms"),
                      "kernel_entry_to_loop_ms": med("kernel_entry_to_loop_ms"),
                      "serving_ms": med("serving_ms"), "runs": boots}))


def fmt(v):
    return "n/a" if v is None else "%.0f" % v


def start_once(cmd, timeout_s=20.0):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    ms = None
    try:
        while time.monotonic() - t0 < timeout_s and p.poll() is None:
            s = socket.socket()
            try:
                s.connect(("127.0.0.1", 8883))
                ms = (time.monotonic() - t0) * 1000
                break
            except OSError:
                time.sleep(0.002)
            finally:
                s.close()
    finally:
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return ms


def cmd_start(n, cmd):
    v = [start_once(cmd) for _ in range(n)]
    ok = [x for x in v if x is not None]
    print(json.dumps({"broker": "mosquitto", "figure": "boot", "accel": "none (Linux process)",
                      "boots": n, "serving_ms": statistics.median(ok) if ok else None,
                      "runs": v}))


def size_of(path):
    r = subprocess.run(["size", path], capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or len(lines) < 2:
        return None
    f = lines[1].split()
    return {"text": int(f[0]), "data": int(f[1]), "bss": int(f[2]),
            "file": os.path.getsize(path)}


def cmd_size(image, binary):
    img = size_of(image)
    if img:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "stripped.elf")
            if subprocess.run(["strip", "-o", out, image], capture_output=True).returncode == 0:
                img["file_stripped"] = os.path.getsize(out)
        print(json.dumps({"broker": "urmqtt", "figure": "size", "path": image, **img}))
    binary = shutil.which(binary) or binary
    libs = [os.path.realpath(binary)]
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        m = re.search(r"=> (/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if m:
            libs.append(os.path.realpath(m.group(1)))
    tot = {"text": 0, "data": 0, "bss": 0, "file": 0}
    parts = []
    for lib in dict.fromkeys(libs):
        s = size_of(lib)
        if not s:
            continue
        parts.append({"path": lib, **s})
        for k in tot:
            tot[k] += s[k]
    print(json.dumps({"broker": "mosquitto", "figure": "size", "path": binary,
                      "objects": len(parts), **tot, "file_stripped": tot["file"],
                      "parts": parts}))


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "boot":
        cmd_boot(a[1], int(a[2]))
    elif len(a) >= 4 and a[0] == "start" and a[2] == "--":
        cmd_start(int(a[1]), a[3:])
    elif len(a) == 3 and a[0] == "size":
        cmd_size(a[1], a[2])
    else:
        print("usage: boot_size.py boot IMAGE N | start N -- CMD... | size IMAGE BIN",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
