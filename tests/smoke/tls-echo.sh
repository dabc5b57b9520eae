#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Smoke test of tls/ against real TLS 1.3 clients: starts tools/tls-echo (our handshake
# adapter over mbedTLS + our record layer) on a loopback port with throwaway certificates
# made by the openssl CLI under the build dir, then drives it with `openssl s_client` and
# Python's ssl module. Prints `PASS tls/<name>` or `FAIL tls/<name>` per case; every
# client is bounded by a timeout, so the whole script ends in well under a minute. RSA
# certificates (tls-echo --rsa, the broker's tls.rsa_allowed) run on a second instance
# with an RSA CA and server certificate.
# usage: tests/smoke/tls-echo.sh <build-dir>
set -u
B=${1:-build}
TOOL=$B/host/tools/tls-echo
W=$B/smoke/tls-echo
PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W"
if [ ! -x "$TOOL" ]; then
	echo "FAIL tls/build (missing $TOOL)"
	exit 0
fi

# ---- certificates ----------------------------------------------------------------
mk_key() { # file [rsa-bits]
	if [ -n "${2:-}" ]; then
		openssl genpkey -algorithm RSA -pkeyopt "rsa_keygen_bits:$2" -out "$1" 2>/dev/null
	else
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
	fi
}
mk_ca() { # name [rsa-bits]
	mk_key "$W/$1.key" "${2:-}"
	openssl req -x509 -new -key "$W/$1.key" -out "$W/$1.pem" -days 2 -subj "/CN=$1" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
}
mk_leaf() { # name ca subject serial extfile-lines [days] [rsa-bits]
	mk_key "$W/$1.key" "${7:-}"
	openssl req -new -key "$W/$1.key" -out "$W/$1.csr" -subj "$3" 2>/dev/null
	printf '%b' "$5" >"$W/$1.ext"
	openssl x509 -req -in "$W/$1.csr" -CA "$W/$2.pem" -CAkey "$W/$2.key" -set_serial "$4" \
		-days "${6:-2}" -out "$W/$1.pem" -extfile "$W/$1.ext" 2>/dev/null
}
CLI_EXT='keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n'
mk_ca ca
mk_ca otherca
mk_leaf srv ca /CN=localhost 0x1001 'subjectAltName=DNS:localhost,IP:127.0.0.1\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n'
mk_leaf dev ca /CN=dev-42 0x2001 "$CLI_EXT"
mk_leaf other otherca /CN=dev-43 0x2002 "$CLI_EXT"
mk_leaf revoked ca /CN=dev-44 0x3001 "$CLI_EXT"
mk_leaf badid ca "/CN=dev\/evil" 0x2003 "$CLI_EXT"
mk_leaf svc ca /CN=backend 0x2004 "${CLI_EXT}subjectAltName=URI:urn:urmqtt:svc:backend-1\n"
mk_leaf expired ca /CN=dev-46 0x2006 "$CLI_EXT" -1
mk_leaf serveronly ca /CN=dev-45 0x2005 'keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n'
# RSA: a 2048-bit CA, server and client; a 1024-bit client (too small, always refused);
# a 2048-bit client under the ECDSA CA (refused by the server without --rsa).
SRV_EXT='subjectAltName=DNS:localhost,IP:127.0.0.1\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n'
mk_ca rsaca 2048
mk_leaf rsasrv rsaca /CN=localhost 0x4001 "$SRV_EXT" 2 2048
mk_leaf rsadev rsaca /CN=dev-rsa-1 0x4002 "$CLI_EXT" 2 2048
mk_leaf rsaweak rsaca /CN=dev-rsa-2 0x4003 "$CLI_EXT" 2 1024
mk_leaf rsaunder ca /CN=dev-rsa-3 0x4004 "$CLI_EXT" 2 2048
# A long chain: an RSA-4096 leaf under three RSA-4096 intermediates of the RSA CA, all sent
# by the client (over the 4 KiB that mbedTLS's input buffer held before); its DER size
# sets the chain limit of two servers, at it and one byte below.
INT_EXT='basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n'
mk_leaf rsaint1 rsaca /CN=rsa-int-1 0x4101 "$INT_EXT" 2 4096
mk_leaf rsaint2 rsaint1 /CN=rsa-int-2 0x4102 "$INT_EXT" 2 4096
mk_leaf rsaint3 rsaint2 /CN=rsa-int-3 0x4104 "$INT_EXT" 2 4096
mk_leaf rsalong rsaint3 /CN=dev-rsa-4096 0x4103 "$CLI_EXT" 2 4096
cat "$W/rsaint3.pem" "$W/rsaint2.pem" "$W/rsaint1.pem" >"$W/rsalong-chain.pem"
CHAIN_BYTES=0
for c in rsalong rsaint3 rsaint2 rsaint1; do
	CHAIN_BYTES=$((CHAIN_BYTES + $(openssl x509 -in "$W/$c.pem" -outform DER 2>/dev/null | wc -c)))
