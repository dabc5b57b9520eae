#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The fleet simulation of tests/smoke/hosted-fleet.sh (docs/SCALE-OUT.md, ADR-072/073): a
# small MQTT 5.0 client of our own over Python's ssl (every wait bounded), driving three
# appliances that share one ring:
#   1. N device certificates (CN fleet-<i>, one key for the batch) signed by the dev CA;
#   2. the backend, a service identity, on every appliance: a plain subscription to all
#      telemetry, and two connections in one shared group ($share/kafka/...), as a Kafka
#      Connect MQTT source connector with two tasks would subscribe;
#   3. each device connects to a random appliance first; a CONNACK 0x9C (Use another server)
#      names its home by Server Reference, which must be the home this script computes from
#      the same ring (SipHash-2-4 written here); it connects there (CONNACK 0), subscribes
#      to devices/<id>/cmd/#, publishes one telemetry message (PUBACK);
#   4. the backend's telemetry: every device's message exactly once on the plain
#      subscriptions, from its home, and exactly once across each appliance's shared group;
#   5. a command from the backend (published on every appliance: it need not know homes)
#      reaches every device exactly once.
# Prints "result NAME ok|bad DETAIL" lines the shell script turns into PASS/FAIL, and
# "figure NAME VALUE" lines.
# usage: fleet-sim.py CERTDIR WORKDIR N_DEVICES SEED KEYHEX VNODES name=host:port...
import os, random, select, socket, ssl, struct, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

certs, work, n_dev, seed, key_hex, vnodes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    sys.argv[5], int(sys.argv[6])
members = [m.split("=", 1) for m in sys.argv[7:]]  # [name, "host:port"]
T0 = time.monotonic()
DEADLINE = T0 + float(os.environ.get("FLEET_SIM_SECONDS", "75"))
results = []


def result(name, ok, detail):
    results.append(ok)
    print("result %s %s %s" % (name, "ok" if ok else "bad", detail), flush=True)


def left():
    return max(0.1, DEADLINE - time.monotonic())


# ---- SipHash-2-4 and the ring, as mqtt/fleet.c builds it ----------------------------------
M64 = (1 << 64) - 1


