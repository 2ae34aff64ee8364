#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The command's contract for scripts (docs/man/ncclbpf.txt, JSON and EXIT
# STATUS), checked on every object of `ncclbpf -j help`:
#  - under -j, stdout is exactly one JSON document, for successes and for
#    every error path (usage, getopt, unreadable input, dead processes),
#    and an error is in the document ({"error":...}), not on stderr;
#  - the verbs documented as streams (top, observe, export to stdout) write
#    one document per line, errors included;
#  - the same dead pid gives the same exit status (1) and words in every
#    verb that takes pids.
# usage: cli_json.sh NCCLBPF POLICY_DIR REJECT_OBJ TMPDIR
set -u
BIN=$1 POL=$2 REJECT=$3 T=$4
OBJ=$POL/size_aware.bpf.o
DEAD=999999
fail=0 covered=" "
rm -rf "$T" && mkdir -p "$T/ctl" && chmod 700 "$T/ctl" || exit 1
# The test's own job and nothing else's.
export NCCLBPF_CTL_DIR=$T/ctl NCCLBPF_MAP_DIR=$T/ctl
command -v jq > /dev/null || { echo "SKIP: jq not installed"; exit 77; }

bad() { echo "FAIL: $*"; fail=1; }
run() { # run NAME WANT_RC CMD...: stdout in $T/out, stderr in $T/err
	name=$1 want=$2
	shift 2
	covered="$covered$(printf '%s' "$*" | awk '{for (i = 1; i <= NF; i++) if ($i !~ /^-/) { print $i; exit }}') "
	"$BIN" "$@" > "$T/out" 2> "$T/err"
	got=$?
	[ "$got" = "$want" ] || { bad "$name: exit $got, expected $want"; head -3 "$T/out" "$T/err"; return 1; }
}
# doc NAME WANT_RC [error] CMD...: exactly one JSON document; with "error",
# the document carries the error (an object's "error", or an element's).
doc() {
	name=$1 want=$2 e=
	shift 2
	[ "$1" = error ] && { e=1; shift; }
	run "$name" "$want" -j "$@" || return
	n=$(jq -s length < "$T/out" 2> /dev/null)
	[ "$n" = 1 ] || { bad "$name: stdout is not one JSON document (${n:-invalid}):"; head -c 300 "$T/out"; echo; return; }
	if [ -n "$e" ]; then
		jq -e 'if type == "object" then has("error") else any(.[]; type == "object" and has("error")) end' \
			< "$T/out" > /dev/null || bad "$name: no error in $(head -c 200 "$T/out")"
		grep -q '^ncclbpf: ' "$T/err" && bad "$name: the error went to stderr too: $(cat "$T/err")"
	fi
	echo "ok: -j $*"
}
# lines NAME WANT_RC N CMD...: N lines on stdout, each one JSON document
lines() {
	name=$1 want=$2 k=$3
	shift 3
	run "$name" "$want" -j "$@" || return
	n=$(wc -l < "$T/out")
	[ "$n" = "$k" ] || { bad "$name: $n lines, expected $k"; head -c 300 "$T/out"; return; }
	while IFS= read -r l; do
		printf '%s' "$l" | jq -e . > /dev/null 2>&1 || { bad "$name: a line is not JSON: $l"; return; }
	done < "$T/out"
	echo "ok: -j $* ($k lines)"
}

# ---- a live job to point the process verbs at
"$BIN" sim --serve "$POL/latency_hist.bpf.o:$OBJ" --ranks 4 --rate 500 --duration 900 > "$T/serve.out" 2>&1 &
P=$!
trap 'kill $P 2> /dev/null' EXIT
i=0
while [ $i -lt 300 ] && ! "$BIN" ps "$P" > /dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
MAP=$("$BIN" -j map list "$P" | jq -r '[.[] | select(.type_name == "array")][0].name')
[ -n "$MAP" ] && [ "$MAP" != null ] || bad "the job has no array map to read"
printf '0x00000005000000b7\n0x0000000000000095\n' > "$T/raw.txt"
printf 'garbage' > "$T/garbage.o"

# ---- global: no object, unknown ones, options, "--"
doc "no object" 2 error
doc "unknown object" 2 error frobnicate
doc "unknown global option" 2 error -x verify "$OBJ"
grep -q "'-x'" "$T/out" || bad "the unknown global option is not named: $(cat "$T/out")"
doc "-- ends the global options" 0 -- verify "$OBJ"
doc "-h" 0 -h
doc "object -h" 0 map -h
# ---- help, version
doc "help" 0 help
[ "$(jq '.commands | length' < "$T/out")" -gt 20 ] || bad "help -j: not every command"
doc "help map dump" 0 help map dump
[ "$(jq -r '.commands[0].synopsis' < "$T/out")" = "map dump PID MAP | map dump id ID" ] || bad "help map dump -j"
doc "help unknown" 2 error help frob
doc "version" 0 version
jq -e '.features | has("jit") and has("observe") and has("kernel_btf")' < "$T/out" > /dev/null ||
	bad "version -j: features miss observe: $(cat "$T/out")"