done
if [ ! -s "$W/dev.pem" ] || [ ! -s "$W/svc.pem" ] || [ ! -s "$W/rsadev.pem" ] ||
	[ ! -s "$W/rsaweak.pem" ] || [ ! -s "$W/rsaunder.pem" ]; then
	echo "FAIL tls/certs (openssl could not make the test certificates)"
	exit 0
fi

# ---- server --------------------------------------------------------------------------
# The handshake timeout the stall case measures, and how much later than it the server
# may close (scheduling, a loaded CI machine).
HS_TIMEOUT_MS=1500
STALL_SLACK_MS=1000
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$TOOL" --port "$PORT" --ca "$W/ca.pem" --cert "$W/srv.pem" --key "$W/srv.key" \
	--revoked 3001 --service-prefix urn:urmqtt:svc: --timeout-ms "$HS_TIMEOUT_MS" >"$W/server.log" 2>&1 &
SRV=$!
PORT_RSA=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$TOOL" --port "$PORT_RSA" --ca "$W/rsaca.pem" --cert "$W/rsasrv.pem" --key "$W/rsasrv.key" --rsa \
	--max-chain "$CHAIN_BYTES" --timeout-ms 1500 >"$W/server-rsa.log" 2>&1 &
SRV_RSA=$!
# The same RSA server with a chain limit one byte below the long chain.
PORT_RSA2=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$TOOL" --port "$PORT_RSA2" --ca "$W/rsaca.pem" --cert "$W/rsasrv.pem" --key "$W/rsasrv.key" --rsa \
	--max-chain $((CHAIN_BYTES - 1)) --timeout-ms 1500 >"$W/server-rsa2.log" 2>&1 &
SRV_RSA2=$!
# The revocation-on-resume server: dev (serial 2001) is revoked once its second connection
# is done, while the client still holds a ticket from its first. It also allows 60 s of
# clock skew (tls.clock_skew_s) for the clock-skew cases.
PORT_REV=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$TOOL" --port "$PORT_REV" --ca "$W/ca.pem" --cert "$W/srv.pem" --key "$W/srv.key" \
	--revoke-after 2 2001 --clock-skew-s 60 --max-hello 8192 --timeout-ms 1500 >"$W/server-rev.log" 2>&1 &
SRV_REV=$!
# Two handshake envs, connection N on env N % 2, as two cores of the broker: one ticket
# secret for both (the broker's one key set for every core), or one each (the control).
PORT_ENVS=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$TOOL" --port "$PORT_ENVS" --ca "$W/ca.pem" --cert "$W/srv.pem" --key "$W/srv.key" --envs 2 \
	--timeout-ms 1500 >"$W/server-envs.log" 2>&1 &
SRV_ENVS=$!
# The allowlist server: only dev-42 is listed (services are never asked); the list is
# emptied as connection 4's handshake ends, before tls_hs_finish (a removal arriving
# mid-handshake).
PORT_ALLOW=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$TOOL" --port "$PORT_ALLOW" --ca "$W/ca.pem" --cert "$W/srv.pem" --key "$W/srv.key" --allow dev-42 \
	--service-prefix urn:urmqtt:svc: --unlist-at-finish 4 --tickets 0 --timeout-ms 1500 >"$W/server-allow.log" 2>&1 &
SRV_ALLOW=$!
PORT_OWN=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$TOOL" --port "$PORT_OWN" --ca "$W/ca.pem" --cert "$W/srv.pem" --key "$W/srv.key" --envs 2 --own-secrets \
	--timeout-ms 1500 >"$W/server-own.log" 2>&1 &
SRV_OWN=$!
trap 'kill $SRV $SRV_RSA $SRV_RSA2 $SRV_REV $SRV_ENVS $SRV_OWN $SRV_ALLOW 2>/dev/null; wait $SRV $SRV_RSA $SRV_RSA2 $SRV_REV $SRV_ENVS $SRV_OWN $SRV_ALLOW 2>/dev/null' EXIT
for _ in $(seq 50); do
	grep -q listening "$W/server.log" 2>/dev/null && grep -q listening "$W/server-rsa.log" 2>/dev/null &&
		grep -q listening "$W/server-rsa2.log" 2>/dev/null &&
		grep -q listening "$W/server-rev.log" 2>/dev/null && grep -q listening "$W/server-envs.log" 2>/dev/null &&
		grep -q listening "$W/server-own.log" 2>/dev/null &&
		grep -q listening "$W/server-allow.log" 2>/dev/null && break
	sleep 0.1
