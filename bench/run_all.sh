#!/bin/sh
# Runs every CPU benchmark of a build and writes their outputs to OUT:
# per-call cost of the engines (bench_cpu), the tuner plugin path against
# native plugins (bench/tuner/run.sh), verification time of every shipped
# policy (bench_verify) and hot reload (bench_reload).  Pin it to idle cores
# (taskset) for numbers worth recording; record `lscpu` with them.
# usage: sh bench/run_all.sh [BUILD_DIR] [OUT_DIR]
set -eu
B=$(cd "${1:-build}" && pwd)
OUT=${2:-bench-out}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
lscpu > "$OUT/lscpu.txt" 2>&1 || true
"$B/bench/cpu/bench_cpu" > "$OUT/cpu.txt" 2>&1
sh "$HERE/tuner/run.sh" "$B" 1000000 5 > "$OUT/tuner.txt" 2>&1
"$B/bench/verify/bench_verify" -n 200 "$B"/policies/*.bpf.o > "$OUT/verify.txt" 2>&1
"$B/bench/reload/bench_reload" > "$OUT/reload.txt" 2>&1
echo "results in $OUT"
