#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Shared helper of the end-to-end smoke tests (tests/smoke/x86_64-mqtt.sh and
# tests/smoke/hosted-mqtt.sh): MQTT clients the mosquitto CLI cannot
# play (a client held open or killed, exact CONNACK/SUBACK codes, refusals told apart by
# the broker's alert, many idle connections, load certificates). Every call is bounded by
# its own timeout and prints one result line. Environment: MQTT_CLIENT_TIMEOUT (seconds, 15).
# usage: mqtt-client.py HOST PORT CERTDIR MODE [args]
import os, re, socket, ssl, struct, sys, time

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


if mode == "connack":  # NAME CLIENTID [CERT KEY CA]: CONNACK code, else "error WHAT"
    name, cid = args[0], args[1]
    cert, key = (args[2], args[3]) if len(args) > 3 else crt(name)
    ca = args[4] if len(args) > 4 else None
    try:
        s = tls_conn(cert, key, ca)
        s.sendall(connect_pkt(cid))
        h, b = read_pkt(s)
        print("connack", b[1] if h == 0x20 and len(b) == 2 else "bad")
    except (ssl.SSLError, EOFError, ConnectionError, OSError) as e:
        print("error", type(e).__name__, e)  # refusals are mode refuse's, checked there
elif mode == "refuse":  # CASE [CERT KEY CA]: a connection the broker must refuse.
    # other-ca (CERT KEY CA given), revoked (revoked-1), tls12 (dev-1, TLS 1.2 only): the
    # broker's own TLS alert, checked against the case. TLS 1.3 judges our certificate
    # after our Finished, so its alert can come only when we read: read until it comes,
    # EOF or TIMEOUT; if nothing came within QUIET_S, send CONNECT (a broker that took
    # the certificate then says so with a CONNACK). plain: MQTT CONNECT without TLS;
    # the broker must close the connection (FIN or RST; at most one TLS alert record before
    # it) within PLAIN_CLOSE_S, well before its handshake timeout (dp.hs_timeout_ms, 10 s).
    # Prints "refused alert NAME ..." / "refused closed ..." only on that outcome; anything
    # else (connection refused, timeout, a missing file, no or a wrong alert, an answer) is
    # "error WHAT" and exit status 1.
    case = args[0]
    want = {"other-ca": "unknown_ca", "revoked": "certificate_revoked", "tls12": "protocol_version",
            "unsynced": "access_denied",  # unsynced: dev-1 while the broker distrusts its clock
            "unregistered": "access_denied"}  # unregistered NAME: a device not in the allowlist
    t0 = time.monotonic()

    def took():
        return "after %.2f s" % (time.monotonic() - t0)

    def done(ok, text):
        print(("refused " if ok else "error ") + text + " " + took(), flush=True)
        sys.exit(0 if ok else 1)

    def left(limit=TIMEOUT):
        r = t0 + limit - time.monotonic()
        if r <= 0:
            raise socket.timeout("no outcome within %.1f s" % limit)
        return r

    def peer_alert(e):  # the alert the peer sent ("unknown_ca"), None for a local error
        m = re.match(r"^(?:SSLV3|TLSV1|TLSV13)_ALERT_([A-Z_]+)$", getattr(e, "reason", None) or "")
        return m.group(1).lower() if m else None

    def what(e):
        return "%s: %s" % (type(e).__name__, e)

    if case == "plain":
        PLAIN_CLOSE_S = 5.0
        got, stage = b"", "connect"
        try:
            s = socket.create_connection((host, port), timeout=left(PLAIN_CLOSE_S))
            stage = "after CONNECT"
            s.sendall(connect_pkt("dev-1"))
            while True:
                s.settimeout(left(PLAIN_CLOSE_S))
                d = s.recv(4096)
                if not d:
                    how = "closed (FIN)"
                    break
                got += d
        except ConnectionResetError:
            how = "closed (RST)"
        except (socket.timeout, TimeoutError):
            done(False, "%s: still open after %.1f s (%d bytes from the broker)" % (stage, PLAIN_CLOSE_S, len(got)))
        except OSError as e:  # ConnectionRefusedError, ...
            done(False, "%s: %s" % (stage, what(e)))
        # Closed by the broker: with nothing, or one plaintext TLS alert record, said first.
        if not got:
            done(True, how + " by the broker, nothing sent")
        if len(got) == 7 and got[:3] in (b"\x15\x03\x01", b"\x15\x03\x03") and got[3:5] == b"\x00\x02":
            done(True, "%s by the broker after alert %d" % (how, got[6]))
        done(False, "the broker answered plain MQTT: %s, then %s" % (got[:16].hex(), how))
    if case not in want:
        print("error unknown refuse case %s" % case)
        sys.exit(2)
    if case == "other-ca" and len(args) < 4:
        done(False, "usage: refuse other-ca CERT KEY CA")
    # revoked [NAME]: revoked-1 (in the image's list) or a device revoked at run time;
    # unregistered NAME: that device
    named = case in ("revoked", "unregistered")
    rname = args[1] if named and len(args) > 1 else "revoked-1" if case == "revoked" else "dev-1"
    files = args[1:4] if case == "other-ca" else list(crt(rname if named else "dev-1"))
    for f in files + ([] if case == "other-ca" else [certs + "/ca.crt"]):
        if not os.path.isfile(f):
            done(False, "client setup: missing file %s" % f)
    try:
        c = ctx(*files, tls12=case == "tls12")
    except (OSError, ssl.SSLError) as e:
        done(False, "client setup: " + what(e))  # a missing or unreadable certificate file
    stage = "connect"
    try:
        raw = socket.create_connection((host, port), timeout=left())
        stage = "handshake"
        s = c.wrap_socket(raw)
        stage = "read after the handshake"
        QUIET_S = min(5.0, TIMEOUT / 3)
        s.settimeout(min(QUIET_S, left()))
        try:
            d = s.recv(4096)
        except (socket.timeout, TimeoutError):
            stage = "read after CONNECT"
            s.sendall(connect_pkt(rname if named else "dev-1"))
            s.settimeout(left())
            d = s.recv(4096)
        if not d:
            done(False, "closed by the broker without an alert (%s; want %s)" % (stage, want[case]))
        done(False, "the broker accepted: %s answered %s (want alert %s)" % (
            s.version(), d[:8].hex(), want[case]))
    except ssl.SSLError as e:
        a = peer_alert(e)
        if a is None:
            done(False, "%s: %s (want alert %s)" % (stage, what(e), want[case]))
        if a != want[case]:
            done(False, "wrong alert %s (want %s; %s)" % (a, want[case], stage))
        done(True, "alert %s (%s)" % (a, stage))
    except (socket.timeout, TimeoutError) as e:
        done(False, "%s: timed out, no alert (want %s; %s)" % (stage, want[case], what(e)))
    except OSError as e:  # ConnectionRefusedError, ConnectionResetError, ...
        done(False, "%s: %s (want alert %s)" % (stage, what(e), want[case]))
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
elif mode == "suback":  # NAME FILTER: a clean session subscribes to FILTER; prints the SUBACK code
    name, filt = args[0], args[1]
    s = tls_conn(*crt(name))
    s.sendall(connect_pkt(name))
    h, b = read_pkt(s)
    assert h == 0x20 and b[1] == 0, b
    s.sendall(pkt(0x82, struct.pack(">H", 1) + mstr(filt) + b"\x00"))
    h, b = read_pkt(s)
    s.sendall(pkt(0xE0, b""))
    s.close()
    print("suback 0x%02x" % (b[2] if h == 0x90 else -1))
