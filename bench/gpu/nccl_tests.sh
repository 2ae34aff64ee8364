#!/usr/bin/env bash
# bench/gpu/nccl_tests.sh - NVIDIA's nccl-tests with ncclbpf loaded: builds
# all_reduce_perf, all_gather_perf and reduce_scatter_perf from their source
# on the GPU machine (nvcc and NCCL's headers are there; the source is
# https://github.com/NVIDIA/nccl-tests, BSD licence, not part of this tree),
# then runs each with no plugin, with the noop policy and with size_aware,
# and prints nccl-tests' own "# Avg bus bandwidth" line per run and NCCL's
# TUNING lines (on two or more GPUs they show the policy's cells taking
# effect; one rank is never tuned).
#
#   bench/gpu/nccl_tests.sh NCCL_TESTS_SRC PAYLOAD_DIR OUT_DIR [NGPUS]
#
# PAYLOAD_DIR comes from bench/gpu/payload.sh.  NCCL_HOME (default /usr)
# and CUDA_HOME (default /usr/local/cuda) pick the NCCL and CUDA to build
# against; NVCC_GENCODE defaults to Hopper only, to keep the build short.
set -u
[ $# -ge 3 ] || { sed -n '2,17p' "$0"; exit 2; }
SRC=$(cd "$1" && pwd)
P=$(cd "$2" && pwd)
OUT=$3
NG=${4:-$(nvidia-smi -L | wc -l)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} NCCL_HOME=${NCCL_HOME:-/usr}
export NVCC_GENCODE=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P:$CUDA_HOME/lib64:${LD_LIBRARY_PATH:-}

B=$OUT/nccl-tests-build
rm -rf "$B" && cp -r "$SRC" "$B"
make -C "$B" -j"$(nproc)" MPI=0 > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }

for op in all_reduce all_gather reduce_scatter; do
	for cfg in default noop size_aware; do
		log=$OUT/$op.$cfg
		env=""
		[ "$cfg" != default ] &&
			env="NCCL_TUNER_PLUGIN=$P/libnccl-ncclbpf.so NCCLBPF_POLICY=$P/policies/$cfg.bpf.o"
		# shellcheck disable=SC2086
		env $env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCL_DEBUG_FILE=$log.nccl.log \
			"$B/build/${op}_perf" -b 8 -e 1G -f 4 -g "$NG" -c 1 > "$log.out" 2>&1
		rc=$?
		printf '%-15s %-11s exit=%d %s\n' "$op" "$cfg" "$rc" \
			"$(grep -h '# Avg bus bandwidth' "$log.out")"
		grep -h "Out of bounds" "$log.out" | sed 's/^/    /'
		grep -hE "ncclbpf|TUNER/Plugin" "$log".nccl.log* 2>/dev/null |
			sed 's/^[^ ]* [^ ]* [^ ]* //' | sort | uniq -c | head -4 | sed 's/^/    /'
	done
done
