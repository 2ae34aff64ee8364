#!/bin/sh
# The ncclbpf command's surface: help, usage errors (exit 2 with exactly one
# line on stderr), unknown options, -j output that parses as JSON, prog dump
# on objects and raw files, verify exit codes 0/1/2 (including an object
# with no programs), sim and bench argument checks.  Checks read files with
# the shell and jq, so the processes a case starts are mostly the command's.
# usage: cli_usage.sh NCCLBPF POLICY_DIR REJECT_OBJ TMPDIR
set -u
BIN=$1 POL=$2 REJECT=$3 TMP=$4
OBJ=$POL/size_aware.bpf.o
ENVOBJ=$POL/env_overrides.bpf.o
fail=0
mkdir -p "$TMP"
command -v jq > /dev/null || { echo "SKIP: jq not installed"; exit 77; }
# The live job the serve section operates on, started first so that its
# start-up overlaps the rest; it runs until the section ends it.
"$BIN" -j sim --serve "$POL/latency_hist.bpf.o:$OBJ" --duration 300 --rate 500 --ranks 4 \
	> "$TMP/serve.out" 2> "$TMP/serve.err" &
SP=$!
trap 'kill $SP 2> /dev/null' EXIT

nlines() { # lines of FILE, counted without a process
	n=0
	while IFS= read -r _; do n=$((n + 1)); done < "$1"
	echo $n
}
# expect NAME RC CMD...: exit status RC; for RC 2 also exactly one stderr line.
expect() {
	name=$1 want=$2
	shift 2
	"$@" > "$TMP/out" 2> "$TMP/err"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: $name: exit $got, expected $want"; cat "$TMP/err"; fail=1; return
	fi
	if [ "$want" = 2 ] && [ "$(nlines "$TMP/err")" != 1 ]; then
		echo "FAIL: $name: expected one line on stderr, got:"; cat "$TMP/err"; fail=1; return
	fi
	echo "ok: $name"
}
# json NAME: stdout of the last expect is one JSON document
json() {
	jq -e . "$TMP/out" > /dev/null 2>&1 ||
		{ echo "FAIL: $1: not JSON:"; head -5 "$TMP/out"; fail=1; }
}
# json1 NAME: stdout of the last expect is exactly one JSON value (not JSON lines)
json1() {
	[ "$(jq -s length "$TMP/out" 2> /dev/null)" = 1 ] ||
		{ echo "FAIL: $1: not exactly one JSON value:"; head -5 "$TMP/out"; fail=1; }
}
# jqe NAME EXPR: the JSON of the last expect satisfies the jq expression
jqe() {
	jq -e "$2" "$TMP/out" > /dev/null 2>&1 || { echo "FAIL: $1: not $2 in:"; head -c 300 "$TMP/out"; echo; fail=1; }
}
# err1 NAME PATTERN: stderr of the last expect names the problem (and once)
err1() {
	grep -q -- "$2" "$TMP/err" || { echo "FAIL: $1: no '$2' in:"; cat "$TMP/err"; fail=1; }
}
has() { # has NAME PATTERN: stdout of the last expect matches
	grep -q -- "$2" "$TMP/out" || { echo "FAIL: $1: no '$2' in:"; head -5 "$TMP/out"; fail=1; }
}

# ---- global
expect "-h" 0 "$BIN" -h; has "-h lists prog dump" "ncclbpf prog dump FILE"
expect "--help" 0 "$BIN" --help; has "--help usage" "^usage: ncclbpf"
expect "verb -h" 0 "$BIN" verify -h
"$BIN" > /dev/null 2>&1; [ $? = 2 ] && echo "ok: no object" || { echo "FAIL: no object: not exit 2"; fail=1; }
expect "unknown object" 2 "$BIN" frobnicate

