#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# calib.sh - where a program's nanoseconds go on this machine: the synthetic job at
# READS_PER_SECOND beside groups of calibration programs (obs_calib), one group at a time.
#
#   bench/observe/calib.sh PAYLOAD OUT_FILE [READS_PER_SECOND] [SECONDS_PER_GROUP]
#
# PAYLOAD as for idle_cost.py, with obs_calib in PAYLOAD/bench/observe/.  Needs root, BTF, losetup.
set -u
payload=$1 out=$2 rate=${3:-10000} secs=${4:-4}
export LD_LIBRARY_PATH="$payload/lib:${LD_LIBRARY_PATH:-}"
img=$(mktemp /var/tmp/obscal.XXXXXX)
truncate -s 256M "$img"
dev=$(losetup -f --show "$img")
dd if="$img" of=/dev/null bs=1M status=none
# The claim and release variants run twice each, interleaved: their differences are near the spread.
groups='c_empty_sw,c_empty_start,c_empty_issue,c_empty_cmpl
c_filter_sw,c_filter_start
c_tstor_sw
c_tstor2_sw
c_pchash_sw
c_pcarr_sw
c_hist_sw
c_clock_sw
c_rqclk_sw
c_claim_start,c_free_cmpl
c_claimx_start,c_freex_cmpl
c_claim_start,c_free_cmpl
c_claimx_start,c_freex_cmpl
c_local_start
c_stamp_cmpl
sched_sw
io_block_start,io_block_complete
io_uring_submit_btf,io_uring_done_btf'
n=$(echo "$groups" | wc -l)
"$payload/bench/observe/obs_job" "$dev" $((n * (secs + 2) + 6)) "$rate" > "$out.job" &
job=$!
sleep 2
{
	echo "calibration, $(date -u '+%F %T UTC'); $(nproc) CPUs, kernel $(uname -r); job $rate reads/s; $secs s per group"
	echo "$groups" | while read -r g; do
		echo "-- $g"
		"$payload/bench/observe/obs_calib" "$secs" "$job" $(echo "$g" | tr , ' ') 2>&1
		sleep 1
	done
} > "$out"
wait "$job"
cat "$out.job" >> "$out"
rm -f "$out.job"
losetup -d "$dev"
rm -f "$img"
cat "$out"
