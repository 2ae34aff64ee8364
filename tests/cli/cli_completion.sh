#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The bash completion the build generates (packaging/gen-completion.sh), run
# as bash runs it: the candidates depend on the position.  OBJECT first,
# then the object's verbs (and only them), then the verb's keywords,
# options and their listed values; every option of every synopsis is
# offered after a '-' at its verb.
# usage: cli_completion.sh NCCLBPF COMPLETION_FILE TMPDIR
set -u
BIN=$1 COMP=$2 T=$3
fail=0
rm -rf "$T" && mkdir -p "$T" || exit 1
command -v bash > /dev/null || { echo "SKIP: no bash"; exit 77; }
command -v jq > /dev/null || { echo "SKIP: jq not installed"; exit 77; }
bad() { echo "FAIL: $*"; fail=1; }

# cands WORD...: what completing the last word offers, one per line, sorted;
# '' stands for an empty word (the cursor after a space)
cands() {
	(cd "$T" && bash -c '. "$1"; shift; COMP_WORDS=(); for w; do [ "$w" = "'"''"'" ] && w=; COMP_WORDS+=("$w"); done
		COMP_CWORD=$(($# - 1)); _ncclbpf; printf "%s\n" "${COMPREPLY[@]}"' _ "$COMP" "$@") | sort -u
}
# is "WORDS" "EXPECTED CANDIDATES": exactly these
is() {
	got=$(cands $1 | tr '\n' ' ')
	want=$(printf '%s\n' $2 | sort -u | tr '\n' ' ')
	[ "$got" = "$want" ] && echo "ok: '$1' -> $want" || bad "'$1' offers '$got', expected '$want'"
}
# has "WORDS" CANDIDATE... / lacks "WORDS" CANDIDATE...
has() {
	w=$1
	shift
	got=" $(cands $w | tr '\n' ' ') "
	for c; do case $got in *" $c "*) ;; *) bad "'$w' does not offer '$c' (offers:$got)" ;; esac; done
}
lacks() {
	w=$1
	shift
	got=" $(cands $w | tr '\n' ' ') "
	for c; do case $got in *" $c "*) bad "'$w' offers '$c'" ;; esac; done
}

touch "$T/pol.bpf.o"
has "ncclbpf ''" map prog verify tune help
lacks "ncclbpf ''" key flags interp
is "ncclbpf map ''" "show list dump lookup update delete"
is "ncclbpf prog ''" "list show run dump"
is "ncclbpf -j map d" "dump delete"
is "ncclbpf map -j d" "dump delete"
is "ncclbpf prog run pol.bpf.o --engine ''" "interp jit"
is "ncclbpf map update 42 m key 1 value 2 flags ''" "any noexist exist"
has "ncclbpf map update 42 m ''" key value flags id
is "ncclbpf tune --backend ''" "emu nccl"
has "ncclbpf tune --out d --" --backend --sweep-obj --run-timeout --emu-skew
is "ncclbpf help ''" "$("$BIN" -j help | jq -r '[.commands[].object] | unique | .[]')"
is "ncclbpf help map ''" "show list dump lookup update delete"
has "ncclbpf sim pol.bpf.o --n" --nodes --nvls
has "ncclbpf reload --e" --exe
has "ncclbpf verify ''" pol.bpf.o
lacks "ncclbpf map ''" pol.bpf.o
has "ncclbpf -" -j -p -h -V
# After an option that takes a value, the next word is that value, not a verb.
is "ncclbpf prog run pol.bpf.o --mem 00 --engine ''" "interp jit"

# Every option in every synopsis, at its verb, after a '-'.
# Fields split at \037: a tab is IFS whitespace, and an empty verb between
# two would collapse, leaving a verb-less object's options unchecked.
"$BIN" -j help | jq -r '.commands[] | [.object, (.verb // ""), .synopsis] | join("\u001f")' > "$T/rows"
while IFS="$(printf '\037')" read -r obj verb syn; do
	opts=$(printf '%s\n' "$syn" | grep -oE -- '(^|[][ |(])--?[a-z][a-z0-9-]*' | sed 's/^[^-]*//' | sort -u)
	[ -n "$opts" ] || continue
	# shellcheck disable=SC2086
	has "ncclbpf $obj $verb -" $opts
done < "$T/rows"
[ $fail = 0 ] && echo "ok: every synopsis option completes at its verb"
exit $fail