# ---- conventions: version, help per verb, -p, --opt=value, --, one error path
expect "version" 0 "$BIN" version; has "version line" "^ncclbpf v[0-9]"; has "libbpf version" "^using libbpf v"
has "features" "^features: .*btf"
expect "--version" 0 "$BIN" --version; has "--version line" "^ncclbpf v[0-9]"
expect "-j version" 0 "$BIN" -j version; json1 "-j version"
jqe "version json fields" '(.version | length > 0) and (.libbpf_version | startswith("v")) and (.features.jit | type == "boolean") and .features.btf == true'
expect "version extra" 2 "$BIN" version foo
expect "help verb" 0 "$BIN" help reload; has "help reload synopsis" "^usage: ncclbpf reload"
has "help reload summary" "publish a new policy"
[ "$(grep -c 'ncclbpf' "$TMP/out")" = 1 ] || { echo "FAIL: help reload shows other verbs"; fail=1; }
expect "help object verb" 0 "$BIN" help map dump; has "help map dump" "^usage: ncclbpf map dump"
[ "$(grep -c 'ncclbpf map' "$TMP/out")" = 1 ] || { echo "FAIL: help map dump shows other verbs"; fail=1; }
expect "verb --help" 0 "$BIN" map dump --help; has "map dump --help" "^usage: ncclbpf map dump"
expect "object -h" 0 "$BIN" map -h; has "map -h lists show" "ncclbpf map show"
expect "help unknown" 2 "$BIN" help frob
expect "every row has a summary" 0 "$BIN" help
for o in ps prog map reload rollback top export verify sim bench version; do
	"$BIN" help "$o" > "$TMP/h" 2>&1 || { echo "FAIL: help $o"; fail=1; }
	[ "$(sed -n 2p "$TMP/h" | grep -c '^           [a-zA-Z]')" = 1 ] || { echo "FAIL: help $o: no summary"; fail=1; }
done
expect "-p version" 0 "$BIN" -p version; json1 "-p version"
[ "$(wc -l < "$TMP/out")" -gt 3 ] || { echo "FAIL: -p not indented"; fail=1; }
expect "-p verify" 0 "$BIN" -p verify "$OBJ"; json1 "-p verify"
expect "-p help" 0 "$BIN" -p help map; json1 "-p help"; has "-p help indented" '^ *"synopsis": "map show'
expect "-- ends options" 2 "$BIN" verify -- --strict-consistency; err1 "--" "no such file\\|cannot open"
expect "unknown option names it" 2 "$BIN" verify "$OBJ" --frob; err1 "unknown option" "unknown option '--frob'"
"$BIN" -j verify > "$TMP/out" 2> "$TMP/err"
[ $? = 2 ] || { echo "FAIL: -j usage error: not exit 2"; fail=1; }
json1 "-j usage error"; has "-j error doc" '"error":"verify: which object'
[ -s "$TMP/err" ] && { echo "FAIL: -j usage error also wrote stderr"; fail=1; }
cp /bin/true "$TMP/x86.o"
expect "x86-64 object" 2 "$BIN" verify "$TMP/x86.o"; err1 "x86-64 object" "x86-64 object, not BPF: compile with clang -target bpf"
[ "$(grep -o "x86.o" "$TMP/err" | wc -l)" = 1 ] || { echo "FAIL: x86-64 object: path not named once"; cat "$TMP/err"; fail=1; }
expect "missing object named once" 2 "$BIN" verify "$TMP/nonexistent.o"
[ "$(grep -o "nonexistent.o" "$TMP/err" | wc -l)" = 1 ] || { echo "FAIL: path doubled"; cat "$TMP/err"; fail=1; }
expect "pid without plugin" 1 "$BIN" ps 1; err1 "pid 1" "pid 1 is not running the plugin"
expect "-j pid without plugin" 1 "$BIN" -j ps 1; json1 "-j ps 1"
expect "map show pid without plugin" 1 "$BIN" map dump 1 foo; err1 "map pid 1" "pid 1 is not running the plugin"
expect "map id unknown" 1 "$BIN" map dump id 1; err1 "map id" "no map has id 1"
expect "reload no target" 2 "$BIN" reload
expect "reload modes exclude" 2 "$BIN" reload 1 "$OBJ" --now --at-call=5
expect "reload --margin with --now" 2 "$BIN" reload 1 "$OBJ" --now --margin 5
expect "reload --comm bad" 2 "$BIN" reload --comm zz "$OBJ"
expect "reload selector, no match" 1 "$BIN" reload --exe no-such-exe-here "$OBJ" --now
# Stale sockets: one nobody serves is neither listed nor counted as a refusal.
CTL=$TMP/ctl; rm -rf "$CTL"; mkdir -m 700 "$CTL"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$CTL/$$.0123456789abcdef.sock"
NCCLBPF_CTL_DIR=$CTL expect "ps, stale socket" 0 "$BIN" ps
has "ps, stale socket: none" "no process is running ncclbpf"
NCCLBPF_CTL_DIR=$CTL expect "reload all, stale socket" 1 "$BIN" reload all "$OBJ" --now
err1 "stale socket skipped" "no process is running the plugin"
grep -q "failed" "$TMP/err" && { echo "FAIL: a stale socket counted as a refusal"; fail=1; }
NCCLBPF_CTL_DIR=$CTL expect "reload the stale pid" 1 "$BIN" reload $$ "$OBJ" --now
err1 "stale pid named" "pid $$ is not running the plugin"
rm -rf "$CTL"

