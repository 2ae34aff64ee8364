#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Every panel query of dashboards/ncclbpf.json against a real Prometheus
# server: a live emulated job (`ncclbpf sim --serve`, tuner and profiler
# of every rank), a process using the net plugin over loopback, and with
# root and kernel BTF a data-loader stand-in (O_DIRECT writes) watched by
# `ncclbpf export --observe io,sched`; each exporter is scraped every
# second by Debian's prometheus on loopback, with alerts/ncclbpf.rules.yml
# loaded.  A verifier-refused reload fires NcclbpfPolicyLoadRefused for the
# alerts panel.  Then each query ($__rate_interval = 5s, four scrapes plus
# one; $size = .*, the variable's "All") goes through /api/v1/query and
# must succeed and return at least one series with a finite, non-zero
# value (a rate of zero everywhere would hide a query that matches the
# wrong series).
# Panels that need kernel data are skipped by name without root and BTF,
# and never counted as passed.
# With KERNEL_LOAD and LIBCUDA (tests/alerts/kernel_load.c and the stand-in
# libcuda) the kernel exporter watches that process instead, with every
# probe set: io_uring, page cache, TCP with loss in its own network
# namespace, GPU launches and synchronizes, NUMA placement.
# Usage: dashboard_live.sh NCCLBPF POLICY_DIR NET_TRAFFIC BAD_POLICY DASHBOARD RULES [KERNEL_LOAD LIBCUDA]
BIN=$1 POLICIES=$2 NETGEN=$3 BAD=$4 DASH=$5 LOADGEN=$7 LIBCUDA=$8
RULES=$(realpath "$6") # prometheus reads it relative to its config
PROM=${PROMETHEUS:-/usr/bin/prometheus}
[ -x "$PROM" ] || { echo "SKIP: $PROM not installed (apt-get install prometheus)"; exit 77; }
for t in curl jq python3; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done

T=$(mktemp -d /tmp/ncclbpf-dash.XXXXXX) || exit 1
started=""
cleanup() {
	for p in $started; do kill "$p" 2>/dev/null; done
	for p in $started; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail() {
	echo "FAIL: $*"
	for f in "$T"/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done
	exit 1
}
export NCCLBPF_CTL_DIR="$T/ctl" NCCLBPF_MAP_DIR="$T/maps" NCCLBPF_LOG=warn NCCL_SOCKET_IFNAME=lo
mkdir -p "$NCCLBPF_CTL_DIR" "$NCCLBPF_MAP_DIR"
freeport() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# until SECONDS CMD...: retries CMD every 0.1 s
until_ok() {
	n=$(($1 * 10))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}

kernel=0
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
	kernel=1
else
	echo "kernel panels: no root or no kernel BTF, ncclbpf observe cannot run"
fi

"$BIN" sim --serve "$POLICIES/size_aware.bpf.o:$POLICIES/latency_hist.bpf.o" --ranks 4 --rate 400 \
	--duration 60 >"$T/sim.log" 2>&1 &
SIM=$!
started="$started $SIM"
"$NETGEN" >"$T/net.log" 2>&1 &
NET=$!
started="$started $NET"
until_ok 10 "$BIN" ps "$SIM" || fail "the emulated job's control socket never answered"
until_ok 10 grep -q ready "$T/net.log" || fail "the net plugin process sent nothing"

PA=$(freeport)
"$BIN" export --listen "127.0.0.1:$PA" "$SIM" "$NET" >"$T/export.log" 2>&1 &
started="$started $!"
targets="'127.0.0.1:$PA'"
if [ $kernel = 1 ] && [ -n "$LOADGEN" ]; then
	dd if=/dev/zero of="$T/load.dat" bs=1M count=64 status=none
	"$LOADGEN" "$T/load.dat" "$LIBCUDA" >"$T/load.log" 2>&1 &
	IO=$!
	started="$started $IO"
	until_ok 10 grep -q ready "$T/load.log" || fail "the kernel workload did not start"
	PB=$(freeport)
	# CPUs 0 and 1 on two nodes, so migrations between them cross (one node here).
	NCCLBPF_OBSERVE_LIBCUDA="$LIBCUDA" NCCLBPF_OBSERVE_GPU_MAJORS=0 NCCLBPF_OBSERVE_NUMA=0,1 \
		"$BIN" export --listen "127.0.0.1:$PB" --observe io,net,sched,gpu "$IO" >"$T/observe.log" 2>&1 &
	started="$started $!"
	targets="$targets, '127.0.0.1:$PB'"
elif [ $kernel = 1 ]; then
	# A data-loader stand-in: 4 KiB O_DIRECT writes with fsync, 50 a second.
	python3 - "$T/io.dat" >"$T/io.log" 2>&1 <<'PY' &
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
buf = mmap.mmap(-1, 4096)
i = 0
while True:
    os.pwrite(fd, buf, (i % 256) * 4096)
    os.fsync(fd)
    i += 1
    time.sleep(0.02)
PY
	IO=$!
	started="$started $IO"
	PB=$(freeport)
	"$BIN" export --listen "127.0.0.1:$PB" --observe io,sched "$IO" >"$T/observe.log" 2>&1 &
	started="$started $!"
	targets="$targets, '127.0.0.1:$PB'"
fi
for p in $PA $PB; do
	until_ok 10 curl -sf "http://127.0.0.1:$p/metrics" || fail "exporter on port $p never answered"
done

PP=$(freeport)
cat >"$T/prometheus.yml" <<EOF2
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: [ '$RULES' ]
scrape_configs:
  - job_name: ncclbpf
    static_configs: [ { targets: [ $targets ] } ]
EOF2
"$PROM" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/data" \
	--web.listen-address="127.0.0.1:$PP" --log.level=warn >"$T/prometheus.log" 2>&1 &
started="$started $!"
API="http://127.0.0.1:$PP/api/v1"
until_ok 15 curl -sf "http://127.0.0.1:$PP/-/ready" || fail "prometheus never became ready"

# query EXPR: the API's JSON answer on stdout
query() {
	curl -sS --max-time 5 --data-urlencode "query=$1" "$API/query"
}
has_data() {
	query "$1" | jq -e '.status == "success" and ([.data.result[] | .value[1] |
		select(. != "NaN" and . != "+Inf" and . != "-Inf")] | length > 0)'
}
# Four scrapes of every target, then a refusal for the alerts panel.
until_ok 15 has_data "count_over_time(up[1m]) >= 4 and up == 1" || fail "no four scrapes of the exporters"
if [ $kernel = 1 ]; then
	until_ok 10 has_data "count(count_over_time(up[1m]) >= 4) >= 2" || fail "the observe exporter was not scraped"
