#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A long kernel-differential fuzzing run (docs/verifier.md): kdiff_fuzz for
# HOURS under nice, from SEED (default: from the clock), then a summary.
# Needs root and kernel BPF, as the ctest does.
#
# usage: sh bench/kdiff/run.sh [BUILD_DIR] [HOURS] [OUT_DIR] [SEED]
#
# OUT_DIR gets run.json (kdiff_fuzz -j: programs, the verdict matrix,
# every class, every key with its count, first program seed and
# reproducer, the rows used, the fragments generated), the reproducers of
# failures under found/ (gaps keep none: -x), lscpu.txt, and summary.txt,
# a readable digest of run.json.
set -eu
B=$(cd "${1:-build}" && pwd)
HOURS=${2:-4}
OUT=${3:-kdiff-out}
SEED=${4:-}
mkdir -p "$OUT/found"
lscpu > "$OUT/lscpu.txt" 2>&1 || true
uname -r > "$OUT/kernel.txt"
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
secs=$(awk "BEGIN { print int($HOURS * 3600) }")
set +e
nice -n 19 "$B/tests/kdiff/kdiff_fuzz" -t "$secs" -x -j -o "$OUT/found" ${SEED:+-s "$SEED"} \
	> "$OUT/run.json" 2> "$OUT/stderr.txt"
rc=$?
set -e
if [ "$rc" = 77 ]; then
	echo "SKIP: no kernel BPF here (needs root and bpf())"
	exit 77
fi
python3 - "$OUT/run.json" "$start" "$(uname -r)" > "$OUT/summary.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m, c = r["matrix"], r["classes"]
fails = sum(v for k, v in c.items() if k.startswith("FAIL"))
print(f"kdiff run from {sys.argv[2]} on kernel {sys.argv[3]}, seed {r['seed']}")
print(f"{r['programs']} programs ({r['insns'] / max(r['programs'], 1):.1f} insns average) in "
      f"{r['seconds'] / 3600:.2f} h ({r['programs'] / max(r['seconds'], 1e-9):.1f} programs/s)")
print(f"verdicts (ours/kernel): accept/accept {m['accept_accept']}, accept/refuse {m['accept_refuse']}, "
      f"refuse/accept {m['refuse_accept']}, refuse/refuse {m['refuse_refuse']}")
print("classes: " + ", ".join(f"{k} {v}" for k, v in c.items()))
print("rows: " + ", ".join(f"{k} {v}" for k, v in r["rows"].items() if v))
print(f"failures: {fails}")
for k in sorted(r["keys"], key=lambda k: -k["count"]):
    if k["class"].startswith("FAIL") or k["class"].startswith("gap"):
        print(f"  {k['count']:8d}  {k['key']}  (first 0x{int(k['first_seed'], 16):016x}) {k['file']}")
PY
cat "$OUT/summary.txt"
