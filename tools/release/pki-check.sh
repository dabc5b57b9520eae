#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks a production PKI before a release embeds it (tools/release, ADR-074) and refuses the
# development one. The directory must hold ca.crt (the CA every device certificate is checked
# against), server.crt (the server's chain: its certificate first, then the intermediate CAs
# between it and ca.crt, at most 3, ca.crt itself left out) and server.key (its ECDSA P-256
# key: the image's TLS signs with P-256 only); revoked.serials (hex serials, one a line) is
# optional. Refused, each with its reason:
#   - a CA whose subject is the development CA's ("urMQTT development CA", tools/certs/mkcerts.sh);
#   - a CA or server key equal to one of a development PKI in the source tree (every
#     */dev/certs/ under SRC/build and under each extra directory given);
#   - a PKI directory inside such a development PKI;
#   - a server chain that does not verify against ca.crt through its own intermediates, or
#     whose first certificate does not match the key, holds more than 3 intermediates, a
#     self-signed certificate or a certificate that is not a CA after the first; a key that
#     is not P-256.
# Prints one line per refusal on stderr and exits 1; on success prints the CA's SHA-256
# fingerprint. Usage: pki-check.sh PKI_DIR SRC [EXTRA_BUILD_DIR...]
set -euo pipefail
pki=$1 src=$2
shift 2
bad=0
refuse() { echo "release: refused: $*" >&2; bad=1; }
for f in ca.crt server.crt server.key; do
	[ -f "$pki/$f" ] || { echo "release: $pki/$f missing (a PKI directory holds ca.crt, server.crt, server.key; docs/DEPLOY.md)" >&2; exit 1; }
done
openssl x509 -in "$pki/ca.crt" -noout 2>/dev/null || { echo "release: $pki/ca.crt is not a PEM certificate" >&2; exit 1; }
openssl x509 -in "$pki/server.crt" -noout 2>/dev/null || { echo "release: $pki/server.crt is not a PEM certificate" >&2; exit 1; }
openssl pkey -in "$pki/server.key" -noout 2>/dev/null || { echo "release: $pki/server.key is not an unencrypted PEM private key" >&2; exit 1; }

spki() { openssl x509 -in "$1" -noout -pubkey 2>/dev/null | openssl pkey -pubin -outform DER 2>/dev/null | sha256sum | cut -d' ' -f1; }
keyspki() { openssl pkey -in "$1" -pubout -outform DER 2>/dev/null | sha256sum | cut -d' ' -f1; }

ca_subject=$(openssl x509 -in "$pki/ca.crt" -noout -subject -nameopt RFC2253)
case $ca_subject in
*"urMQTT development CA"*) refuse "$pki/ca.crt is the development CA ($ca_subject): a release embeds your own CA (docs/DEPLOY.md, step 1)" ;;
esac
real_pki=$(realpath "$pki")
ca_spki=$(spki "$pki/ca.crt")
srv_spki=$(keyspki "$pki/server.key")
while IFS= read -r devca; do
	dev=$(dirname "$devca")
	case $real_pki/ in "$(realpath "$dev")"/*) refuse "$pki is the development PKI $dev" ;; esac
	[ "$(spki "$devca")" = "$ca_spki" ] && refuse "$pki/ca.crt has the key of the development CA $devca"
	[ -f "$dev/server.key" ] && [ "$(keyspki "$dev/server.key")" = "$srv_spki" ] &&
		refuse "$pki/server.key is the development server key $dev/server.key"
done < <(find "$src/build" "$@" -maxdepth 6 -path '*/dev/certs/ca.crt' -type f 2>/dev/null | sort -u)

# The chain, one file per certificate in its order: chain-1 is the server's own.
chain=$(mktemp -d)
trap 'rm -rf "$chain"' EXIT
awk -v w="$chain" '/-----BEGIN CERTIFICATE-----/ { n++ } n { print > (w "/chain-" n ".pem") }' "$pki/server.crt"
n_certs=$(find "$chain" -name 'chain-*.pem' | wc -l)
: >"$chain/untrusted.pem"
for ((i = 2; i <= n_certs; i++)); do
	c=$chain/chain-$i.pem
	what="certificate $i of $pki/server.crt ($(openssl x509 -in "$c" -noout -subject -nameopt RFC2253 2>/dev/null))"
	[ "$(openssl x509 -in "$c" -noout -subject 2>/dev/null | cut -d= -f2-)" != "$(openssl x509 -in "$c" -noout -issuer 2>/dev/null | cut -d= -f2-)" ] ||
		refuse "$what is self-signed: the chain ends below ca.crt (leave the CA out)"
	openssl x509 -in "$c" -noout -ext basicConstraints 2>/dev/null | grep -q 'CA:TRUE' ||
		refuse "$what is not a CA certificate: after the server's own, the chain holds only intermediates"
	cat "$c" >>"$chain/untrusted.pem"
done
[ "$n_certs" -le 4 ] || refuse "$pki/server.crt holds $((n_certs - 1)) intermediates (at most 3)"
untrusted=()
[ "$n_certs" -gt 1 ] && untrusted=(-untrusted "$chain/untrusted.pem")
openssl verify -x509_strict -CAfile "$pki/ca.crt" "${untrusted[@]}" "$chain/chain-1.pem" >/dev/null 2>&1 ||
	refuse "$pki/server.crt does not verify against $pki/ca.crt ($({ openssl verify -CAfile "$pki/ca.crt" "${untrusted[@]}" "$chain/chain-1.pem" 2>&1 || true; } | grep -m1 -i error || echo 'see openssl verify'))"
[ "$(spki "$chain/chain-1.pem")" = "$srv_spki" ] || refuse "$pki/server.key is not the key of $pki/server.crt (its first certificate)"
openssl pkey -in "$pki/server.key" -noout -text 2>/dev/null | grep -q 'prime256v1\|P-256' ||
	refuse "$pki/server.key is not an ECDSA P-256 key (the image signs with P-256 only)"
if [ -f "$pki/revoked.serials" ] && grep -qvE '^([0-9A-Fa-f]+)?$' "$pki/revoked.serials"; then
	refuse "$pki/revoked.serials: every line must be one hexadecimal serial"
fi
[ $bad = 0 ] || exit 1
[ -f "$pki/ca.key" ] && echo "release: note: $pki/ca.key is the CA's private key; the release never reads it; keep it offline" >&2
openssl x509 -in "$pki/ca.crt" -noout -fingerprint -sha256 | cut -d= -f2
