#!/bin/sh
# Sets up what ncclbpf needs, builds it, and runs the main job without a GPU:
# each shipped tuner policy is verified, then driven through the NCCL
# emulator (the plugin dlopen'ed as NCCL does) to print its decision table.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build
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
