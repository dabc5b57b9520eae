# SPDX-License-Identifier: MIT
# Sourced by tests/smoke/hosted-mqtt.sh and tests/smoke/x86_64-mqtt.sh: the MQTT scenarios
# both run with real clients, written once. The sourcing script supplies the transport:
#   pass NAME [DETAIL] / fail NAME [DETAIL]   one result line
#   client ARGS...            lib/mqtt-client.py against the broker (bounded, waits)
#   client_bg OUT ARGS...     the same in the background, output to OUT, pid in client_pid
#   sub_bg OUT NAME ARGS...   mosquitto_sub as NAME in the background, pid in sub_pid
#   pub NAME ARGS...          mosquitto_pub as NAME (-d output on stdout)
#   wait_est N                until N connections are established (then a settling pause)
#   settle                    until the broker holds no connection
#   broker_log                the broker's log so far (CR stripped): its "dp: conn N from
#                             IP: ..." lines, one per connection, say how each handshake ended
# optionally after_retained (called while the retained message is still stored; the kernel
# checks that every shard holds it), and the variables tmp (scratch directory), certs (development PKI), py (Debian's
# python3), helper (lib/mqtt-client.py, run without the transport's wrapper),
# will_polls (0.2 s polls for the will client's CONNACK) and acl_wait_s (the ACL
# scenario's subscriber timeout). Every wait here is bounded.

# cmd-to-device, telemetry-qos1, qos2, retained, will.
mqtt_scenarios_delivery() {
	local p wp
	sub_bg "$tmp/cmd.out" dev-1 -t 'devices/dev-1/cmd/#' -q 1; p=$sub_pid
	wait_est 1
	pub ops -t devices/dev-1/cmd/reboot -m now -q 1 >"$tmp/cmd.pub"
	wait "$p" 2>/dev/null
	if grep -q "^devices/dev-1/cmd/reboot now$" "$tmp/cmd.out"; then pass cmd-to-device
	else fail cmd-to-device "$(tr '\n' ' ' <"$tmp/cmd.out") / $(tr '\n' ' ' <"$tmp/cmd.pub")"; fi
	settle

	sub_bg "$tmp/tel.out" ops -t 'devices/+/telemetry' -q 1; p=$sub_pid
	wait_est 1
	pub dev-1 -t devices/dev-1/telemetry -m 't=21.5' -q 1 >"$tmp/tel.pub"
	wait "$p" 2>/dev/null
	if grep -q "received PUBACK" "$tmp/tel.pub" && grep -q "^devices/dev-1/telemetry t=21.5$" "$tmp/tel.out"; then
		pass telemetry-qos1
	else fail telemetry-qos1 "$(tr '\n' ' ' <"$tmp/tel.pub") / $(tr '\n' ' ' <"$tmp/tel.out")"; fi
	settle

	sub_bg "$tmp/q2.out" ops -d -q 2 -t 'devices/+/telemetry'; p=$sub_pid
	wait_est 1
	pub dev-2 -t devices/dev-2/telemetry -m exactly-once -q 2 >"$tmp/q2.pub"
	wait "$p" 2>/dev/null
	if grep -q "received PUBREC" "$tmp/q2.pub" && grep -q "received PUBCOMP" "$tmp/q2.pub" &&
		grep -q "PUBLISH (d0, q2" "$tmp/q2.out" && grep -q "exactly-once" "$tmp/q2.out"; then
		pass qos2
	else fail qos2 "$(tr '\n' ' ' <"$tmp/q2.pub") / $(tr '\n' ' ' <"$tmp/q2.out")"; fi

	pub dev-3 -t devices/dev-3/status -m online -r -q 1 >"$tmp/ret.pub"
	settle
	sub_bg "$tmp/ret.out" ops -t devices/dev-3/status; p=$sub_pid
	wait "$p" 2>/dev/null
	if grep -q "^devices/dev-3/status online$" "$tmp/ret.out"; then pass retained
	else fail retained "$(tr '\n' ' ' <"$tmp/ret.pub") / $(tr '\n' ' ' <"$tmp/ret.out")"; fi
	if declare -F after_retained >/dev/null; then after_retained; fi
	pub dev-3 -t devices/dev-3/status -n -r -q 1 >/dev/null # cleared: the heap comparison below
	settle

	sub_bg "$tmp/will.out" ops -t devices/dev-4/status -q 1; p=$sub_pid
	wait_est 1
	client_bg "$tmp/will.cl" will dev-4; wp=$client_pid
	for _ in $(seq "$will_polls"); do grep -q connack "$tmp/will.cl" && break; sleep 0.2; done
	kill -KILL "$wp" 2>/dev/null
	wait "$wp" 2>/dev/null
	wait "$p" 2>/dev/null
	if grep -q "connack 0" "$tmp/will.cl" && grep -q "^devices/dev-4/status gone$" "$tmp/will.out"; then
		pass will
	else fail will "$(tr '\n' ' ' <"$tmp/will.cl") / $(tr '\n' ' ' <"$tmp/will.out")"; fi
}

