#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR CC [CFLAGS]
#
# Installs the build into a DESTDIR under WORK_DIR and checks what a user
# gets: every file in its FHS place and nothing else, the plugin's short
# names as links, a command whose every verb finds its own data (the plugin,
# tune's sweep policy and policy.h) run from the installed tree, man pages
# and bash completion for every object of the command, and the runtime
# usable from outside: a consumer program built
# once with pkg-config and once with find_package(ncclbpf), then run.
# Install dirs come from the environment (PREFIX, BINDIR, LIBDIR, INCLUDEDIR,
# DATADIR, MANDIR, DOCDIR, as CMake configured them) and KINDS.
set -eu
build=$1 src=$2 work=$3 cc=$4 cflags=${5:-}
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
root=$work/root
DESTDIR=$root cmake --install "$build" >"$work/install.log"
p=$root$PREFIX

# ---- the file list ----------------------------------------------------------
expect=$work/expect
{
	echo "$BINDIR/ncclbpf"
	echo "$LIBDIR/libnccl-ncclbpf.so"
	for k in $KINDS; do echo "$LIBDIR/libnccl-$k-ncclbpf.so"; done
	echo "$LIBDIR/libncclbpf.a"
	echo "$LIBDIR/pkgconfig/ncclbpf.pc"
	for f in ncclbpfConfig ncclbpfConfigVersion ncclbpfTargets; do
		echo "$LIBDIR/cmake/ncclbpf/$f.cmake"
	done
	for h in "$src"/include/ncclbpf/*.h; do echo "$INCLUDEDIR/ncclbpf/$(basename "$h")"; done
	for s in "$src"/policies/*.bpf.c; do
		n=$(basename "$s" .c)
		echo "$DATADIR/ncclbpf/policies/$n.c"
		echo "$DATADIR/ncclbpf/policies/$n.o"
	done
	echo "$DOCDIR/README.md"
	for d in "$src"/docs/*.md; do echo "$DOCDIR/$(basename "$d")"; done
	echo "$MANDIR/man1/ncclbpf.1"
	"$build/ncclbpf" -h | awk -f "$src/packaging/usage.awk" | cut -f1 | sort -u |
		while read -r o; do echo "$MANDIR/man1/ncclbpf-$o.1"; done
	echo "$DATADIR/bash-completion/completions/ncclbpf"
} | sort >"$expect"
# Files and links under the prefix; the targets' per-configuration file aside.
(cd "$p" && find . \( -type f -o -type l \) | sed 's|^\./||' |
	grep -v "^$LIBDIR/cmake/ncclbpf/ncclbpfTargets-.*\.cmake$" | sort) >"$work/got"
if ! cmp -s "$expect" "$work/got"; then
	diff "$expect" "$work/got" >&2 || true
	fail "installed files differ from the expected list (< missing, > unexpected)"
fi
ls "$p/$LIBDIR"/cmake/ncclbpf/ncclbpfTargets-*.cmake >/dev/null || fail "no per-configuration targets file"
outside=$(cd "$root" && find . \( -type f -o -type l \) | grep -v "^\.$PREFIX/" || true)
[ -z "$outside" ] || fail "installed outside the prefix: $outside"
for k in $KINDS; do
	l=$p/$LIBDIR/libnccl-$k-ncclbpf.so
	[ -L "$l" ] && [ "$(readlink "$l")" = libnccl-ncclbpf.so ] || fail "$l is not a link to libnccl-ncclbpf.so"
done
# Nothing installed may point back into the build or source tree.
if readelf -d "$p/$BINDIR/ncclbpf" "$p/$LIBDIR/libnccl-ncclbpf.so" | grep -E 'R(UN)?PATH'; then
	fail "installed binaries carry a run path"
fi
echo "install_test: $(wc -l <"$work/got") files in place"

# ---- the installed command --------------------------------------------------
pol=$p/$DATADIR/ncclbpf/policies
cd "$work"
"$p/$BINDIR/ncclbpf" verify "$pol/size_aware.bpf.o" || fail "installed ncclbpf verify"
# sim finds the installed plugin from its own location (bin/../lib...).
env -u NCCLBPF_PLUGIN NCCLBPF_LOG=none "$p/$BINDIR/ncclbpf" sim "$pol/size_aware.bpf.o" \
	--coll allreduce --ranks 8 --sizes 1K:1M >"$work/sim.out" || fail "installed ncclbpf sim"
grep -q '^AllReduce' "$work/sim.out" || fail "sim printed no decision rows"
echo "install_test: installed command verifies and simulates"

# ---- every verb from the installed tree ------------------------------------
# Run from the work directory with the plugin found by the command itself:
# each verb must find its data where the install put it (tune's sweep
# policy and policy.h under the prefix, the plugin under LIBDIR).
cli=$p/$BINDIR/ncclbpf
mkdir -m 700 "$work/ctl"
export NCCLBPF_CTL_DIR=$work/ctl NCCLBPF_MAP_DIR=$work/ctl NCCLBPF_LOG=none
unset NCCLBPF_PLUGIN
"$cli" version | grep -q "plugin  *yes $p/$LIBDIR/libnccl-ncclbpf.so" || fail "version: no installed plugin: $("$cli" version)"
"$cli" help tune | grep -q -- '--sweep-obj FILE' || fail "help tune does not list --sweep-obj"
"$cli" tune --coll allreduce --sizes 1K:2K --channels 0,8 --reps 2 --out "$work/tune/new" \
	>"$work/tune.out" 2>"$work/tune.err" || fail "installed tune: $(cat "$work/tune.err")"
[ -s "$work/tune/new/tuned.bpf.o" ] || fail "installed tune compiled no policy (policy.h not found?)"
grep -q "wrote $work/tune/new/tuned" "$work/tune.err" || fail "tune does not say where it wrote"
"$cli" bench "$pol/size_aware.bpf.o" --calls 100 >/dev/null || fail "installed bench"
"$cli" prog dump "$pol/size_aware.bpf.o" >/dev/null || fail "installed prog dump"
"$cli" sim --serve "$pol/latency_hist.bpf.o:$pol/size_aware.bpf.o" --ranks 2 --rate 200 --duration 120 \
	>"$work/serve.out" 2>&1 &
job=$!
i=0
while [ $i -lt 100 ] && ! "$cli" ps "$job" >/dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
for v in "ps $job" "prog show $job" "map show $job" "top $job 0.2 1" "reload $job $pol/noop.bpf.o" \
	 "rollback $job" "export $job" "export --textfile $work/job.prom --count 1 $job" \
	 "report -o $work/job.html $job" "report --from $work/job.prom -o $work/saved.html"; do
	# shellcheck disable=SC2086
	"$cli" $v >"$work/verb.out" 2>&1 || { kill "$job"; fail "installed '$v': $(cat "$work/verb.out")"; }
done
kill -TERM "$job"
wait "$job" || fail "the installed job (sim --serve): $(cat "$work/serve.out")"
echo "install_test: every verb ran from the installed tree"

# ---- man pages and completion ----------------------------------------------
for m in "$p/$MANDIR"/man1/*.1; do
	grep -q '^\.TH ' "$m" || fail "$m has no .TH"
	grep -q 'No description of this command' "$m" && fail "$m: no docs/man/<object>.txt"
done
comp=$p/$DATADIR/bash-completion/completions/ncclbpf
complete_words() { # WORD... : what the completion offers for the last word
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ncclbpf
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@"
}
complete_words ncclbpf ver | grep -qx verify || fail "completion: 'ncclbpf ver' does not give verify"
complete_words ncclbpf sim x.o --n | grep -qx -- --nodes || fail "completion: sim --n"
complete_words ncclbpf -j map d | grep -qx dump || fail "completion: map d after -j"
complete_words ncclbpf tune --sw | grep -qx -- --sweep-obj || fail "completion: tune --sweep-obj"
echo "install_test: man pages and completion in place"

# ---- the runtime from outside: pkg-config ----------------------------------
export PKG_CONFIG_PATH=$p/$LIBDIR/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs ncclbpf) || fail "pkg-config ncclbpf"
# shellcheck disable=SC2086
"$cc" $cflags -o "$work/consumer_pc" "$src/tests/install/consumer/consumer.c" $flags ||
	fail "consumer does not build with pkg-config: $flags"
"$work/consumer_pc" "$pol" || fail "consumer (pkg-config) failed"
# pkgconf puts the sysroot in front of variables too; pkg-config does not.
v=$(pkg-config --variable=policydir ncclbpf)
[ "${v#"$root"}" = "$PREFIX/$DATADIR/ncclbpf/policies" ] || fail "pkg-config policydir: $v"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH

# ---- the runtime from outside: find_package(ncclbpf) ------------------------
cmake -S "$src/tests/install/consumer" -B "$work/cm" -DCMAKE_PREFIX_PATH="$p" \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$cflags" \
	>"$work/cm.log" 2>&1 || { cat "$work/cm.log" >&2; fail "find_package(ncclbpf)"; }
cmake --build "$work/cm" >>"$work/cm.log" 2>&1 || { cat "$work/cm.log" >&2; fail "consumer build (CMake)"; }
# No argument: the policy directory comes from the package's NCCLBPF_POLICY_DIR.
"$work/cm/consumer" || fail "consumer (find_package) failed"
echo "install_test: consumer built and ran with pkg-config and find_package"