doc "version extra" 2 error version foo
# ---- ps, prog
doc "ps" 0 ps
doc "ps PID" 0 ps "$P"
doc "ps PID DEAD" 1 error ps "$P" $DEAD
jq -e '.[0].pid and .[1].error' < "$T/out" > /dev/null || bad "ps PID DEAD: result then error"
doc "ps not a pid" 2 error ps abc
doc "prog list" 0 prog list
doc "prog show PID" 0 prog show "$P"
doc "prog run" 0 prog run "$T/raw.txt"
doc "prog run bad engine" 2 error prog run "$T/raw.txt" --engine gpu
doc "prog dump" 0 prog dump "$OBJ"
doc "prog dump no file" 2 error prog dump
doc "prog dump garbage" 2 error prog dump "$T/garbage.o"
doc "prog unknown verb" 2 error prog frob
# ---- map
doc "map show" 0 map show
doc "map show PID" 0 map show "$P"
doc "map list PID" 0 map list "$P"
doc "map dump" 0 map dump "$P" "$MAP"
doc "map lookup" 0 map lookup "$P" "$MAP" key 0 0 0 0
doc "map dump no such map" 1 error map dump "$P" no_such_map
doc "map dump id unknown" 1 error map dump id 987654
doc "map delete array" 1 error map delete "$P" "$MAP" key 0 0 0 0
doc "map update bad flags" 2 error map update "$P" "$MAP" key 0 0 0 0 value 1 flags frob
doc "map no verb" 2 error map
# ---- reload, rollback
doc "reload" 0 reload "$P" "$POL/latency_hist.bpf.o:$OBJ"
doc "rollback" 0 rollback "$P"
doc "reload no target" 2 error reload
doc "reload missing object" 2 error reload "$P" "$T/nonexistent.o"
doc "reload modes exclude" 2 error reload "$P" "$OBJ" --now --at-call=5
doc "rollback bad option" 2 error rollback "$P" --frob
# ---- change (agreed changes; one node here)
doc "change status" 0 change status
doc "change status DEAD" 1 error change status $DEAD
doc "change stage" 0 change stage json-t1 "$P" "$OBJ"
doc "change abort" 0 change abort json-t1
doc "change stage no target" 2 error change stage
doc "change unknown verb" 2 error change frob
# ---- top, export (streams to stdout), report
lines "top PID" 0 2 top "$P" 0.2 2
lines "top all" 0 1 top --count 1
lines "top bad count" 2 1 top --count 0
lines "export" 0 1 export
lines "export PID, twice" 0 2 export "$P" --count 2 --interval 0.1
jq -e '.metrics | any(.name == "ncclbpf_processes" and .value == 1)' < "$T/out" > /dev/null ||
	bad "export -j: no ncclbpf_processes 1 in $(head -c 200 "$T/out")"
doc "export --textfile" 0 export --textfile "$T/f.prom" --count 1 "$P"
doc "export --textfile unwritable" 1 error export --textfile "$T/no/such/dir/f.prom" --count 1
# --listen: the document (scrapes served) comes when it stops, after one scrape here.
"$BIN" -j export --listen 127.0.0.1:0 --count 1 > "$T/listen.out" 2> "$T/listen.err" &
L=$!
covered="$covered export "
i=0
while [ $i -lt 300 ] && ! grep -qs 'serving' "$T/listen.err"; do sleep 0.1; i=$((i + 1)); done
port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/listen.err")
python3 -c 'import sys, urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read()' "$port" ||
	bad "export --listen: no scrape answered on port '$port'"
wait $L
[ "$(jq -s 'length' < "$T/listen.out")" = 1 ] && [ "$(jq .scrapes < "$T/listen.out")" = 1 ] &&
	echo "ok: -j export --listen" || bad "export --listen -j: $(cat "$T/listen.out")"
