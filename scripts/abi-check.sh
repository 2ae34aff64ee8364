#!/bin/sh
# Compares src/nccl/abi_*.h with NCCL's own plugin headers, field by field:
# both are compiled with debug info and gdb's `ptype /o` gives every member's
# offset and size, every nested struct and union, and every function slot's
# argument count; type names are dropped so NCCL's and ours line up.  The
# _Static_asserts in abi_*.h pin the numbers; this checks the numbers
# themselves against a header and catches members the asserts do not name.
#
#   sh scripts/abi-check.sh NCCL_CHECKOUT...
#
# NCCL_CHECKOUT is an NVIDIA/nccl source tree (any version; only src/include
# and src/nccl.h.in are read).  Each pair below is checked in every tree that
# declares NCCL's type; a tree that declares none of them is an error.
# Needs g++, gdb and python3 (Debian: g++ gdb python3) and cuda_runtime.h
# under CUDA_HOME (default /usr/local/cuda), which NCCL's nccl.h includes.
# A developer's tool: nothing in the build or the tests runs it.
set -e
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 NCCL_CHECKOUT..." >&2; exit 2; }
for t in g++ gcc gdb python3; do
	command -v $t >/dev/null || { echo "abi-check: needs $t" >&2; exit 2; }
done
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
W=$(mktemp -d /tmp/ncclbpf-abi-check.XXXXXX)
trap 'rm -rf "$W"' EXIT

# NCCL's type, then ours.
cat > "$W/pairs" <<'EOF'
ncclTuner_v2_t nbpf_tuner_v2_t
ncclTuner_v3_t nbpf_tuner_v3_t
ncclTuner_v4_t nbpf_tuner_v4_t
ncclTuner_v5_t nbpf_tuner_v5_t
ncclTuner_v6_t nbpf_tuner_v6_t
ncclTuner_v7_t nbpf_tuner_v7_t
ncclTunerConstants_v5_t nbpf_tuner_constants_v5_t
ncclTunerConstants_v7_t nbpf_tuner_constants_v7_t
ncclNvlDomainInfo_v5_t nbpf_nvl_domain_info_v5_t
ncclProfiler_v1_t nbpf_profiler_v1_t
ncclProfiler_v2_t nbpf_profiler_v2_t
ncclProfiler_v3_t nbpf_profiler_v3_t
ncclProfiler_v4_t nbpf_profiler_v4_t
ncclProfiler_v5_t nbpf_profiler_v5_t
ncclProfiler_v6_t nbpf_profiler_v6_t
ncclProfiler_v7_t nbpf_profiler_v7_t
ncclProfilerEventDescr_v1_t nbpf_prof_descr_v1_t
ncclProfilerEventDescr_v2_t nbpf_prof_descr_v2_t
ncclProfilerEventDescr_v3_t nbpf_prof_descr_v3_t
ncclProfilerEventDescr_v4_t nbpf_prof_descr_v4_t
ncclProfilerEventDescr_v5_t nbpf_prof_descr_v5_t
ncclProfilerEventDescr_v6_t nbpf_prof_descr_v6_t
ncclProfilerEventDescr_v7_t nbpf_prof_descr_v7_t
ncclProfilerEventStateArgs_v1_t nbpf_prof_state_args_v1_t
ncclProfilerEventStateArgs_v2_t nbpf_prof_state_args_v1_t
ncclProfilerEventStateArgs_v3_t nbpf_prof_state_args_v1_t
ncclProfilerEventStateArgs_v4_t nbpf_prof_state_args_v4_t
ncclProfilerEventStateArgs_v5_t nbpf_prof_state_args_v4_t
ncclProfilerEventStateArgs_v6_t nbpf_prof_state_args_v4_t
ncclProfilerEventStateArgs_v7_t nbpf_prof_state_args_v4_t
ncclEnv_v1_t nbpf_env_v1_t
ncclEnv_v2_t nbpf_env_v2_t
ncclNet_v6_t nbpf_net_v6_t
ncclNet_v7_t nbpf_net_v7_t
ncclNet_v8_t nbpf_net_v8_t
ncclNet_v9_t nbpf_net_v9_t
ncclNet_v10_t nbpf_net_v10_t
ncclNet_v11_t nbpf_net_v11_t
ncclNet_v12_t nbpf_net_v12_t
ncclNetProperties_v6_t nbpf_net_props_v6_t
ncclNetProperties_v7_t nbpf_net_props_v7_t
ncclNetProperties_v8_t nbpf_net_props_v8_t
ncclNetProperties_v9_t nbpf_net_props_v9_t
ncclNetProperties_v10_t nbpf_net_props_v9_t
ncclNetProperties_v11_t nbpf_net_props_v11_t
ncclNetProperties_v12_t nbpf_net_props_v12_t
ncclNetVDeviceProps_v9_t nbpf_net_vprops_v9_t
ncclNetVDeviceProps_v10_t nbpf_net_vprops_v9_t
ncclNetVDeviceProps_v11_t nbpf_net_vprops_v9_t
ncclNetVDeviceProps_v12_t nbpf_net_vprops_v12_t
ncclNetCommConfig_v10_t nbpf_net_comm_config_t
ncclNetCommConfig_v11_t nbpf_net_comm_config_t
ncclNetCommAttr_v11_t nbpf_net_comm_attr_v11_t
ncclNetAttr_v11_t nbpf_net_attr_v11_t
EOF

