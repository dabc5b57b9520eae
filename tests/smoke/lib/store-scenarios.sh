# SPDX-License-Identifier: MIT
# Sourced by tests/smoke/hosted-store.sh and tests/smoke/x86_64-store.sh: the storage
# scenarios both run with real clients against a broker that is killed and started again
# on the same disk, written once. The sourcing script supplies the transport:
#   pass NAME [DETAIL] / fail NAME [DETAIL]   one result line
#   broker_start DISK        boot the broker on disk file DISK; 0 once it serves (its
#                            console output for this boot in the file named by $console)
#   broker_kill              SIGKILL (the process or QEMU): nothing is flushed or closed
#   broker_stop              the transport's cleanest stop (SIGTERM)
#   client ARGS...           lib/mqtt-client.py against the broker (bounded, waits)
#   client_bg OUT ARGS...    the same in the background, pid in client_pid
#   pub NAME ARGS...         mosquitto_pub as NAME
# and the variables tmp (scratch directory), load_s (seconds of QoS 1 load before the
# kill), queue_len (offline_queue_len of the image's configuration), disktool (the
# urmqtt-disk tool). Every wait is bounded.
#
# Scenarios (names as passed to pass/fail):
#   store-format           a blank disk: formatted, database created
#   persist-setup          a persistent session subscribed at QoS 1, a retained message
#   kill-under-load        QoS 1 publishes to the offline session while the broker is
#                          SIGKILLed; how many were acknowledged
#   store-reopen           the same disk at the next boot: ours, database opened and checked
#   acked-survive-kill     every acknowledged message the session's queue still holds
#                          (offline_queue_policy drop_oldest: the newest queue_len) is
#                          delivered after the restart, with session-present 1
#   retained-survives      the retained message, to a new subscriber after the restart
#   subscription-survives  a message published after the restart reaches the session
#                          through the subscription restored from disk
#   stop-keeps-queued      a message queued just before a stop is there after the next boot
#   telemetry-query        40 QoS 1 telemetry PUBLISHes acknowledged, then the online query
#                          ($telemetry/query as ops) returns every one of them
#   telemetry-offline      the broker killed; urmqtt-disk telemetry reads the same 40 back
#                          from the disk file (CSV)
#   foreign-untouched      a disk holding an ext4 file system: the broker says what it found,
#                          serves without persistence, and the disk's bytes are unchanged

store_console_has() { tr -d '\r' <"$console" | grep -aE "$1" | head -n 1; }

