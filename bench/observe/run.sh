#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Overhead of `ncclbpf observe` (default probe set) on a busy synthetic job,
# side by side in one run: the job unobserved, observed, and observed by the
# bcc tools that do the same work (biolatency, tcprtt, runqlat).
# Cost = CPU time of the kernel programs (kernel.bpf_stats_enabled run_time_ns)
# + CPU time of the observing process, per second of wall time.
# usage: bench/observe/run.sh BUILD_DIR [SECONDS] [READS_PER_SECOND]
set -e
B=${1:-build}
SECS=${2:-5}
RATE=${3:-60000}
JOB=$B/bench/observe/obs_job
img=$(mktemp /var/tmp/obsbench.XXXXXX)
truncate -s 256M "$img"
dev=$(losetup -f --show "$img")
trap 'losetup -d $dev; rm -f $img; sysctl -qw kernel.bpf_stats_enabled=0' EXIT
dd if="$img" of=/dev/null bs=1M status=none    # the loop's backing file in page cache
sysctl -qw kernel.bpf_stats_enabled=1
clk=$(getconf CLK_TCK)

prog_ns() { # total run_time_ns of programs whose name matches $1
	bpftool prog show 2>/dev/null | grep -E " name ($1) " -A1 >/dev/null || { echo 0; return; }
	bpftool -j prog show | python3 -c "
import json, re, sys
print(sum(p.get('run_time_ns', 0) for p in json.load(sys.stdin) if re.match(r'($1)\$', p.get('name', ''))))"
}
proc_cpu() { # utime+stime seconds of pid $1
	awk -v c="$clk" '{ print ($14 + $15) / c }' /proc/$1/stat
}

echo "unobserved:  $($JOB "$dev" "$SECS" "$RATE")"

$JOB "$dev" "$SECS" "$RATE" > /tmp/obsjob.out &
jp=$!
sleep 0.3
$B/ncclbpf observe --pid $jp --probes io,net,sched --duration $((SECS)) --interval 1000 >/dev/null 2>&1 &
op=$!
sleep 0.5
ns0=$(prog_ns 'io_[a-z_]+|net_[a-z_]+|sched_[a-z_]+'); c0=$(proc_cpu $op); t0=$(date +%s.%N)
sleep $((SECS - 2))
ns1=$(prog_ns 'io_[a-z_]+|net_[a-z_]+|sched_[a-z_]+'); c1=$(proc_cpu $op); t1=$(date +%s.%N)
wait $jp
wait $op || true
echo "observed:    $(cat /tmp/obsjob.out)"
python3 -c "
ns=$ns1-$ns0; cpu=$c1-$c0; wall=$t1-$t0
print('observe io,net,sched: programs %.3f%% of one CPU, observer process %.3f%%, total %.3f%% (%.1f s window)' % (100*ns/1e9/wall, 100*cpu/wall, 100*(ns/1e9+cpu)/wall, wall))"

for tool in biolatency tcprtt runqlat; do
	bin=$(command -v $tool-bpfcc || true)
	if [ -z "$bin" ]; then
		echo "bcc $tool: not installed (apt-get install bpfcc-tools)"
		continue
	fi
	$JOB "$dev" "$SECS" "$RATE" > /tmp/obsjob.out &
	jp=$!
	timeout $((SECS + 20)) "$bin" $( [ $tool = tcprtt ] && echo -d $SECS || echo $SECS 1) > /tmp/bcc.out 2>&1 &
	bp=$!
	sleep $((SECS - 1))
	if ! kill -0 $bp 2>/dev/null; then
		wait $jp
		echo "bcc $tool: could not run: $(grep -v '^ *$' /tmp/bcc.out | tail -1)"
		continue
	fi
	c=$(proc_cpu $bp)
	wait $jp
	wait $bp || true
	echo "bcc $tool: process CPU $c s during ${SECS} s (includes its compile); job: $(cat /tmp/obsjob.out)"
done
