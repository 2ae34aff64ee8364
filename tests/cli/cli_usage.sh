#!/bin/sh
# The ncclbpf command's surface: help, usage errors (exit 2 with exactly one
# line on stderr), unknown options, -j output that parses as JSON, prog dump
# on objects and raw files, verify exit codes 0/1/2 (including an object
# with no programs), sim and bench argument checks.
# usage: cli_usage.sh NCCLBPF POLICY_DIR REJECT_OBJ TMPDIR
set -u
BIN=$1 POL=$2 REJECT=$3 TMP=$4
OBJ=$POL/size_aware.bpf.o
ENVOBJ=$POL/env_overrides.bpf.o
fail=0
mkdir -p "$TMP"

# expect NAME RC CMD...: exit status RC; for RC 2 also exactly one stderr line.
expect() {
	name=$1 want=$2
	shift 2
	"$@" > "$TMP/out" 2> "$TMP/err"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: $name: exit $got, expected $want"; cat "$TMP/err"; fail=1; return
	fi
	if [ "$want" = 2 ] && [ "$(wc -l < "$TMP/err")" != 1 ]; then
		echo "FAIL: $name: expected one line on stderr, got:"; cat "$TMP/err"; fail=1; return
	fi
	echo "ok: $name"
}
# json NAME: stdout of the last expect is one JSON document
json() {
	python3 -m json.tool "$TMP/out" > /dev/null 2>&1 ||
		{ echo "FAIL: $1: not JSON:"; head -5 "$TMP/out"; fail=1; }
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
python3 - "$TMP/out" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["program"] == "size_aware" and d["section"] == "tuner", d
assert d["insns"][0]["idx"] == 0 and d["insns"][-1]["asm"] == "exit", d["insns"][-1]
assert any(i["line"] > 0 and i["file"].endswith("size_aware.bpf.c") for i in d["insns"])
print("ok: prog dump json fields")
PY
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
expect "verify unknown option" 2 "$BIN" verify "$OBJ" --strict
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
n=0
while IFS= read -r l; do
	printf '%s\n' "$l" | python3 -m json.tool > /dev/null 2>&1 || { echo "FAIL: sim -j line: $l"; fail=1; }
	n=$((n + 1))
done < "$TMP/out"
[ "$n" = 3 ] || { echo "FAIL: sim -j: $n lines, expected 3"; fail=1; }
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
python3 - "$TMP/out" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["calls"] == 1000, d
for k in ("policy", "none", "delta"):
    assert "p50_ns" in d[k] and "p99_ns" in d[k], d
print("ok: bench json fields")
PY
for n in 99 0 -5 abc 1e6 100000001 ""; do
	expect "bench --calls '$n'" 2 "$BIN" bench "$OBJ" --calls "$n"
done
expect "bench --calls missing" 2 "$BIN" bench "$OBJ" --calls
expect "bench unknown option" 2 "$BIN" bench "$OBJ" --bogus
expect "bench no object" 2 "$BIN" bench
expect "bench garbage" 2 "$BIN" bench "$TMP/garbage.o" --calls 100

exit $fail