store_scenarios() {
	local disk=$tmp/store.img line out n_acked
	rm -f "$disk"
	truncate -s 256M "$disk" || { fail store-format "cannot create $disk"; return; }

	if ! broker_start "$disk"; then
		fail store-format "the broker did not start on a blank disk"
		return
	fi
	if line=$(store_console_has "blank disk formatted; database created") && [ -n "$line" ]; then
		pass store-format "${line##*store: }"
	else
		fail store-format "no 'blank disk formatted; database created' on the console"
	fi

	out=$(client persist-sub dev-1 'devices/dev-1/cmd/#')
	local ret
	ret=$(pub ops -t devices/dev-1/cmd/config -m cfg-v1 -q 1 -r 2>&1)
	if [ "$out" = "connack 0 sp 0 suback 0x01" ] && grep -q "received PUBACK" <<<"$ret"; then
		pass persist-setup "$out; retained PUBACKed"
	else
		fail persist-setup "$out / $(tr '\n' ' ' <<<"$ret")"
	fi

	# QoS 1 load to the offline session, then SIGKILL while it runs.
	: >"$tmp/acked.txt"
	# 700 msgs/s: under the profile's rate limit (mqtt.rate_msgs_per_s 1000), so the load runs
	# until the kill (over it, a QoS 1 PUBLISH closes the connection unacknowledged).
	MQTT_CLIENT_TIMEOUT=5 client_bg "$tmp/load.out" acked-pub ops devices/dev-1/cmd/load 1000000 "$tmp/acked.txt" 700
	local lp=$client_pid i
	for ((i = 0; i < 600 && $(wc -l <"$tmp/acked.txt") < 20; i++)); do sleep 0.1; done
	sleep "$load_s"
	broker_kill
	for ((i = 0; i < 150 && $(kill -0 "$lp" 2>/dev/null && echo 1 || echo 0) == 1; i++)); do sleep 0.1; done
	kill -TERM "$lp" 2>/dev/null
	wait "$lp" 2>/dev/null
	n_acked=$(wc -l <"$tmp/acked.txt")
	if [ "$n_acked" -gt 0 ] && grep -q "^acked $n_acked ended" "$tmp/load.out"; then
		pass kill-under-load "$n_acked QoS 1 messages acknowledged before the SIGKILL after ${load_s}s of load"
	else
		fail kill-under-load "acked file $n_acked lines / $(tr '\n' ' ' <"$tmp/load.out")"
	fi

	if ! broker_start "$disk"; then
		for t in store-reopen acked-survive-kill retained-survives subscription-survives stop-keeps-queued; do
			fail $t "the broker did not start again on its disk"
		done
	else
		if line=$(store_console_has "our disk; database opened and checked") && [ -n "$line" ]; then
			pass store-reopen "${line##*store: }"
		else
			fail store-reopen "no 'our disk; database opened and checked' on the console"
		fi

		out=$(client drain dev-1 "$tmp/acked.txt" 3 "$queue_len")
		if [[ $out =~ ^connack\ 0\ sp\ 1\ received\ ([0-9]+)\ .*\ missing\ 0$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
			pass acked-survive-kill "$out"
		else
			fail acked-survive-kill "$out"
		fi

		out=$(client retained-get ops devices/dev-1/cmd/config)
		if [ "$out" = "retained cfg-v1" ]; then pass retained-survives; else fail retained-survives "$out"; fi

		echo after-restart >"$tmp/after.txt"
		ret=$(pub ops -t devices/dev-1/cmd/after -m after-restart -q 1 2>&1)
		out=$(client drain dev-1 "$tmp/after.txt" 3 "$queue_len")
		if grep -q "received PUBACK" <<<"$ret" && [[ $out =~ ^connack\ 0\ sp\ 1\ received\ 1\ .*\ missing\ 0$ ]]; then
			pass subscription-survives "$out"
		else
			fail subscription-survives "$out / $(tr '\n' ' ' <<<"$ret")"
		fi

		echo before-stop >"$tmp/stop.txt"
		ret=$(pub ops -t devices/dev-1/cmd/stop -m before-stop -q 1 2>&1)
		broker_stop
		if ! grep -q "received PUBACK" <<<"$ret"; then
			fail stop-keeps-queued "publish: $(tr '\n' ' ' <<<"$ret")"
		elif ! broker_start "$disk"; then
			fail stop-keeps-queued "the broker did not start a third time"
		else
			out=$(client drain dev-1 "$tmp/stop.txt" 3 "$queue_len")
			if [[ $out =~ ^connack\ 0\ sp\ 1\ received\ 1\ .*\ missing\ 0$ ]]; then
				pass stop-keeps-queued "$out"
			else
				fail stop-keeps-queued "$out"
			fi
			broker_stop
		fi
	fi

	# The telemetry log: acknowledged telemetry read back online and offline.
	if ! broker_start "$disk"; then
		fail telemetry-query "the broker did not start on its disk again"
		fail telemetry-offline "the broker did not start on its disk again"
	else
		: >"$tmp/tacked.txt"
		out=$(client acked-pub dev-2 devices/dev-2/telemetry 40 "$tmp/tacked.txt" 200)
		local q
		q=$(client tquery ops "id=smoke;identity=dev-2")
		broker_kill
		local rows
		rows=$(grep -c '"identity": "dev-2"' <<<"$q")
		if [ "$(wc -l <"$tmp/tacked.txt")" = 40 ] && [ "$rows" = 40 ] &&
			grep -q '"end": true, "records": 40, "matched": 40' <<<"$q" &&
			grep -q '"payload": "m-40"' <<<"$q"; then
			pass telemetry-query "40 QoS 1 telemetry records acknowledged; the query as ops returned all 40, m-1..m-40"
		else
			fail telemetry-query "$out / $rows rows / $(tail -n 1 <<<"$q")"
		fi
		local offline
		offline=$("$disktool" telemetry "$disk" --identity dev-2 --format csv 2>"$tmp/disk.err")
		if [ "$(grep -c ',"dev-2",device,"devices/dev-2/telemetry",1,' <<<"$offline")" = 40 ] &&
			grep -q '"m-1"$' <<<"$offline" && grep -q '"m-40"$' <<<"$offline"; then
			pass telemetry-offline "urmqtt-disk telemetry: 40 records of dev-2 read back from the image; $(sed 's/^urmqtt-disk: //' "$tmp/disk.err")"
		else
			fail telemetry-offline "$(head -c 300 <<<"$offline") / $(cat "$tmp/disk.err")"
		fi
	fi

	# A disk that is somebody else's: never written.
	local foreign=$tmp/foreign.img before after
	rm -f "$foreign"
	truncate -s 64M "$foreign"
	if ! mkfs.ext4 -q -F -L notours "$foreign" >/dev/null 2>&1; then
		fail foreign-untouched "mkfs.ext4 failed"
		return
	fi
	before=$(sha256sum <"$foreign")
	if ! broker_start "$foreign"; then
		fail foreign-untouched "the broker did not start with a foreign disk attached"
		return
	fi
	line=$(store_console_has "is never written")
	local off
	off=$(store_console_has "serving WITHOUT persistence")
	ret=$(pub ops -t devices/dev-1/cmd/x -m x -q 1 2>&1)
	broker_stop
	after=$(sha256sum <"$foreign")
	if [ -n "$line" ] && [ -n "$off" ] && [ "$before" = "$after" ] && grep -q "received PUBACK" <<<"$ret"; then
		pass foreign-untouched "${line##*store: }; without persistence; sha256 unchanged; still serving"
	else
		fail foreign-untouched "console: '${line:-no refusal line}' '${off:-no without-persistence line}'; sha256 $([ "$before" = "$after" ] && echo same || echo CHANGED); publish: $(tr '\n' ' ' <<<"$ret")"
	fi
}
