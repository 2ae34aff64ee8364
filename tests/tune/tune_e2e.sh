#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `ncclbpf tune` end to end on the NCCL emulator, with a true latency model
# that is wrong against NCCL's in known places:
#   - AllReduce 64 KiB..1 MiB: Tree/LL takes 0.7 x the time of NCCL's pick
#     (Ring/LL): a clear win that tune must find, at exactly those sizes;
#   - AllReduce 4..16 MiB: Ring/Simple 0.995 x NCCL's pick (Ring/LL128), and
#     AllGather 1..4 MiB: Ring/LL128 0.99 x NCCL's pick: near-ties inside the
#     noise, where NCCL must keep its pick.
# Then: the policy verifies in strict consistency mode, `ncclbpf sim` of it
# makes exactly those decisions (and none for other collectives or another
# communicator shape), a run with no skew changes nothing, a chunk size
# planted as better (Ring/Simple with 512 KiB chunks, AllReduce 64..256 MiB)
# is found there and nowhere else, and sim of that policy shows it; a missing clang
# fails clearly after writing the source, and the NCCL back-end (a child
# process speaking nccl_sweep --serve's protocol, maps reached over its
# control socket) finds the same places.
# usage: tune_e2e.sh NCCLBPF SWEEP_OBJ FAKE_SWEEP PLUGIN TMPDIR RANK_LOCAL_OBJ CHECK_TUNED
set -u
BIN=$1 SWEEP=$2 FAKE=$3 PLUGIN=$4 TMP=$5 RANKLOCAL=$6 CHECKTUNED=$7
fail=0
rm -rf "$TMP"
mkdir -p "$TMP/a" "$TMP/b" "$TMP/c" "$TMP/d" "$TMP/e"

ok() { echo "ok: $1"; }
# serving: a stand-in child of ours is still running (read from /proc: no procps needed)
serving() {
	for f in /proc/[0-9]*/cmdline; do
		tr '\0' ' ' < "$f" 2> /dev/null | grep -q "^$FAKE --serve" && return 0
	done
	return 1
}
bad() { echo "FAIL: $1"; fail=1; }

# lines FILE: a -j document (one JSON array) as one object per line
lines() { sed 's/},{"coll"/}\n{"coll"/g' "$1"; }
# changes FILE: "Coll bytes ALGO/PROTO" per point of tune -j whose choice is not null
changes() {
	lines "$1" | grep -v '"choice":null' |
		sed -n 's/.*"coll":"\([A-Za-z]*\)","n_bytes":\([0-9]*\).*"choice":{"algo":"\([A-Z_]*\)","proto":"\([A-Z0-9]*\)".*/\1 \2 \3\/\4/p'
}
# sim_changes FILE: "Coll bytes ALGO/PROTO" where sim -j says the policy changed NCCL's cell
sim_changes() {
	lines "$1" | grep '"algo_proto":true' |
		sed -n 's/.*"coll":"\([A-Za-z]*\)","n_bytes":\([0-9]*\),.*"policy":{"algo":"\([A-Z_]*\)","proto":"\([A-Z0-9]*\)".*/\1 \2 \3\/\4/p'
}

EXPECT="AllReduce 65536 TREE/LL
AllReduce 131072 TREE/LL
AllReduce 262144 TREE/LL
AllReduce 524288 TREE/LL
AllReduce 1048576 TREE/LL"
SKEWS="--emu-skew allreduce:64K:1M:TREE/LL~0.7 --emu-skew allreduce:4M:16M:RING/SIMPLE~0.995 --emu-skew allgather:1M:4M:RING/LL128~0.99"
COMMON="--sweep-obj $SWEEP --coll allreduce,allgather,reducescatter --sizes 1K:64M --channels 0,8 --reps 6 --emu-noise 0.01"

# ---- 1. the planted places, and nothing else
# shellcheck disable=SC2086
if "$BIN" -j tune $COMMON $SKEWS --out "$TMP/a" --name planted > "$TMP/a/out.json" 2> "$TMP/a/err"; then
	ok "tune (emulator) ran"
else
	bad "tune exited $?"; cat "$TMP/a/err"
fi
got=$(changes "$TMP/a/out.json")
[ "$got" = "$EXPECT" ] && ok "tune found exactly AllReduce 64K..1M -> TREE/LL" ||
	{ bad "tune's changes:"; echo "$got"; }
