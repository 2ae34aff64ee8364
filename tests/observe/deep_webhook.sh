#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The deep tier switched by an alert: a real Alertmanager (Debian's
# prometheus-alertmanager) routes an alert posted to it to the webhook of
# `ncclbpf observe --deep-listen`, then to that of `ncclbpf export --listen`
# (POST /deep).  Before the alert: no run-queue records below the outlier
# threshold; while it fires: records, at most the budget; after it is
# resolved: the tier off again.  Where Alertmanager is not installed the
# notifications are posted straight to the receiver, in its format.
# usage: deep_webhook.sh NCCLBPF
BIN=$1
AM=/usr/bin/prometheus-alertmanager
if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "SKIP deep_webhook: needs root and kernel BTF"
	exit 77
fi
for t in curl python3; do
	command -v $t >/dev/null || { echo "SKIP deep_webhook: $t not installed"; exit 77; }
done
T=$(mktemp -d /tmp/ncclbpf-deep.XXXXXX) || exit 1
started=""
cleanup() {
	for p in $started; do kill "$p" 2>/dev/null; done
	for p in $started; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
fail=0
freeport() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
until_ok() { # SECONDS CMD...
	n=$(($1 * 10))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}
# A job that switches threads all the time: run-queue records to send.
python3 -c '
import os, threading
r1, w1 = os.pipe(); r2, w2 = os.pipe()
def pong():
    while True:
        os.read(r1, 1); os.write(w2, b"x")
threading.Thread(target=pong, daemon=True).start()
while True:
    os.write(w1, b"x"); os.read(r2, 1)
' &
JOB=$!
started="$started $JOB"

# notify PORT STATUS: an alert to Alertmanager (which notifies PORT), or the notification itself.
am_port=""
if [ -x "$AM" ]; then
	am_port=$(freeport)
fi
start_am() { # RECEIVER_URL
	cat >"$T/am.yml" <<EOF
route: { receiver: deep, group_wait: 0s, group_interval: 1s, repeat_interval: 1h }
receivers:
  - name: deep
    webhook_configs: [ { url: '$1', send_resolved: true } ]
EOF
	rm -rf "$T/am-data"
	"$AM" --config.file="$T/am.yml" --storage.path="$T/am-data" \
		--web.listen-address="127.0.0.1:$am_port" --cluster.listen-address= --log.level=warn \
		>"$T/am.log" 2>&1 &
	AMPID=$!
	started="$started $AMPID"
	until_ok 15 curl -sf "http://127.0.0.1:$am_port/-/ready"
}
stop_am() {
	kill "$AMPID" 2>/dev/null
	wait "$AMPID" 2>/dev/null
}
notify() { # RECEIVER_URL firing|resolved
	now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
	if [ -n "$am_port" ]; then
		if [ "$2" = firing ]; then end=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%S.000Z); else end=$now; fi
		curl -sf -H 'Content-Type: application/json' "http://127.0.0.1:$am_port/api/v2/alerts" \
			-d "[{\"labels\":{\"alertname\":\"NcclbpfRunQueueP99High\",\"job\":\"deep-test\"},\"startsAt\":\"$now\",\"endsAt\":\"$end\"}]"
	else
		curl -sf -H 'Content-Type: application/json' "$1" -d "{\"version\":\"4\",\"status\":\"$2\",\"receiver\":\"deep\",\"alerts\":[{\"status\":\"$2\",\"labels\":{\"alertname\":\"NcclbpfRunQueueP99High\"}}]}"
	fi
}

# 1. observe --deep-listen: the JSON samples say when the tier was on, and what it sent.
P=$(freeport)
[ -n "$am_port" ] && { start_am "http://127.0.0.1:$P/deep" || { echo "FAIL alertmanager did not start"; exit 1; }; }
"$BIN" -j observe --pid $JOB --probes sched --outlier 100000 --interval 500 --duration 12 \
	--deep-listen "127.0.0.1:$P" --deep-budget 200 --deep-window 30 >"$T/obs.json" 2>"$T/obs.err" &