done

result() { # name ok(0/1) detail-file
	if [ "$2" = 0 ]; then
		echo "PASS tls/$1"
	else
		echo "FAIL tls/$1"
		[ -n "${3:-}" ] && [ -f "$3" ] && sed 's/^/    | /' "$3" | tail -8
	fi
}

# s_client with a line of data; the echo must come back. args: name, extra s_client args...
sclient_echo() {
	local name=$1
	shift
	local tok="tok-$name-$RANDOM"
	(echo "$tok"; sleep 1) | timeout 10 openssl s_client -tls1_3 -connect "127.0.0.1:$PORT" \
		-CAfile "$W/ca.pem" -cert "$W/dev.pem" -key "$W/dev.key" -quiet -no_ign_eof "$@" >"$W/$name.out" 2>&1
	grep -q "^$tok\$" "$W/$name.out"
	result "$name" $? "$W/$name.out"
}

# s_client must be refused with an alert. args: name, alert text, s_client args...
sclient_refused() {
	local name=$1 alert=$2
	shift 2
	(echo "tok"; sleep 1) | timeout 10 openssl s_client -connect "127.0.0.1:$PORT" \
		-CAfile "$W/ca.pem" -quiet -no_ign_eof "$@" >"$W/$name.out" 2>&1
	! grep -q "^tok\$" "$W/$name.out" && grep -qi "$alert" "$W/$name.out"
	result "$name" $? "$W/$name.out"
}

sclient_echo echo-aes128gcm -ciphersuites TLS_AES_128_GCM_SHA256
sclient_echo echo-chacha20 -ciphersuites TLS_CHACHA20_POLY1305_SHA256
sclient_echo group-x25519 -groups X25519
sclient_echo group-p256 -groups P-256

# KeyUpdate from the client: `k` (update), then `K` (update and ask us to update too).
name=key-update
(echo before-ku; sleep 0.4; echo k; sleep 0.4; echo after-ku; sleep 0.4; echo K; sleep 0.4
 echo after-ku2; sleep 0.8) | timeout 10 openssl s_client -tls1_3 -connect "127.0.0.1:$PORT" \
	-CAfile "$W/ca.pem" -cert "$W/dev.pem" -key "$W/dev.key" >"$W/$name.out" 2>&1
[ "$(grep -c KEYUPDATE "$W/$name.out")" = 2 ] && grep -q '^after-ku$' "$W/$name.out" &&
	grep -q '^after-ku2$' "$W/$name.out"
result $name $? "$W/$name.out"

sclient_refused no-client-cert "certificate required" -tls1_3
sclient_refused other-ca "unknown ca" -tls1_3 -cert "$W/other.pem" -key "$W/other.key"
sclient_refused tls12-only "protocol version" -tls1_2 -cert "$W/dev.pem" -key "$W/dev.key"
sclient_refused revoked "certificate revoked" -tls1_3 -cert "$W/revoked.pem" -key "$W/revoked.key"
sclient_refused bad-identity "access denied" -tls1_3 -cert "$W/badid.pem" -key "$W/badid.key"
sclient_refused expired "certificate expired" -tls1_3 -cert "$W/expired.pem" -key "$W/expired.key"

# Allowlist mode (the broker's tls.registry_mode = "allowlist"), connections 1..4 of its
# server in this order: dev-42 listed; dev-44 not (access_denied, reason not-registered); a
# service, never asked; dev-42 again while the list is emptied between its handshake's end and
# tls_hs_finish: refused there with access_denied.
PORT=$PORT_ALLOW sclient_echo allow-listed
PORT=$PORT_ALLOW sclient_refused allow-unlisted "access denied" -tls1_3 -cert "$W/revoked.pem" -key "$W/revoked.key"
name=allow-service
tok="tok-$name-$RANDOM"
(echo "$tok"; sleep 1) | timeout 10 openssl s_client -tls1_3 -connect "127.0.0.1:$PORT_ALLOW" -CAfile "$W/ca.pem" \
	-cert "$W/svc.pem" -key "$W/svc.key" -quiet -no_ign_eof >"$W/$name.out" 2>&1
grep -q "^$tok\$" "$W/$name.out"
result $name $? "$W/$name.out"
PORT=$PORT_ALLOW sclient_refused allow-removed-mid-handshake "access denied" -tls1_3 -cert "$W/dev.pem" -key "$W/dev.key"
name=allow-refusal-reasons
grep -q "^conn 2: handshake failed: " "$W/server-allow.log" &&
	grep -q "^tls-echo: allowlist emptied before conn 4 finished" "$W/server-allow.log" &&
	grep -q "^conn 4: identity refused: not-registered" "$W/server-allow.log"
