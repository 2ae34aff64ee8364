#!/usr/bin/env bash
# bench/gpu/net_one_gpu.sh - real NCCL loading ncclbpf's net role on a
# one-GPU machine: NCCL_NET_PLUGIN=ncclbpf resolves libnccl-net-ncclbpf.so,
# and NCCL's INIT/NET log shows which net it picked, the devices and
# properties our transport reported, and that the tuner and profiler roles
# came from the same library (one host, one control socket).  With one rank
# NCCL makes no connection, so this proves loading and initialisation only.
#
#   bench/gpu/net_one_gpu.sh PAYLOAD_DIR RESULT_DIR
[ $# -eq 2 ] || { sed -n '2,10p' "$0"; exit 2; }
P=$(cd "$1" && pwd)
R=$2
mkdir -p "$R" && R=$(cd "$R" && pwd)
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

run() { # run LABEL NCCL_LIBDIR(or "")
	label=$1 lib=$2
	echo "== $label"
	(
		[ -n "$lib" ] && export LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH
		NCCL_NET_PLUGIN=ncclbpf NCCL_TUNER_PLUGIN=ncclbpf NCCL_PROFILER_PLUGIN=ncclbpf \
			NCCLBPF_POLICY=$P/policies/net_peer_qos.bpf.o:$P/policies/size_aware.bpf.o \
			NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV NCCL_DEBUG_FILE=$R/$label.nccl.log \
			"$P/nccl_sweep" -b 1M -e 4M -n 20 > "$R/$label.out" 2>&1 &
		pid=$!
		sleep 3
		"$P/ncclbpf" ps > "$R/$label.ps" 2>&1
		wait $pid
		echo "exit=$?"
	)
	grep -hE "NET/|net plugin|Using network|ncclbpf|tuner|profiler|Plugin" "$R/$label".nccl.log* |
		sed 's/^[^ ]* [0-9]*:[0-9]* \[[0-9]*\] //' | sort | uniq -c | head -40
	echo "-- ncclbpf ps"; cat "$R/$label.ps"
	tail -3 "$R/$label.out"
}

nvidia-smi -L
run system ""
T=$(find /usr /opt -path '*nvidia/nccl/lib/libnccl.so.2' 2>/dev/null | head -1)
[ -n "$T" ] && run torch "$(dirname "$T")"
