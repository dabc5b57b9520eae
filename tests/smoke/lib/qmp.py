#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# One QMP command to a QEMU started with -qmp unix:SOCKET,server=on,wait=off: prints the
# reply as JSON and exits 1 when QEMU answered with an error (bounded by the caller's
# timeout). Usage: qmp.py SOCKET COMMAND [JSON-ARGUMENTS]
import json, socket, sys, time
path, cmd = sys.argv[1], sys.argv[2]
args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
s = socket.socket(socket.AF_UNIX)
for _ in range(50):
    try:
        s.connect(path)
        break
    except OSError:
        time.sleep(0.1)
f = s.makefile("rw")
def reply():
    while True:
        m = json.loads(f.readline())
        if "return" in m or "error" in m:
            return m
json.loads(f.readline())  # greeting
f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n"); f.flush()
reply()
req = {"execute": cmd}
if args is not None:
    req["arguments"] = args
f.write(json.dumps(req) + "\n"); f.flush()
m = reply()
print(json.dumps(m))
sys.exit(1 if "error" in m else 0)
