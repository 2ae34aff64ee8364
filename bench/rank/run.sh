#!/bin/sh
# The rank-consistency tester for a long time: random sequences of operator
# actions and faults (tests/rank/rank_model.c) against rank processes of one
# node, then two nodes agreeing through a shared directory, then through a
# real three-member etcd cluster (skipped without etcd).  Each run logs its
# seed and ends with one summary line: sequences, operations, calls compared,
# truth checks, violations.  A violation leaves rank-repro-SEED.ops in OUT.
# Runs under nice; the binaries are copied first, so rebuilding meanwhile
# changes nothing.
# usage: sh bench/rank/run.sh [BUILD_DIR] [MINUTES] [OUT_DIR]
set -eu
B=$(cd "${1:-build}" && pwd)
MIN=${2:-60}
OUT=$(mkdir -p "${3:-bench-rank-out}" && cd "${3:-bench-rank-out}" && pwd)
BIN="$OUT/bin"
mkdir -p "$BIN/bpf"
cp "$B/ncclbpf" "$B/libnccl-ncclbpf.so" "$B/tests/rank/rank_model" "$BIN/"
cp "$B"/tests/rank/bpf/*.bpf.o "$BIN/bpf/"
lscpu > "$OUT/lscpu.txt" 2>&1 || true
uname -a > "$OUT/uname.txt"
run() { # name seconds args...
	n=$1; t=$2; shift 2
	(cd "$OUT" && nice -n 19 "$BIN/rank_model" --time "$t" --plugin "$BIN/libnccl-ncclbpf.so" \
		--cli "$BIN/ncclbpf" --policies "$BIN/bpf" "$@" > "$n.log" 2>&1) || true
	grep -h "summary\|VIOLATION\|SKIP" "$OUT/$n.log" | sed "s/^/$n: /"
}
S=$((MIN * 60))
run one-node $((S / 2)) --procs 4 --slots 4
run two-nodes-dir $((S / 4)) --procs 4 --nodes 2 --slots 3
run two-nodes-etcd $((S / 4)) --procs 4 --nodes 2 --slots 3 --exchange etcd
echo "logs in $OUT"