elif mode == "console":  # NAME COMMAND ARGS: the console: subscribe to the replies, publish the
    # command at QoS 1; prints "reply <epoch> <text>" (the host's time when the reply came)
    name, command, cargs = args[0], args[1], args[2]
    s = tls_conn(*crt(name))
    s.sendall(connect_pkt(name))
    h, b = read_pkt(s)
    assert h == 0x20 and b[1] == 0, b
    s.sendall(pkt(0x82, struct.pack(">H", 1) + mstr("$CONTROL/urmqtt/reply/#") + b"\x00"))
    h, b = read_pkt(s)
    assert h == 0x90 and b[2] == 0, b
    s.sendall(pkt(0x32, mstr("$CONTROL/urmqtt/" + command) + struct.pack(">H", 7) + cargs.encode()))
    reply = None
    while reply is None:
        h, b = read_pkt(s)
        if h & 0xF0 == 0x30:
            tl = struct.unpack(">H", b[:2])[0]
            if b[2:2 + tl].decode(errors="replace").startswith("$CONTROL/urmqtt/reply/"):
                reply = "%.3f %s" % (time.time(), b[2 + tl + (2 if h & 6 else 0):].decode(errors="replace"))
    s.sendall(pkt(0xE0, b""))
    s.close()
    print("reply " + reply)
