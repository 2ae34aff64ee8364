#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# observe's gpu set against a real CUDA driver: builds bench/gpu/cuda_job.cu
# with nvcc, starts it, attaches `ncclbpf observe --pid --probes gpu` while it
# launches, synchronizes and copies, and prints what the job did next to what
# the observer counted (launches, synchronizes, copies and ioctls per sample).
# Needs root (or CAP_BPF+CAP_PERFMON), BTF and a GPU.
#
#   bench/gpu/observe_cuda.sh NCCLBPF [LAUNCHES] [OUT_DIR]
set -eu
[ $# -ge 1 ] || { sed -n '3,9p' "$0"; exit 2; }
bin=$1
n=${2:-10000}
out=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvcc -O2 -o "$out/cuda_job" "$here/cuda_job.cu"
"$out/cuda_job" "$n" >"$out/job.txt" 2>&1 &
job=$!
# The job initialises CUDA, prints "ready" and waits 4 s before it starts.
while ! grep -q ready "$out/job.txt" 2>/dev/null; do sleep 0.1; done
"$bin" -j observe --pid "$job" --probes gpu --duration 8 >"$out/observe.json"
wait "$job"
echo "job:      $(grep launches "$out/job.txt")"
python3 - "$out/observe.json" <<'PY'
import json, sys
tot = {"launches": 0, "sync": 0, "copy": 0, "ioctl": 0}
for line in open(sys.argv[1]):
    for p in json.loads(line).get("processes", []):
        g = p.get("gpu")
        if g:
            tot["launches"] += g["launches"]
            tot["sync"] += g["sync_ns"]["count"]
            tot["copy"] += g["copy_ns"]["count"]
            tot["ioctl"] += g["ioctl_ns"]["count"]
print("observed: launches %(launches)d syncs %(sync)d copies %(copy)d ioctls %(ioctl)d" % tot)
PY