def siphash24(key, data):
    k0, k1 = struct.unpack("<QQ", key)
    v0, v1, v2, v3 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, \
        k1 ^ 0x7465646279746573

    def rotl(x, b):
        return ((x << b) | (x >> (64 - b))) & M64

    def rnd(v0, v1, v2, v3):
        v0 = (v0 + v1) & M64; v1 = rotl(v1, 13) ^ v0; v0 = rotl(v0, 32)
        v2 = (v2 + v3) & M64; v3 = rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & M64; v3 = rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & M64; v1 = rotl(v1, 17) ^ v2; v2 = rotl(v2, 32)
        return v0, v1, v2, v3

    n = len(data)
    for i in range(0, n - n % 8, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v3 ^= m
        v0, v1, v2, v3 = rnd(*rnd(v0, v1, v2, v3))
        v0 ^= m
    tail = data[n - n % 8:] + bytes(8 - n % 8)
    m = struct.unpack("<Q", tail)[0] | ((n & 0xFF) << 56)
    v3 ^= m
    v0, v1, v2, v3 = rnd(*rnd(v0, v1, v2, v3))
    v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = rnd(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


KEY = bytes.fromhex(key_hex)
ring = sorted((siphash24(KEY, name.encode() + b"\0" + struct.pack("<H", v)), name)
              for name, _ in members for v in range(vnodes))
ring_pts = [p for p, _ in ring]
ref_of = dict((name, ref) for name, ref in members)


def home_of(ident):
    import bisect
    h = siphash24(KEY, ident.encode())
    i = bisect.bisect_left(ring_pts, h)
    return ring[i if i < len(ring) else 0][1]


# ---- MQTT 5.0 packets ---------------------------------------------------------------------
def mstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">H", len(b)) + b


def vbi(n):
    out = b""
    while True:
        d, n = n % 128, n // 128
        out += bytes([d | (0x80 if n else 0)])
        if not n:
            return out


def pkt(t, body):
    return bytes([t]) + vbi(len(body)) + body


def connect5(cid, keepalive=120):
    return pkt(0x10, mstr("MQTT") + bytes([5, 0x02]) + struct.pack(">H", keepalive) + b"\0" + mstr(cid))


def subscribe5(pid, flt, qos=1):
    return pkt(0x82, struct.pack(">H", pid) + b"\0" + mstr(flt) + bytes([qos]))


def publish5(pid, topic, payload, qos=1):
    return pkt(0x30 | (qos << 1), mstr(topic) + (struct.pack(">H", pid) if qos else b"") + b"\0" + payload)


def puback(pid):
    return pkt(0x40, struct.pack(">H", pid))


def read_exact(s, n):
    b = b""
    while len(b) < n:
        s.settimeout(left())
        d = s.recv(n - len(b))
        if not d:
            raise EOFError("closed by the broker")
        b += d
    return b


def read_pkt(s):
    h = read_exact(s, 1)[0]
    n, mul = 0, 1
    for _ in range(4):
        d = read_exact(s, 1)[0]
        n += (d & 127) * mul
        mul *= 128
        if not d & 128:
            break
    return h, read_exact(s, n) if n else b""


def vbi_at(b, i):
    n, mul = 0, 1
    while True:
        d = b[i]
        i += 1
        n += (d & 127) * mul
        mul *= 128
        if not d & 128:
            return n, i


def connack_props(b):
    """CONNACK body: (reason, {property id: value}) for the properties we read."""
    plen, i = vbi_at(b, 2)
    props, end = {}, i + plen
    while i < end:
        pid = b[i]
        i += 1
        if pid in (0x12, 0x1A, 0x1C, 0x1F):  # strings
            sl = struct.unpack_from(">H", b, i)[0]
            props[pid] = b[i + 2:i + 2 + sl].decode()
            i += 2 + sl
        elif pid in (0x13, 0x21, 0x22):
            props[pid] = struct.unpack_from(">H", b, i)[0]
            i += 2
        elif pid in (0x11, 0x27):
            props[pid] = struct.unpack_from(">I", b, i)[0]
            i += 4
        elif pid == 0x26:  # user property: two strings
            for _ in range(2):
                i += 2 + struct.unpack_from(">H", b, i)[0]
        else:
            props[pid] = b[i]
            i += 1
    return b[1], props


def parse_publish(h, b):
    tl = struct.unpack_from(">H", b, 0)[0]
    topic = b[2:2 + tl].decode()
    i = 2 + tl
    pid = None
    if (h >> 1) & 3:
        pid = struct.unpack_from(">H", b, i)[0]
        i += 2
    plen, i = vbi_at(b, i)
    return topic, pid, b[i + plen:]


# ---- certificates -------------------------------------------------------------------------
def make_certs():
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    ca = x509.load_pem_x509_certificate(open(certs + "/ca.crt", "rb").read())
    ca_key = serialization.load_pem_private_key(open(certs + "/ca.key", "rb").read(), None)
    key = ec.generate_private_key(ec.SECP256R1())  # one key for the batch
    open(work + "/fleet.key", "wb").write(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    now = datetime.datetime.utcnow()
    for i in range(1, n_dev + 1):
        c = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fleet-%d" % i)]))
             .issuer_name(ca.subject).public_key(key.public_key()).serial_number(50000 + i)
             .not_valid_before(now - datetime.timedelta(hours=1))
             .not_valid_after(now + datetime.timedelta(days=2))
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                            critical=True)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
             .sign(ca_key, hashes.SHA256()))
        open("%s/fleet-%d.crt" % (work, i), "wb").write(c.public_bytes(serialization.Encoding.PEM))


def ctx(cert, key):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.check_hostname = False  # the dev server certificate names localhost and 10.79.0.2 only
    c.load_verify_locations(certs + "/ca.crt")
    c.load_cert_chain(cert, key)
    c.minimum_version = ssl.TLSVersion.TLSv1_3
    return c


# Handshakes in flight per appliance: below tls.handshakes_per_source (4), since every client
# of one appliance comes from the same address.
gates = dict((ref, threading.Semaphore(3)) for _, ref in members)


def dial(c, ref):
    host, port = ref.rsplit(":", 1)
    for attempt in range(3):
        with gates[ref]:
            raw = socket.create_connection((host, int(port)), timeout=min(10, left()))
            try:
                s = c.wrap_socket(raw)
                return s
            except (OSError, ssl.SSLError):
                raw.close()
                if attempt == 2 or left() < 2:
                    raise
        time.sleep(0.2)


# ---- the backend: a service identity on every appliance -----------------------------------
svc = ctx(certs + "/ops.crt", certs + "/ops.key")


