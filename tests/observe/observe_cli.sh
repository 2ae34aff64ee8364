#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `ncclbpf observe` as a user meets it: help, usage errors, bad targets,
# missing privileges, BTF and tracepoints (clear message, exit 1, no program
# left in the kernel: bpftool prog list before and after), and a -j run
# whose JSON parses and carries the signals asked for.
# usage: observe_cli.sh NCCLBPF
BIN=$1
fail=0
if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "SKIP observe_cli: needs root and kernel BTF"
	exit 77
fi
ours() {
	# Programs of ours in the kernel (bpftool when present, else none to compare).
	if command -v bpftool >/dev/null 2>&1; then
		bpftool prog list 2>/dev/null | grep -cE ' name (io_block_|io_uring_submit|io_uring_done|io_pcache_|net_iter|net_state|net_retrans|obs_fork|obs_exit|sched_sw|sched_wake|sched_migrate|gpu_launch|gpu_sync_|gpu_copy_|gpu_ioctl_)'
	else
		echo 0
	fi
}
settled() { # waits for the kernel's deferred frees
	i=0
	while [ "$(ours)" -gt "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	ours
}
expect() { # expect NAME STATUS PATTERN CMD...
	name=$1 want=$2 pat=$3
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL $name: exit $rc, want $want: $out"
		fail=1
	elif [ -n "$pat" ] && ! printf '%s' "$out" | grep -q -- "$pat"; then
		echo "FAIL $name: output lacks '$pat': $out"
		fail=1
	else
		echo "ok   $name: $(printf '%s' "$out" | head -1)"
	fi
}
base=$(ours)
expect help 0 "usage: ncclbpf observe" "$BIN" observe --help
expect bad-arg 2 "unknown argument" "$BIN" observe --bogus
expect two-targets 2 "exclude each other" "$BIN" observe --pid 1 --comm x
expect bad-probes 2 "unknown probe set 'disk'" "$BIN" observe --pid 1 --probes io,disk
expect bad-cgroup 1 "cgroup /nonexistent/cg: not a directory" "$BIN" observe --cgroup /nonexistent/cg --duration 1
expect not-cgroup2 1 "not a cgroup v2 directory" "$BIN" observe --cgroup /tmp --duration 1
expect long-comm 2 "1 to 15 characters" "$BIN" observe --comm 0123456789abcdefXYZ
expect unknown-pid 1 "pid 999999999: no such process" "$BIN" observe --pid 999999999 --duration 1
expect no-btf 1 "kernel BTF /nonexistent/vmlinux" "$BIN" observe --pid 1 --btf /nonexistent/vmlinux --duration 1
expect no-tracepoint 1 "no tracepoint sched/no_such_tp" \
	env NCCLBPF_OBSERVE_TP_RENAME=sched_switch=no_such_tp "$BIN" observe --pid 1 --probes io,sched --duration 1
expect no-gpu 1 "gpu: not attached: .*libcuda not found" \
	env NCCLBPF_OBSERVE_LIBCUDA=/nonexistent/libcuda.so.1 NCCLBPF_OBSERVE_GPU_MAJORS=0 "$BIN" observe --pid 1 --probes gpu --duration 1
if command -v setpriv >/dev/null 2>&1; then
	expect no-caps 1 "needs root, or CAP_BPF and CAP_PERFMON" \
		setpriv --bounding-set=-all --inh-caps=-all "$BIN" observe --pid 1 --duration 1
	# Not root, but CAP_BPF, CAP_PERFMON and CAP_DAC_READ_SEARCH (tracefs is root's): enough.
	# (Only where uid 65534 can reach the binary: a checkout under /root is not.)
	if ! setpriv --reuid 65534 --regid 65534 --clear-groups sh -c "test -x '$BIN'"; then
		echo "SKIP caps-not-root: uid 65534 cannot run $BIN"
	else
	expect caps-not-root 0 "ncclbpf observe  1 process" \
		setpriv --reuid 65534 --regid 65534 --clear-groups \
		--inh-caps +bpf,+perfmon,+dac_read_search --ambient-caps +bpf,+perfmon,+dac_read_search \
		"$BIN" observe --pid 1 --probes sched --duration 1
	expect caps-no-tracefs 1 "tracefs at /sys/kernel/tracing is not mounted or not readable" \
		setpriv --reuid 65534 --regid 65534 --clear-groups \
		--inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon \
		"$BIN" observe --pid 1 --probes sched --duration 1
	fi
else
	echo "SKIP no-caps: setpriv not found"
fi
dir=$(mktemp -d)
expect no-plugin 1 "no process runs the ncclbpf plugin" env NCCLBPF_CTL_DIR="$dir" "$BIN" observe --duration 1
rmdir "$dir"
after=$(settled "$base")
if [ "$after" -gt "$base" ]; then
	echo "FAIL programs left loaded: $base before, $after after"
	fail=1
fi

# A real run: a shell loop that forks and sleeps, watched by name, as JSON.
sh -c 'i=0; while [ $i -lt 200 ]; do i=$((i+1)); /bin/true; sleep 0.005; done' &
bg=$!
out=$("$BIN" -j observe --pid $bg --probes sched,io --duration 1 --interval 400 2>/dev/null)
rc=$?
wait $bg
if [ $rc != 0 ]; then
	echo "FAIL json run: exit $rc"
	fail=1
elif ! printf '%s\n' "$out" | python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin if l.strip()]
assert len(lines) >= 2, "want >= 2 samples"
p = lines[0]["probes"]
assert p["sched"]["attached"] and p["io"]["attached"], p
total = sum(pr["sched"]["offcpu_ns"]["count"] for l in lines for pr in l["processes"] if "sched" in pr)
assert total > 0, "no off-CPU samples for a sleeping shell"
print("ok   json run: %d samples, %d off-CPU periods" % (len(lines), total))
'; then
	echo "FAIL json run: $out"
	fail=1