OBS=$!
started="$started $OBS"
until_ok 10 grep -q "deep tier on an alert" "$T/obs.err" || { echo "FAIL observe never listened"; cat "$T/obs.err"; exit 1; }
sleep 2
notify "http://127.0.0.1:$P/deep" firing || { echo "FAIL posting the alert"; fail=1; }
sleep 3
notify "http://127.0.0.1:$P/deep" resolved || { echo "FAIL resolving the alert"; fail=1; }
wait $OBS
[ -n "$am_port" ] && stop_am
if ! python3 - "$T/obs.json" $am_port <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
on = [x["deep"]["on"] for x in s]
runq = [sum(1 for o in x["outliers"] if o["kind"] == "runq") for x in s]
first = on.index(True) if True in on else -1
assert first > 0, "the tier never came on: %s" % on
last = len(on) - 1 - on[::-1].index(True)
assert last < len(on) - 1, "the tier stayed on after the alert resolved: %s" % on
assert sum(runq[:first]) == 0, "records before the alert: %s" % runq
assert sum(runq[first:last + 1]) > 0, "no records while the alert fired: %s" % runq
assert s[-1]["deep"]["dropped"] > 0 or sum(runq) <= 200 * 4, "over the budget: %s" % runq
print("ok   observe: deep tier on in samples %d..%d of %d, %d records, none before (%s)"
      % (first + 1, last + 1, len(s), sum(runq), "through Alertmanager" if len(sys.argv) > 2 else "posted directly"))
PY
then
	echo "FAIL observe --deep-listen"; tail -5 "$T/obs.err"; fail=1
fi

# 2. export --listen: POST /deep on the exporter's own port, records to --deep-log.
P=$(freeport)
[ -n "$am_port" ] && { start_am "http://127.0.0.1:$P/deep" || { echo "FAIL alertmanager did not start"; exit 1; }; }
"$BIN" export --observe sched --listen "127.0.0.1:$P" --deep-log "$T/deep.log" --deep-budget 200 --outlier 100000 $JOB \
	>"$T/exp.log" 2>&1 &
EXP=$!
started="$started $EXP"
until_ok 10 curl -sf "http://127.0.0.1:$P/metrics" || { echo "FAIL export never served"; cat "$T/exp.log"; exit 1; }
sleep 1
n0=$(wc -l <"$T/deep.log")
notify "http://127.0.0.1:$P/deep" firing || { echo "FAIL posting the alert to export"; fail=1; }
until_ok 10 sh -c "[ \$(wc -l <'$T/deep.log') -gt 20 ]" || { echo "FAIL export: no deep records"; fail=1; }
notify "http://127.0.0.1:$P/deep" resolved
until_ok 10 grep -q "deep tier: off" "$T/exp.log" || { echo "FAIL export: the tier never went off"; fail=1; }
sleep 1
n1=$(wc -l <"$T/deep.log")
sleep 1.5
n2=$(wc -l <"$T/deep.log")
sent=$(curl -sf "http://127.0.0.1:$P/metrics" | sed -n 's/^ncclbpf_observe_deep_records_total{outcome="sent"} //p')
[ -n "$am_port" ] && stop_am
if [ "$n0" != 0 ] || [ "$n2" != "$n1" ] || [ -z "$sent" ] || [ "$sent" -lt 20 ] || [ "$n1" -gt "$sent" ]; then
	echo "FAIL export: records before $n0, at the end $n1 then $n2, counted sent $sent"
	fail=1
elif ! head -1 "$T/deep.log" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); assert r["kind"] == "runq" and r["pid"] > 0'; then
	echo "FAIL export: a record is not JSON: $(head -1 "$T/deep.log")"
	fail=1
else
	echo "ok   export: $n1 records while the alert fired, none before or after, $sent counted sent"
fi
exit $fail