class Reader(threading.Thread):
    """One backend subscription's connection: acknowledges and records every PUBLISH."""

    def __init__(self, name, ref, cid, flt):
        super().__init__(daemon=True)
        self.name, self.got, self.err, self.stop = name, [], None, False
        self.s = dial(svc, ref)
        self.s.sendall(connect5(cid))
        h, b = read_pkt(self.s)
        rc, _ = connack_props(b)
        if h >> 4 != 2 or rc != 0:
            raise RuntimeError("backend %s: CONNACK 0x%02x" % (cid, rc))
        self.s.sendall(subscribe5(1, flt))
        h, b = read_pkt(self.s)
        if h >> 4 != 9 or b[-1] > 2:
            raise RuntimeError("backend %s: SUBACK 0x%02x for %s" % (cid, b[-1], flt))

    def run(self):
        try:
            while not self.stop and time.monotonic() < DEADLINE:
                self.s.settimeout(0.5)
                try:
                    h, b = read_pkt(self.s)
                except socket.timeout:
                    continue
                if h >> 4 == 3:
                    topic, pid, payload = parse_publish(h, b)
                    self.got.append(topic)
                    if pid is not None:
                        self.s.sendall(puback(pid))
        except Exception as e:  # noqa: BLE001 - reported below
            self.err = repr(e)