result $name $? "$W/server-allow.log"
sclient_refused wrong-key-usage "unsupported certificate" -tls1_3 -cert "$W/serveronly.pem" -key "$W/serveronly.key"

# ---- RSA certificates -------------------------------------------------------------
# RSA server chain and RSA client under --rsa: echo works, the server signed its
# CertificateVerify with rsa_pss_rsae_sha256 (s_client: "Peer signature type: RSA-PSS",
# digest SHA256), and the server logged the RSA client's identity.
name=rsa-server-and-client
tok="tok-$name-$RANDOM"
(echo "$tok"; sleep 1) | timeout 10 openssl s_client -tls1_3 -connect "127.0.0.1:$PORT_RSA" \
	-CAfile "$W/rsaca.pem" -cert "$W/rsadev.pem" -key "$W/rsadev.key" -no_ign_eof >"$W/$name.out" 2>&1
grep -q "^$tok\$" "$W/$name.out" && grep -q "Peer signature type: RSA-PSS" "$W/$name.out" &&
	grep -q "Peer signing digest: SHA256" "$W/$name.out" &&
	grep -q "identity=dev-rsa-1 " "$W/server-rsa.log"
result $name $? "$W/$name.out"
# For RSA the server offers only rsa_pss_rsae_sha256: a client that may sign only with
# PKCS#1 v1.5 cannot use its RSA certificate, sends none: certificate_required.
sclient_refused_rsa() { # name alert s_client-args...
	local name=$1 alert=$2
	shift 2
	(echo "tok"; sleep 1) | timeout 10 openssl s_client -tls1_3 -connect "127.0.0.1:$PORT_RSA" \
		-CAfile "$W/rsaca.pem" -quiet -no_ign_eof "$@" >"$W/$name.out" 2>&1
	! grep -q "^tok\$" "$W/$name.out" && grep -qi "$alert" "$W/$name.out"
	result "$name" $? "$W/$name.out"
}
sclient_refused_rsa rsa-no-pkcs1-in-tls13 "certificate required" -cert "$W/rsadev.pem" \
	-key "$W/rsadev.key" -client_sigalgs rsa_pkcs1_sha256
# The default (ECDSA) server without --rsa: an RSA client certificate under its own CA is
# refused. Only ecdsa_secp256r1_sha256 is offered, so OpenSSL cannot sign with it and
# sends no certificate: certificate_required.
sclient_refused rsa-client-refused-when-off "certificate required" -tls1_3 \
	-cert "$W/rsaunder.pem" -key "$W/rsaunder.key"
# A 1024-bit RSA client (OpenSSL's security level lowered so it sends it) on the RSA
# server: unsupported_certificate.
sclient_refused_rsa rsa-1024-refused "unsupported certificate" -cert "$W/rsaweak.pem" \
	-key "$W/rsaweak.key" -cipher DEFAULT@SECLEVEL=0
sclient_echo after-rsa

# Python's ssl: both suites through set_ciphers is TLS 1.2-only, so it takes the default
# TLS 1.3 suite; sizes cross record and chunk boundaries; close_notify both ways;
# resumption with a ticket; a service identity; and an alert check of its own.
cat >"$W/client.py" <<'EOF'
import socket, ssl, sys, time
port, w, case = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def ctx(cert="dev"):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.minimum_version = ssl.TLSVersion.TLSv1_3
    c.load_verify_locations(w + "/ca.pem")
    if cert:
        c.load_cert_chain(w + "/" + cert + ".pem", w + "/" + cert + ".key")
    return c
def echo(t, sizes):
    for n in sizes:
        data = bytes((i * 131 + n) & 0xff for i in range(n))
        t.sendall(data)
        got = b""
        while len(got) < n:
            chunk = t.recv(65536)
            if not chunk:
                raise SystemExit("short echo")
            got += chunk
        if got != data:
            raise SystemExit("echo mismatch at %d" % n)
def conn(c, session=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=8)
    return c.wrap_socket(s, server_hostname="localhost", session=session)
def full_then_resumed():
    # A full handshake (reading lets the client take the NewSessionTicket), then a
    # resumption with that ticket, which must be accepted; the context and newest session.
    c = ctx()
    t = conn(c)
    echo(t, [10])
    sess = t.session
    t.unwrap(); t.close()
    t = conn(c, sess)
    echo(t, [10])
    if not t.session_reused:
        raise SystemExit("not resumed")
    sess = t.session if t.session else sess
    t.unwrap(); t.close()
    return c, sess
