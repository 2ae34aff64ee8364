#!/bin/sh
# `ncclbpf sim` shows the chunk size NCCL plans each collective with
# (getChunkSize, tuner v7): NCCL's own, and where a SEC("tuner/chunk")
# program changed it, what NCCL uses instead (marked '*'); -j lists every
# channel part.
# usage: sim_chunk.sh NCCLBPF T_CHUNK_OBJ OTHER_OBJ
set -u
BIN=$1 CHUNK=$2 OTHER=$3
fail=0
out=$("$BIN" sim "$CHUNK" --sizes 64M:64M) || { echo "FAIL: sim exited $?"; exit 1; }
echo "$out" | grep -q '^AllReduce  *67108864 .* 2M -> 64K \*$' || { echo "FAIL: no 2M -> 64K * row:"; echo "$out"; fail=1; }
out=$("$BIN" sim "$OTHER" --sizes 64M:64M)
echo "$out" | grep -q ' 2M$' || { echo "FAIL: NCCL's 2M chunk not shown:"; echo "$out"; fail=1; }
echo "$out" | grep -q '\*' && { echo "FAIL: a row marked without a chunk program"; fail=1; }
json=$("$BIN" -j sim "$CHUNK" --sizes 64M:64M)
echo "$json" | grep -q '"chunks":\[{"n_bytes":4194304,"parts":1,"nccl":2097152,"policy":65536},{"n_bytes":4194304,"parts":1,"nccl":2097152,"policy":65536},{"n_bytes":4194304,"parts":14,"nccl":2097152,"policy":65536}\]' ||
	{ echo "FAIL: -j chunks:"; echo "$json"; fail=1; }
[ $fail = 0 ] && echo "sim chunk ok"
exit $fail
