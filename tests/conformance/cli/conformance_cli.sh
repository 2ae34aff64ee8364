#!/bin/sh
# Runs every conformance program through `ncclbpf prog run` the way an outside
# checker would: the -- raw words in a file of their own, -- mem through --mem,
# both engines; r0 must equal -- result.
# One awk pass splits the files and one compares the answers, so the only
# processes started per program are the command's own runs, several at once.
# usage: conformance_cli.sh NCCLBPF CONFORMANCE_DIR
set -u
NCCLBPF=$1
DIR=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
jobs=$(($(nproc 2>/dev/null || echo 2) * 2))

# N.raw per program; list: N|file name|mem bytes|expected r0 (a tab would
# let read merge an empty mem into its neighbours).
awk -v out="$TMP" '
function flush() { if (n) { close(raw); printf "%d|%s|%s|%s\n", n, base, mem, want > (out "/list") } }
FNR == 1 { flush(); n++; base = FILENAME; sub(/.*\//, "", base); raw = out "/" n ".raw"
	   printf "" > raw; sec = ""; mem = ""; want = "" }
/^-- / { sec = substr($0, 4); next }
!NF || /^#/ { next }
sec == "raw" { print > raw }
sec == "mem" { mem = mem (mem == "" ? "" : " ") $0 }
sec == "result" && want == "" { want = $1 }
END { flush() }' "$DIR"/*.data

i=0
while IFS='|' read -r n name mem want; do
	for engine in interp jit; do
		"$NCCLBPF" prog run "$TMP/$n.raw" --mem "$mem" --engine "$engine" \
			>"$TMP/$n.$engine" 2>"$TMP/$n.$engine.err" &
		i=$((i + 1))
		[ $((i % jobs)) -ne 0 ] || wait
	done
done <"$TMP/list"
wait

awk -F'|' -v out="$TMP" '
function norm(s) { s = tolower(s); sub(/^0x/, "", s); sub(/^0+/, "", s); return s == "" ? "0" : s }
{
	for (e = 1; e <= 2; e++) {
		engine = e == 1 ? "interp" : "jit"
		got = ""; err = ""
		f = out "/" $1 "." engine; getline got < f; close(f)
		f = f ".err"; getline err < f; close(f)
		if (got != "" && $4 != "" && norm(got) == norm($4)) {
			pass++
		} else {
			fail++
			printf "FAIL %s [%s]: want %s, got \x27%s\x27: %s\n", $2, engine, $4, got, err
		}
	}
}
END {
	printf "conformance through the CLI: %d passed, %d failed\n", pass, fail
	printf "%d passed, %d failed\n", pass, fail
	exit !(fail == 0 && pass > 0)
}' "$TMP/list"
