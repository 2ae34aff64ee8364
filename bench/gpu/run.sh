#!/usr/bin/env bash
# bench/gpu/run.sh - run nccl_sweep on real NCCL with no plugin, with the
# ncclbpf plugin and each shipped policy, and under static NCCL_ALGO /
# NCCL_PROTO settings; keep every run's table, NCCL log and a CSV of all.
#
#   bench/gpu/run.sh [-o OUTDIR] [-b SWEEP_BINARY] [-p PLUGIN_SO] [-d POLICY_DIR]
#                    [-e MAX_BYTES] [-n ITERS] [-w WARMUP] [-O "allreduce ..."]
#                    [-c "label ..."] [-t TUNED_POLICY_O]
#
# Defaults: OUTDIR bench-gpu-out, binary build/bench/gpu/nccl_sweep,
# plugin build/libnccl-ncclbpf.so, policies build/policies, 1 GiB, 20
# timed and 5 warmup iterations, AllReduce only, every configuration.
# Every run gets NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING (NCCL's
# per-collective "Algo/proto" lines come from TUNING) written to
# OUTDIR/LABEL.nccl.log, and NCCL_NVLS_ENABLE=0 (NVLink multicast off).
# The plugin's directory goes on LD_LIBRARY_PATH so a libbpf.so.1 placed
# beside it is found.  One failing configuration is recorded and the
# others still run; the exit status is 1 if any failed.  -t adds the
# configuration "tuned" (a policy written by `ncclbpf tune`).
set -u

out=bench-gpu-out
sweep=build/bench/gpu/nccl_sweep
plugin=build/libnccl-ncclbpf.so
pdir=build/policies
max_bytes=1G
iters=20
warmup=5
ops=allreduce
only=""
tuned=""

while getopts "o:b:p:d:e:n:w:O:c:t:h" opt; do
	case $opt in
	o) out=$OPTARG ;;
	b) sweep=$OPTARG ;;
	p) plugin=$OPTARG ;;
	d) pdir=$OPTARG ;;
	e) max_bytes=$OPTARG ;;
	n) iters=$OPTARG ;;
	w) warmup=$OPTARG ;;
	O) ops=$OPTARG ;;
	c) only=$OPTARG ;;
	t) tuned=$OPTARG ;;
	h) sed -n '2,21p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done

abspath() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
mkdir -p "$out" || exit 2
out=$(abspath "$out")
sweep=$(abspath "$sweep")
plugin=$(abspath "$plugin")
pdir=$(abspath "$pdir")
[ -x "$sweep" ] || { echo "run.sh: no sweep binary at $sweep" >&2; exit 2; }
[ -f "$plugin" ] || echo "run.sh: warning: no plugin at $plugin; plugin runs will fail open" >&2
plugin_dir=$(dirname "$plugin")
export LD_LIBRARY_PATH="$plugin_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0

