#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Our transport (no program) against the plain TCP reference, alternating
# short runs of each so both see the same load on a shared machine, then
# per size: the median GB/s of each and the median of the per-round ratios
# (ours / reference, each ratio from back-to-back runs) with their range.
# usage: sh bench/net/interleave.sh [BUILD_DIR] [ROUNDS] [STREAMS] [MIN] [MAX] [BUDGET]
set -eu
B=$(cd "${1:-build}" && pwd)
R=${2:-7}
S=${3:-2}
MIN=${4:-4194304}
MAX=${5:-67108864}
BUDGET=${6:-134217728}
BN="$B/bench/net/bench_net"
ARGS="--streams $S --min $MIN --max $MAX --budget $BUDGET"
export NCCLBPF_LOG=warn NCCL_SOCKET_IFNAME=lo
unset NCCLBPF_POLICY
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $R rounds, $S streams, $ARGS"
i=0
while [ $i -lt "$R" ]; do
	"$BN" tcp $ARGS | awk -v r=$i '!/^#/ && $1 + 0 > 0 { print "tcp", r, $1, $3 }' >>"$OUT"
	"$BN" plugin $ARGS | awk -v r=$i '!/^#/ && $1 + 0 > 0 { print "ours", r, $1, $3 }' >>"$OUT"
	i=$((i + 1))
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	v[$1, $2, $3] = $4
	if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3 + 0 }
	if ($2 + 1 > rounds) rounds = $2 + 1
}
END {
	printf "%12s %10s %10s %10s %14s\n", "bytes", "ref GB/s", "ours GB/s", "ours/ref", "ratio range"
	median(order, n) # sorts order[] in place
	for (k = 1; k <= n; k++) {
		s = order[k]; nt = no = nr = 0
		for (r = 0; r < rounds; r++) {
			if ((("tcp", r, s) in v)) t[++nt] = v["tcp", r, s]
			if ((("ours", r, s) in v)) o[++no] = v["ours", r, s]
			if ((("tcp", r, s) in v) && (("ours", r, s) in v) && v["tcp", r, s] > 0)
				q[++nr] = v["ours", r, s] / v["tcp", r, s]
		}
		printf "%12s %10.3f %10.3f %9.0f%%", s, median(t, nt), median(o, no), 100 * median(q, nr)
		printf " %6.0f-%.0f%%\n", 100 * q[1], 100 * q[nr]
	}
}' "$OUT"
