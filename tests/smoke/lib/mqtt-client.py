#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Shared helper of the end-to-end smoke tests (tests/smoke/x86_64-mqtt.sh and
# tests/smoke/hosted-mqtt.sh): MQTT clients the mosquitto CLI cannot
# play (a client held open or killed, exact CONNACK/SUBACK codes, TLS 1.2 only, plain
# MQTT, many idle connections, load certificates). Every call is bounded by its own
# timeout and prints one result line. Environment: MQTT_CLIENT_TIMEOUT (seconds, 15).
# usage: mqtt-client.py HOST PORT CERTDIR MODE [args]
import os, socket, ssl, struct, sys, time

host, port, certs, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
args = sys.argv[5:]
TIMEOUT = float(os.environ.get("MQTT_CLIENT_TIMEOUT", "15"))


def ctx(cert, key, ca=None, tls12=False):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.check_hostname = False  # the dev server certificate names localhost only
    c.load_verify_locations(ca or certs + "/ca.crt")
    c.load_cert_chain(cert, key)
    if tls12:
        c.maximum_version = ssl.TLSVersion.TLSv1_2
    else:
        c.minimum_version = ssl.TLSVersion.TLSv1_3
    return c


def mstr(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def rlen(n):
    out = b""
    while True:
        d = n % 128
        n //= 128
        out += bytes([d | (0x80 if n else 0)])
        if not n:
            return out


def pkt(t, body):
    return bytes([t]) + rlen(len(body)) + body


def connect_pkt(cid, keepalive=0):
    return pkt(0x10, mstr("MQTT") + bytes([4, 0x02]) + struct.pack(">H", keepalive) + mstr(cid))


def read_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise EOFError("closed")
        b += d
    return b


def read_pkt(s):
    h = read_exact(s, 1)[0]
    n, mul = 0, 1
    while True:
        d = read_exact(s, 1)[0]
        n += (d & 127) * mul
        mul *= 128
        if not d & 128:
            break
    return h, read_exact(s, n)


def tls_conn(cert, key, ca=None, tls12=False):
    raw = socket.create_connection((host, port), timeout=TIMEOUT)
    return ctx(cert, key, ca, tls12).wrap_socket(raw)


def crt(name):
    return certs + "/" + name + ".crt", certs + "/" + name + ".key"


if mode == "connack":  # NAME CLIENTID [CERT KEY CA]: CONNACK code or the TLS failure
    name, cid = args[0], args[1]
    cert, key = (args[2], args[3]) if len(args) > 3 else crt(name)
    ca = args[4] if len(args) > 4 else None
    try:
        s = tls_conn(cert, key, ca)
        s.sendall(connect_pkt(cid))
        h, b = read_pkt(s)
        print("connack", b[1] if h == 0x20 and len(b) == 2 else "bad")
    except (ssl.SSLError, EOFError, ConnectionError, OSError) as e:
        print("refused", type(e).__name__)
elif mode == "tls12":
    try:
        tls_conn(*crt("dev-1"), tls12=True)
        print("accepted")
    except (ssl.SSLError, EOFError, ConnectionError, OSError) as e:
        print("refused", type(e).__name__)
elif mode == "plain":  # MQTT CONNECT without TLS: no CONNACK may come back
    s = socket.create_connection((host, port), timeout=TIMEOUT)
    s.sendall(connect_pkt("dev-1"))
    try:
        h, b = read_pkt(s)
        print("answered", hex(h))
    except (EOFError, ConnectionError, socket.timeout, OSError) as e:
        print("refused", type(e).__name__)
elif mode == "acl":  # dev-1 subscribes and publishes outside devices/dev-1/#
    s = tls_conn(*crt("dev-1"))
    s.sendall(connect_pkt("dev-1"))
    h, b = read_pkt(s)
    assert h == 0x20 and b[1] == 0, b
    s.sendall(pkt(0x82, struct.pack(">H", 1) + mstr("devices/dev-2/#") + b"\x01"))
    h, b = read_pkt(s)
    sub = b[2] if h == 0x90 else -1
    # QoS 1 publish outside the subtree: the broker must not route it (PUBACK or not).
    s.sendall(pkt(0x32, mstr("devices/dev-2/telemetry") + struct.pack(">H", 2) + b"forbidden"))
    time.sleep(0.5)
    s.sendall(pkt(0xE0, b""))
    s.close()
    print("suback 0x%02x" % sub)
elif mode == "will":  # NAME: connect with a will on devices/NAME/status, then hold
    name = args[0]
    topic = "devices/%s/status" % name
    body = (mstr("MQTT") + bytes([4, 0x02 | 0x04 | (1 << 3)]) + struct.pack(">H", 60) + mstr(name)
            + mstr(topic) + mstr("gone"))
    s = tls_conn(*crt(name))
    s.sendall(pkt(0x10, body))
    h, b = read_pkt(s)
    print("connack", b[1], flush=True)
    time.sleep(60)
elif mode == "takeover":  # NAME: persistent session; a second connection takes it over
    name = args[0]
    body = mstr("MQTT") + bytes([4, 0x00]) + struct.pack(">H", 60) + mstr(name)  # clean 0
    a = tls_conn(*crt(name))
    a.sendall(pkt(0x10, body))
    h, b1 = read_pkt(a)
    time.sleep(1.5)  # the kernel logs A's connection before B's
    bconn = tls_conn(*crt(name))
    bconn.sendall(pkt(0x10, body))
    h, b2 = read_pkt(bconn)
    try:  # the broker must end A
        a.settimeout(10)
        closed = a.recv(1) == b""
    except TimeoutError:
        closed = False
    except (ssl.SSLError, ConnectionError, OSError):
        closed = True
    print("a_connack %d b_connack %d b_sp %d a_closed %d" % (b1[1], b2[1], b2[0] & 1, closed), flush=True)
    time.sleep(1.0)
    bconn.sendall(pkt(0xE0, b""))
    bconn.close()
    c = tls_conn(*crt(name))  # clean session: the persistent one is discarded
    c.sendall(connect_pkt(name))
    read_pkt(c)
    c.sendall(pkt(0xE0, b""))
    c.close()
elif mode == "idle":  # N PREFIXDIR: N connections, certificates PREFIXDIR/load-<i>.*
    n, d = int(args[0]), args[1]
    held, t0 = [], time.time()
    for i in range(1, n + 1):
        name = "load-%d" % i
        s = tls_conn(d + "/" + name + ".crt", d + "/" + name + ".key")
        s.sendall(connect_pkt(name))
        h, b = read_pkt(s)
        if h != 0x20 or b[1] != 0:
            print("connack-failed", i, flush=True)
            sys.exit(1)
        s.sendall(pkt(0x82, struct.pack(">H", 1) + mstr("devices/%s/cmd/#" % name) + b"\x01"))
        h, b = read_pkt(s)
        if h != 0x90 or b[2] != 1:
            print("suback-failed", i, flush=True)
            sys.exit(1)
        held.append(s)
    print("held %d %.1f" % (len(held), time.time() - t0), flush=True)
    time.sleep(float(args[2]) if len(args) > 2 else 30)
elif mode == "mkcerts":  # N DIR: load-<i> device certificates signed by the dev CA
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    n, d = int(args[0]), args[1]
    ca = x509.load_pem_x509_certificate(open(certs + "/ca.crt", "rb").read())
    ca_key = serialization.load_pem_private_key(open(certs + "/ca.key", "rb").read(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    now = datetime.datetime.utcnow()
    for i in range(1, n + 1):
        name = "load-%d" % i
        c = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
             .issuer_name(ca.subject).public_key(key.public_key()).serial_number(1000 + i)
             .not_valid_before(now - datetime.timedelta(hours=1))
             .not_valid_after(now + datetime.timedelta(days=2))
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False,
                                          False), critical=True)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
             .sign(ca_key, hashes.SHA256()))
        open("%s/%s.crt" % (d, name), "wb").write(c.public_bytes(serialization.Encoding.PEM))
        open("%s/%s.key" % (d, name), "wb").write(key_pem)
    print("made", n)