if case == "echo":
    with conn(ctx()) as t:
        echo(t, [1, 2, 100, 1500, 16383, 16384, 16385, 70000])
        t.unwrap()  # our close_notify must answer theirs
elif case == "resume":
    full_then_resumed()
elif case == "resume-revoked":
    # Then the server revokes dev's serial; the next resumption with a ticket it issued
    # must not be accepted: the server falls back to a full handshake and refuses the
    # certificate with certificate_revoked.
    c, sess = full_then_resumed()
    for _ in range(50):  # the server revokes once connection 2 is done (5 s at most)
        if "revoked after conn 2" in open(sys.argv[4]).read():
            break
        time.sleep(0.1)
    else:
        raise SystemExit("the server never revoked the serial")
    try:
        t = conn(c, sess)
        reused = t.session_reused
        echo(t, [10])
        raise SystemExit("accepted after revocation (resumed=%s)" % reused)
    except ssl.SSLError as e:
        print("refused", e.reason)
        raise SystemExit(0 if "CERTIFICATE_REVOKED" in str(e.reason) else 1)
elif case in ("service", "no-cert"):
    try:
        with conn(ctx("svc" if case == "service" else None)) as t:
            echo(t, [5])
    except ssl.SSLError as e:
        print("SSLError", e.reason)
        raise SystemExit(0 if case == "no-cert" and "CERTIFICATE_REQUIRED" in str(e.reason) else 1)
    raise SystemExit(0 if case == "service" else 1)
EOF
for c in echo resume service no-cert; do
	timeout 20 $PY "$W/client.py" "$PORT" "$W" $c >"$W/py-$c.out" 2>&1
	result "python-$c" $? "$W/py-$c.out"
done
# One ticket key set for two envs: the ticket env 1 issued resumes on env 0; with a
# secret each, the same client gets a full handshake on env 0 instead (the control).
timeout 20 $PY "$W/client.py" "$PORT_ENVS" "$W" resume >"$W/py-resume-envs.out" 2>&1
result resume-other-env $? "$W/py-resume-envs.out"
timeout 20 $PY "$W/client.py" "$PORT_OWN" "$W" resume >"$W/py-resume-own.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "not resumed" "$W/py-resume-own.out" && grep -q "^conn 2: established" "$W/server-own.log"
result resume-own-secrets-full $? "$W/py-resume-own.out"
# Revocation reaches a resumed session: the third connection offered its ticket and was
# refused with certificate_revoked (its own alert, read by the client), and the server's
# third connection ended in a failed handshake after the revocation.
timeout 30 $PY "$W/client.py" "$PORT_REV" "$W" resume-revoked "$W/server-rev.log" >"$W/py-resume-revoked.out" 2>&1 &&
	grep -q "^refused .*CERTIFICATE_REVOKED" "$W/py-resume-revoked.out" &&
	grep -q "^conn 2: established identity=dev-42" "$W/server-rev.log" &&
	grep -q "^conn 3: handshake failed: " "$W/server-rev.log" &&
	! grep -q "^conn 3: established" "$W/server-rev.log"