fi
# An exec'd process shows its new name; one that exits is reported once, and --pid ends with it.
sh -c 'sleep 2.5; exec sleep 1' &
bg=$!
out=$("$BIN" -j observe --pid $bg --probes sched --duration 9 --interval 300 2>/dev/null)
rc=$?
wait $bg
if [ $rc != 0 ]; then
	echo "FAIL exec/exit run: exit $rc"
	fail=1
elif ! printf '%s\n' "$out" | python3 -c '
import json, sys
pid = int(sys.argv[1])
lines = [json.loads(l) for l in sys.stdin if l.strip()]
names = [p["comm"] for l in lines for p in l["processes"] if p["pid"] == pid]
exited = [l["sample"] for l in lines if pid in l["exited"]]
assert names and names[0] == "sh" and names[-1] == "sleep", "names %s" % names
assert len(exited) == 1 and exited[0] == lines[-1]["sample"], "exit reported in samples %s" % exited
assert len(lines) < 24, "observe ran on after its process exited: %d samples" % len(lines)
print("ok   exec and exit: %s, exit reported in sample %d of %d" % (" -> ".join(sorted(set(names), key=names.index)), exited[0], len(lines)))
' $bg; then
	echo "FAIL exec/exit run: $out"
	fail=1
fi
# The exporter serves the kernel-side series in the same exposition, promtool-clean.
sh -c 'i=0; while [ $i -lt 100 ]; do i=$((i+1)); sleep 0.01; done' &
bg=$!
tmp=$(mktemp -d)
if ! "$BIN" export --observe io,net,sched $bg --textfile "$tmp/m.prom" --count 2 --interval 0.4; then
	echo "FAIL export --observe"
	fail=1
elif ! grep -q "^ncclbpf_offcpu_seconds_count{pid=\"$bg\",process=\"sh\"} [1-9]" "$tmp/m.prom"; then
	echo "FAIL export --observe: no off-CPU series for $bg"
	fail=1
elif command -v promtool >/dev/null 2>&1 && ! promtool check metrics < "$tmp/m.prom"; then
	echo "FAIL promtool check metrics"
	fail=1
else
	echo "ok   export --observe: $(grep -c '^ncclbpf_' "$tmp/m.prom") samples, promtool clean"
fi
wait $bg
rm -rf "$tmp"
after=$(settled "$base")
if [ "$after" -gt "$base" ]; then
	echo "FAIL programs left after the run: $base before, $after after"
	fail=1
fi
exit $fail
