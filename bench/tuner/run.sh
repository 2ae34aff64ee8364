#!/bin/sh
# Tuner overhead table: each policy through libnccl-ncclbpf.so vs its native C
# plugin (where one exists), CALLS calls each (default 1M).
# usage: sh bench/tuner/run.sh [BUILD_DIR] [CALLS]
set -e
B=${1:-build}; CALLS=${2:-1000000}
B=$(cd "$B" && pwd)
for p in noop size_aware nvlink_ring_mid adaptive_channels slo_enforcer bad_channels latency_hist; do
	obj=$B/policies/$p.bpf.o
	[ -f "$obj" ] || continue
	bpf=$(NCCLBPF_LOG=none NCCLBPF_POLICY=$obj "$B/bench/tuner/bench_tuner" "$B/libnccl-ncclbpf.so" "$CALLS")
	nat=-
	if [ -f "$B/bench/tuner/libnative_$p.so" ]; then
		nat=$("$B/bench/tuner/bench_tuner" "$B/bench/tuner/libnative_$p.so" "$CALLS")
	fi
	printf '%-18s ncclbpf: %-36s native: %s\n' "$p" "$bpf" "$nat"
done
