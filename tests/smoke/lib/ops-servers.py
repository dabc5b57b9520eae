#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The operator's side of tests/smoke/x86_64-ops.sh, on the host's loopback (the guest
reaches it as 10.0.2.2 through QEMU's user-mode networking): a syslog collector and a
statsd server that append every datagram they receive to a file (one JSON object per
line: {"t": host receive time, "data": the datagram}), and SNTP servers (RFC 4330) that
answer with the host's time plus a per-server offset in seconds, plus the number in the
--shift-file (when it exists), so the test can move the honest servers' time later.

Usage: ops-servers.py --syslog PORT OUT --statsd PORT OUT --sntp PORT OFFSET_S [--liar]...
       --shift-file PATH --seconds N
Every port is bound before the first line "ready" is printed; the process exits by itself
after --seconds.
"""
import argparse
import json
import os
import selectors
import socket
import struct
import sys
import time

NTP_UNIX_DELTA = 2208988800  # seconds from 1900-01-01 to 1970-01-01


def ntp_ts(unix_s):
    secs = int(unix_s)
    frac = int((unix_s - secs) * (1 << 32)) & 0xFFFFFFFF
    return ((secs + NTP_UNIX_DELTA) & 0xFFFFFFFF) << 32 | frac


def sntp_reply(req, offset_s):
    if len(req) < 48:
        return None
    first = req[0]
    vn, mode = (first >> 3) & 7, first & 7
    if mode != 3:
        return None
    now = time.time() + offset_s
    originate = req[40:48]
    hdr = struct.pack("!BBbbII4s", (0 << 6) | (vn << 3) | 4, 2, req[2], -20, 0x00000100, 0x00000100, b"LOCL")
    return hdr + struct.pack("!Q", ntp_ts(now - 8)) + originate + struct.pack("!QQ", ntp_ts(now), ntp_ts(now))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--syslog", nargs=2, metavar=("PORT", "OUT"))
    ap.add_argument("--statsd", nargs=2, metavar=("PORT", "OUT"))
    ap.add_argument("--sntp", nargs=2, action="append", default=[], metavar=("PORT", "OFFSET_S"))
    ap.add_argument("--liar", action="append", default=[], help="an --sntp port the shift file does not move")
    ap.add_argument("--shift-file")
    ap.add_argument("--seconds", type=float, default=300)
    a = ap.parse_args()
    sel = selectors.DefaultSelector()

    def bind(port):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", int(port)))
        s.setblocking(False)
        return s

    for kind in ("syslog", "statsd"):
        spec = getattr(a, kind)
        if spec:
            sel.register(bind(spec[0]), selectors.EVENT_READ, (kind, open(spec[1], "a", buffering=1)))
    for port, off in a.sntp:
        sel.register(bind(port), selectors.EVENT_READ, ("sntp", (float(off), port in a.liar)))
    print("ready", flush=True)
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.5):
            kind, arg = key.data
            try:
                data, peer = key.fileobj.recvfrom(65535)
            except BlockingIOError:
                continue
            if kind == "sntp":
                off, liar = arg
                shift = 0.0
                if not liar and a.shift_file and os.path.exists(a.shift_file):
                    with open(a.shift_file) as f:
                        shift = float(f.read().strip() or 0)
                reply = sntp_reply(data, off + shift)
                if reply:
                    key.fileobj.sendto(reply, peer)
            else:
                arg.write(json.dumps({"t": time.time(), "data": data.decode("latin-1")}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