elif mode == "persist-sub":  # NAME TOPIC: a persistent session subscribed at QoS 1, then gone
    name, topic = args[0], args[1]
    body = mstr("MQTT") + bytes([4, 0x00]) + struct.pack(">H", 60) + mstr(name)  # clean 0
    s = tls_conn(*crt(name))
    s.sendall(pkt(0x10, body))
    h, b = read_pkt(s)
    s.sendall(pkt(0x82, struct.pack(">H", 1) + mstr(topic) + b"\x01"))
    h2, b2 = read_pkt(s)
    s.sendall(pkt(0xE0, b""))
    s.close()
    print("connack %d sp %d suback 0x%02x" % (b[1], b[0] & 1, b2[2] if h2 == 0x90 else 0xFF))
elif mode == "acked-pub":  # NAME TOPIC COUNT ACKFILE [RATE]: QoS 1 publishes (at most RATE per
    # second, 0 = flat out), each PUBACKed payload appended to ACKFILE at once (the broker may
    # die mid-way: what was acked is on file).
    name, topic, count, ackfile = args[0], args[1], int(args[2]), args[3]
    rate = float(args[4]) if len(args) > 4 else 0.0
    t_start = time.time()
    acked = 0
    with open(ackfile, "a") as out:
        try:
            s = tls_conn(*crt(name))
            s.sendall(connect_pkt(name, 60))
            h, b = read_pkt(s)
            assert h == 0x20 and b[1] == 0, b
            window, sent, pending = 16, 0, {}
            while acked < count:
                while sent < count and len(pending) < window:
                    if rate > 0 and sent >= (time.time() - t_start) * rate:
                        if pending:
                            break  # read an acknowledgement while the pace holds us
                        time.sleep(1.0 / rate)
                        continue
                    sent += 1
                    payload = "m-%d" % sent
                    pid = (sent - 1) % 65535 + 1
                    pending[pid] = payload
                    s.sendall(pkt(0x32, mstr(topic) + struct.pack(">H", pid) + payload.encode()))
                h, b = read_pkt(s)
                if h == 0x40 and len(b) == 2:
                    pid = struct.unpack(">H", b)[0]
                    if pid in pending:
                        out.write(pending.pop(pid) + "\n")
                        out.flush()
                        acked += 1
            s.sendall(pkt(0xE0, b""))
            s.close()
        except (ssl.SSLError, EOFError, ConnectionError, OSError) as e:
            print("acked %d ended %s" % (acked, type(e).__name__), flush=True)
            sys.exit(0)
    print("acked %d ended complete" % acked, flush=True)
