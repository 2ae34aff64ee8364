#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bench/gpu/tune.sh - issue 16's runs on a machine with two or more GPUs:
# `ncclbpf tune` on real NCCL, then the policy it wrote against NCCL's
# default, every static NCCL_ALGO/NCCL_PROTO setting, every shipped policy
# and no plugin, for AllReduce, AllGather and ReduceScatter, 8 B to 1 GiB,
# NCCL_NVLS_ENABLE=0, with NCCL's TUNING lines kept.
#
#   bench/gpu/tune.sh tune    [-d DIR] [-o OUT] [-g NGPUS] [-r REPS]
#   bench/gpu/tune.sh compare [-d DIR] [-o OUT] [-t TUNED.bpf.o]
#
# DIR holds ncclbpf, libnccl-ncclbpf.so, nccl_sweep, run.sh and policies/
# (bench/gpu/payload.sh BUILD DIR makes it; a build tree works too with
# -d build, which finds build/bench/gpu/nccl_sweep).  Put DIR on
# LD_LIBRARY_PATH.
#
# Stage "tune" measures every offered cell x channels {NCCL's, 8, 32} per
# collective and power-of-two size with the sweep policy, REPS (5) runs of
# 5 warmup + 20 timed operations each, and writes OUT/tune/tuned.bpf.c
# with tuned.report.txt, .csv, .svg.  It passes --no-compile: GPU machines
# here have no clang.  Compile and verify the source where clang is:
#     clang -O2 -g -target bpf -I include -c tuned.bpf.c -o tuned.bpf.o
#     ncclbpf verify --strict-consistency tuned.bpf.o
# (or run this stage where clang exists without --no-compile).
#
# Stage "compare" runs run.sh over every configuration plus "tuned", then
# writes OUT/compare/busbw.<op>.md (busbw per size and configuration),
# OUT/compare/overhead.md (noop against no plugin, per size) and
# OUT/compare/tuning.<op>.tuned.txt (NCCL's "Bytes -> Algo" lines of the
# tuned runs, one per size: the decisions taking effect).
set -u

stage=${1:-}
shift || true
dir=.
out=gpu-tune-out
ngpus=0
reps=5
tuned=""
while getopts "d:o:g:r:t:h" opt; do
	case $opt in
	d) dir=$OPTARG ;;
	o) out=$OPTARG ;;
	g) ngpus=$OPTARG ;;
	r) reps=$OPTARG ;;
	t) tuned=$OPTARG ;;
	h) sed -n '2,33p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
dir=$(cd "$dir" && pwd) || exit 2
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
sweep=$dir/nccl_sweep
[ -x "$sweep" ] || sweep=$dir/bench/gpu/nccl_sweep
runsh=$dir/run.sh
[ -x "$runsh" ] || runsh=$here/run.sh
export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0

case $stage in
tune)
	mkdir -p "$out/tune"
	# NCCL's log of the sweep process (the plugin's load lines, TUNING lines of every run).
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCL_DEBUG_FILE="$out/tune/nccl.%p.log" \
	NCCLBPF_LOG=info \
	"$dir/ncclbpf" tune --backend nccl --sweep-bin "$sweep" --plugin "$dir/libnccl-ncclbpf.so" \
		--sweep-obj "$dir/policies/sweep.bpf.o" --ngpus "$ngpus" \
		--coll allreduce,allgather,reducescatter --sizes 8:1G --channels 0,8,32 \
		--reps "$reps" --iters 20 --warmup 5 --no-compile --out "$out/tune" --name tuned \
		> "$out/tune/table.txt" 2> "$out/tune/tune.err"
	rc=$?
	cat "$out/tune/table.txt"
	tail -3 "$out/tune/tune.err"
	exit $rc
	;;
compare)
	[ -n "$tuned" ] || tuned=$out/tune/tuned.bpf.o
	[ -f "$tuned" ] || { echo "tune.sh: no compiled policy at $tuned (compile tuned.bpf.c first)" >&2; exit 2; }
	"$dir/ncclbpf" verify --strict-consistency "$tuned" || exit 1
	"$runsh" -o "$out/compare" -b "$sweep" -p "$dir/libnccl-ncclbpf.so" -d "$dir/policies" \
		-O "allreduce allgather reducescatter" -t "$tuned"
	rc=$?
	csv=$out/compare/results.csv
	for op in allreduce allgather reducescatter; do
		# busbw per size (rows) and configuration (columns), markdown.
		awk -F, -v op="$op" 'NR > 1 && $2 == op {
			if (!($1 in seen)) { seen[$1] = 1; lab[nl++] = $1 }
			if (!($4 in sz)) { sz[$4] = 1; size[ns++] = $4 }
			bw[$1, $4] = $7
		} END {
			printf "| bytes |"; for (i = 0; i < nl; i++) printf " %s |", lab[i]; printf "\n|---|"
			for (i = 0; i < nl; i++) printf "---|"; printf "\n"
			for (j = 0; j < ns; j++) {
				printf "| %s |", size[j]
				for (i = 0; i < nl; i++) printf " %s |", ((lab[i], size[j]) in bw) ? bw[lab[i], size[j]] : "-"
				printf "\n"
			}
		}' "$csv" > "$out/compare/busbw.$op.md"
		grep -h "Bytes -> Algo" "$out/compare/$op.tuned.nccl.log" 2>/dev/null |
			sed 's/^.*NCCL INFO //' | sort -u -t' ' -k2,2n > "$out/compare/tuning.$op.tuned.txt"
	done
	# The plugin's own cost: noop against no plugin (time per operation), per op and size.
	awk -F, 'NR > 1 && ($1 == "default" || $1 == "noop") { t[$2, $4, $1] = $5; k[$2 SUBSEP $4] = 1 }
	END {
		print "| op | bytes | no plugin (us) | noop (us) | noop vs none |"
		print "|---|---|---|---|---|"
		for (x in k) {
			split(x, p, SUBSEP)
			d = t[p[1], p[2], "default"]; n = t[p[1], p[2], "noop"]
			if (d > 0 && n > 0) printf "| %s | %s | %s | %s | %+.2f%% |\n", p[1], p[2], d, n, 100 * (n - d) / d
		}
	}' "$csv" | sort -t'|' -k2,2 -k3,3n > "$out/compare/overhead.md"
	ls "$out/compare"/*.md "$out/compare"/tuning.*
	exit $rc
	;;
*)
	sed -n '2,33p' "$0"
	exit 2
	;;
esac