# The lines the broker logs when a connection's handshake ends, one per connection:
# "dp: conn N from IP: handshake refused: REASON", "... handshake timed out", "...
# identity refused: ...", "... device identity ID", ...
mqtt_hs_lines() { broker_log | grep -a "dp: conn [0-9]* from [0-9.]*: "; }

# mqtt_refusal NAME WANT REASON CASE [ARGS...]: lib/mqtt-client.py refuse CASE ARGS must
# print WANT (the broker's alert for the case, or its close), and the broker must log this
# connection's end (the one handshake line it adds meanwhile, waited for up to 10 s) as
# REASON. Anything else fails with what the client and the broker said.
mqtt_refusal() {
	local name=$1 want=$2 reason=$3 r n0 new i
	shift 3
	n0=$(mqtt_hs_lines | wc -l)
	r=$(client refuse "$@" 2>&1 | tail -n 1)
	for ((i = 0; i < 50; i++)); do
		new=$(mqtt_hs_lines | tail -n +$((n0 + 1)))
		[ -n "$new" ] && break
		sleep 0.2
	done
	new=$(sed 's/^.*dp: conn [0-9]* from [0-9.]*: //' <<<"$new")
	if [[ $r != "$want"* ]]; then
		fail "$name" "client: ${r:-no result within its timeout}; broker: ${new:-no line}"
	elif [ -z "$new" ]; then
		fail "$name" "client: $r; the broker logged no end of this handshake within 10 s"
	elif [ "$new" != "$reason" ]; then
		fail "$name" "client: $r; broker: $(tr '\n' ';' <<<"$new") (want: $reason)"
	else
		pass "$name" "$r; broker: $new"
	fi
}

# refuse-other-ca, refuse-revoked, refuse-client-id, refuse-tls12, refuse-plain,
# refuse-acl. The caller compares the broker's memory before and after.
mqtt_scenarios_refusals() {
	local r p
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/evil-ca.key" 2>/dev/null
	openssl req -x509 -new -key "$tmp/evil-ca.key" -subj "/CN=evil CA" -days 30 -out "$tmp/evil-ca.crt" \
		-addext "basicConstraints=critical,CA:TRUE" 2>/dev/null
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/evil.key" 2>/dev/null
	openssl req -new -key "$tmp/evil.key" -subj "/CN=dev-1" 2>/dev/null |
		openssl x509 -req -CA "$tmp/evil-ca.crt" -CAkey "$tmp/evil-ca.key" -days 30 -set_serial 7 \
			-out "$tmp/evil.crt" 2>/dev/null
	cat "$certs/ca.crt" "$tmp/evil-ca.crt" >"$tmp/both-ca.crt"
	# The verification failure: mbedTLS's X509_CERT_VERIFY_FAILED for both another CA and a
	# revoked certificate (the log does not tell them apart; the alert does).
	mqtt_refusal refuse-other-ca "refused alert unknown_ca " "handshake refused: unknown-ca (proto, mbedtls -0x2700)" \
		other-ca "$tmp/evil.crt" "$tmp/evil.key" "$tmp/both-ca.crt"
	mqtt_refusal refuse-revoked "refused alert certificate_revoked " \
		"handshake refused: certificate-revoked (proto, mbedtls -0x2700)" revoked

	r=$(client connack dev-1 dev-2)
	[ "$r" = "connack 5" ] && pass refuse-client-id "$r" || fail refuse-client-id "$r"

	# BAD_PROTOCOL_VERSION; plain MQTT is no TLS record: INVALID_RECORD.
	mqtt_refusal refuse-tls12 "refused alert protocol_version " \
		"handshake refused: protocol-version (proto, mbedtls -0x6e80)" tls12
	mqtt_refusal refuse-plain "refused closed " "handshake refused: malformed (proto, mbedtls -0x7200)" plain

	sub_bg "$tmp/acl.out" ops -t 'devices/dev-2/telemetry' -W "$acl_wait_s"; p=$sub_pid
	wait_est 1
	r=$(client acl)
	wait "$p" 2>/dev/null
	if [ "$r" = "suback 0x80" ] && ! grep -q forbidden "$tmp/acl.out"; then pass refuse-acl "$r"
	else fail refuse-acl "$r / $(tr '\n' ' ' <"$tmp/acl.out")"; fi
}

# mqtt_load_certs N DIR: device certificates load-1 ... load-N signed by the development
# CA (python3-cryptography, else the openssl CLI, slower).
mqtt_load_certs() {
	local n=$1 dir=$2 i
	mkdir -p "$dir"
	"$py" "$helper" - 0 "$certs" mkcerts "$n" "$dir" >/dev/null 2>&1 && return 0
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/k" 2>/dev/null
	printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >"$dir/ext"
	for i in $(seq "$n"); do
		openssl req -new -key "$dir/k" -subj "/CN=load-$i" 2>/dev/null |
			openssl x509 -req -CA "$certs/ca.crt" -CAkey "$certs/ca.key" -days 2 -set_serial $((1000 + i)) \
				-extfile "$dir/ext" -out "$dir/load-$i.crt" 2>/dev/null
		cp "$dir/k" "$dir/load-$i.key"
	done
}
