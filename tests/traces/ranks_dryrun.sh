#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ranks_dryrun.sh - bench/gpu/ranks.sh, the real-NCCL lane's launcher, on
# CPU: 3 ranks of sweep_stub (nccl_sweep's command line through the NCCL
# emulator) with the recorder between each rank and the plugin, as
# realnccl.sh runs them on a GPU machine.  Checks what the lane relies on:
# every rank starts with --rank/--nranks/--id-file and its own NCCL host,
# the pids file lists the live ranks, nccl_trace joins every rank's trace
# (decided == ran, the ranks agree), and a failing rank fails the job.
#
#   ranks_dryrun.sh SRC_DIR BUILD_DIR
set -u
SRC=$1
B=$2
TMP=$(mktemp -d /tmp/ncclbpf-ranks.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

export NCCLBPF_MAP_DIR=$TMP/maps NCCLBPF_CTL=0 NCCLBPF_LOG=warn
mkdir -p "$NCCLBPF_MAP_DIR" "$TMP/traces"
env NCCL_TUNER_PLUGIN="$B/libncclbpf-rec.so" NCCL_PROFILER_PLUGIN="$B/libncclbpf-rec.so" \
	NCCLBPF_RECORD_DIR="$TMP/traces" NCCLBPF_RECORD_TARGET="$B/libnccl-ncclbpf.so" \
	NCCLBPF_POLICY="$B/policies/size_aware.bpf.o" \
	bash "$SRC/bench/gpu/ranks.sh" -n 3 -o "$TMP" -l job -t 120 -- "$B/bench/gpu/sweep_stub" \
	--op allreduce,allgather,reducescatter -b 8 -e 64K -f 32 -n 1 -w 0 >"$TMP/ranks.log" 2>&1
rc=$?
[ $rc = 0 ] && ok "3 ranks exit 0" || { bad "ranks.sh exit $rc"; cat "$TMP/ranks.log" "$TMP"/job.rank*.out; }
[ "$(awk '{ print $1 }' "$TMP/job.pids" 2>/dev/null | paste -sd' ')" = "0 1 2" ] &&
	[ "$(awk '$2 > 0' "$TMP/job.pids" | wc -l)" = 3 ] && ok "pids file: one line per rank" ||
	bad "pids file: $(cat "$TMP/job.pids" 2>/dev/null)"
n=$(find "$TMP/traces" -name 'trace.*' | wc -l)
"$B/bench/gpu/nccl_trace" check "$TMP"/traces/trace.* >"$TMP/check" 2>&1
crc=$?
# Every rank of the one communicator (3 of 3), joined, and every pair compared.
if [ $crc = 0 ] && [ "$n" = 3 ] && grep -q "OK: 0 disagreement" "$TMP/check" &&
	[ "$(grep -c 'rank [0-2] of 3' "$TMP/check")" = 3 ] &&
	[ "$(grep -c 'calls compared, 0 differ' "$TMP/check")" = 3 ]; then
	ok "nccl_trace: 3 ranks of one comm, decided == ran, 3 pairs agree"
else
	bad "nccl_trace check exit $crc, $n traces"; cat "$TMP/check"
fi

# A rank that fails (its own bad argument) fails the job, and ranks.sh names it.
bash "$SRC/bench/gpu/ranks.sh" -n 2 -o "$TMP" -l bad -t 60 -- "$B/bench/gpu/sweep_stub" \
	--op no-such-op >"$TMP/bad.log" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "bad rank 0 exited $rc" "$TMP/bad.log" && ok "a failing rank: exit $rc, named" ||
	{ bad "a failing rank: exit $rc"; cat "$TMP/bad.log"; }
exit $fail
