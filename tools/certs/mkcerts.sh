#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make certs: development PKI under OUT (default build/dev/certs), made with the openssl
# CLI, all ECDSA P-256. Never for production: the keys sit unencrypted on disk.
#   ca.crt/ca.key          the CA embedded in the image
#   server.crt/server.key  SAN localhost, 127.0.0.1 and 10.79.0.2 (the guest's address on
#                          the TAP of make run/run-hosted); the key is embedded in the image
#   dev-1 … dev-N          device identities (CN = dev-<n>), N = [dev] certs_devices
#   ops                    service identity: SAN URI <[tls] service_uri_prefix>ops
#   ops-b, ops-c, ops-d    more service identities (their homes spread over the cores: the
#                          members of a shared subscription on several cores, ADR-070)
#   revoked-1              a device whose serial the dev image lists as revoked
# Existing files are kept (idempotent); delete OUT to start over.
# Usage: mkcerts.sh OUT N SERVICE_URI_PREFIX
set -euo pipefail
out=${1:-build/dev/certs}; n=${2:-10}; prefix=${3:-urn:urmqtt:service:}
command -v openssl >/dev/null || { echo "certs: openssl is missing (apt-get install openssl)" >&2; exit 1; }
mkdir -p "$out"; cd "$out"
umask 077

key() { [ -f "$1.key" ] || openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }
sign() { # name subject extfile-content
	local name=$1 subj=$2 ext=$3
	[ -f "$name.crt" ] && return 0
	key "$name"
	printf '%b\n' "$ext" >"$name.ext"
	openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
	openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -days 825 -sha256 \
		-set_serial "0x$(openssl rand -hex 12)" -extfile "$name.ext" -out "$name.crt" 2>/dev/null
	rm -f "$name.csr" "$name.ext"
}

if [ ! -f ca.crt ]; then
	key ca
	openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=urMQTT development CA" \
		-addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.crt 2>/dev/null
fi
leaf_ku="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature"
# A server certificate from before the TAP address was added is signed again (same key).
if [ -f server.crt ] && ! openssl x509 -in server.crt -noout -ext subjectAltName 2>/dev/null | grep -q "IP Address:10.79.0.2"; then
	rm -f server.crt
fi
sign server "/CN=localhost" "$leaf_ku\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1,IP:10.79.0.2"
for i in $(seq 1 "$n"); do
	sign "dev-$i" "/CN=dev-$i" "$leaf_ku\nextendedKeyUsage=clientAuth"
done
for svc in ops ops-b ops-c ops-d; do
	sign "$svc" "/CN=$svc" "$leaf_ku\nextendedKeyUsage=clientAuth\nsubjectAltName=URI:${prefix}$svc"
done
sign revoked-1 "/CN=revoked-1" "$leaf_ku\nextendedKeyUsage=clientAuth"
openssl x509 -in revoked-1.crt -noout -serial | cut -d= -f2 >revoked.serials
chmod 644 ./*.crt revoked.serials
echo "  CERTS       $(pwd): ca, server, dev-1..dev-$n, ops, ops-b..ops-d, revoked-1"
