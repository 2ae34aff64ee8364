#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/gpu/realnccl.sh - the real-NCCL check lane: ncclbpf inside real
# NCCL with 2 and 4 ranks as processes on one GPU (bench/gpu/ranks.sh:
# distinct NCCL_HOSTIDs, joined by the network transport), on the system's
# NCCL and on PyTorch's.  Results are files; nothing is judged by eye.
#
#   bench/gpu/realnccl.sh PAYLOAD_DIR OUT_DIR [-n "2 4"] [-v "sys torch"]
#                         [-c "CHECKS"] [-d DEADLINE_S] [-s SWEEP_BIN] [-q]
#
# PAYLOAD_DIR comes from bench/gpu/payload.sh (plugin, recorder, policies,
# lane/ objects, nccl_sweep, nccl_trace, ncclbpf, ranks.sh).  CHECKS (default
# all, in this order):
#   policies  every shipped tuner policy, the lane's force_cells (every
#             offered cell x channels NCCL's/1/2/4) and native C tuners,
#             through the recorder: nccl_trace check (what NCCL ran ==
#             what was decided, call by call; ranks agree), the data check,
#             NCCLBPF_STATS's ns/run (ncclbpf prog list) and the recorder's
#             per-call times (nccl_trace cost)
#   failopen  a missing and a refused object on every rank: one WARN each,
#             NCCL's defaults, correct results
#   live      during one job: a channel_plan map update from an agreed call,
#             reload, rollback, and `ncclbpf loop` (profiler -> tuner on
#             real events); data check on, nccl_trace check: 0 disagreement
#   net       NCCL's Socket transport, ours, ours with every shipped net
#             program, and ours wrapping a stand-in inner plugin
#             (libnccl-net-testinner11.so: our transport behind a plain
#             v11 table) with each program; data check, the NCCL log's
#             NET/ channel lines, the programs' maps, and bus bandwidth
#             against Socket (time-sliced GPU: ratios only); recorded net
#             call sequences
#   tune      ncclbpf tune --backend nccl --ranks N, a small sweep, the
#             policy source it writes (compile and verify where clang is)
#   observe   ncclbpf observe --comm nccl_sweep --probes gpu,net beside a
#             live job, and loop --kernel, when this machine lets us load
#             BPF (else SKIP)
#   insitu    (4 ranks) noop + latency_hist through this build and PAYLOAD/base/,
#             interleaved twice: the in-situ cost of cold calls, before and after
#   cold      (once, first, not per NCCL) bench_cold: the plugin's calls with
#             caches and TLBs emptied before each, for this build, the one
#             in PAYLOAD/base/ if any, and a native C tuner (OUT_DIR/cold.txt)
# Every check writes OUT_DIR/<nccl>.n<ranks>/<label>.*; OUT_DIR/results.txt
# has one line per check: NCCL RANKS CHECK PASS|FAIL|SKIP detail.  After
# DEADLINE_S seconds (default 540) the remaining checks are SKIPped, so a
# call with a time limit still returns its results.  -q (quick) keeps, per
# check, the configurations that tell most (noop, size_aware, slo_enforcer,
# bad_channels and force_cells; Socket, ours, net_peer_qos and the wrapped
# inner plugin with it; no native or base rows).  -s runs another sweep
# binary (bench/gpu/sweep_stub: the whole lane without a GPU, as a dry run
# of the scripts; its times and data check mean nothing).
set -u
[ $# -ge 2 ] || { sed -n '3,39p' "$0"; exit 2; }
P=$(cd "$1" && pwd)
OUT=$2
shift 2
ranks_list="2 4"
versions="sys torch"
checks="policies failopen live net tune observe cold"
deadline=540
SW=$P/nccl_sweep
quick=0
while getopts "n:v:c:d:s:q" opt; do
	case $opt in
	q) quick=1 ;;
	s) SW=$(cd "$(dirname "$OPTARG")" && pwd)/$(basename "$OPTARG") ;;
	n) ranks_list=$OPTARG ;;
	v) versions=$OPTARG ;;
	c) checks=$OPTARG ;;
	d) deadline=$OPTARG ;;
	*) exit 2 ;;
	esac