elif mode == "hold":  # NAME SECONDS: connect, subscribe to devices/NAME/cmd/#, hold until the broker
    # closes the connection; prints "closed <epoch> <how>" or "open" after SECONDS
    name, secs = args[0], float(args[1])
    s = tls_conn(*crt(name))
    s.sendall(connect_pkt(name, 120))
    h, b = read_pkt(s)
    assert h == 0x20 and b[1] == 0, b
    s.sendall(pkt(0x82, struct.pack(">H", 1) + mstr("devices/%s/cmd/#" % name) + b"\x01"))
    read_pkt(s)
    print("held", flush=True)
    s.settimeout(secs)
    how = "open"
    try:
        while True:
            read_pkt(s)
    except ssl.SSLError as e:
        how = "closed %.3f alert %s" % (time.time(), getattr(e, "reason", None) or e)
    except (EOFError, ConnectionError, OSError) as e:
        how = "open" if isinstance(e, (socket.timeout, TimeoutError)) else "closed %.3f %s" % (time.time(), type(e).__name__)
    print(how)
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
elif mode in ("idle", "idle5"):  # N PREFIXDIR: N connections, certificates PREFIXDIR/load-<i>.*
    # idle5: MQTT 5.0 (CONNECT level 5, SUBSCRIBE with an empty property block)
    n, d = int(args[0]), args[1]
    v5 = mode == "idle5"
    held, t0 = [], time.time()
    for i in range(1, n + 1):
        name = "load-%d" % i
        s = tls_conn(d + "/" + name + ".crt", d + "/" + name + ".key")
        if v5:
            s.sendall(pkt(0x10, mstr("MQTT") + bytes([5, 0x02]) + struct.pack(">H", 0) + b"\x00" + mstr(name)))
        else:
            s.sendall(connect_pkt(name))
        h, b = read_pkt(s)
        if h != 0x20 or b[1] != 0:
            print("connack-failed", i, flush=True)
            sys.exit(1)
        props = b"\x00" if v5 else b""
        s.sendall(pkt(0x82, struct.pack(">H", 1) + props + mstr("devices/%s/cmd/#" % name) + b"\x01"))
        h, b = read_pkt(s)
        if h != 0x90 or b[2 + len(props)] != 1:
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
elif mode == "resume":  # NAME N: one full handshake, then N connections resuming its ticket,
    # each with CONNECT/CONNACK and DISCONNECT (new source ports: the broker steers each one
    # anew), about three a second. Prints "full 1 resumed R of N".
    name, n = args[0], int(args[1])
    c = ctx(*crt(name))
    resumed = 0
    try:
        s = c.wrap_socket(socket.create_connection((host, port), timeout=TIMEOUT))
        s.sendall(connect_pkt(name, 60))
        h, b = read_pkt(s)
        assert h == 0x20 and b[1] == 0, b
        sess = s.session
        s.sendall(pkt(0xE0, b""))
        s.close()
        for _ in range(n):
            r = c.wrap_socket(socket.create_connection((host, port), timeout=TIMEOUT), session=sess)
            r.sendall(connect_pkt(name, 60))
            h, b = read_pkt(r)
            assert h == 0x20 and b[1] == 0, b
            resumed += r.session_reused
            r.sendall(pkt(0xE0, b""))
            r.close()
            time.sleep(0.35)  # under the console's 10 lines a second per site: every line kept
    except (ssl.SSLError, EOFError, ConnectionError, OSError, AssertionError) as e:
        print("error %s after %d resumed" % (type(e).__name__, resumed))
        sys.exit(0)
    print("full 1 resumed %d of %d" % (resumed, n))
