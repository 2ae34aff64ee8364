#!/usr/bin/env bash
# bench/gpu/payload.sh - gather what run.sh needs on a GPU machine that has
# CUDA and NCCL but no clang or libbpf: the plugin (and its short-name
# symlinks), the compiled policies (sweep.bpf.o included, for tune), the
# libbpf.so.1 the plugin was linked against, the sweep binary, the ncclbpf
# tool, run.sh and tune.sh; for the real-NCCL lane (realnccl.sh) also the
# recorder, nccl_trace, ranks.sh, the lane's own objects (lane/), native C
# tuners (native/) and the stand-in inner net plugin.
#
#   bench/gpu/payload.sh BUILD_DIR DEST_DIR
#
# Then, on the GPU machine:
#   DEST_DIR/run.sh -b DEST_DIR/nccl_sweep -p DEST_DIR/libnccl-ncclbpf.so \
#                   -d DEST_DIR/policies -o OUT
#   DEST_DIR/tune.sh tune -d DEST_DIR -o OUT        (see tune.sh)
set -eu

[ $# -eq 2 ] || { sed -n '2,14p' "$0"; exit 2; }
build=$1
dest=$2
here=$(cd "$(dirname "$0")" && pwd)

mkdir -p "$dest/policies"
cp "$build/libnccl-ncclbpf.so" "$dest/"
for kind in tuner profiler env net; do
	ln -sf libnccl-ncclbpf.so "$dest/libnccl-$kind-ncclbpf.so"
done
cp "$build"/policies/*.bpf.o "$dest/policies/"
if [ -x "$build/bench/gpu/nccl_sweep" ]; then
	cp "$build/bench/gpu/nccl_sweep" "$dest/"
fi
# The command-line tool, to verify and to watch the running job there.
if [ -x "$build/ncclbpf" ]; then
	cp "$build/ncclbpf" "$dest/"
fi
cp "$here/run.sh" "$here/tune.sh" "$here/nccl_sweep.c" "$here/cuda_job.cu" "$here/observe_cuda.sh" \
	"$here/ranks.sh" "$here/realnccl.sh" "$dest/"
# The real-NCCL lane: recorder, trace checker, its objects, native tuners, an inner net plugin.
mkdir -p "$dest/lane" "$dest/native"
for f in libncclbpf-rec.so bench/gpu/nccl_trace tests/net/libnccl-net-testinner11.so \
	 bench/tuner/bench_cold; do
	[ -e "$build/$f" ] && cp "$build/$f" "$dest/"
done
cp "$build"/bench/gpu/bpf/*.bpf.o "$dest/lane/" 2>/dev/null || true
[ -e "$build/tests/emulator/bpf/t_reject.bpf.o" ] && cp "$build/tests/emulator/bpf/t_reject.bpf.o" "$dest/lane/refused.bpf.o"
cp "$build"/bench/tuner/libnative_*.so "$dest/native/" 2>/dev/null || true
# Non-system dependencies that a bare CUDA image lacks (libbpf; the tool's
# libmicrohttpd and its TLS stack); put DEST_DIR on LD_LIBRARY_PATH there.
libs='libbpf|libmicrohttpd|libgnutls|libp11-kit|libidn2|libunistring|libtasn1|libnettle|libhogweed|libgmp|libffi'
for bin in "$build/libnccl-ncclbpf.so" "$dest/ncclbpf" "$dest/libnccl-net-testinner11.so"; do
	[ -e "$bin" ] || continue
	ldd "$bin" | awk -v re="^($libs)\\." '$1 ~ re { print $3 }'
done | sort -u | while read -r lib; do
	cp -L "$lib" "$dest/"
done
ls -l "$dest"
