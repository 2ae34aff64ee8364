#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `ncclbpf report --from` a saved `export --observe` exposition shows the
# kernel's signals per process: quantiles from the buckets, counters summed
# over peers, NUMA shares, labels escaped.  With root and BTF, also from a
# live exporter's textfile.
# usage: report_kernel.sh NCCLBPF
BIN=$1
T=$(mktemp -d /tmp/ncclbpf-rptk.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
L='pid="42",process="train<x>",ranks="0-7/8@0x1"'
cat >"$T/k.prom" <<EOF2
# HELP ncclbpf_runqueue_latency_seconds Time the job's threads waited runnable for a CPU.
# TYPE ncclbpf_runqueue_latency_seconds histogram
ncclbpf_runqueue_latency_seconds_bucket{$L,le="0.000001024"} 50
ncclbpf_runqueue_latency_seconds_bucket{$L,le="0.001048576"} 100
ncclbpf_runqueue_latency_seconds_bucket{$L,le="+Inf"} 100
ncclbpf_gpu_launch_gap_seconds_bucket{$L,le="0.000131072"} 980
ncclbpf_gpu_launch_gap_seconds_bucket{$L,le="0.067108864"} 1000
ncclbpf_gpu_launch_gap_seconds_bucket{$L,le="+Inf"} 1000
ncclbpf_block_request_latency_seconds_bucket{$L,device="259:0",op="read",le="0.000262144"} 10
ncclbpf_block_request_latency_seconds_bucket{$L,device="259:0",op="read",le="0.008388608"} 10
ncclbpf_block_request_latency_seconds_bucket{$L,device="259:0",op="read",le="+Inf"} 10
ncclbpf_block_request_latency_seconds_bucket{$L,device="259:1",op="read",le="0.000262144"} 0
ncclbpf_block_request_latency_seconds_bucket{$L,device="259:1",op="read",le="0.008388608"} 10
ncclbpf_block_request_latency_seconds_bucket{$L,device="259:1",op="read",le="+Inf"} 10
ncclbpf_tcp_retransmits_total{$L,peer="10.0.0.2"} 7
ncclbpf_tcp_retransmits_total{$L,peer="10.0.0.3"} 5
ncclbpf_numa_cpu_seconds_total{$L,node="0"} 3
ncclbpf_numa_cpu_seconds_total{$L,node="1"} 1
EOF2
if ! "$BIN" report --from "$T/k.prom" -o "$T/k.html" >/dev/null; then
	echo "FAIL report --from"
	fail=1
fi
row=$(grep '<tr><td>42</td>' "$T/k.html")
# block P99 over both devices: 8.39 ms; run queue 1.05 ms; launch gap P50 131 us, P99 67.1 ms.
for want in 'train&lt;x&gt;' '0-7/8@0x1' '<td>8.39ms</td><td>-</td><td>1.05ms</td>' \
	'<td>131.1us</td><td>67.11ms</td>' '<td>12</td>' 'node 0 75% node 1 25%'; do
	if ! printf '%s' "$row" | grep -qF -- "$want"; then
		echo "FAIL report: the row lacks '$want': $row"
		fail=1
	fi
done
[ $fail = 0 ] && echo "ok   report --from a saved exposition: $(printf '%s' "$row" | sed 's/<[^>]*>/ /g' | tr -s ' ')"
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
	# Alive until the exporter is done, however slowly it loads.
	sh -c 'while :; do sleep 0.01; done' &
	bg=$!
	if "$BIN" export --observe sched $bg --textfile "$T/live.prom" --count 2 --interval 0.3 &&
	   "$BIN" report --from "$T/live.prom" -o "$T/live.html" >/dev/null &&
	   grep -q "<tr><td>$bg</td><td>sh</td>" "$T/live.html"; then
		echo "ok   report --from a live exporter's textfile: pid $bg's row"
	else
		echo "FAIL report of a live exporter's textfile: no row for $bg"
		fail=1
	fi
	kill $bg
	wait $bg 2>/dev/null
else
	echo "SKIP live part: needs root and kernel BTF"
fi
exit $fail
