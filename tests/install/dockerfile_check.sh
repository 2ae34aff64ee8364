#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# dockerfile_check.sh CONTEXT DOCKERFILE: the checks that need no container
# engine.  Every COPY source exists in the build context (and is not one the
# .dockerignore drops), every COPY --from names an earlier stage, every
# stage's FROM is set, and the build stage configures what it packages.
set -eu
ctx=$1 df=$2
fail() { echo "dockerfile_check: $df: $*" >&2; exit 1; }
[ -f "$df" ] || fail "missing"
# Join continuation lines, drop comments.
joined=$(sed -e 's/[[:space:]]*#.*$//' "$df" | awk '/\\$/ { sub(/\\$/, ""); buf = buf $0; next }
	{ print buf $0; buf = "" }' | grep -v '^[[:space:]]*$')
stages="" n_from=0 n_copy=0
printf '%s\n' "$joined" | grep -qi '^FROM ' || fail "no FROM"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%s\n' "$joined" >"$tmp"
while read -r instr rest; do
	case $(echo "$instr" | tr a-z A-Z) in
	ARG) ;;
	FROM)
		n_from=$((n_from + 1))
		set -- $rest
		[ -n "${1:-}" ] || fail "FROM without an image"
		if [ "${2:-}" = AS ] || [ "${2:-}" = as ]; then stages="$stages $3"; fi ;;
	COPY)
		n_copy=$((n_copy + 1))
		set -- $rest
		from=""
		while [ "${1#--}" != "$1" ]; do
			case $1 in --from=*) from=${1#--from=} ;; esac
			shift
		done
		[ $# -ge 2 ] || fail "COPY needs a source and a destination: $rest"
		if [ -n "$from" ]; then
			case " $stages " in *" $from "*) ;; *) fail "COPY --from=$from: no earlier stage $from" ;; esac
			continue
		fi
		while [ $# -gt 1 ]; do
			[ -e "$ctx/$1" ] || fail "COPY source $1 is not in the build context"
			if [ -f "$ctx/.dockerignore" ] && grep -qx "$1/\{0,1\}" "$ctx/.dockerignore"; then
				fail "COPY source $1 is excluded by .dockerignore"
			fi
			shift
		done ;;
	esac
done <"$tmp"
[ "$n_from" -ge 2 ] || fail "expected a build stage and a runtime stage"
grep -q 'cpack -G DEB' "$tmp" || fail "the build stage does not package"
echo "dockerfile_check: $n_from stages, $n_copy COPY lines, every source present"
