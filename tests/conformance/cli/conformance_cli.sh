#!/bin/sh
# Runs every conformance program through `ncclbpf prog run` the way an outside
# checker would: the -- raw words in a file of their own, -- mem through --mem,
# both engines; r0 must equal -- result.
# usage: conformance_cli.sh NCCLBPF CONFORMANCE_DIR
set -u
NCCLBPF=$1
DIR=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
norm() { # hex text -> lowercase digits without 0x and leading zeros
	printf '%s' "$1" | tr 'A-F' 'a-f' | sed -e 's/^0x//' -e 's/^0*//' -e 's/^$/0/'
}
section() { # FILE NAME: the lines of one "-- NAME" section, comments dropped
	awk -v want="-- $2" '/^-- /{on = ($0 == want); next} on && NF && !/^#/' "$1"
}
for f in "$DIR"/*.data; do
	section "$f" raw > "$TMP/p.raw"
	mem=$(section "$f" mem | tr '\n' ' ')
	want=$(section "$f" result | head -n 1)
	for engine in interp jit; do
		got=$("$NCCLBPF" prog run "$TMP/p.raw" --mem "$mem" --engine "$engine" 2>"$TMP/err")
		if [ -n "$got" ] && [ -n "$want" ] && [ "$(norm "$got")" = "$(norm "$want")" ]; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL $(basename "$f") [$engine]: want $want, got '$got': $(cat "$TMP/err")"
		fi
	done
done
echo "conformance through the CLI: $pass passed, $fail failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