[ "$(lines "$TMP/a/out.json" | grep -c '"coll"')" = 51 ] && ok "51 points (3 collectives x 17 sizes)" ||
	bad "$(lines "$TMP/a/out.json" | grep -c '"coll"') points, expected 51"
lines "$TMP/a/out.json" | grep -q '"coll":"AllReduce","n_bytes":8388608,"nccl":{"algo":"RING","proto":"LL128"}.*"choice":null' &&
	ok "near-tie AllReduce 8M kept NCCL's RING/LL128" || bad "AllReduce 8M near-tie not kept"
for f in planted.bpf.c planted.bpf.o planted.report.txt planted.csv planted.svg; do
	[ -s "$TMP/a/$f" ] || bad "no $f written"
done
grep -q '<polyline' "$TMP/a/planted.svg" && grep -q '</svg>' "$TMP/a/planted.svg" && ok "svg plot" || bad "svg plot"
grep -q '^AllReduce,65536,TREE/LL,TREE,LL,0,6,.*,0,1,0$' "$TMP/a/planted.csv" && ok "csv marks the choice" || bad "csv"
grep -q 'static const struct tuned_cell tuned_table' "$TMP/a/planted.bpf.c" && ok "table is const (.rodata)" || bad "no const table"

# ---- 2. the object verifies strictly and makes exactly those decisions
"$BIN" verify --strict-consistency "$TMP/a/planted.bpf.o" > "$TMP/a/verify" 2>&1 &&
	ok "verify --strict-consistency accepts the policy" || { bad "strict verify"; cat "$TMP/a/verify"; }
"$BIN" -j sim "$TMP/a/planted.bpf.o" --coll allreduce --sizes 8:1G > "$TMP/a/sim.json" 2> "$TMP/a/sim.err"
got=$(sim_changes "$TMP/a/sim.json")
[ "$got" = "$EXPECT" ] && ok "sim: the policy changes exactly AllReduce 64K..1M to TREE/LL" ||
	{ bad "sim changes:"; echo "$got"; }
for coll in allgather reducescatter broadcast; do
	"$BIN" -j sim "$TMP/a/planted.bpf.o" --coll $coll --sizes 8:1G > "$TMP/a/sim2.json" 2> "$TMP/a/sim.err"
	[ "$(lines "$TMP/a/sim2.json" | grep -c '"coll"')" = 28 ] && [ -z "$(sim_changes "$TMP/a/sim2.json")" ] &&
		ok "sim $coll: NCCL's picks" ||
		bad "sim $coll changed something"
done
"$BIN" -j sim "$TMP/a/planted.bpf.o" --coll allreduce --ranks 16 --nodes 2 --sizes 8:1G > "$TMP/a/sim3.json" 2> "$TMP/a/sim.err"
[ "$(lines "$TMP/a/sim3.json" | grep -c '"coll"')" = 28 ] && [ -z "$(sim_changes "$TMP/a/sim3.json")" ] &&
	ok "sim on another shape (16 ranks, 2 nodes): NCCL's picks" || bad "policy applied to another shape"

"$CHECKTUNED" "$TMP/a/planted.bpf.o" > "$TMP/a/check" 2>&1 &&
	ok "the policy: whole buckets, only offered cells, only its shape" || { bad "check_tuned"; cat "$TMP/a/check"; }

# ---- 3. no skew: noise only, nothing changes, the table is empty
# shellcheck disable=SC2086
"$BIN" -j tune $COMMON --out "$TMP/b" --name none > "$TMP/b/out.json" 2> "$TMP/b/err" || bad "tune (no skew) exited $?"
[ "$(lines "$TMP/b/out.json" | grep -c '"coll"')" = 51 ] && [ -z "$(changes "$TMP/b/out.json")" ] && ok "no skew: every point keeps NCCL's pick" ||
	{ bad "no skew changed:"; changes "$TMP/b/out.json"; }
grep -q '^	\[[0-9] \* NCCLBPF_SIZE_BUCKETS' "$TMP/b/none.bpf.c" && bad "no-skew table has entries" || ok "no-skew table is empty"

# ---- 4. no clang: a clear error, the source is still there, no object from an earlier run
# shellcheck disable=SC2086
"$BIN" tune $COMMON --coll allreduce --sizes 64K:128K $SKEWS --out "$TMP/c" > /dev/null 2>&1 &&
	[ -s "$TMP/c/tuned.bpf.o" ] || bad "first run in $TMP/c wrote no object"
