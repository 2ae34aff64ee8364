#!/bin/sh
# The plugin library must export exactly the NCCL plugin tables (tuner v2..v7,
# profiler v1..v7, env v1..v2, net v6..v12) and its status table
# (ncclbpf/status.h), and nothing else of its own.
set -e
lib=$1
got=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^_' | sort)
want=$(printf '%s\n' ncclEnvPlugin_v1 ncclEnvPlugin_v2 \
	ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 ncclProfiler_v7 \
	ncclTunerPlugin_v2 ncclTunerPlugin_v3 ncclTunerPlugin_v4 ncclTunerPlugin_v5 ncclTunerPlugin_v6 ncclTunerPlugin_v7 \
	ncclNetPlugin_v6 ncclNetPlugin_v7 ncclNetPlugin_v8 ncclNetPlugin_v9 ncclNetPlugin_v10 ncclNetPlugin_v11 ncclNetPlugin_v12 \
	ncclbpfStatus_v1 | sort)
if [ "$got" != "$want" ]; then
	echo "exported symbols differ:"; echo "got:"; echo "$got"; echo "want:"; echo "$want"
	exit 1
fi
for kind in tuner profiler env net; do
	link=$(dirname "$lib")/libnccl-$kind-ncclbpf.so
	[ "$(readlink "$link")" = "libnccl-ncclbpf.so" ] || { echo "missing symlink $link"; exit 1; }
done
echo "exports ok"