elif mode == "drain":  # NAME ACKFILE QUIET QUEUE: resume the persistent session, PUBACK what
    # comes until QUIET seconds pass without a message. The session's queue keeps the newest
    # QUEUE messages (offline_queue_policy drop_oldest), so every acknowledged payload m-i
    # with i > (newest received) - QUEUE must be among them.
    name, ackfile = args[0], args[1]
    quiet = float(args[2])
    queue = int(args[3])
    body = mstr("MQTT") + bytes([4, 0x00]) + struct.pack(">H", 60) + mstr(name)  # clean 0
    s = tls_conn(*crt(name))
    s.sendall(pkt(0x10, body))
    h, b = read_pkt(s)
    code, sp = b[1], b[0] & 1
    got = set()
    n = 0
    s.settimeout(quiet)
    try:
        while True:
            h, b = read_pkt(s)
            if h & 0xF0 != 0x30:
                continue
            tl = struct.unpack(">H", b[:2])[0]
            qos = (h >> 1) & 3
            off = 2 + tl + (2 if qos else 0)
            if qos == 1:
                s.sendall(pkt(0x40, b[2 + tl:4 + tl]))
            got.add(b[off:].decode(errors="replace"))
            n += 1
    except (socket.timeout, TimeoutError):
        pass
    s.sendall(pkt(0xE0, b""))
    s.close()
    idx = lambda p: int(p[2:]) if p.startswith("m-") and p[2:].isdigit() else -1
    newest = max([idx(p) for p in got] + [0])
    acked = [l.strip() for l in open(ackfile) if l.strip()]
    want = [a for a in acked if idx(a) > newest - queue]
    if acked and not got:
        want = acked
    missing = [w for w in want if w not in got]
    if os.environ.get("DRAIN_DEBUG"):
        print("received", sorted(idx(p) for p in got), file=sys.stderr)
    print("connack %d sp %d received %d distinct %d acked %d in_window %d missing %d%s" % (
        code, sp, n, len(got), len(acked), len(want), len(missing),
        (" first-missing " + missing[0]) if missing else ""))
elif mode == "retained-get":  # NAME TOPIC: a clean session subscribes; prints the retained payload
    name, topic = args[0], args[1]
    s = tls_conn(*crt(name))
    s.sendall(connect_pkt(name, 60))
    read_pkt(s)
    s.sendall(pkt(0x82, struct.pack(">H", 1) + mstr(topic) + b"\x01"))
    s.settimeout(5)
    payload = None
    try:
        while payload is None:
            h, b = read_pkt(s)
            if h & 0xF0 == 0x30:
                tl = struct.unpack(">H", b[:2])[0]
                qos = (h >> 1) & 3
                payload = b[2 + tl + (2 if qos else 0):].decode(errors="replace")
                if qos == 1:
                    s.sendall(pkt(0x40, b[2 + tl:4 + tl]))
                retain = h & 1
    except (socket.timeout, TimeoutError):
        pass
    s.sendall(pkt(0xE0, b""))
    s.close()
    print("retained %s" % payload if payload is not None else "retained none")