# -j: every verb prints exactly one JSON value, also with no process running
for v in "ps" "prog list" "prog show" "map show" "verify $OBJ" "verify $OBJ:$ENVOBJ" \
	 "sim $OBJ --sizes 1K:2K" "bench $OBJ --calls 100" "version" "prog dump $OBJ"; do
	# shellcheck disable=SC2086
	expect "-j $v" 0 "$BIN" -j $v; json1 "-j $v"
done
expect "verify list -j" 0 "$BIN" -j verify "$OBJ:$ENVOBJ"
jqe "verify list -j: two verdicts" 'length == 2 and .[0].verdict == "accepted"'
expect "verify list rejected" 1 "$BIN" verify "$OBJ:$REJECT"
expect "verify list with program" 2 "$BIN" verify "$OBJ:$ENVOBJ" size_aware

# ---- prog dump
expect "prog no verb" 2 "$BIN" prog
expect "prog unknown verb" 2 "$BIN" prog frob
expect "prog dump no file" 2 "$BIN" prog dump
expect "prog dump unknown option" 2 "$BIN" prog dump "$OBJ" --mem 00
expect "prog dump missing file" 2 "$BIN" prog dump "$TMP/nonexistent.o"
expect "prog dump object" 0 "$BIN" prog dump "$OBJ"
has "dump header" "^size_aware (section tuner, [0-9]* insns):$"
has "dump source line" "^; .*size_aware.bpf.c:[0-9]*: "
has "dump first insn" "^   0: "
has "dump exit" ": exit$"
expect "prog dump named program" 0 "$BIN" prog dump "$OBJ" size_aware
expect "prog dump no such program" 2 "$BIN" prog dump "$OBJ" no_such
expect "prog dump no programs" 2 "$BIN" prog dump "$ENVOBJ"
expect "prog dump -j object" 0 "$BIN" -j prog dump "$OBJ"; json "prog dump -j object"
jqe "prog dump json fields" '.program == "size_aware" and .section == "tuner" and .insns[0].idx == 0 and .insns[-1].asm == "exit" and any(.insns[]; .line > 0 and (.file | endswith("size_aware.bpf.c")))'
printf '0x00000005000000b7\n0x0000000000000095\n' > "$TMP/raw.txt"
expect "prog dump raw" 0 "$BIN" prog dump "$TMP/raw.txt"
has "raw mov" "^   0: mov %r0, 5$"
has "raw exit" "^   1: exit$"
expect "prog dump raw -j" 0 "$BIN" prog dump -j "$TMP/raw.txt"; json "prog dump raw -j"
expect "prog dump raw with program" 2 "$BIN" prog dump "$TMP/raw.txt" foo
printf '0x00000005000000b7\nnot a word\n' > "$TMP/badraw.txt"
expect "prog dump malformed raw" 2 "$BIN" prog dump "$TMP/badraw.txt"
expect "prog run raw" 0 "$BIN" prog run "$TMP/raw.txt"; has "prog run r0" "^0x5$"
expect "prog run -j" 0 "$BIN" -j prog run "$TMP/raw.txt"; json "prog run -j"
expect "prog run bad engine" 2 "$BIN" prog run "$TMP/raw.txt" --engine gpu