result resume-revoked $? "$W/py-resume-revoked.out"
# A certificate valid only from 30 s from now: refused by the server without clock skew
# (its alert says why), accepted by the one with tls.clock_skew_s = 60. One that starts in
# 2 minutes is refused by both. The certificates are made with Python's cryptography.
"$PY" - "$W" <<'PYCERT'
import datetime, sys
from cryptography import x509
from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
w = sys.argv[1]
ca_key = serialization.load_pem_private_key(open(w + "/ca.key", "rb").read(), None)
ca = x509.load_pem_x509_certificate(open(w + "/ca.pem", "rb").read())
now = datetime.datetime.now(datetime.timezone.utc)
for name, start, serial in (("soon", 30, 0x5001), ("later", 120, 0x5002)):
    key = ec.generate_private_key(ec.SECP256R1())
    crt = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dev-50%s" % name[0])]))
           .issuer_name(ca.subject).public_key(key.public_key()).serial_number(serial)
           .not_valid_before(now + datetime.timedelta(seconds=start)).not_valid_after(now + datetime.timedelta(days=2))
           .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), True)
           .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)
           .sign(ca_key, hashes.SHA256()))
    open(w + "/" + name + ".pem", "wb").write(crt.public_bytes(serialization.Encoding.PEM))
    open(w + "/" + name + ".key", "wb").write(key.private_bytes(serialization.Encoding.PEM,
         serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
PYCERT
skew_try() { # PORT CERT: "ok" when the echo came back, else the client's complaint
	local tok="skew-$RANDOM"
	(echo "$tok"; sleep 1) | timeout 10 openssl s_client -tls1_3 -connect "127.0.0.1:$1" -CAfile "$W/ca.pem" \
		-cert "$W/$2.pem" -key "$W/$2.key" -quiet -no_ign_eof >"$W/skew-$1-$2.out" 2>&1
	if grep -q "^$tok\$" "$W/skew-$1-$2.out"; then echo ok; else grep -o "alert [a-z ]*" "$W/skew-$1-$2.out" | head -n 1; fi
}
a=$(skew_try "$PORT" soon) b=$(skew_try "$PORT_REV" soon) c=$(skew_try "$PORT_REV" later)
[ "$a" != ok ] && [ -n "$a" ] && [ "$b" = ok ] && [ "$c" != ok ] && [ -n "$c" ]
result clock-skew $? "$W/skew-$PORT_REV-soon.out"
echo "    clock skew: valid in 30 s: without skew '$a', with 60 s '$b'; valid in 120 s with 60 s: '$c'"
grep -q "identity=backend-1 kind=service" "$W/server.log"
result service-identity $? "$W/server.log"

# The refusal cases below read their own connection's outcome: the client prints the
# source port it connected from, the server's "conn N: accepted from 127.0.0.1:PORT"
# line names N, and only that connection's lines ("conn N: ...") are read, after its
# "conn N: done" (bounded). Lines other connections wrote cannot pass them.
conn_no() { # CLIENT-OUTPUT-FILE: the server's N for the port the client printed
	local p
	p=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$1")
	[ -n "$p" ] && sed -n "s/^conn \([0-9]*\): accepted from 127\.0\.0\.1:$p\$/\1/p" "$W/server.log" | head -n 1
}
conn_lines() { # N: that connection's server lines, once it is done (5 s at most)
	for _ in $(seq 50); do grep -q "^conn $1: done;" "$W/server.log" && break; sleep 0.1; done
	grep "^conn $1: " "$W/server.log"
}
idle_server() { # until every accepted connection is done (5 s at most)
	for _ in $(seq 50); do
		[ "$(grep -c ': accepted from ' "$W/server.log")" = "$(grep -c ': done;' "$W/server.log")" ] && return
		sleep 0.1
	done
}

# A raw client for both: connects, prints its source port, sends stdin, then reads until
# the server closes (FIN or RST) or its own timeout (argument 2, seconds) runs out, and
# prints which came first, the time from the start of connect to it (the server cannot
# have accepted earlier) and the bytes the server sent.
cat >"$W/raw.py" <<'EOF'
import socket, sys, time
t0 = time.monotonic()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=float(sys.argv[2]))
print("port", s.getsockname()[1], flush=True)
s.sendall(sys.stdin.buffer.read())
n, how = 0, "closed"
try:
    while True:
        got = s.recv(4096)
        if not got:
            break
        n += len(got)
except ConnectionResetError:
    how = "reset"
except socket.timeout:
    how = "client-timeout"
print("server %s after %.3f s (%d bytes from the server)" % (how, time.monotonic() - t0, n))
EOF

# Hand-built first flights (tests/smoke/lib/tls-flights.py): every refusal answers with the
# alert RFC 8446 names, read by that client as the first record it gets, and the server
# logs that connection's failed handshake. A supported group offered without its share gets
# a HelloRetryRequest, a good ClientHello a ServerHello (the controls).
for case in x25519-zero:47 x25519-short:47 p256-off-curve:47 p256-infinity:47 no-common-group:40 \
	oversized-record:22 garbage-handshake:10 content-type-zero:10 empty-alert:50 needs-hrr:hrr good:serverhello; do
	name=flight-${case%%:*} want=${case##*:}
	idle_server
	timeout 10 $PY "$(dirname "$0")/lib/tls-flights.py" 127.0.0.1 "$PORT" "${case%%:*}" >"$W/$name.out" 2>&1
	got=$(tail -n 1 "$W/$name.out")
	n=$(conn_no "$W/$name.out")
	case $want in
	hrr | serverhello) [ "$got" = "$want" ] ;;
	*) [ "$got" = "alert $want" ] && [ -n "$n" ] && conn_lines "$n" >"$W/$name.conn" &&
		grep -q "^conn $n: handshake failed: " "$W/$name.conn" ;;
	esac
	result "$name" $? "$W/$name.out"
done

