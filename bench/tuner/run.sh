#!/bin/sh
# Tuner overhead table: each policy through libnccl-ncclbpf.so vs its native C
# plugin (where one exists), CALLS calls per run (default 1M).  The machine
# this runs on is often shared, so every configuration runs REPS times
# (default 5), interleaved round by round, and the table shows the median
# over the runs of each statistic (and the best P50, which load never lowers).
# With BEFORE_DIR (another build, e.g. of an older commit) its plugin runs the
# same objects through the same harness, interleaved with this build's, and
# gets its own column: a regression check within one run.
# usage: sh bench/tuner/run.sh [BUILD_DIR] [CALLS] [REPS] [BEFORE_DIR]
set -e
B=${1:-build}; CALLS=${2:-1000000}; REPS=${3:-5}; OLD=${4:-}
B=$(cd "$B" && pwd)
[ -z "$OLD" ] || OLD=$(cd "$OLD" && pwd)
POLICIES="noop size_aware nvlink_ring_mid adaptive_channels slo_enforcer bad_channels latency_hist"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
r=0
while [ "$r" -lt "$REPS" ]; do
	for p in $POLICIES; do
		obj=$B/policies/$p.bpf.o
		[ -f "$obj" ] || continue
		NCCLBPF_LOG=none NCCLBPF_POLICY=$obj "$B/bench/tuner/bench_tuner" \
			"$B/libnccl-ncclbpf.so" "$CALLS" >>"$TMP/$p.bpf"
		if [ -n "$OLD" ]; then
			NCCLBPF_LOG=none NCCLBPF_POLICY=$obj "$B/bench/tuner/bench_tuner" \
				"$OLD/libnccl-ncclbpf.so" "$CALLS" >>"$TMP/$p.old"
		fi
		if [ -f "$B/bench/tuner/libnative_$p.so" ]; then
			"$B/bench/tuner/bench_tuner" "$B/bench/tuner/libnative_$p.so" "$CALLS" >>"$TMP/$p.nat"
		fi
	done
	NCCLBPF_LOG=none NCCLBPF_POLICY= "$B/bench/tuner/bench_tuner" "$B/libnccl-ncclbpf.so" \
		"$CALLS" >>"$TMP/none.bpf"
	if [ -n "$OLD" ]; then
		NCCLBPF_LOG=none NCCLBPF_POLICY= "$B/bench/tuner/bench_tuner" "$OLD/libnccl-ncclbpf.so" \
			"$CALLS" >>"$TMP/none.old"
	fi
	r=$((r + 1))
done
# "p50_ns=.. p99_ns=.. mean_unbracketed_ns=.. calls=.." lines -> medians and best P50.
summ() {
	[ -f "$1" ] || { echo "-"; return; }
	awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1], NR] = kv[2] } }
	     function med(k,   i, j, t, a) { for (i = 1; i <= NR; i++) a[i] = v[k, i] + 0
	         for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	         return a[int((NR + 1) / 2)] }
	     function mn(k,   i, m) { m = v[k, 1] + 0; for (i = 2; i <= NR; i++) if (v[k, i] + 0 < m) m = v[k, i] + 0; return m }
	     END { printf "p50 %3d p99 %3d best_p50 %3d mean %5.1f", med("p50_ns"), med("p99_ns"), mn("p50_ns"), med("mean_unbracketed_ns") }' "$1"
}
printf 'median of %s runs x %s calls (ns; mean = unbracketed mean per call)\n' "$REPS" "$CALLS"
if [ -n "$OLD" ]; then
	printf 'before: %s\n' "$OLD"
	printf '%-18s %-42s %-42s %s\n' policy ncclbpf before native
else
	printf '%-18s %-42s %s\n' policy ncclbpf native
fi
for p in $POLICIES none; do
	[ -f "$TMP/$p.bpf" ] || continue
	if [ -n "$OLD" ]; then
		printf '%-18s %-42s %-42s %s\n' "$p" "$(summ "$TMP/$p.bpf")" "$(summ "$TMP/$p.old")" \
			"$(summ "$TMP/$p.nat")"
	else
		printf '%-18s %-42s %s\n' "$p" "$(summ "$TMP/$p.bpf")" "$(summ "$TMP/$p.nat")"
	fi
done
