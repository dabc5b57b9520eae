#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A small production-style PKI with the openssl CLI, all ECDSA P-256, for tests, `make
# reproduce` and as a worked example of docs/DEPLOY.md step 1 (which explains each command):
#   ca.crt ca.key          the CA the image trusts (CN "urMQTT site CA <stamp>")
#   server.crt server.key  the broker's certificate: SAN DNS:NAME (default mqtt.example.net),
#                          plus any further SANs given
#   device-1..N            device certificates (CN device-<n>), N default 2
#   revoked.serials        empty
# With PKI_INTERMEDIATE=1 the server's certificate is issued by an intermediate CA (int.crt,
# int.key: CN "urMQTT site server CA <stamp>", issued by ca.crt) and server.crt holds the
# chain: the server's certificate, then int.crt. Devices are issued by ca.crt either way.
# Existing files are never overwritten; the directory must not exist or be empty.
# Usage: mkpki.sh DIR [N_DEVICES] [SERVER_NAME] [EXTRA_SAN...]   (EXTRA_SAN like IP:10.0.0.5)
set -euo pipefail
dir=$1 n=${2:-2} cn=${3:-mqtt.example.net}
shift $(($# < 3 ? $# : 3))
san="DNS:$cn"
for s in "$@"; do san="$san,$s"; done
mkdir -p "$dir"
[ -z "$(ls -A "$dir")" ] || { echo "mkpki: $dir is not empty" >&2; exit 1; }
cd "$dir"
umask 077
ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ec ca.key
openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=urMQTT site CA $(date -u +%Y%m%d%H%M%S)" \
	-addext "basicConstraints=critical,CA:TRUE,pathlen:${PKI_INTERMEDIATE:+1}${PKI_INTERMEDIATE:-0}" \
	-addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.crt 2>/dev/null
leaf() { # name subject ext [issuer]
	local by=${4:-ca}
	ec "$1.key"
	printf '%b\n' "$3" >"$1.ext"
	openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
	openssl x509 -req -in "$1.csr" -CA "$by.crt" -CAkey "$by.key" -days 825 -sha256 \
		-set_serial "0x$(openssl rand -hex 12)" -extfile "$1.ext" -out "$1.crt" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}
ku="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature"
if [ -n "${PKI_INTERMEDIATE:-}" ]; then
	leaf int "/CN=urMQTT site server CA $(date -u +%Y%m%d%H%M%S)" \
		"basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign"
	leaf server "/CN=$cn" "$ku\nextendedKeyUsage=serverAuth\nsubjectAltName=$san" int
	cat int.crt >>server.crt
else
	leaf server "/CN=$cn" "$ku\nextendedKeyUsage=serverAuth\nsubjectAltName=$san"
fi
for i in $(seq 1 "$n"); do leaf "device-$i" "/CN=device-$i" "$ku\nextendedKeyUsage=clientAuth"; done
: >revoked.serials
chmod 644 ./*.crt revoked.serials
echo "mkpki: $(pwd): ca, ${PKI_INTERMEDIATE:+an intermediate CA, }server ($san), device-1..device-$n"
