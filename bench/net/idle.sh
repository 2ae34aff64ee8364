#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The net figures on an idle machine, in one go: the hook cost per message
# (each policy pinned to one core, rounds alternating the policies so a
# drift in the machine shows in every policy alike), then our transport
# against the TCP reference (bench/net/interleave.sh at 2, 4 and 8 streams),
# then our transport with no program, the counting and the acting program
# from 64 KiB.
# usage: sh bench/net/idle.sh [BUILD_DIR] [HOOK_ROUNDS] [NET_ROUNDS]
# BUILD_DIR needs bench/net/{bench_net,bpf/*.bpf.o}; for a copy of the
# build on another machine set BENCH_NET_PLUGIN and BENCH_NULL_PLUGIN.
set -u
B=$(cd "${1:-build}" && pwd)
HR=${2:-5}
NR=${3:-5}
BN="$B/bench/net/bench_net"
P="$B/bench/net/bpf"
here=$(cd "$(dirname "$0")" && pwd)
export NCCLBPF_LOG=warn NCCL_SOCKET_IFNAME=lo
cpu=$(( $(nproc) > 4 ? 3 : 0 ))

echo "# $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "== hook cost: taskset -c $cpu bench_net hook --msgs 20000, $HR rounds"
r=0
while [ $r -lt "$HR" ]; do
	for pol in none b_net_noop b_net_array b_net_count b_net_act; do
		if [ $pol = none ]; then
			ns=$(env -u NCCLBPF_POLICY taskset -c $cpu "$BN" hook --msgs 20000 | sed -n 's/.*: //p')
		else
			ns=$(NCCLBPF_POLICY="$P/$pol.bpf.o" taskset -c $cpu "$BN" hook --msgs 20000 | sed -n 's/.*: //p')
		fi
		echo "hook $r $pol $ns"
	done
	r=$((r + 1))
done
for s in 2 4 8; do
	echo "== interleave.sh $NR rounds, $s streams"
	sh "$here/interleave.sh" "$B" "$NR" "$s" 4194304 268435456 536870912
done
for pol in none b_net_count b_net_act; do
	echo "== ours, $pol: bench_net plugin --streams 2 --min 65536 --max 268435456 --budget 268435456"
	if [ $pol = none ]; then
		env -u NCCLBPF_POLICY "$BN" plugin --streams 2 --min 65536 --max 268435456 --budget 268435456
	else
		NCCLBPF_POLICY="$P/$pol.bpf.o" "$BN" plugin --streams 2 --min 65536 --max 268435456 --budget 268435456
	fi
done
echo "# done $(date -u '+%H:%M:%S'), load $(cut -d' ' -f1-3 /proc/loadavg)"
