#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Hand-built TLS 1.3 first flights for the refusal tests (tests/smoke/tls-echo.sh): each
# case sends a ClientHello (or a record) that a server must refuse, then reads what comes
# back and prints one line: "alert <description number>" when the first record is a
# plaintext alert, "hrr" for a HelloRetryRequest, "serverhello" for a ServerHello, "closed"
# when the server closed without a record, "timeout" when nothing came within the bound.
# Also prints "port N" (the connection's source port) so the test can read the server's
# own lines for that connection. Usage: tls-flights.py HOST PORT CASE
import os, socket, struct, sys

HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
X25519, SECP256R1, FFDHE2048 = 0x001d, 0x0017, 0x0100

def ext(t, body):
    return struct.pack(">HH", t, len(body)) + body

def client_hello(groups, shares, extra=b""):
    exts = ext(0x002b, b"\x02\x03\x04")                                   # supported_versions: TLS 1.3
    exts += ext(0x000a, struct.pack(">H", 2 * len(groups)) + b"".join(struct.pack(">H", g) for g in groups))
    exts += ext(0x000d, struct.pack(">HH", 2, 0x0403))                    # ecdsa_secp256r1_sha256
    ks = b"".join(struct.pack(">HH", g, len(k)) + k for g, k in shares)
    exts += ext(0x0033, struct.pack(">H", len(ks)) + ks)
    exts += extra
    body = b"\x03\x03" + os.urandom(32) + b"\x20" + os.urandom(32)
    body += struct.pack(">H", 4) + struct.pack(">HH", 0x1301, 0x1303) + b"\x01\x00"
    body += struct.pack(">H", len(exts)) + exts
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return record(22, hs)

def padded_hello(total):
    # A good ClientHello whose handshake message (header included) is `total` bytes, made
    # up with the padding extension (RFC 7685), sent in records of at most 2^14 bytes.
    base = client_hello([X25519], [(X25519, x25519_key())])[5:]
    pad = total - len(base) - 4
    if pad < 0:
        raise SystemExit("padded_hello: %d is below the smallest ClientHello" % total)
    msg = client_hello([X25519], [(X25519, x25519_key())], ext(0x0015, bytes(pad)))[5:]
    out = b""
    for i in range(0, len(msg), 16384):
        out += record(22, msg[i:i + 16384])
    return out

def record(ctype, payload, length=None):
    return struct.pack(">BHH", ctype, 0x0303, len(payload) if length is None else length) + payload

def x25519_key():
    try:
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
        from cryptography.hazmat.primitives import serialization
        k = X25519PrivateKey.generate().public_key()
        return k.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    except ImportError:
        return bytes.fromhex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")

CASES = {
    # key shares the server must refuse (RFC 8446 4.2.8: illegal_parameter)
    "x25519-zero": lambda: client_hello([X25519], [(X25519, bytes(32))]),
    "x25519-short": lambda: client_hello([X25519], [(X25519, x25519_key()[:31])]),
    "p256-off-curve": lambda: client_hello([SECP256R1], [(SECP256R1, b"\x04" + os.urandom(64))]),
    "p256-infinity": lambda: client_hello([SECP256R1], [(SECP256R1, b"\x00")]),
    # no group in common: handshake_failure; a common group without its share: HelloRetryRequest
    "no-common-group": lambda: client_hello([FFDHE2048], [(FFDHE2048, os.urandom(256))]),
    "needs-hrr": lambda: client_hello([FFDHE2048, X25519], [(FFDHE2048, os.urandom(256))]),
    # records no server may take before a ClientHello
    "oversized-record": lambda: record(22, os.urandom(64), length=0x4001 + 256),
    "garbage-handshake": lambda: record(22, b"\x63\x00\x00\xc4" + os.urandom(196)),  # type 99
    "content-type-zero": lambda: record(0, os.urandom(40)),
    "empty-alert": lambda: record(21, b""),
    # ClientHellos of a given size (HELLO_BYTES: the handshake message, header included)
    "big-hello": lambda: padded_hello(int(os.environ.get("HELLO_BYTES", "16384"))),
    # a well-formed ClientHello (the control: a ServerHello comes back)
    "good": lambda: client_hello([X25519], [(X25519, x25519_key())]),
}

def main():
    host, port, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = socket.create_connection((host, port), timeout=5)
    print("port", s.getsockname()[1], flush=True)
    try:
        s.sendall(CASES[case]())
    except OSError:
        pass
    buf = b""
    try:
        while len(buf) < 5 or len(buf) < 5 + struct.unpack(">H", buf[3:5])[0]:
            got = s.recv(65536)
            if not got:
                break
            buf += got
    except socket.timeout:
        print("timeout" if not buf else "partial")
        return
    except ConnectionResetError:
        pass
    if len(buf) < 5:
        print("closed")
    elif buf[0] == 21 and len(buf) >= 7:
        print("alert", buf[6])
    elif buf[0] == 22 and len(buf) >= 11 + 32 and buf[5] == 2:
        print("hrr" if buf[11:43] == HRR_RANDOM else "serverhello")
    else:
        print("record", buf[0])

main()