# ---- verify
expect "verify accepted" 0 "$BIN" verify "$OBJ"
expect "verify rejected" 1 "$BIN" verify "$REJECT"
expect "verify -j rejected" 1 "$BIN" -j verify "$REJECT"; json "verify -j rejected"
expect "verify no programs" 0 "$BIN" verify "$ENVOBJ"; has "verify no programs msg" "no programs"
expect "verify -j no programs" 0 "$BIN" -j verify "$ENVOBJ"; json "verify -j no programs"
expect "verify program of none" 2 "$BIN" verify "$ENVOBJ" foo
expect "verify unknown option" 2 "$BIN" verify "$OBJ" --strictly
expect "verify option prefix" 0 "$BIN" verify "$OBJ" --strict
# A FIFO is refused without waiting for a writer (timeout turns a hang into exit 124).
rm -f "$TMP/policy.fifo"; mkfifo "$TMP/policy.fifo"
expect "verify fifo" 2 timeout 20 "$BIN" verify "$TMP/policy.fifo"
grep -q "not a regular file" "$TMP/err" || { echo "FAIL: verify fifo: no 'not a regular file'"; fail=1; }
rm -f "$TMP/policy.fifo"
expect "verify too many" 2 "$BIN" verify "$OBJ" a b
printf 'garbage' > "$TMP/garbage.o"
expect "verify garbage" 2 "$BIN" verify "$TMP/garbage.o"

# ---- sim
expect "sim default" 0 "$BIN" sim "$OBJ" --sizes 1K:4K
[ "$(grep -c '^AllReduce ' "$TMP/out")" = 3 ] || { echo "FAIL: sim 1K:4K rows"; fail=1; }
expect "sim -j" 0 "$BIN" -j sim "$OBJ" --coll allgather --ranks 16 --nodes 2 --sizes 1M:4M
json1 "sim -j"
jqe "sim -j: 3 rows" 'length == 3'
expect "sim --opt=value" 0 "$BIN" sim "$OBJ" --sizes=1K:4K --ranks=8
[ "$(grep -c '^AllReduce ' "$TMP/out")" = 3 ] || { echo "FAIL: sim --sizes=1K:4K rows"; fail=1; }
expect "sim channels" 0 "$BIN" sim "$POL/bad_channels.bpf.o" --sizes 1M:1M
has "sim nccl channels" "RING/LL (16) "; has "sim policy channels marked" "(1 \*)"
expect "sim -j channels" 0 "$BIN" -j sim "$POL/bad_channels.bpf.o" --sizes 1M:1M
jqe "sim -j channel fields" '.[0] | .nccl.n_channels == 16 and .policy.n_channels == 1 and .changed == {"algo_proto": false, "channels": true}'
expect "sim unchanged channels" 0 "$BIN" sim "$OBJ" --sizes 1K:1K
grep -q '\*' "$TMP/out" && { echo "FAIL: sim marked an unchanged row"; fail=1; }
expect "sim object list" 0 "$BIN" sim "$OBJ:$ENVOBJ" --sizes 1K:1K
SA=$(dirname "$REJECT")/cli_shape_a.bpf.o SB=$(dirname "$REJECT")/cli_shape_b.bpf.o
expect "sim one map, two shapes" 2 "$BIN" sim "$OBJ:$SA:$SB" --sizes 1K:1K
err1 "two shapes: the map" "map shape_counts: "
err1 "two shapes: both objects" "cli_shape_a.bpf.o declares it array key 4 value 8 max_entries 4, .*cli_shape_b.bpf.o declares it array key 4 value 4 max_entries 4"
expect "sim list with a missing entry" 2 "$BIN" sim "$OBJ:$TMP/nonexistent.o"
for s in 0:8 8 1G:8 8:2T abc:1K 8:1X :8 8:; do
	expect "sim --sizes $s" 2 "$BIN" sim "$OBJ" --sizes "$s"