# One gdb run per object prints every type after a marker line; cmp.py turns
# each `ptype /o` into "offset size member" lines ("fn/N" for a slot taking N
# arguments) and compares NCCL's with ours.  Args: pairs, theirs, ours.
cat > "$W/cmp.py" <<'EOF'
import re, sys

def split(path):
    out, cur = {}, None
    for l in open(path, errors='replace'):
        if l.startswith('@@ '):
            cur = out.setdefault(l.split()[1], [])
        elif cur is not None:
            cur.append(l)
    return out

def norm(lines):
    if not any('type = ' in l for l in lines):
        return None
    res = []
    for l in lines:
        m = re.match(r'/\*\s*(\d+)?\s*(?:\|\s*)?(\d+)\s*\*/\s*(.*)$', l.rstrip())
        if m:
            off, size, rest = m.group(1) or '-', m.group(2), m.group(3)
            fp = re.search(r'\(\*(\w+)\)\((.*)\);', rest)
            if fp:
                a = fp.group(2).strip()
                n = 0 if a in ('', 'void') else a.count(',') + 1
                res.append('%s %s %s fn/%d' % (off, size, fp.group(1), n))
            elif rest.endswith('{'):
                res.append('%s %s {' % (off, size))
            else:
                nm = re.search(r'(\w+)((?:\[\d+\])*);$', rest)
                res.append('%s %s %s' % (off, size, nm.group(1) + nm.group(2) if nm else '?' + rest))
            continue
        m = re.match(r'\s*\} ?(\w*);', l)
        if m:
            res.append('} ' + m.group(1))
        m = re.search(r'total size \(bytes\):\s*(\d+)', l)
        if m:
            res.append('total ' + m.group(1))
    return res

theirs, ours = split(sys.argv[2]), split(sys.argv[3])
seen = bad = 0
for line in open(sys.argv[1]):
    t, o = line.split()
    a = norm(theirs.get(t, []))
    if a is None:
        continue
    b = norm(ours.get(o, [])) or []
    seen += 1
    if a == b:
        print('ok   %s = %s (%d members)' % (t, o, len(a)))
        continue
    bad += 1
    print('DIFF %s vs %s' % (t, o))
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else '-'
        y = b[i] if i < len(b) else '-'
        if x != y:
            print('     NCCL %-36s ours %s' % (x, y))
print('seen %d' % seen)
sys.exit(1 if bad else 0)
EOF

# gdb_types OBJ COLUMN: `ptype /o` of every type in that column of pairs.
gdb_types() {
	printf '%s\n' python \
		"for t in '$(cut -d' ' -f"$2" "$W/pairs" | sort -u | tr '\n' ' ')'.split():" \
		"    gdb.write('@@ %s\\n' % t)" \
		"    try: gdb.write(gdb.execute('ptype /o ' + t, to_string=True))" \
		"    except gdb.error: pass" end > "$W/cmds"
	gdb -batch -x "$W/cmds" "$1" 2>&1
}

printf '#include "nccl/abi_tuner.h"\n#include "nccl/abi_profiler.h"\n#include "nccl/abi_env.h"\n#include "nccl/abi_net.h"\n' > "$W/ours.c"
gcc -std=gnu11 -g -fno-eliminate-unused-debug-types -Isrc -c "$W/ours.c" -o "$W/ours.o"
gdb_types "$W/ours.o" 2 > "$W/ours"

# NCCL's profiler headers take ncclPid_t from os.h, which drags in the
# whole host layer; this stand-in gives them just the type.
mkdir -p "$W/stub"
printf '#include <sys/types.h>\ntypedef pid_t ncclPid_t;\n' > "$W/stub/os.h"

rc=0
n=0
for src in "$@"; do
	inc="$src/src/include"
	[ -d "$inc/plugin" ] || { echo "abi-check: $src: no src/include/plugin" >&2; exit 2; }
	mkdir -p "$W/nccl"
	rm -f "$W/nccl/nccl.h"
	# shellcheck disable=SC2016 # the ${nccl:...} placeholders are literal
	[ -f "$inc/nccl.h" ] || sed -e 's/\${nccl:[A-Za-z]*}/0/g' "$src/src/nccl.h.in" > "$W/nccl/nccl.h"
	: > "$W/real.cc"
	for h in nccl_tuner.h nccl_profiler.h nccl_env.h nccl_net.h tuner/tuner_v7.h profiler/profiler_v7.h; do
		[ -f "$inc/plugin/$h" ] && echo "#include \"plugin/$h\"" >> "$W/real.cc"
	done
	g++ -std=c++17 -g -fno-eliminate-unused-debug-types -include sys/types.h \
		-I"$W/stub" -I"$W/nccl" -I"$inc" -I"$inc/plugin" -I"$CUDA_HOME/include" \
		-c "$W/real.cc" -o "$W/real.o"
	gdb_types "$W/real.o" 1 > "$W/theirs"
	if python3 "$W/cmp.py" "$W/pairs" "$W/theirs" "$W/ours" > "$W/out"; then :; else rc=1; fi
	grep -v '^seen ' "$W/out" || true
	seen=$(sed -n 's/^seen //p' "$W/out")
	[ "${seen:-0}" -gt 0 ] || { echo "abi-check: $src declares none of the types" >&2; rc=1; }
	n=$((n + ${seen:-0}))
	echo "abi-check: $src: $seen types compared"
done
[ $rc -eq 0 ] && echo "abi-check: $n comparisons, all equal"
exit $rc