doc "export bad option" 2 error export --frob
doc "export option without value" 2 error export --listen
doc "export bad listen" 2 error export --listen nowhere --count 1
doc "report PID" 0 report -o "$T/r.html" "$P"
jq -e '.output | endswith("/r.html")' < "$T/out" > /dev/null || bad "report -j: no output path"
doc "report --from" 0 report --from "$T/f.prom" -o "$T/r2.html"
# Without -o: a new file in the current directory, named by the time, its absolute path said.
mkdir -p "$T/here" && (cd "$T/here" && "$BIN" report "$P" > "$T/here.out" 2>&1) || bad "report without -o"
f=$(ls "$T/here"/ncclbpf-report-*.html 2> /dev/null)
[ -s "$f" ] && grep -q "^wrote $f: " "$T/here.out" && echo "ok: report without -o" ||
	bad "report without -o: '$f', said: $(cat "$T/here.out")"
doc "report missing --from" 2 error report --from "$T/missing.prom"
doc "report both" 2 error report --from "$T/f.prom" "$P"
# ---- verify, sim, bench, tune
doc "verify" 0 verify "$OBJ"
doc "verify list" 0 verify "$OBJ:$POL/noop.bpf.o"
doc "verify rejected" 1 verify "$REJECT"
doc "verify list with garbage" 2 error verify "$OBJ:$T/garbage.o"
doc "verify no object" 2 error verify
doc "verify unknown option" 2 error verify "$OBJ" --frob
doc "sim" 0 sim "$OBJ" --sizes 1K:4K
doc "sim bad sizes" 2 error sim "$OBJ" --sizes 8:1X
doc "sim --serve" 0 sim --serve "$OBJ" --ranks 2 --rate 200 --duration 1
doc "bench" 0 bench "$OBJ" --calls 100
doc "bench bad calls" 2 error bench "$OBJ" --calls 5
doc "tune" 0 tune --coll allreduce --sizes 1K:2K --channels 0,8 --reps 2 --no-compile --out "$T/tune"
[ -s "$T/tune/tuned.bpf.c" ] || bad "tune --out: no $T/tune/tuned.bpf.c"
doc "tune bad backend" 2 error tune --backend frob
# CUDA and NCCL present (nccl_sweep built) but no GPU: said in so many words.
if [ -x "$(dirname "$BIN")/bench/gpu/nccl_sweep" ] && ! ls /dev/nvidia[0-9]* > /dev/null 2>&1; then
	doc "tune, no GPU" 1 error tune --backend nccl --coll allreduce --sizes 1K:2K --out "$T/tune-gpu"
	grep -q "no GPU found on this machine" "$T/out" || bad "tune --backend nccl without a GPU: $(cat "$T/out")"
else
	echo "SKIP: tune without a GPU (no nccl_sweep in this build, or a GPU here)"
fi
doc "tune bad option" 2 error tune --frob
# ---- observe, loop (kernel probes need root and BTF; their errors need neither)
doc "observe bad probes" 2 error observe --probes frob
doc "loop bad option" 2 error loop --frob
doc "loop no job" 1 error loop --pids $DEAD --timeout 1
doc "loop --kernel says what the tuner does" 2 error loop --kernel
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && "$BIN" version | grep -q 'observe *yes'; then
	lines "observe" 0 2 observe --pid "$P" --probes sched --duration 1 --interval 500
else
	echo "SKIP: observe's samples (needs root, kernel BTF and a build with observe)"
	covered="$covered observe "
fi
# ---- -p: the same documents, indented
run "-p ps" 1 -p ps $DEAD && jq -e .error < "$T/out" > /dev/null && [ "$(wc -l < "$T/out")" -gt 1 ] ||
	bad "-p ps DEAD: not one indented document"
run "-p help" 0 -p help map && jq -e .commands < "$T/out" > /dev/null || bad "-p help: not JSON"

# ---- every object of the command was run above
for o in $("$BIN" -j help | jq -r '.commands[].object' | sort -u); do
	case "$covered" in *" $o "*) ;; *) bad "no case runs '$o' under -j" ;; esac
done

# ---- one dead pid, one exit status and the same words everywhere
want="pid $DEAD is not running the plugin"
for v in "ps $DEAD" "prog list $DEAD" "prog show $DEAD" "map show $DEAD" "map list $DEAD" \
	 "map dump $DEAD x" "top $DEAD" "export $DEAD" "report -o $T/x.html $DEAD" \
	 "reload $DEAD $OBJ" "rollback $DEAD" "export --listen 127.0.0.1:0 $DEAD" \
	 "export --textfile $T/x.prom $DEAD"; do
	# shellcheck disable=SC2086
	"$BIN" $v > /dev/null 2> "$T/err"
	rc=$?
	[ $rc = 1 ] || bad "$v: exit $rc for a dead pid, not 1"
	grep -q "$want" "$T/err" || bad "$v: does not say '$want': $(cat "$T/err")"
done
[ -e "$T/x.html" ] && bad "report of a dead pid wrote a page"
[ $fail = 0 ] && echo "ok: a dead pid exits 1 with the same words in every verb"
exit $fail
