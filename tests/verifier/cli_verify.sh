#!/bin/sh
# CLI checks of `ncclbpf verify`: exit codes, the first line of a rejection,
# warnings and --strict-consistency, JSON output, unknown sections, the
# context type check (a mismatch, and the note for an object without BTF).
# usage: cli_verify.sh NCCLBPF SAFE_OBJ UNSAFE_OBJ WARN_OBJ UNKNOWN_SECTION_OBJ TMPDIR
#                      NO_BTF_OBJ CTX_MISMATCH_OBJ
set -u
BIN=$1 SAFE=$2 UNSAFE=$3 WARN=$4 UNKNOWN=$5 TMP=$6 NOBTF=$7 CTXBAD=$8
fail=0
mkdir -p "$TMP"

check() { # check NAME EXPECTED_RC ACTUAL_RC
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1: exit $3, expected $2"
		fail=1
	else
		echo "ok: $1"
	fi
}

"$BIN" verify "$SAFE" > "$TMP/safe.out" 2>&1; check "safe object" 0 $?
grep -q ": accepted, tag [0-9a-f]\{16\}, [0-9]* insns, [0-9]* states, [0-9]* us$" "$TMP/safe.out" ||
	{ echo "FAIL: no summary line"; cat "$TMP/safe.out"; fail=1; }

"$BIN" verify "$UNSAFE" > "$TMP/unsafe.out" 2>&1; check "unsafe object" 1 $?
head -1 "$TMP/unsafe.out" | grep -Eq '^[^ ]+\.c:[0-9]+: insn [0-9]+: access through possibly-null pointer$' ||
	{ echo "FAIL: first line: $(head -1 "$TMP/unsafe.out")"; fail=1; }
grep -q "ldxw" "$TMP/unsafe.out" || { echo "FAIL: no instruction shown"; fail=1; }
grep -q "R0=map_value_or_null" "$TMP/unsafe.out" || { echo "FAIL: no register state"; fail=1; }
grep -q "hint: " "$TMP/unsafe.out" || { echo "FAIL: no hint"; fail=1; }
tail -1 "$TMP/unsafe.out" | grep -q ": rejected$" || { echo "FAIL: no rejected summary"; fail=1; }

"$BIN" verify "$UNSAFE" null_deref > /dev/null 2>&1; check "named program" 1 $?
"$BIN" verify "$UNSAFE" no_such_prog > /dev/null 2>&1; check "missing program" 2 $?
"$BIN" verify > /dev/null 2>&1; check "no arguments" 2 $?
"$BIN" verify "$SAFE" --bogus > /dev/null 2>&1; check "unknown option" 2 $?
"$BIN" verify "$TMP/does-not-exist.o" > /dev/null 2>&1; check "missing file" 2 $?
printf 'not an ELF file at all\n' > "$TMP/garbage.o"
"$BIN" verify "$TMP/garbage.o" > /dev/null 2>&1; check "malformed file" 2 $?
head -c 100 "$SAFE" > "$TMP/truncated.o"
"$BIN" verify "$TMP/truncated.o" > /dev/null 2>&1; check "truncated file" 2 $?

"$BIN" verify "$WARN" > "$TMP/warn.out" 2>&1; check "warning only" 0 $?
grep -q "warning: decision depends on rank-local value" "$TMP/warn.out" ||
	{ echo "FAIL: no consistency warning"; cat "$TMP/warn.out"; fail=1; }
"$BIN" verify "$WARN" --strict-consistency > "$TMP/strict.out" 2>&1; check "strict consistency" 1 $?
head -1 "$TMP/strict.out" | grep -Eq '\.c:[0-9]+: insn [0-9]+: decision depends on rank-local value$' ||
	{ echo "FAIL: strict first line: $(head -1 "$TMP/strict.out")"; fail=1; }

"$BIN" verify "$UNKNOWN" > "$TMP/unknown.out" 2>&1; check "unknown section" 1 $?
grep -q "unknown section 'xdp' (known hooks: " "$TMP/unknown.out" ||
	{ echo "FAIL: unknown section message"; cat "$TMP/unknown.out"; fail=1; }

"$BIN" verify "$NOBTF" > "$TMP/nobtf.out" 2>&1; check "object without BTF" 0 $?
grep -q "^note: no_btf: context type not checked against struct ncclbpf_tuner_ctx \* (no BTF" "$TMP/nobtf.out" ||
	{ echo "FAIL: no BTF note"; cat "$TMP/nobtf.out"; fail=1; }
grep -q "^note:" "$TMP/safe.out" && { echo "FAIL: BTF object got a note"; cat "$TMP/safe.out"; fail=1; }

"$BIN" verify "$CTXBAD" > "$TMP/ctxbad.out" 2>&1; check "context type mismatch" 1 $?
head -1 "$TMP/ctxbad.out" | grep -Eq '\.c:[0-9]+: insn 0: context type does not match hook$' ||
	{ echo "FAIL: mismatch first line: $(head -1 "$TMP/ctxbad.out")"; fail=1; }
grep -q "program tuner_in_profiler takes struct ncclbpf_tuner_ctx \*; hook profiler passes struct ncclbpf_coll_record \*" \
	"$TMP/ctxbad.out" || { echo "FAIL: mismatch detail"; cat "$TMP/ctxbad.out"; fail=1; }

for o in "$SAFE" "$UNSAFE" "$WARN" "$UNKNOWN" "$NOBTF" "$CTXBAD"; do
	"$BIN" -j verify "$o" > "$TMP/out.json" 2>/dev/null
	python3 -m json.tool "$TMP/out.json" > /dev/null || { echo "FAIL: invalid JSON for $o"; cat "$TMP/out.json"; fail=1; }
done
"$BIN" verify "$UNSAFE" -j > "$TMP/unsafe.json" 2>/dev/null; check "json rejected" 1 $?
python3 - "$TMP/unsafe.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "rejected", d["verdict"]
f = d["findings"][0]
for k in ("file", "line", "insn", "reason", "detail", "hint"):
    assert k in f, k
assert f["reason"] == "access through possibly-null pointer", f["reason"]
assert f["line"] > 0 and f["file"].endswith(".c"), f
assert d["programs"][0]["verdict"] == "rejected"
assert "stats" in d
assert d["programs"][0]["ctx_type_checked"] is True
print("ok: json fields")
PY
"$BIN" -j verify "$NOBTF" > "$TMP/nobtf.json" 2>/dev/null
python3 - "$TMP/nobtf.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "accepted" and d["programs"][0]["ctx_type_checked"] is False, d
print("ok: json ctx_type_checked")
PY
exit $fail