done
expect "sim --sizes missing" 2 "$BIN" sim "$OBJ" --sizes
expect "sim --ranks 1" 2 "$BIN" sim "$OBJ" --ranks 1
expect "sim --ranks x" 2 "$BIN" sim "$OBJ" --ranks x
expect "sim nodes > ranks" 2 "$BIN" sim "$OBJ" --ranks 8 --nodes 9
expect "sim --coll bad" 2 "$BIN" sim "$OBJ" --coll alltoall
expect "sim unknown option" 2 "$BIN" sim "$OBJ" --bogus
expect "sim no object" 2 "$BIN" sim
expect "sim two objects" 2 "$BIN" sim "$OBJ" "$OBJ"
expect "sim missing file" 2 "$BIN" sim "$TMP/nonexistent.o"
expect "sim garbage" 2 "$BIN" sim "$TMP/garbage.o"

# ---- bench
expect "bench -j" 0 "$BIN" -j bench "$OBJ" --calls 1000; json "bench -j"
jqe "bench json fields" '. as $d | .calls == 1000 and .programs == {"tuner": 1, "profiler": 0} and all("policy", "none", "delta"; . as $k | ($d[$k] | has("p50_ns") and has("p99_ns")) and (($d.profiler[$k] | has("p50_ns")) and $d.profiler[$k].p99_ns != 0 or $k == "delta"))'
expect "bench notes a missing profiler program" 0 "$BIN" bench "$OBJ" --calls 100
has "bench profiler rows" "^profiler (v5, 100 collectives"
has "bench no profiler program" "has no profiler program"
expect "bench list" 0 "$BIN" -j bench "$POL/latency_hist.bpf.o:$OBJ" --calls 100
jqe "bench list: programs of both objects" '.programs == {"tuner": 1, "profiler": 1}'
for n in 99 0 -5 abc 1e6 100000001 ""; do
	expect "bench --calls '$n'" 2 "$BIN" bench "$OBJ" --calls "$n"
done
expect "bench --calls missing" 2 "$BIN" bench "$OBJ" --calls
expect "bench unknown option" 2 "$BIN" bench "$OBJ" --bogus
expect "bench no object" 2 "$BIN" bench
expect "bench garbage" 2 "$BIN" bench "$TMP/garbage.o" --calls 100

# ---- sim --serve: a live emulated job that the operator verbs work on
expect "serve bad rate" 2 "$BIN" sim --serve --rate abc
expect "serve too many ranks" 2 "$BIN" sim --serve --ranks 65
expect "duration without serve" 2 "$BIN" sim "$OBJ" --duration 3
i=0
# Started at the top, so normally serving long before; a loaded machine gets 30 s more.
while [ $i -lt 300 ] && ! "$BIN" ps "$SP" > /dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
expect "serve ps" 0 "$BIN" -j ps "$SP"; json "serve ps -j"
jqe "serve ps shows the job's programs" ".[] | select(.pid == $SP) | tostring | contains(\"latency_hist_record\") and contains(\"size_aware\")"
expect "serve reload (agreed call)" 0 "$BIN" reload "$SP" "$POL/noop.bpf.o"
expect "serve export" 0 "$BIN" export "$SP"; has "serve export latency" "ncclbpf_collective_latency_seconds_bucket"
kill -TERM "$SP"; wait "$SP"; rc=$?
trap - EXIT
if [ "$rc" = 0 ] && jq -e '.collectives > 0 and .diverged == 0' "$TMP/serve.out" > /dev/null; then
	echo "ok: serve ran and no rank disagreed"
else
	echo "FAIL: serve: exit $rc"; cat "$TMP/serve.out" "$TMP/serve.err" | tail -5; fail=1
fi

exit $fail
