#!/bin/sh
# `ncclbpf prog run` end to end: raw programs, conformance .data files,
# BPF objects, JSON output, both engines, and every class of bad input
# (each must print a message on stderr and exit with status 2).
#   prog_run.sh NCCLBPF CONFORMANCE_DIR TUNER_OBJECT
NB=$1
CONF=$2
OBJ=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

# expect OUT STATUS ARGS...: stdout must equal OUT and the exit status STATUS.
expect() {
	want_out=$1
	want_rc=$2
	shift 2
	out=$("$NB" "$@" 2>"$TMP/err")
	rc=$?
	if [ "$rc" = "$want_rc" ] && [ "$out" = "$want_out" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: ncclbpf $*: exit $rc (want $want_rc), stdout '$out' (want '$want_out')"
		sed 's/^/    stderr: /' "$TMP/err"
	fi
}

# expect_err PATTERN ARGS...: exit status 2, nothing on stdout, PATTERN on stderr.
expect_err() {
	pat=$1
	shift
	expect "" 2 "$@"
	if ! grep -q -- "$pat" "$TMP/err"; then
		fail=$((fail + 1))
		echo "FAIL: ncclbpf $*: stderr lacks '$pat':"
		sed 's/^/    stderr: /' "$TMP/err"
	fi
}

# Conformance files: their own -- mem, or --mem overriding it.
expect 0x1122334455667788 0 prog run "$CONF/lddw.data"
expect 0x1122 0 prog run "$CONF/be16.data"
expect 0x2211 0 prog run "$CONF/be16.data" --mem "22 11"
expect 0x3 0 prog run "$CONF/mem-len.data" --mem 000102
expect 0x0 0 prog run "$CONF/mem-len.data" --mem ""
expect 0x1 0 prog run "$CONF/call_local.data"
expect 0x0 0 prog run "$CONF/lock_cmpxchg.data" --engine interp
expect '{"r0": "0x1122334455667788"}' 0 -j prog run "$CONF/lddw.data"
expect '{"r0": "0x1122"}' 0 prog run "$CONF/be16.data" -j

# A raw word file with comments and blank lines: mov r0, 7; add r0, r2; exit.
cat > "$TMP/p.raw" <<'RAW'
# r0 = 7 + length of mem

0x00000007000000b7   # mov %r0, 7
0x000000000000200f
0x0000000000000095
RAW
expect 0x7 0 prog run "$TMP/p.raw"
expect 0xa 0 prog run "$TMP/p.raw" --mem "aa bb cc"
expect 0xa 0 prog run "$TMP/p.raw" --mem=aabbcc

# The JIT agrees (it only runs what the checked interpreter ran).
expect 0x1122334455667788 0 prog run "$CONF/lddw.data" --engine jit
expect 0x1 0 prog run "$CONF/call_local.data" --engine jit
expect 0xa 0 prog run "$TMP/p.raw" --mem "aa bb cc" --engine jit

# Bad input: message on stderr, exit 2.
expect_err "No such file" prog run "$TMP/missing.raw"
expect_err "not a hex digit" prog run "$TMP/p.raw" --mem "zz"
expect_err "odd number of digits" prog run "$TMP/p.raw" --mem "123"
expect_err "unknown engine 'llvm'" prog run "$TMP/p.raw" --engine llvm
expect_err "has no program 'main'" prog run "$TMP/p.raw" main
expect_err "unexpected argument" prog run "$OBJ" by_size extra
expect_err "unknown option" prog run "$TMP/p.raw" --frobnicate
expect_err "needs a value" prog run "$TMP/p.raw" --mem
expect_err "missing FILE" prog run
expect_err "unknown verb" prog walk "$TMP/p.raw"
printf '0x00000007000000b7\nmov r0, 1\n' > "$TMP/bad.raw"
expect_err "line 2: expected 0x" prog run "$TMP/bad.raw"
printf '# nothing\n' > "$TMP/empty.raw"
expect_err "no instructions" prog run "$TMP/empty.raw"
# Runtime faults: jump out of range, memory outside --mem, endless loop.
printf '0x0000000000050005\n0x0000000000000095\n' > "$TMP/jmp.raw"
expect_err "insn 0: jump target 6 is out of range" prog run "$TMP/jmp.raw"
printf '0x0000000000081071\n0x0000000000000095\n' > "$TMP/oob.raw"
expect_err "insn 0: read of 1 bytes" prog run "$TMP/oob.raw" --mem "00 01"
expect_err "insn 0: read of 1 bytes" prog run "$TMP/oob.raw" --mem "00 01" --engine jit
printf '0x00000000ffff0005\n0x0000000000000095\n' > "$TMP/loop.raw"
expect_err "instruction budget" prog run "$TMP/loop.raw"

# BPF objects: verified against the tuner hook, ctx from --mem.
if [ -f "$OBJ" ]; then
	expect 0x0 0 prog run "$OBJ"
	expect 0x0 0 prog run "$OBJ" by_size --mem "0010000000000000"
	expect 0x1 0 prog run "$OBJ" by_size --mem "0120000000000000"
	expect 0x1 0 prog run "$OBJ" by_size --mem "0120000000000000" --engine jit
	expect 0x1 0 prog run "$OBJ" always_skip --engine interp
	expect '{"r0": "0x1"}' 0 -j prog run "$OBJ" always_skip
	expect_err "has no program 'nope'" prog run "$OBJ" nope
	long=$(printf '%0200d' 0)
	expect_err "context only" prog run "$OBJ" --mem "$long"
	expect_err "unknown engine" prog run "$OBJ" --engine fast
	head -c 100 "$OBJ" > "$TMP/trunc.o"
	expect "" 2 prog run "$TMP/trunc.o"
else
	fail=$((fail + 1))
	echo "FAIL: $OBJ was not built"
fi

echo "cli_prog_run: $pass passed, $fail failed"
[ "$fail" = 0 ]