fi
"$BIN" reload "$SIM" "$BAD" >"$T/reload.log" 2>&1 && fail "the verifier accepted $BAD"
until_ok 15 has_data 'ALERTS{alertname="NcclbpfPolicyLoadRefused",alertstate="firing"}' ||
	fail "NcclbpfPolicyLoadRefused never fired after a refused reload"

n=$(jq '.panels | length' "$DASH")
passed=0 skipped="" failed=0
i=0
while [ $i -lt "$n" ]; do
	title=$(jq -r ".panels[$i].title" "$DASH")
	nt=$(jq ".panels[$i].targets | length" "$DASH")
	j=0
	while [ $j -lt "$nt" ]; do
		expr=$(jq -r ".panels[$i].targets[$j].expr" "$DASH" |
			sed -e 's/\$__rate_interval/5s/g' -e 's/\$size/.*/g')
		j=$((j + 1))
		if [ $kernel = 0 ] && printf '%s' "$expr" | grep -qE 'ncclbpf_(block|io_uring|page_cache|runqueue|offcpu|migrations|numa|tcp|gpu)_|ncclbpf:(gpu|block|io_uring|tcp)'; then
			echo "SKIP panel \"$title\": needs ncclbpf observe (root and kernel BTF)"
			skipped="$skipped \"$title\""
			continue
		fi
		ans=$(query "$expr")
		if ! printf '%s' "$ans" | jq -e '.status == "success"' >/dev/null 2>&1; then
			echo "FAIL panel \"$title\": query did not run: $expr: $ans"
			failed=$((failed + 1))
		elif ! printf '%s' "$ans" | jq -e '[.data.result[] | .value[1] |
				select(. != "NaN" and . != "+Inf" and . != "-Inf" and . != "0")] | length > 0' >/dev/null; then
			echo "FAIL panel \"$title\": no data: $expr: $ans"
			failed=$((failed + 1))
		else
			echo "ok   panel \"$title\": $(printf '%s' "$ans" | jq '.data.result | length') series"
			passed=$((passed + 1))
		fi
	done
	i=$((i + 1))
done
[ $failed -eq 0 ] || fail "$failed panel queries failed"
[ $passed -ge 8 ] || fail "only $passed panel queries ran"
if [ -n "$skipped" ]; then
	echo "PASS: $passed panel queries returned data; skipped, not passed:$skipped"
else
	echo "PASS: $passed panel queries returned data, none skipped"
fi
