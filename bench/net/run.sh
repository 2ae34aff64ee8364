#!/bin/sh
# Runs bench_net: the reference and our transport with no program, a
# counting program and an acting program, then the hook cost per message.
# usage: sh bench/net/run.sh [BUILD_DIR] [STREAMS] [MAX_BYTES] [BUDGET_BYTES]
set -eu
B=$(cd "${1:-build}" && pwd)
S=${2:-2}
MAX=${3:-1073741824}
BUDGET=${4:-268435456}
BN="$B/bench/net/bench_net"
P="$B/bench/net/bpf"
ARGS="--streams $S --max $MAX --budget $BUDGET"
export NCCLBPF_LOG=warn NCCL_SOCKET_IFNAME=lo
echo "== reference"; "$BN" tcp $ARGS
echo "== ours, no program"; env -u NCCLBPF_POLICY "$BN" plugin $ARGS
echo "== ours, counting program"; NCCLBPF_POLICY="$P/b_net_count.bpf.o" "$BN" plugin $ARGS
echo "== ours, acting program"; NCCLBPF_POLICY="$P/b_net_act.bpf.o" "$BN" plugin $ARGS
for pol in none b_net_noop b_net_array b_net_count b_net_act; do
	echo "== hook cost, $pol"
	if [ $pol = none ]; then env -u NCCLBPF_POLICY "$BN" hook --msgs 20000
	else NCCLBPF_POLICY="$P/$pol.bpf.o" "$BN" hook --msgs 20000; fi
done
