#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The net hooks' cost per message in instructions (callgrind), which a
# shared, loaded machine cannot blur: bench_net hook runs 40 x N messages
# through the wrapper over the null inner plugin; the difference between
# N=1500 and N=500 (80,000 messages) divided out leaves the steady state
# (loading, verifying and compiling the policy cancel), then each policy
# against none.  A message is one post and one completion (two events).
# usage: sh bench/net/hook_ir.sh [BUILD_DIR]
set -eu
B=$(cd "${1:-build}" && pwd)
BN="$B/bench/net/bench_net"
P="$B/bench/net/bpf"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export NCCLBPF_LOG=warn NCCL_SOCKET_IFNAME=lo
ir() { # ir POLICY MSGS
	if [ "$1" = none ]; then unset NCCLBPF_POLICY; else export NCCLBPF_POLICY="$P/$1.bpf.o"; fi
	valgrind --tool=callgrind --callgrind-out-file="$OUT/cg" "$BN" hook --msgs "$2" >/dev/null 2>"$OUT/log"
	sed -n 's/.*I *refs: *//p' "$OUT/log" | tr -d ,
}
base=
printf "%-12s %12s %12s\n" policy "instr/msg" "over none"
for pol in none b_net_noop b_net_array b_net_count b_net_act; do
	per=$(( ($(ir $pol 1500) - $(ir $pol 500)) / 80000 ))
	[ -z "$base" ] && base=$per
	printf "%-12s %12d %12d\n" $pol $per $((per - base))
done