# Hand-built second flights (tls-flights.py second-*): the client completes the key schedule
# (RFC 8446 7.1), verifies the server's Finished, then sends a second flight no client may
# send. The answer must be the alert RFC 8446 names, sealed under the server's application
# traffic key (the key a client reads with after the server's Finished, 7.2): a plaintext
# alert, one under the handshake key, a close or a timeout all fail. record-at-limit (a
# ciphertext of exactly 2^14 + 256 bytes that does not open), content-overflow (one that
# opens to 2^14 + 1 bytes of content) and protected-ccs need our pinned mbedTLS patches
# (tools/deps/patches/mbedtls-3.6.6-{record-limit,protected-ccs}.patch). The controls, on each
# suite (@1303: only ChaCha20-Poly1305 offered), complete the handshake with the dev
# certificate and get their data echoed, so each refusal differs from a good flight only
# where its name says.
for case in good:echo good@1303:echo bad-ccs:10 finished-plaintext:10 finished-bad-tag:20 \
	finished-bad-tag@1303:20 finished-wrong-mac:51 inner-type-zero:10 empty-alert:50 \
	empty-alert-plaintext:50 garbage-handshake:10 garbage-certificate:50 record-type-zero:10 \
	record-overflow:22 record-at-limit:20 content-overflow:22 protected-ccs:10; do
	c=${case%%:*} want=${case##*:} suite=
	[ "$c" != "${c%@*}" ] && suite=${c##*@} c=${c%@*}
	name=flight2-$c${suite:+-$suite}
	idle_server
	SUITE=$suite CLIENT_CERT=$W/dev.pem CLIENT_KEY=$W/dev.key timeout 10 \
		$PY "$(dirname "$0")/lib/tls-flights.py" 127.0.0.1 "$PORT" "second-$c" >"$W/$name.out" 2>&1
	got=$(tail -n 1 "$W/$name.out")
	n=$(conn_no "$W/$name.out")
	if [ -n "$suite" ] && ! grep -q "^suite 0x$suite\$" "$W/$name.out"; then
		false
	elif [ "$want" = echo ]; then
		[ "$got" = echo ] && [ -n "$n" ] && conn_lines "$n" >"$W/$name.conn" &&
			grep -q "^conn $n: established identity=dev-42 " "$W/$name.conn"
	else
		[ "$got" = "alert $want" ] && [ -n "$n" ] && conn_lines "$n" >"$W/$name.conn" &&
			grep -q "^conn $n: handshake failed: " "$W/$name.conn"
	fi
	result "$name" $? "$W/$name.out"
done

# A signature_algorithms list of 300 schemes whose only usable one comes last is served
# (mbedTLS keeps 19 received schemes; our pinned patch keeps only usable ones in TLS 1.3 too).
name=flight2-good-300-sigalgs
idle_server
SIGALGS_BEFORE=300 CLIENT_CERT=$W/dev.pem CLIENT_KEY=$W/dev.key timeout 10 \
	$PY "$(dirname "$0")/lib/tls-flights.py" 127.0.0.1 "$PORT" second-good >"$W/$name.out" 2>&1
n=$(conn_no "$W/$name.out")
[ "$(tail -n 1 "$W/$name.out")" = echo ] && [ -n "$n" ] && conn_lines "$n" >"$W/$name.conn" &&
	grep -q "^conn $n: established identity=dev-42 " "$W/$name.conn"
result "$name" $? "$W/$name.out"

# Real-world sizes. ClientHellos of exactly the limit are served (16,384 bytes by default,
# in two records; 8,192 on the server given --max-hello 8192) and one byte more is refused
# with illegal_parameter. The long RSA-4096 chain (leaf + 3 intermediates, over the 4 KiB
# mbedTLS took before) is accepted at a limit of its exact size and refused with
# access_denied (a policy limit) one byte below it.
for case in "$PORT:16384:serverhello" "$PORT:16385:alert 47" "$PORT_REV:8192:serverhello" "$PORT_REV:8193:alert 47"; do
	IFS=: read -r p n want <<<"$case"
	name=hello-$n-on-$([ "$p" = "$PORT" ] && echo default || echo 8k)
	got=$(HELLO_BYTES=$n timeout 10 $PY "$(dirname "$0")/lib/tls-flights.py" 127.0.0.1 "$p" big-hello 2>&1 | tail -n 1)
	[ "$got" = "$want" ]
	result "$name" $? /dev/null
	[ "$got" = "$want" ] || echo "    $name: got '$got', want '$want'"
done
long_chain() { # PORT NAME: the echo back, or the client's alert
	local tok="chain-$RANDOM"
	(echo "$tok"; sleep 1) | timeout 10 openssl s_client -tls1_3 -connect "127.0.0.1:$1" -CAfile "$W/rsaca.pem" \
		-cert "$W/rsalong.pem" -key "$W/rsalong.key" -cert_chain "$W/rsalong-chain.pem" -quiet -no_ign_eof \
		>"$W/$2.out" 2>&1
	if grep -q "^$tok\$" "$W/$2.out"; then echo ok; else grep -o "alert [a-z ]*" "$W/$2.out" | head -n 1; fi
}
r=$(long_chain "$PORT_RSA" chain-at-limit)
[ "$r" = ok ]
result chain-at-limit $? "$W/chain-at-limit.out"
r2=$(long_chain "$PORT_RSA2" chain-over-limit)
[ "$r2" = "alert access denied" ]
result chain-over-limit $? "$W/chain-over-limit.out"
echo "    chain: RSA-4096 leaf + 3 intermediates, $CHAIN_BYTES bytes of DER: at the limit '$r', one byte over '$r2'"

# Garbage instead of a ClientHello: the server refuses that connection (its own "handshake
# failed" line), closes it before the client's 4 s timeout, and keeps serving.
name=garbage
idle_server
(printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n'; head -c 200 /dev/urandom) |
	timeout 6 $PY "$W/raw.py" "$PORT" 4 >"$W/$name.out" 2>&1
n=$(conn_no "$W/$name.out")
[ -n "$n" ] && conn_lines "$n" >"$W/$name.conn" &&
	grep -q "^conn $n: handshake failed: " "$W/$name.conn" &&
	! grep -q "^conn $n: established" "$W/$name.conn" &&
	grep -q "^server \(closed\|reset\) after " "$W/$name.out"
result $name $? "$W/$name.out"
[ -s "$W/$name.conn" ] && sed 's/^/    server: /' "$W/$name.conn" | grep -v ': done;' | tail -n 2
sclient_echo after-garbage

# Stalling mid-handshake: half a ClientHello, then silence. The server, not the client,
# ends it: it closes first, HS_TIMEOUT_MS after the connect and not before (measured by
# the client from connect to the server's FIN or RST, so a server that closes early or
# never fails here), logs that connection as "timed out (handshake)", frees the handshake
# (checked by no-leak below) and keeps serving.
name=stall
idle_server
printf '\026\003\001\001\000\001\000\000\374\003\003' |
	timeout $((HS_TIMEOUT_MS / 1000 + 10)) $PY "$W/raw.py" "$PORT" $((HS_TIMEOUT_MS / 1000 + 5)) \
	>"$W/$name.out" 2>&1
n=$(conn_no "$W/$name.out")
ms=$(sed -n 's/^server \(closed\|reset\) after \([0-9.]*\) s .*$/\2/p' "$W/$name.out" |
	awk '{ printf "%d", $1 * 1000 }')
[ -n "$n" ] && conn_lines "$n" >"$W/$name.conn" &&
	grep -q "^conn $n: timed out (handshake) after " "$W/$name.conn" &&
	[ -n "$ms" ] && [ "$ms" -ge "$HS_TIMEOUT_MS" ] && [ "$ms" -le $((HS_TIMEOUT_MS + STALL_SLACK_MS)) ]
result $name $? "$W/$name.out"
[ -s "$W/$name.conn" ] && sed 's/^/    server: /' "$W/$name.conn" | grep -v ': done;' | tail -n 2
echo "    stall: the server closed ${ms:-?} ms after connect (timeout $HS_TIMEOUT_MS ms, at most $STALL_SLACK_MS ms later)"
sclient_echo after-stall

# Every connection gave back all its handshake memory (live bytes back at the baseline).
name=no-leak
base=$(grep -o 'live=[0-9]*' "$W/server.log" | head -1)
[ -n "$base" ] && ! grep -o 'live=[0-9]*' "$W/server.log" | grep -qv "^$base\$" &&
	! grep 'in_flight=' "$W/server.log" | grep -qv 'in_flight=0$'
result $name $? "$W/server.log"

name=rsa-no-leak
base=$(grep -o 'live=[0-9]*' "$W/server-rsa.log" | head -1)
[ -n "$base" ] && ! grep -o 'live=[0-9]*' "$W/server-rsa.log" | grep -qv "^$base\$" &&
	! grep 'in_flight=' "$W/server-rsa.log" | grep -qv 'in_flight=0$'
result $name $? "$W/server-rsa.log"

kill $SRV $SRV_RSA $SRV_RSA2 $SRV_REV $SRV_ENVS $SRV_OWN $SRV_ALLOW 2>/dev/null
wait $SRV $SRV_RSA $SRV_RSA2 $SRV_REV $SRV_ENVS $SRV_OWN $SRV_ALLOW 2>/dev/null
if grep -q "ERROR: AddressSanitizer\|runtime error" "$W/server.log" "$W/server-rsa.log" "$W/server-rsa2.log" "$W/server-rev.log" \
	"$W/server-envs.log" "$W/server-own.log"; then
	result sanitizers 1 "$W/server.log"
else
	result sanitizers 0
fi
exit 0