def main():
    t = time.monotonic()
    make_certs()
    print("figure certs_s %.1f" % (time.monotonic() - t), flush=True)
    dev_ctx = [None] + [ctx("%s/fleet-%d.crt" % (work, i), work + "/fleet.key") for i in range(1, n_dev + 1)]

    plain, shared = {}, {}
    for name, ref in members:
        plain[name] = Reader(name, ref, "ops/backend-" + name, "devices/+/telemetry/#")
        shared[name] = [Reader(name, ref, "ops/kafka-%d-%s" % (k, name), "$share/kafka/devices/+/telemetry/#")
                        for k in (1, 2)]
    readers = list(plain.values()) + [r for v in shared.values() for r in v]
    for r in readers:
        r.start()
    cmd_s = {}
    for name, ref in members:
        s = dial(svc, ref)
        s.sendall(connect5("ops/cmd-" + name))
        h, b = read_pkt(s)
        if connack_props(b)[0] != 0:
            raise RuntimeError("command connection refused on " + name)
        cmd_s[name] = s

    # ---- devices: a random appliance first, then home when told ----
    rnd = random.Random(seed)
    first = [None] + [rnd.choice(members)[0] for _ in range(n_dev)]
    socks, outcome = [None] * (n_dev + 1), [None] * (n_dev + 1)

    def device(i):
        ident = "fleet-%d" % i
        where = first[i]
        redirected_to = None
        for hop in range(2):
            s = dial(dev_ctx[i], ref_of[where])
            s.sendall(connect5(ident))
            h, b = read_pkt(s)
            rc, props = connack_props(b)
            if rc == 0x9C and hop == 0:
                redirected_to = props.get(0x1C)
                s.close()
                names = [n for n, r in members if r == redirected_to]
                if len(names) != 1:
                    return ("bad-ref", redirected_to)
                where = names[0]
                continue
            if rc != 0:
                s.close()
                return ("refused", "0x%02x on %s" % (rc, where))
            break
        s.sendall(subscribe5(1, "devices/%s/cmd/#" % ident))
        h, b = read_pkt(s)
        if h >> 4 != 9 or b[-1] != 1:
            return ("suback", "0x%02x" % b[-1])
        s.sendall(publish5(2, "devices/%s/telemetry/t" % ident, ident.encode()))
        h, b = read_pkt(s)
        if h >> 4 != 4:
            return ("puback", "type %d" % (h >> 4))
        socks[i] = s
        return ("ok", where, redirected_to)

    t = time.monotonic()
    with ThreadPoolExecutor(max_workers=9) as ex:
        futs = [(i, ex.submit(device, i)) for i in range(1, n_dev + 1)]
        for i, f in futs:
            try:
                outcome[i] = f.result(timeout=left())
            except Exception as e:  # noqa: BLE001 - counted as a failure
                outcome[i] = ("error", repr(e))
    connect_s = time.monotonic() - t
    ok = [i for i in range(1, n_dev + 1) if outcome[i][0] == "ok"]
    bad = [(i, outcome[i]) for i in range(1, n_dev + 1) if outcome[i][0] != "ok"]
    at_home = [i for i in ok if outcome[i][1] == home_of("fleet-%d" % i)]
    redirected = [i for i in ok if outcome[i][2] is not None]
    wrong_redirect = [i for i in redirected if first[i] == outcome[i][1]]
    # a redirect only when the first appliance was not home; never when it was
    expect_redirect = [i for i in range(1, n_dev + 1) if first[i] != home_of("fleet-%d" % i)]
    print("figure connect_s %.1f" % connect_s, flush=True)
    with open(work + "/homes.txt", "w") as f:  # where each device ended: the shell compares the tool's
        for i in ok:
            f.write("fleet-%d %s\n" % (i, outcome[i][1]))
    shares = dict((n, sum(1 for i in range(1, n_dev + 1) if home_of("fleet-%d" % i) == n)) for n, _ in members)
    print("figure homes %s" % " ".join("%s=%d" % kv for kv in sorted(shares.items())), flush=True)
    print("figure redirected %d" % len(redirected), flush=True)
    result("devices-at-home", len(ok) == n_dev and len(at_home) == n_dev and not wrong_redirect,
           "%d/%d connected, %d at the home the ring gives, %s" %
           (len(ok), n_dev, len(at_home), ("first failures: %s" % bad[:3]) if bad else "no failure"))
    result("redirect-5", sorted(redirected) == sorted(expect_redirect),
           "%d redirected with CONNACK 0x9C + Server Reference (%d started elsewhere than home), "
           "%d connected at home first" % (len(redirected), len(expect_redirect), n_dev - len(expect_redirect)))

    # ---- telemetry on the backend's subscriptions ----
    want = set("devices/fleet-%d/telemetry/t" % i for i in ok)
    t_end = time.monotonic() + min(15, left())
    while time.monotonic() < t_end:
        got_plain = sum(len(r.got) for r in plain.values())
        got_shared = sum(len(r.got) for v in shared.values() for r in v)
        if got_plain >= len(want) and got_shared >= len(want):
            break
        time.sleep(0.1)
    time.sleep(0.3)  # a duplicate would show now
    all_plain = [t for r in plain.values() for t in r.got]
    from_home = all(home_of(t.split("/")[1]) == n for n, r in plain.items() for t in r.got)
    result("telemetry-backend", sorted(all_plain) == sorted(want) and from_home,
           "%d/%d device messages on the plain subscriptions (one per appliance), each once, each from its home"
           % (len(set(all_plain) & want), len(want)))
    all_shared = [t for v in shared.values() for r in v for t in r.got]
    per_task = " ".join("%s:%d+%d" % (n, len(v[0].got), len(v[1].got)) for n, v in sorted(shared.items()))
    result("telemetry-connector", sorted(all_shared) == sorted(want),
           "%d/%d on $share/kafka (2 connections per appliance, as a source connector's tasks), each once: %s"
           % (len(set(all_shared) & want), len(want), per_task))

    # ---- a command from the backend, on every appliance, to each device ----
    t = time.monotonic()
    for name, s in cmd_s.items():
        pid, unacked = 0, 0
        for i in ok:
            pid = pid % 65535 + 1
            s.sendall(publish5(pid, "devices/fleet-%d/cmd/reboot" % i, b"cmd-%d" % i))
            unacked += 1
            while unacked >= 8:  # within the broker's Receive Maximum
                h, b = read_pkt(s)
                unacked -= h >> 4 == 4
        while unacked:
            h, b = read_pkt(s)
            unacked -= h >> 4 == 4
    got_cmd, dup_cmd = 0, 0
    for i in ok:
        s = socks[i]
        try:
            h, b = read_pkt(s)
            topic, pid, payload = parse_publish(h, b)
            if h >> 4 == 3 and topic == "devices/fleet-%d/cmd/reboot" % i and payload == b"cmd-%d" % i:
                got_cmd += 1
            if pid is not None:
                s.sendall(puback(pid))
        except Exception:  # noqa: BLE001 - a missing command is counted
            pass
    time.sleep(0.3)
    for i in ok:  # anything more is a duplicate (the same command from another appliance)
        s = socks[i]
        s.setblocking(False)
        try:
            if s.pending() or select.select([s], [], [], 0)[0]:
                d = s.recv(4096)
                dup_cmd += len(d) > 0
        except (ssl.SSLWantReadError, BlockingIOError):
            pass
        except OSError:
            pass
    print("figure command_s %.1f" % (time.monotonic() - t), flush=True)
    result("command-to-each", got_cmd == n_dev and dup_cmd == 0,
           "%d/%d devices got the backend's command exactly once (%d duplicates)" % (got_cmd, n_dev, dup_cmd))

    for r in readers:
        r.stop = True
    errs = [r.err for r in readers if r.err]
    result("backend-connections", not errs, "9 service connections held throughout" if not errs else errs[0])
    for s in socks[1:]:
        if s:
            try:
                s.sendall(pkt(0xE0, b"\0"))
                s.close()
            except OSError:
                pass
    for s in cmd_s.values():
        s.close()
    print("figure total_s %.1f" % (time.monotonic() - T0), flush=True)


try:
    main()
except Exception as e:  # noqa: BLE001 - one result line, not a traceback
    result("simulation", False, "stopped: %r" % (e,))
sys.exit(0 if results and all(results) else 1)