elif mode == "tquery":  # NAME QUERY: a telemetry query (key=value lines, '\n' written as
    # ';'); prints every reply row as a JSON line to stdout, then the end object.
    import json
    name, query = args[0], args[1].replace(";", "\n")
    s = tls_conn(*crt(name))
    s.sendall(connect_pkt(name, 60))
    read_pkt(s)
    s.sendall(pkt(0x30, mstr("$telemetry/query") + query.encode()))
    s.settimeout(TIMEOUT)
    rows = 0
    try:
        while True:
            h, b = read_pkt(s)
            if h & 0xF0 != 0x30:
                continue
            tl = struct.unpack(">H", b[:2])[0]
            body = b[2 + tl + (2 if (h >> 1) & 3 else 0):]
            d = json.loads(body)
            if "end" in d or "error" in d:
                print(json.dumps(d), flush=True)
                break
            print(json.dumps(d))
            rows += 1
    except (socket.timeout, TimeoutError):
        print('{"timeout":true,"rows":%d}' % rows)
    s.sendall(pkt(0xE0, b""))
    s.close()
elif mode == "retained-fill":  # NAME PREFIX COUNT SIZE: COUNT retained QoS 1 messages of SIZE
    # bytes on PREFIX/0 .. PREFIX/COUNT-1 (payload "fill-<i>-" then filler), paced under the
    # profile's per-identity limits (mqtt.rate_bytes_per_s 1m, rate_msgs_per_s 1000)
    name, prefix, count, size = args[0], args[1], int(args[2]), int(args[3])
    bps = 768 * 1024
    acked, sent, pending, t_start = 0, 0, {}, time.time()
    try:
        s = tls_conn(*crt(name))
        s.sendall(connect_pkt(name, 60))
        h, b = read_pkt(s)
        assert h == 0x20 and b[1] == 0, b
        while acked < count:
            while sent < count and len(pending) < 8 and sent * size <= (time.time() - t_start) * bps:
                head = ("fill-%d-" % sent).encode()
                payload = head + b"x" * max(0, size - len(head))
                pid = sent % 65535 + 1
                pending[pid] = sent
                s.sendall(pkt(0x33, mstr("%s/%d" % (prefix, sent)) + struct.pack(">H", pid) + payload))
                sent += 1
            if not pending:
                time.sleep(0.05)
                continue
            h, b = read_pkt(s)
            if h == 0x40 and len(b) == 2 and struct.unpack(">H", b)[0] in pending:
                del pending[struct.unpack(">H", b)[0]]
                acked += 1
        s.sendall(pkt(0xE0, b""))
        s.close()
    except (ssl.SSLError, EOFError, ConnectionError, OSError) as e:
        print("acked %d of %d bytes %d ended %s" % (acked, count, acked * size, type(e).__name__))
        sys.exit(0)
    print("acked %d of %d bytes %d ended complete" % (acked, count, acked * size))
elif mode == "retained-count":  # NAME FILTER: a clean session subscribes to FILTER; counts the
    # retained messages that arrive until 5 s pass without one, and their bytes
    name, filt = args[0], args[1]
    s = tls_conn(*crt(name))
    s.sendall(connect_pkt(name, 60))
    read_pkt(s)
    s.sendall(pkt(0x82, struct.pack(">H", 1) + mstr(filt) + b"\x01"))
    s.settimeout(5)
    n, nbytes = 0, 0
    try:
        while True:
            h, b = read_pkt(s)
            if h & 0xF0 != 0x30:
                continue
            tl = struct.unpack(">H", b[:2])[0]
            qos = (h >> 1) & 3
            if qos == 1:
                s.sendall(pkt(0x40, b[2 + tl:4 + tl]))
            if h & 1:
                n += 1
                nbytes += len(b) - 2 - tl - (2 if qos else 0)
    except (socket.timeout, TimeoutError):
        pass
    s.sendall(pkt(0xE0, b""))
    s.close()
    print("retained %d bytes %d" % (n, nbytes))
else:
    print("unknown mode")
    sys.exit(2)
