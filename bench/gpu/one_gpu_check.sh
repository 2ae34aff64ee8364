#!/usr/bin/env bash
# bench/gpu/one_gpu_check.sh - what docs/benchmarks.md ("Real NCCL on GPUs")
# ran on a one-GPU machine: verify there, every configuration of run.sh with
# the system NCCL and (if present) PyTorch's NCCL, fail-open cases, every op
# of the sweep, and the control plane against a live job.
#
#   bench/gpu/one_gpu_check.sh PAYLOAD_DIR RESULT_DIR
#
# PAYLOAD_DIR comes from bench/gpu/payload.sh; an optional PAYLOAD_DIR/bad/
# holds objects the verifier must reject.  On one GPU NCCL never consults
# the tuner (one-rank communicators are not tuned), so this proves loading,
# initialisation, fail-open and the control plane, not decisions.
[ $# -eq 2 ] || { sed -n '2,12p' "$0"; exit 2; }
P=$(cd "$1" && pwd)
R=$2
mkdir -p "$R" && R=$(cd "$R" && pwd)
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nz() { awk '{ z = 1; for (i = 7; i <= NF; i++) if ($i != "00") z = 0; if (!z) print }'; }

echo "== machine"; nvidia-smi -L; find /usr /opt -name 'libnccl.so*' 2>/dev/null
echo "== verify"
for f in "$P"/policies/*.bpf.o "$P"/bad/*.bpf.o; do
	[ -e "$f" ] || continue
	"$P/ncclbpf" verify "$f"; echo "exit=$?"
done
echo "== sweeps (system NCCL)"
bash "$P/run.sh" -o "$R/sys" -b "$P/nccl_sweep" -p "$P/libnccl-ncclbpf.so" -d "$P/policies"
T=$(find /usr /opt -path '*nvidia/nccl/lib/libnccl.so.2' 2>/dev/null | head -1)
if [ -n "$T" ]; then
	echo "== sweeps (NCCL from $T)"
	LD_LIBRARY_PATH=$(dirname "$T"):$LD_LIBRARY_PATH bash "$P/run.sh" -o "$R/alt" \
		-b "$P/nccl_sweep" -p "$P/libnccl-ncclbpf.so" -d "$P/policies" -e 64M \
		-c "default noop size_aware slo_enforcer latency_hist"
fi
echo "== fail open"
for pol in /nonexistent.bpf.o "$P"/bad/*.bpf.o; do
	NCCL_DEBUG=WARN NCCL_TUNER_PLUGIN=$P/libnccl-ncclbpf.so NCCLBPF_POLICY=$pol \
		"$P/nccl_sweep" -e 1M -n 5; echo "exit=$?"
done
echo "== ops"
for op in allgather reducescatter broadcast reduce; do "$P/nccl_sweep" --op $op -e 64M -n 5 | tail -3; done
echo "== live job"
export NCCLBPF_MAP_DIR=$R/maps; mkdir -p "$NCCLBPF_MAP_DIR" && chmod 700 "$NCCLBPF_MAP_DIR"
NCCLBPF_STATS=1 NCCL_PROFILER_PLUGIN=$P/libnccl-ncclbpf.so NCCL_TUNER_PLUGIN=$P/libnccl-ncclbpf.so \
	NCCLBPF_POLICY=$P/policies/latency_hist.bpf.o:$P/policies/slo_enforcer.bpf.o \
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_DEBUG_FILE=$R/live.nccl.log \
	"$P/nccl_sweep" -b 64M -e 1G -n 20000 > "$R/live.out" 2>&1 &
S=$!
sleep 4
"$P/ncclbpf" ps
# AllReduce (4), 64 MiB bucket (26): key 154 = 0x9a; target 100000 ns, channels 0.
"$P/ncclbpf" map update $S slo_config key 9a000000 value a0860100000000000000000000000000
echo "update exit=$?"
"$P/ncclbpf" map dump $S slo_config | nz
sleep 3
"$P/ncclbpf" prog list $S
for m in latency_sum latency_hist slo_stats; do echo "-- $m (non-zero)"; "$P/ncclbpf" map dump $S $m | nz | head -20; done
"$P/ncclbpf" top $S 1 2
wait $S; echo "live exit=$?"; cat "$R/live.out"