done
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
RES=$OUT/results.txt
: >"$RES"
export NCCL_NVLS_ENABLE=0 NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,NET
export NCCLBPF_MAP_DIR=$OUT/maps
mkdir -p "$NCCLBPF_MAP_DIR" && chmod 700 "$NCCLBPF_MAP_DIR"
BASE_LD=$P:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
REC=$P/libncclbpf-rec.so
PLUG=$P/libnccl-ncclbpf.so
POL=$P/policies
CLI=$P/ncclbpf
TR=$P/nccl_trace

left() { echo $((deadline - ($(date +%s) - T0))); }
result() { echo "$NCCLV $N $*" | tee -a "$RES"; }

# The ranks' pids (after ranks.sh wrote LABEL.pids).
pids_of() { awk '{ print $2 }' "$R/$1.pids" 2>/dev/null; }

# start LABEL ENV... -- SWEEP ARGS: a job in the background, until LABEL.stop exists.
start() {
	local label=$1 envs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	rm -f "$R/$label.stop" "$R/$label.pids"
	env "${envs[@]}" bash "$P/ranks.sh" -n "$N" -o "$R" -l "$label" -t 150 -- \
		"$SW" "$@" --until-file "$R/$label.stop" &
	JOB=$!
	for _ in $(seq 1 200); do [ -s "$R/$label.pids" ] && return 0; sleep 0.05; done
	return 0
}

# calls LABEL: rank 0's tuner calls so far (0 when it does not answer).
calls() {
	local pid
	pid=$(pids_of "$1" | head -1)
	[ -n "$pid" ] || { echo 0; return; }
	"$CLI" ps "$pid" 2>/dev/null |
		awk '$1 == "comm" && $3 == "tuner" { for (i = 1; i < NF; i++) if ($i == "calls") { print $(i + 1); exit } }' |
		grep . || echo 0
}

