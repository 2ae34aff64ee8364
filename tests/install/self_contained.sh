#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# self_contained.sh SOURCE_DIR: a plain clone must build and test itself, so
# no file of the tree may name a path outside it that only a development
# machine has (a ../shared checkout beside it, /work/...).  Paths in prose
# examples that are clearly a user's (/shared/policies/...) are not matched.
set -eu
cd "$1"
pat='\.\./shared|/work/(shared|main|wt)'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	hits=$(git grep -nIE "$pat" -- . ':!tests/install/self_contained.sh' || true)
	n=$(git ls-files | wc -l)
else
	hits=$(grep -rnIE --exclude-dir='build*' --exclude=self_contained.sh "$pat" . || true)
	n=$(find . -type f ! -path './build*' | wc -l)
fi
if [ -n "$hits" ]; then
	echo "self_contained: paths outside the tree:" >&2
	printf '%s\n' "$hits" >&2
	exit 1
fi
echo "self_contained: $n files name no path outside the tree"
