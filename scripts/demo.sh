#!/bin/sh
# Sets up what ncclbpf needs, builds it, and runs the main job without a GPU:
# each shipped tuner policy is verified, then driven through the NCCL
# emulator (the plugin dlopen'ed as NCCL does) to print its decision table.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
# CMake leaves out what this machine cannot build (observe without bpftool or
# kernel BTF, the GPU sweep without CUDA): say so instead of hiding it.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cmake -S . -B build -G Ninja >"$log" 2>&1 || { cat "$log"; exit 1; }
# (a pipeline's status is sed's: test grep's own to tell "nothing" apart)
if grep -qE 'skipped|not built|not found' "$log"; then
	grep -E 'skipped|not built|not found' "$log" | sed 's/^-- /== left out: /'
else
	echo "== nothing left out"
fi
cmake --build build
echo "== ncclbpf version (what this build and machine have)"
build/ncclbpf version
POLICY=${1:-size_aware}
OBJ=build/policies/$POLICY.bpf.o
echo "== ncclbpf verify $OBJ"
build/ncclbpf verify "$OBJ"
echo "== ncclbpf sim $OBJ (AllReduce, 8 ranks, 1 node)"
build/ncclbpf sim "$OBJ" --coll allreduce --ranks 8 --nodes 1 --sizes 8:1G
echo "== ncclbpf bench $OBJ"
build/ncclbpf bench "$OBJ" --calls 200000
echo "== a live emulated job for 3 s (ncclbpf sim --serve), seen by ncclbpf ps"
build/ncclbpf sim --serve "$OBJ" --duration 3 &
job=$!
sleep 1
build/ncclbpf ps "$job"
wait "$job"