# label | environment (space-separated assignments, @P = plugin, @D = policy dir)
configs=(
	"default|"
	"static_ring_ll|NCCL_ALGO=Ring NCCL_PROTO=LL"
	"static_ring_ll128|NCCL_ALGO=Ring NCCL_PROTO=LL128"
	"static_ring_simple|NCCL_ALGO=Ring NCCL_PROTO=Simple"
	"static_tree|NCCL_ALGO=Tree"
	"static_tree_ll|NCCL_ALGO=Tree NCCL_PROTO=LL"
	"static_tree_ll128|NCCL_ALGO=Tree NCCL_PROTO=LL128"
	"static_tree_simple|NCCL_ALGO=Tree NCCL_PROTO=Simple"
	"static_pat|NCCL_ALGO=PAT"
	"noop|NCCL_TUNER_PLUGIN=@P NCCLBPF_POLICY=@D/noop.bpf.o"
	"size_aware|NCCL_TUNER_PLUGIN=@P NCCLBPF_POLICY=@D/size_aware.bpf.o"
	"nvlink_ring_mid|NCCL_TUNER_PLUGIN=@P NCCLBPF_POLICY=@D/nvlink_ring_mid.bpf.o"
	"adaptive_channels|NCCL_TUNER_PLUGIN=@P NCCL_PROFILER_PLUGIN=@P NCCLBPF_POLICY=@D/adaptive_channels.bpf.o"
	"slo_enforcer|NCCL_TUNER_PLUGIN=@P NCCL_PROFILER_PLUGIN=@P NCCLBPF_POLICY=@D/slo_enforcer.bpf.o"
	"bad_channels|NCCL_TUNER_PLUGIN=@P NCCLBPF_POLICY=@D/bad_channels.bpf.o"
	"latency_hist|NCCL_PROFILER_PLUGIN=@P NCCLBPF_POLICY=@D/latency_hist.bpf.o"
	"sweep|NCCL_TUNER_PLUGIN=@P NCCLBPF_POLICY=@D/sweep.bpf.o"
	"net_peer_qos|NCCL_NET_PLUGIN=@P NCCLBPF_POLICY=@D/net_peer_qos.bpf.o"
	"env_overrides|NCCL_ENV_PLUGIN=@P NCCLBPF_POLICY=@D/env_overrides.bpf.o"
)
if [ -n "$tuned" ]; then
	[ -f "$tuned" ] || { echo "run.sh: no tuned policy at $tuned" >&2; exit 2; }
	configs+=("tuned|NCCL_TUNER_PLUGIN=@P NCCLBPF_POLICY=$(abspath "$tuned")")
fi

csv=$out/results.csv
echo "label,op,n_gpus,bytes,time_us,algbw_gbps,busbw_gbps,wrong" > "$csv"
failed=0
for op in $ops; do
	for c in "${configs[@]}"; do
		label=${c%%|*}
		envs=${c#*|}
		if [ -n "$only" ] && ! [[ " $only " == *" $label "* ]]; then
			continue
		fi
		envs=${envs//@P/$plugin}
		envs=${envs//@D/$pdir}
		tag=$op.$label
		echo "== $tag: ${envs:-(no plugin, NCCL defaults)}"
		# shellcheck disable=SC2086
		env -u NCCL_TUNER_PLUGIN -u NCCL_PROFILER_PLUGIN -u NCCL_ENV_PLUGIN -u NCCL_NET_PLUGIN \
			-u NCCLBPF_POLICY \
			-u NCCL_ALGO -u NCCL_PROTO \
			NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
			NCCL_DEBUG_FILE="$out/$tag.nccl.log" $envs \
			timeout 400 "$sweep" --op "$op" --max-bytes "$max_bytes" \
			--iters "$iters" --warmup "$warmup" --csv "$csv" --label "$label" \
			> "$out/$tag.out" 2>&1
		rc=$?
		if [ $rc -ne 0 ]; then
			echo "   FAILED (exit $rc); see $out/$tag.out"
			failed=1
		fi
		# What NCCL said about plugins, and the plugin's own lines.
		grep -h -i -E "tuner|profiler|ncclbpf" "$out/$tag.nccl.log" 2>/dev/null |
			sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | head -12 | sed 's/^/   /'
	done
done

# Bandwidth per configuration at a few sizes, for a quick comparison:
# busbw, or algbw when every run had one GPU (busbw is then 0 by definition).
echo
awk -F, 'NR > 1 {
	key = $2 "/" $1
	if (!(key in seen)) { seen[key] = 1; order[n++] = key }
	alg[key, $4] = $6; bus[key, $4] = $7
	if ($3 > 1) multi = 1
} END {
	split("8 65536 1048576 16777216 134217728 1073741824", pick, " ")
	printf "== %s (GB/s) by configuration\n", multi ? "busbw" : "algbw (one GPU)"
	printf "%-32s", "op/label"
	for (i = 1; i <= 6; i++) printf " %12s", pick[i]
	printf "\n"
	for (k = 0; k < n; k++) {
		printf "%-32s", order[k]
		for (i = 1; i <= 6; i++) {
			v = multi ? bus[order[k], pick[i]] : alg[order[k], pick[i]]
			printf " %12s", v == "" ? "-" : v
		}
		printf "\n"
	}
}' "$csv" | tee "$out/summary.txt"
exit $failed
