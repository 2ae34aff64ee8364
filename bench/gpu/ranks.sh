#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/gpu/ranks.sh - N ranks of one NCCL communicator as N processes on
# one GPU: each process gets its own NCCL_HOSTID (so NCCL sees N hosts,
# raises no duplicate-GPU error and joins them through its network
# transport: NCCL's Socket transport over NCCL_SOCKET_IFNAME=lo, or a net
# plugin), and --rank R --nranks N --id-file FILE (nccl_sweep's
# multi-process mode: rank 0 writes the ncclUniqueId, the others read it).
#
#   bench/gpu/ranks.sh -n N -o OUTDIR [-l LABEL] [-t TIMEOUT_S] -- PROGRAM ARGS...
#
# Rank r's output goes to OUTDIR/LABEL.rank<r>.out, its NCCL log (when
# NCCL_DEBUG is set) to OUTDIR/LABEL.rank<r>.nccl.log, and the pids, one
# line "rank pid" each, to OUTDIR/LABEL.pids as soon as all are started, so
# a caller running this in the background can act on the live ranks.
# Every rank is killed after TIMEOUT_S (default 300).  The exit status is
# 0 when every rank exited 0, else the first non-zero status (124: a rank
# timed out).  Absolute times measured this way are the GPU's time-slicing
# between the processes, not NCCL's: use it for function and relative
# checks only.
set -u
n=2
out=.
label=job
tmo=300
while getopts "n:o:l:t:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	o) out=$OPTARG ;;
	l) label=$OPTARG ;;
	t) tmo=$OPTARG ;;
	h) sed -n '3,21p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || { sed -n '3,21p' "$0" >&2; exit 2; }
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
idf=$(mktemp -u "$out/$label.id.XXXXXX")
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
pids=()
for ((r = 0; r < n; r++)); do
	dbg=()
	[ -n "${NCCL_DEBUG:-}" ] && dbg=(NCCL_DEBUG_FILE="$out/$label.rank$r.nccl.log")
	env NCCL_HOSTID="$label-node$r" "${dbg[@]}" \
		timeout -k 5 "$tmo" "$@" --rank "$r" --nranks "$n" --id-file "$idf" \
		>"$out/$label.rank$r.out" 2>&1 &
	pids+=($!)
done
# timeout(1)'s child is the rank; list the ranks' own pids for the control plane.
: >"$out/$label.pids.tmp"
for ((r = 0; r < n; r++)); do
	child=""
	for _ in $(seq 1 100); do
		child=$(pgrep -P "${pids[$r]}" | head -1)
		# A rank that already exited has no child to find (a loaded machine makes 100 looks long).
		[ -n "$child" ] || ! kill -0 "${pids[$r]}" 2>/dev/null && break
		sleep 0.05
	done
	echo "$r ${child:-${pids[$r]}}" >>"$out/$label.pids.tmp"
done
mv "$out/$label.pids.tmp" "$out/$label.pids"
rc=0
for ((r = 0; r < n; r++)); do
	wait "${pids[$r]}"
	s=$?
	[ $s -ne 0 ] && echo "ranks.sh: $label rank $r exited $s (see $out/$label.rank$r.out)" >&2
	[ $rc -eq 0 ] && rc=$s
done
rm -f "$idf"
exit $rc
