#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The kernel's own verifier selftests against our verifier: the
# test_verifier tables (tools/testing/selftests/bpf/verifier/*.c) and the
# annotated programs (progs/verifier_*.c, __success/__failure) of a kernel
# source tree, e.g. Debian's linux-source-6.1 or -6.12 (apt-get install
# linux-source-6.12; tar -xf /usr/src/linux-source-6.12.tar.xz).  Nothing of
# the tree is copied into the repository: the harnesses are built against it
# in a temporary directory.
#
# usage: sh bench/kdiff/selftests.sh KERNEL_SRC [BUILD_DIR] [OUT_DIR]
#
# OUT_DIR gets tables.tsv and progs.tsv (one line per test: class, test,
# the kernel's expected error, our reason) and summary.txt.  The classes:
# agree, gap (the kernel accepts, we refuse), ACCEPTED_KERNEL_REFUSES (we
# accept what the kernel's test expects refused: each must be a documented
# contract difference), unsupported (we refuse for a feature our runtime
# does not have), skip (a program type, map kind or BTF function we have no
# twin of).
set -eu
KSRC=$(cd "$1" && pwd)
B=$(cd "${2:-build}" && pwd)
OUT=${3:-kselftests-out}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ST=$KSRC/tools/testing/selftests/bpf
TMP=$(mktemp -d /tmp/kselftests.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
LIBS="$B/tests/kdiff/libkdiff_lib.a $B/src/runtime/libncclbpf.a -lbpf -lelf -lz -lnettle -lpthread -lm -lrt"
INC="-I$HERE -I$REPO/src -I$REPO/src/runtime -I$REPO/include -I$REPO/tests/kdiff -I$REPO/tests/common"

# The tables: test_verifier.c's definitions before its test array, then every table.
sed -n '/^static struct bpf_test tests\[\] = {/q;p' "$ST/test_verifier.c" > "$TMP/tv_prefix.h"
{
	echo '#ifdef FILL_ARRAY'
	for f in "$ST"/verifier/*.c; do echo "#include \"$f\""; done
	echo '#endif'
} > "$TMP/tests.h"
cc -O1 -w -D_GNU_SOURCE -I"$ST" -I"$KSRC/tools/include" -I"$KSRC/tools/include/uapi" \
	-I"$KSRC/tools/lib" -I"$KSRC/tools/arch/x86/include" $INC -include "$TMP/tv_prefix.h" \
	-DKST_TESTS_H="\"$TMP/tests.h\"" "$HERE/st_tables.c" $LIBS -o "$TMP/st_tables"
"$TMP/st_tables" > "$OUT/tables.tsv"
grep '^SUMMARY' "$OUT/tables.tsv" | sed 's/^SUMMARY/tables/' > "$OUT/summary.txt"
cat "$OUT/summary.txt"

# The annotated programs (kernels from 6.5 on): each compiled, the ones
# clang or a missing vmlinux.h stops counted as not built.
if ls "$ST"/progs/verifier_*.c > /dev/null 2>&1; then
	if [ -r /sys/kernel/btf/vmlinux ] && command -v bpftool > /dev/null; then
		bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$TMP/vmlinux.h" 2>/dev/null || true
	fi
	built=0 failed=0
	for f in "$ST"/progs/verifier_*.c; do
		o=$TMP/$(basename "$f" .c).o
		if (cd "$ST" && ${CLANG:-clang} -O2 -g -target bpf -mcpu=${BPF_CPU:-v3} -D__TARGET_ARCH_x86 \
			-I. -Iprogs -I"$TMP" -I"$KSRC/tools/include/uapi" -I"$KSRC/tools/include" \
			-idirafter /usr/include -idirafter /usr/include/x86_64-linux-gnu -w \
			-c "$f" -o "$o") 2> /dev/null; then
			built=$((built + 1))
		else
			failed=$((failed + 1))
			rm -f "$o"
		fi
	done
	cc -O1 -Wall $INC "$HERE/st_progs.c" $LIBS -o "$TMP/st_progs"
	"$TMP/st_progs" "$TMP"/verifier_*.o > "$OUT/progs.tsv"
	grep '^SUMMARY' "$OUT/progs.tsv" | sed "s/^SUMMARY/progs (objects built $built, not built $failed)/" >> "$OUT/summary.txt"
	tail -1 "$OUT/summary.txt"
fi

# Every test the kernel expects refused and we accept (each must be a
# documented difference), and our refusals of what it accepts by reason:
# the reasons our contract gives (docs/verifier.md: pointers kept out of
# data, initialised stack only, no division by zero, structural checks on
# every instruction) apart from the rest, the precision gaps.
CONTRACT='pointer returned from program|pointer stored into map value|pointer stored into context|pointer comparison prohibited|pointer passed as scalar argument|prohibited pointer arithmetic|access through map pointer|read of uninitialised stack|partial read of spilled pointer|read of partially overwritten spilled pointer|misaligned or partial pointer spill|division by possibly-zero value|write to frame pointer r10'
{
	echo "we accept, the kernel's test expects a refusal:"
	cat "$OUT"/*.tsv | awk -F'\t' '$1 == "ACCEPTED_KERNEL_REFUSES" { print "  " $2 " (" $3 ")" }'
	echo "the kernel accepts, we refuse by our contract (by our reason):"
	cat "$OUT"/*.tsv | awk -F'\t' '$1 == "gap" { print $4 }' | grep -E -x "$CONTRACT" | sort | uniq -c | sort -rn
	echo "the kernel accepts, we refuse: precision gaps:"
	cat "$OUT"/*.tsv | awk -F'\t' '$1 == "gap" { print "  " $2 ": " $4 }' | grep -E -v ": ($CONTRACT)\$" || true
} >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