elif mode == "flood":  # SUB PUBS COUNT RATE: SUB (a service) subscribes to devices/+/telemetry
    # at QoS 0; each device of PUBS (comma-separated) publishes COUNT QoS 0 messages on its own
    # telemetry topic at RATE per second (batched every 10 ms); SUB counts what arrives until
    # 3 s pass without a message (at most 60 s). Then every connection must answer a PINGREQ.
    # Prints "sent S received R alive A of C".
    import threading
    sub, pubs, count, rate = args[0], args[1].split(","), int(args[2]), float(args[3])
    got = [0]
    last = [time.time()]
    try:
        ss = tls_conn(*crt(sub))
        ss.sendall(connect_pkt(sub, 60))
        assert read_pkt(ss)[0] == 0x20
        ss.sendall(pkt(0x82, struct.pack(">H", 1) + mstr("devices/+/telemetry") + b"\x00"))
        h, b = read_pkt(ss)
        assert h == 0x90 and b[2] == 0, b
        ps = []
        for name in pubs:
            c = tls_conn(*crt(name))
            c.sendall(connect_pkt(name, 60))
            h, b = read_pkt(c)
            assert h == 0x20 and b[1] == 0, b
            ps.append((c, pkt(0x30, mstr("devices/%s/telemetry" % name) + b"x" * 64)))
    except (ssl.SSLError, EOFError, ConnectionError, OSError, AssertionError) as e:
        print("error connect %s" % type(e).__name__)
        sys.exit(0)
    done = threading.Event()

    def reader():  # counts PUBLISH packets; the PINGRESP after `done` is counted apart
        buf = b""
        ss.settimeout(0.5)
        while True:
            try:
                d = ss.recv(65536)
            except (socket.timeout, TimeoutError):
                if done.is_set() and time.time() - last[0] > 3:
                    return
                continue
            except (ssl.SSLError, OSError):
                return
            if not d:
                return
            buf += d
            while len(buf) >= 2:
                n, mul, i = 0, 1, 1
                while i < len(buf) and i < 5:
                    n += (buf[i] & 127) * mul
                    mul *= 128
                    if not buf[i] & 128:
                        break
                    i += 1
                if i >= len(buf) or len(buf) < i + 1 + n:
                    break
                if buf[0] & 0xF0 == 0x30:
                    got[0] += 1
                    last[0] = time.time()
                buf = buf[i + 1 + n:]

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    sent, t0, alive = 0, time.time(), 0
    try:
        while sent < count * len(ps) and time.time() - t0 < 60:
            due = min(count, int((time.time() - t0) * rate) + 1)
            per = due - sent // len(ps)
            if per > 0:
                for c, m in ps:
                    c.sendall(m * per)
                sent += per * len(ps)
            time.sleep(0.01)
    except (ssl.SSLError, ConnectionError, OSError):
        pass
    last[0] = time.time()
    done.set()
    t.join(60)
    # A connection whose frames were dropped in the flood may sit in TCP's retransmission
    # backoff for a while: 30 s to answer (alive, not fast, is what is asked).
    silent = []
    for name, (c, _) in zip(pubs, ps):
        try:
            c.settimeout(30)
            c.sendall(pkt(0xC0, b""))
            h, _ = read_pkt(c)
            alive += h == 0xD0
        except (ssl.SSLError, EOFError, ConnectionError, OSError) as e:
            silent.append("%s: %s" % (name, type(e).__name__))
    try:
        ss.settimeout(30)
        ss.sendall(pkt(0xC0, b""))
        while True:
            h, _ = read_pkt(ss)
            if h == 0xD0:
                alive += 1
                break
            got[0] += h & 0xF0 == 0x30
    except (ssl.SSLError, EOFError, ConnectionError, OSError) as e:
        silent.append("%s: %s" % (sub, type(e).__name__))
    print("sent %d received %d alive %d of %d%s" % (sent, got[0], alive, len(ps) + 1,
                                                    " (no PINGRESP: %s)" % ", ".join(silent) if silent else ""))
else:
    print("unknown mode")
    sys.exit(2)