# shellcheck disable=SC2086
"$BIN" tune $COMMON --coll allreduce --sizes 64K:128K $SKEWS --clang "$TMP/no-such-clang" --out "$TMP/c" > /dev/null 2> "$TMP/c/err"
rc=$?
[ $rc = 1 ] && grep -q "cannot run $TMP/no-such-clang" "$TMP/c/err" && [ -s "$TMP/c/tuned.bpf.c" ] &&
	[ ! -e "$TMP/c/tuned.bpf.o" ] && ok "missing clang: exit 1, says so, source written, old object gone" ||
	{ bad "missing clang: exit $rc"; cat "$TMP/c/err"; }
# a compiler whose object decides on rank-local data: strict verification refuses it
cat > "$TMP/c/badclang" <<EOS
#!/bin/sh
while [ \$# -gt 0 ]; do [ "\$1" = -o ] && cp "$RANKLOCAL" "\$2"; shift; done
EOS
chmod +x "$TMP/c/badclang"
# shellcheck disable=SC2086
"$BIN" tune $COMMON --coll allreduce --sizes 64K:128K --clang "$TMP/c/badclang" --out "$TMP/c" --name rl > /dev/null 2> "$TMP/c/err.rl"
rc=$?
[ $rc = 1 ] && grep -q "rejected in strict consistency mode: .*decision depends on rank-local value" "$TMP/c/err.rl" &&
	ok "an object failing strict consistency: exit 1, says why" || { bad "strict check: exit $rc"; cat "$TMP/c/err.rl"; }
# --no-compile: the source only, exit 0
# shellcheck disable=SC2086
"$BIN" tune $COMMON --coll allreduce --sizes 64K:128K --no-compile --clang "$TMP/no-such-clang" --out "$TMP/c" --name nc > /dev/null 2>&1 &&
	[ -s "$TMP/c/nc.bpf.c" ] && ok "--no-compile writes the source" || bad "--no-compile"

# ---- 5. the NCCL back-end's protocol and maps in another process
FAKE_SWEEP_SKEW=allreduce:64K:1M:TREE/LL~0.7 "$BIN" -j tune --backend nccl --sweep-bin "$FAKE" --plugin "$PLUGIN" \
	--sweep-obj "$SWEEP" --coll allreduce --sizes 1K:64M --channels 0 --reps 3 --ngpus 8 \
	--out "$TMP/d" --name gpu > "$TMP/d/out.json" 2> "$TMP/d/err"
rc=$?
got=$(changes "$TMP/d/out.json")
[ $rc = 0 ] && [ "$got" = "$EXPECT" ] && ok "nccl back-end (child process): the same places" ||
	{ bad "nccl back-end: exit $rc, changes:"; echo "$got"; cat "$TMP/d/err"; }

# ---- 5b. --ranks N: N processes, each its own NCCL host, every one forced alike
mkdir -p "$TMP/r"
FAKE_SWEEP_SKEW=allreduce:64K:1M:TREE/LL~0.7 FAKE_SWEEP_LOG="$TMP/r/ran" "$BIN" -j tune --backend nccl --sweep-bin "$FAKE" \
	--plugin "$PLUGIN" --sweep-obj "$SWEEP" --coll allreduce --sizes 1K:64M --channels 0 --reps 3 \
	--ranks 3 --out "$TMP/r" --name ranks > "$TMP/r/out.json" 2> "$TMP/r/err"
rc=$?
got=$(changes "$TMP/r/out.json")
[ $rc = 0 ] && [ "$got" = "$EXPECT" ] && ok "nccl back-end, 3 rank processes: the same places" ||
	{ bad "nccl back-end --ranks 3: exit $rc, changes:"; echo "$got"; cat "$TMP/r/err"; }
# every rank got every request and ran the same cell; each its own NCCL host
n0=$(wc -l < "$TMP/r/ran.rank0" 2> /dev/null || echo 0)
cut -d' ' -f1,2 "$TMP/r/ran.rank0" > "$TMP/r/ran.cells0" 2> /dev/null
same=1
for r in 1 2; do
	cut -d' ' -f1,2 "$TMP/r/ran.rank$r" 2> /dev/null | cmp -s - "$TMP/r/ran.cells0" || same=0
done
hosts=$(cut -d' ' -f3 "$TMP/r"/ran.rank* 2> /dev/null | sort -u | wc -l)
[ "$n0" -gt 20 ] && [ $same = 1 ] && grep -q "TREE/LL" "$TMP/r/ran.cells0" && [ "$hosts" = 3 ] &&
	ok "3 ranks: $n0 requests each, the same cell on every rank every time, 3 NCCL hosts" ||
	bad "3 ranks: $n0 requests, same=$same, $hosts hosts"
grep -q "3 ranks as 3 processes on one GPU" "$TMP/r/ranks.report.txt" 2> /dev/null &&
	ok "report names the 3 rank processes" || bad "report: $(head -5 "$TMP/r/ranks.report.txt" 2> /dev/null)"

# ---- 6. a child that hangs or dies mid-sweep: tune ends with a message, the child is gone
for mode in hang:5 exit:5; do
	start=$(date +%s)
	FAKE_SWEEP_FAIL=$mode "$BIN" tune --backend nccl --sweep-bin "$FAKE" --plugin "$PLUGIN" \
		--sweep-obj "$SWEEP" --coll allreduce --sizes 1K:4K --channels 0 --reps 2 --ngpus 4 \
		--run-timeout 2 --out "$TMP/d" --name fail > /dev/null 2> "$TMP/d/err.$mode"
	rc=$?
	took=$(( $(date +%s) - start ))
	want="answered nothing in time"
	[ "${mode%%:*}" = exit ] && want="exited during"
	if [ $rc = 1 ] && grep -q "$want" "$TMP/d/err.$mode" && [ $took -lt 20 ] &&
		! serving; then
		ok "child $mode: tune exits 1 in ${took}s ($want), no child left"
	else
		bad "child $mode: exit $rc after ${took}s"; cat "$TMP/d/err.$mode"
	fi
done

# ---- 7. chunk sizes: found where planted, kept by NCCL elsewhere, deployed per channel part
"$BIN" -j tune --sweep-obj "$SWEEP" --coll allreduce --sizes 16M:512M --channels 0 --chunks 0,512K \
	--reps 4 --emu-noise 0.01 --emu-skew 'allreduce:64M:256M:RING/SIMPLE@512K*0.8' \
	--out "$TMP/e" --name chunky > "$TMP/e/out.json" 2> "$TMP/e/err" || { bad "tune --chunks exited $?"; cat "$TMP/e/err"; }
got=$(lines "$TMP/e/out.json" | grep -v '"choice":null' |
	sed -n 's/.*"n_bytes":\([0-9]*\).*"choice":{"algo":"\([A-Z_]*\)","proto":"\([A-Z0-9]*\)".*"chunk":\([0-9]*\)}.*/\1 \2\/\3 \4/p')
want="67108864 RING/SIMPLE 524288
134217728 RING/SIMPLE 524288
268435456 RING/SIMPLE 524288"
[ "$got" = "$want" ] && ok "tune --chunks: 512 KiB chunks at exactly AllReduce 64..256 MiB" ||
	{ bad "tune --chunks changes:"; echo "$got"; }
grep -q 'SEC("tuner/chunk")' "$TMP/e/chunky.bpf.c" && ok "a chunk program is generated" || bad "no chunk program"
"$BIN" sim "$TMP/e/chunky.bpf.o" --sizes 16M:1G > "$TMP/e/sim" 2>&1
got=$(grep -- '-> 512K \*' "$TMP/e/sim" | awk '{print $2}' | tr '\n' ' ')
[ "$got" = "67108864 134217728 268435456 " ] && ok "sim: the policy changes the chunk at exactly those sizes" ||
	{ bad "sim chunk rows: $got"; cat "$TMP/e/sim"; }

# a NCCL without getChunkSize (tuner v5, as 2.28): --chunks says so instead of measuring nothing
FAKE_SWEEP_TUNER=5 "$BIN" tune --backend nccl --sweep-bin "$FAKE" --plugin "$PLUGIN" \
	--sweep-obj "$SWEEP" --coll allreduce --sizes 64M:64M --channels 0 --chunks 0,512K --reps 2 \
	--ngpus 8 --out "$TMP/e" --name nochunk > /dev/null 2> "$TMP/e/err.v5"
rc=$?
[ $rc = 1 ] && grep -q "NCCL asked for no chunk size" "$TMP/e/err.v5" &&
	ok "--chunks under a tuner v5 NCCL: exit 1, says why" || { bad "--chunks with v5: exit $rc"; cat "$TMP/e/err.v5"; }

[ $fail = 0 ] && echo "tune_e2e: all passed"
exit $fail