# wait_calls LABEL K [TIMEOUT_S]: until rank 0 made K tuner calls.
wait_calls() {
	local t=${3:-60} c
	for _ in $(seq 1 $((t * 10))); do
		c=$(calls "$1")
		[ "$c" -ge "$2" ] 2>/dev/null && return 0
		kill -0 "$JOB" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# sizes_done LABEL: the sizes rank 0 has finished (its table rows so far).
sizes_done() {
	local n
	n=$(grep -c '^  ' "$R/$1.rank0.out" 2>/dev/null)
	echo "${n:-0}"
}

# wait_sizes LABEL K [TIMEOUT_S]: until rank 0 finished K sizes (any job, plugin or not).
wait_sizes() {
	for _ in $(seq 1 $((${3:-60} * 10))); do
		[ "$(sizes_done "$1")" -ge "$2" ] && return 0
		kill -0 "$JOB" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# stop LABEL: ends the job after its current pass; its exit status.
stop() {
	touch "$R/$1.stop"
	wait "$JOB"
}

# One job of NCCL's ranks with the recorder as tuner and profiler.
rec_env() {
	mkdir -p "$R/traces/$1"
	echo NCCL_TUNER_PLUGIN="$REC" NCCL_PROFILER_PLUGIN="$REC" NCCLBPF_RECORD_DIR="$R/traces/$1"
}

# check_traces LABEL: nccl_trace check and cost over the job's traces.
check_traces() {
	"$TR" check "$R/traces/$1"/trace.* >"$R/$1.check" 2>&1
	local rc=$?
	"$TR" cost "$R/traces/$1"/trace.* >"$R/$1.cost" 2>&1
	return $rc
}

SWEEP_ARGS=(--op allreduce,allgather,reducescatter -b 8 -e 8M -f 32 -n 2 -w 1)

# ---- policies ---------------------------------------------------------------
policy_job() { # LABEL POLICY_SPEC [RECORD_TARGET] [EXTRA SWEEP ARGS...]
	local label=$1 spec=$2 target=${3:-} rc t=$SECONDS
	shift 3
	[ "$(left)" -gt 20 ] || { result "$label SKIP (deadline)"; return; }
	# shellcheck disable=SC2046
	start "$label" $(rec_env "$label") NCCLBPF_POLICY="$spec" NCCLBPF_STATS=1 \
		${target:+NCCLBPF_RECORD_TARGET=$target} -- "${SWEEP_ARGS[@]}" "$@"
	# One pass (3 ops x 5 sizes; 5 ops for --op all), then the stats while it still runs.
	wait_sizes "$label" 15 90 &&
		for pid in $(pids_of "$label"); do "$CLI" prog list "$pid"; done >"$R/$label.prog" 2>&1
	stop "$label"
	rc=$?
	if check_traces "$label" && [ $rc = 0 ]; then
		result "$label PASS ($((SECONDS - t)) s) $(tail -1 "$R/$label.check")"
	else
		result "$label FAIL ($((SECONDS - t)) s) exit $rc; $(tail -1 "$R/$label.check")"
	fi
}

check_policies() {
	policy_job noop "$POL/noop.bpf.o:$POL/latency_hist.bpf.o:$POL/coll_stats.bpf.o" "" --op all
	local pols="size_aware nvlink_ring_mid adaptive_channels slo_enforcer bad_channels sweep lossy_peer"
	[ $quick = 1 ] && pols="size_aware slo_enforcer bad_channels"
	for p in $pols; do
		policy_job "$p" "$POL/$p.bpf.o" ""
	done
	policy_job force_cells "$P/lane/force_cells.bpf.o" ""
	for f in "$P"/lane/tuned*.bpf.o; do
		[ -f "$f" ] && policy_job "$(basename "$f" .bpf.o)" "$f" ""
	done
	# NCCL alone (the recorder answering as a plugin that changes nothing): every
	# event type once (small), then Coll and KernelCh over the sweep.
	[ "$N" = 2 ] && NCCLBPF_RECORD_MASK=0xfff policy_job nccl_alone_all "" none \
		--op all -b 8 -e 64K -f 64 -n 1 -w 0
	NCCLBPF_RECORD_MASK=0x42 policy_job nccl_alone "" none
	[ $quick = 1 ] && return
	for p in noop size_aware slo_enforcer; do
		[ -f "$P/native/libnative_$p.so" ] && policy_job "native_$p" "" "$P/native/libnative_$p.so"
	done
	# The build before the cold-path work, loaded the same way (PAYLOAD/base/, when given).
	if [ -f "$P/base/libnccl-ncclbpf.so" ] && [ "$N" = 4 ]; then
		policy_job base_noop "$POL/noop.bpf.o:$POL/latency_hist.bpf.o:$POL/coll_stats.bpf.o" \
			"$P/base/libnccl-ncclbpf.so" --op all
		for p in size_aware slo_enforcer; do
			policy_job "base_$p" "$POL/$p.bpf.o" "$P/base/libnccl-ncclbpf.so"
		done
	fi
	grep -h "channels forced" "$R/bad_channels.check" 2>/dev/null | head -2 >"$R/bad_channels.channels"
}

# In-situ cost of a cold call, this build against PAYLOAD/base/, interleaved (4 ranks only).
check_insitu() {
	[ -f "$P/base/libnccl-ncclbpf.so" ] && [ "$N" = 4 ] || return 0
	for round in 1 2; do
		for b in base new; do
			lib=$P/libnccl-ncclbpf.so
			[ $b = base ] && lib=$P/base/libnccl-ncclbpf.so
			policy_job "insitu_${b}_r$round" "$POL/noop.bpf.o:$POL/latency_hist.bpf.o" "$lib"
		done
	done
}

# ---- fail open ----------------------------------------------------------------
check_failopen() {
	local label spec want rc
	for label in missing refused; do
		[ "$(left)" -gt 15 ] || { result "failopen_$label SKIP (deadline)"; continue; }
		spec=/nonexistent/missing.bpf.o want="policy not loaded"
		[ $label = refused ] && spec=$P/lane/refused.bpf.o want="rejected"
		env NCCL_TUNER_PLUGIN="$PLUG" NCCL_PROFILER_PLUGIN="$PLUG" NCCLBPF_POLICY="$spec" \
			bash "$P/ranks.sh" -n "$N" -o "$R" -l "failopen_$label" -t 120 -- \
			"$SW" --op allreduce,allgather -b 8 -e 1M -f 32 -n 2 -w 1
		rc=$?
		warned=0
		for ((r = 0; r < N; r++)); do
			cat "$R/failopen_$label.rank$r".* 2>/dev/null |
				grep -qE "WARN.*ncclbpf.*$want|ncclbpf WARN.*$want" &&
				warned=$((warned + 1))
		done
		if [ $rc = 0 ] && [ "$warned" = "$N" ]; then
			result "failopen_$label PASS every rank warned ($warned/$N) and ran correctly"
		else
			result "failopen_$label FAIL exit $rc, $warned/$N ranks warned"
		fi
	done
}

# ---- live: map update, reload, rollback, loop --------------------------------------
check_live() {
	local label=live rc c f pids
	[ "$(left)" -gt 60 ] || { result "live SKIP (deadline)"; return; }
	# shellcheck disable=SC2046
	start $label $(rec_env $label) NCCLBPF_POLICY="$POL/adaptive_channels.bpf.o:$POL/latency_hist.bpf.o" -- \
		--op allreduce -b 1M -e 1M -n 1 -w 0
	{
		wait_calls $label 20 90 || echo "no calls"
		pids=$(pids_of $label | paste -sd, -)
		# Every action takes effect from an agreed call three seconds of calls ahead, so
		# every rank has it before it gets there (the CLI and 4 processes take a while).
		c=$(calls $label)
		sleep 1
		c2=$(calls $label)
		margin=$((3 * (c2 - c) + 10))
		echo "rate $((c2 - c)) calls/s, margin $margin calls"
		# The loop first, while channel_plan is empty: it takes the count in force before
		# its first plan to be NCCL's own (0), which is only true of an empty map.
		echo "loop"
		"$CLI" loop --channels 1,2 --window 10 --margin $margin --pids "$pids" --timeout 60 \
			>"$R/$label.loop" 2>&1; echo "exit=$?"
		cat "$R/$label.loop"
		from=$(sed -n 's/.*plan from call \([0-9]*\).*/\1/p' "$R/$label.loop" | tail -1)
		have=$(sed -n 's/^key 148 .*: \([0-9]*\) channels.*/\1/p' "$R/$label.loop" | tail -1)
		wait_calls $label $((${from:-0} + 10)) 120
		# channel_plan[AllReduce, 1 MiB]: another count from call F on, every rank at once; the
		# count before F is the loop's, in force on every rank now.
		want=2
		[ "${have:-0}" = 2 ] && want=1
		f=$(($(calls $label) + margin))
		word=$(printf '%016x' $(((f << 16) | (${have:-0} << 8) | want)))
		le=$(echo "$word" | sed 's/../& /g' | awk '{ for (i = NF; i >= 1; i--) printf "%s", $i }')
		echo "map update channel_plan key 94000000 value $le ($want channels from call $f, ${have:-0} before)"
		ups=()
		for pid in $(pids_of $label); do
			( "$CLI" map update "$pid" channel_plan key 94000000 value "$le"; echo "exit=$?"
			  echo "pid $pid at call $("$CLI" ps "$pid" | awk '$3 == "tuner" { print $NF }') after its update" ) &
			ups+=($!)
		done
		wait "${ups[@]}" # not the job's
		wait_calls $label $((f + 10)) 120
		echo "reload"
		# --exe: only this job's processes, whatever else runs the plugin on the machine.
		"$CLI" reload --exe "$(basename "$SW")" "$POL/size_aware.bpf.o:$POL/latency_hist.bpf.o" \
			--margin $margin; echo "exit=$?"
		wait_calls $label $(($(calls $label) + margin + 10)) 120
		echo "rollback"; "$CLI" rollback --exe "$(basename "$SW")" --margin $margin; echo "exit=$?"
		wait_calls $label $(($(calls $label) + margin + 10)) 120
		for pid in $(pids_of $label); do "$CLI" ps "$pid"; done
	} >"$R/$label.ops" 2>&1
	stop $label
	rc=$?
	if check_traces $label && [ $rc = 0 ] && ! grep -q "exit=[1-9]" "$R/$label.ops"; then
		result "live PASS loop, map update, reload, rollback; $(tail -1 "$R/$label.check")"
	else
		result "live FAIL exit $rc; ops: $(grep -c 'exit=[1-9]' "$R/$label.ops") failed; $(tail -1 "$R/$label.check")"
	fi
}

# ---- net ----------------------------------------------------------------------------
net_job() { # LABEL ENV...
	local label=$1 rc
	shift
	[ "$(left)" -gt 25 ] || { result "net_$label SKIP (deadline)"; return; }
	start "net_$label" "$@" -- --op allreduce,allgather -b 64K -e 64M -f 4 -n 4 -w 1 \
		--csv "$R/net.csv" --label "$label"
	if wait_sizes "net_$label" 6 90; then
		sleep 1
		for pid in $(pids_of "net_$label"); do
			"$CLI" prog list "$pid"
			for m in net_peer_bytes kernel_peer; do "$CLI" map dump "$pid" $m 2>/dev/null | head -8; done
		done >"$R/net_$label.live" 2>&1
	fi
	stop "net_$label"
	rc=$?
	via=$(grep -ho "via NET/[A-Za-z0-9_-]*" "$R/net_$label".rank*.nccl.log 2>/dev/null | sort | uniq -c | tr '\n' ' ')
	if [ $rc = 0 ]; then
		result "net_$label PASS data check; channels: $via"
	else
		result "net_$label FAIL exit $rc; channels: $via"
	fi
}

check_net() {
	local inner=$P/libnccl-net-testinner11.so
	net_job socket NCCL_NET=Socket
	net_job ours NCCL_NET_PLUGIN=ncclbpf NCCLBPF_POLICY="$POL/noop.bpf.o"
	local nets="net_peer_qos lossy_peer"
	[ $quick = 1 ] && nets=net_peer_qos
	for p in $nets; do
		net_job "$p" NCCL_NET_PLUGIN=ncclbpf NCCLBPF_POLICY="$POL/$p.bpf.o"
		net_job "inner_$p" NCCL_NET_PLUGIN=ncclbpf NCCLBPF_NET="inner:$inner" NCCLBPF_POLICY="$POL/$p.bpf.o"
	done
	# Bus bandwidth against Socket, per size (rank 0's CSV; the GPU is time-sliced).
	awk -F, '{ bw[$1, $2, $4] = $7; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } sizes[$2, $4] = 1 }
		END { for (k in sizes) { split(k, a, SUBSEP); for (i = 0; i < n; i++) { l = order[i]
			if (l != "socket" && bw["socket", a[1], a[2]] > 0 && bw[l, a[1], a[2]] != "")
				printf "%s %s %s %.3f\n", a[1], a[2], l, bw[l, a[1], a[2]] / bw["socket", a[1], a[2]] } } }' \
		"$R/net.csv" 2>/dev/null | sort -k1,1 -k2,2n -k3,3 >"$R/net.ratio"
	# NCCL's net calls through our transport, recorded (small sizes: a fixture).
	[ "$(left)" -gt 25 ] || return
	mkdir -p "$R/traces/net_rec"
	env NCCL_NET_PLUGIN="$REC" NCCL_TUNER_PLUGIN="$REC" NCCL_PROFILER_PLUGIN="$REC" \
		NCCLBPF_RECORD_DIR="$R/traces/net_rec" NCCLBPF_POLICY="$POL/net_peer_qos.bpf.o" \
		bash "$P/ranks.sh" -n "$N" -o "$R" -l net_rec -t 120 -- \
		"$SW" --op allreduce,allgather,reducescatter -b 8 -e 1M -f 32 -n 1 -w 1
	local rc=$?
	check_traces net_rec
	result "net_rec $([ $rc = 0 ] && echo PASS || echo FAIL) recorded net calls: $(cat "$R/traces/net_rec"/trace.* 2>/dev/null | grep -c '^n')"
}

# ---- tune ---------------------------------------------------------------------------------
check_tune() {
	[ "$(left)" -gt 60 ] || { result "tune SKIP (deadline)"; return; }
	mkdir -p "$R/tune"
	"$CLI" tune --backend nccl --ranks "$N" --sweep-bin "$SW" --plugin "$PLUG" \
		--sweep-obj "$POL/sweep.bpf.o" --coll allreduce,allgather --sizes 64K:256K --channels 0,1 \
		--reps 2 --iters 2 --warmup 1 --no-compile --run-timeout 60 \
		--out "$R/tune" --name "tuned_n$N" >"$R/tune.out" 2>&1
	local rc=$?
	if [ $rc = 0 ] && [ -s "$R/tune/tuned_n$N.bpf.c" ]; then
		result "tune PASS wrote tuned_n$N.bpf.c ($(grep -c changed "$R/tune.out") changed points)"
	else
		result "tune FAIL exit $rc: $(tail -1 "$R/tune.out")"
	fi
}

# ---- observe (kernel BPF) -----------------------------------------------------------------
check_observe() {
	local label=observe rc
	[ "$(left)" -gt 40 ] || { result "observe SKIP (deadline)"; return; }
	# Kernel probes and the kernel loop act machine-wide: never in a dry run beside others' jobs.
	[ "$(basename "$SW")" = nccl_sweep ] || { result "observe SKIP (not real NCCL)"; return; }
	if ! "$CLI" observe --pid $$ --probes net --duration 1 >"$R/observe.probe" 2>&1; then
		result "observe SKIP kernel BPF not allowed here: $(tail -1 "$R/observe.probe")"
		return
	fi
	start $label NCCL_TUNER_PLUGIN="$PLUG" NCCL_PROFILER_PLUGIN="$PLUG" NCCL_NET_PLUGIN=ncclbpf \
		NCCLBPF_POLICY="$POL/lossy_peer.bpf.o:$POL/latency_hist.bpf.o" -- \
		--op allreduce -b 1M -e 16M -f 4 -n 2 -w 1
	wait_calls $label 10 60
	"$CLI" observe --comm nccl_sweep --probes gpu,net --duration 4 >"$R/observe.out" 2>&1
	echo "observe exit=$?" >>"$R/observe.out"
	"$CLI" loop --kernel --lossy-channels 1 --duration 4 >"$R/observe.kloop" 2>&1
	echo "loop --kernel exit=$?" >>"$R/observe.kloop"
	stop $label
	rc=$?
	result "observe $([ $rc = 0 ] && grep -q 'exit=0' "$R/observe.out" && echo PASS || echo FAIL) job exit $rc; see observe.out, observe.kloop"
}

# ---- the cold path, modelled: bench_cold on this (idle) machine ------------------------------
check_cold() {
	local out=$OUT/cold.txt
	[ "$(left)" -gt 90 ] || { result "cold SKIP (deadline)"; return; }
	{
		lscpu | grep -E "Model name|Socket|Core|Thread|L2|L3|NUMA node0"
		echo "perf: $(command -v perf || echo none)"
		for pol in "" noop.bpf.o slo_enforcer.bpf.o noop.bpf.o:latency_hist.bpf.o; do
			spec=""
			[ -n "$pol" ] && spec=$(echo "$pol" | sed "s|[^:]*|$POL/&|g")
			# Interleaved: the build before the cold-path work, then this one.
			for lib in base/libnccl-ncclbpf.so libnccl-ncclbpf.so; do
				[ -f "$P/$lib" ] || continue
				NCCLBPF_LOG=none NCCLBPF_STATS=1 NCCLBPF_POLICY=$spec \
					"$P/bench_cold" "$P/$lib" 50 128
			done
		done
		"$P/bench_cold" "$P/native/libnative_noop.so" 50 128
	} >"$out" 2>&1
	result "cold $([ -s "$out" ] && echo PASS || echo FAIL) bench_cold: $(grep -c getCollInfo "$out") rows in cold.txt"
}

# ---- every NCCL, every rank count ----------------------------------------------------------
NCCLV=machine N=-
{ echo "== machine"; nvidia-smi -L 2>&1; uname -r; nproc; find /usr /opt -name 'libnccl.so.2*' 2>/dev/null; } \
	>"$OUT/machine.txt" 2>&1
case " $checks " in *" cold "*) check_cold ;; esac
for v in $versions; do
	case $v in
	sys) ldir="" ;;
	torch)
		t=$(find /usr /opt -path '*nvidia/nccl/lib/libnccl.so.2' 2>/dev/null | head -1)
		[ -n "$t" ] || { echo "no PyTorch NCCL here" >>"$RES"; continue; }
		ldir=$(dirname "$t") ;;
	*) echo "unknown NCCL $v" >&2; continue ;;
	esac
	export LD_LIBRARY_PATH=${ldir:+$ldir:}$BASE_LD
	NCCLV=$v
	# Check by check, every rank count: a deadline then cuts whole checks, not a rank count.
	for c in $checks; do
		[ "$c" = cold ] && continue
		for N in $ranks_list; do
			R=$OUT/$v.n$N
			mkdir -p "$R"
			"check_$c"
		done
	done
	for N in $ranks_list; do
		# Which NCCL the ranks loaded, from their own first lines.
		grep -h "^# NCCL" "$OUT/$v.n$N"/*.rank0.out 2>/dev/null | cut -d, -f1 | sort | uniq -c \
			>"$OUT/$v.n$N/nccl_version"
	done
done
echo "== $(grep -c PASS "$RES") PASS, $(grep -c FAIL "$RES") FAIL, $(grep -c SKIP "$RES") SKIP in $(($(date +%s) - T0)) s"
grep -q FAIL "$RES" && exit 1
exit 0
