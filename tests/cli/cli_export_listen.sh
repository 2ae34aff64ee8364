#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# export --listen against slow clients: 200 connections that send half a
# request and keep it open (a slowloris, or a stuck scraper) must not keep
# the 20 scrapes that follow from being answered.  The port is the kernel's
# choice (ADDR:0), read back from the line that says where it serves.
# usage: cli_export_listen.sh NCCLBPF TMPDIR
BIN=$1 T=$2
rm -rf "$T" && mkdir -p "$T/ctl" && chmod 700 "$T/ctl" || exit 1
# An empty control directory of its own: every scrape renders no process.
export NCCLBPF_CTL_DIR=$T/ctl
"$BIN" export --listen 127.0.0.1:0 --count 20 2> "$T/err" &
P=$!
port=
for _ in $(seq 300); do
	port=$(sed -n 's|.*serving Prometheus metrics on http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/err")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] && [ "$port" != 0 ] || { echo "FAIL: no port in: $(cat "$T/err")"; kill $P; exit 1; }
python3 - "$port" <<'PY'
import socket, sys, urllib.request
port = int(sys.argv[1])
slow = []
for i in range(200):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: slow\r\n")  # never the blank line
    slow.append(s)
ok = 0
for i in range(20):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            ok += b"ncclbpf_processes 0" in r.read()
    except Exception as e:
        print("scrape %d: %s" % (i, e))
print("%d of 20 scrapes answered beside 200 slow clients" % ok)
sys.exit(0 if ok == 20 else 1)
PY
rc=$?
# The exporter ends itself after 20 scrapes; a second chance ends it anyway.
for _ in $(seq 50); do kill -0 $P 2>/dev/null || break; sleep 0.1; done
kill $P 2>/dev/null
wait $P
[ $rc = 0 ] && echo "PASS cli_export_listen" || echo "FAIL cli_export_listen"
exit $rc
