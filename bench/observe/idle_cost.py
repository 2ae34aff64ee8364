#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The default probe set's cost on an idle machine, this build against a previous one, in one go.

Runs run.py's "compare" mode (the job unobserved, under this build's observer, under the
previous build's, interleaved REPEAT times so both see the same machine, each first in every
other round) at 10,000 block requests/s, then twice at 60,000 (each build first once), and
writes a summary: per build, the median % of one CPU (programs; observer process) and, per
program, the median runs/s, ns per run and JITed size.
The raw output of every run follows the summary in the same file.

The payload is a directory laid out like a build directory, so it can be carried to a machine
that has none of the build's packages:

    PAYLOAD/ncclbpf                  this build's observer
    PAYLOAD/bench/observe/obs_job    the synthetic job
    PAYLOAD/old/ncclbpf              the previous build's observer (optional: without it, this
                                     build alone)
    PAYLOAD/bin/                     optional: bpftool and anything else put first on PATH
    PAYLOAD/lib/                     optional: shared libraries (libbpf.so.1, liburing.so.2,
                                     libmicrohttpd.so.12, ...) put first on LD_LIBRARY_PATH

Needs root, BTF and losetup (run.py makes a 256 MiB loop device under /var/tmp).

usage: idle_cost.py PAYLOAD SUMMARY_FILE [SECONDS] [REPEAT]
"""
import os, re, statistics, subprocess, sys, time

if len(sys.argv) < 3:
    sys.exit(__doc__)
payload, summary = os.path.abspath(sys.argv[1]), sys.argv[2]
secs = sys.argv[3] if len(sys.argv) > 3 else "6"
repeat = sys.argv[4] if len(sys.argv) > 4 else "5"
here = os.path.dirname(os.path.abspath(__file__))
old = os.path.join(payload, "old", "ncclbpf")
env = dict(os.environ, PYTHONUNBUFFERED="1")
env["PATH"] = os.path.join(payload, "bin") + ":" + env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
env["LD_LIBRARY_PATH"] = os.path.join(payload, "lib") + ":" + env.get("LD_LIBRARY_PATH", "")

# "LABEL  12.34% of one CPU (programs  1.23%,    81000 runs/s; process  0.10%)  job: ..."
TOTAL = re.compile(r"^(\S.*?)\s+([\d.]+)% of one CPU \(programs\s+([\d.]+)%,\s+(\d+) runs/s; "
                   r"process\s+([\d.]+)%\)")
# "    NAME   RUNS runs/s   NS ns/run  PCT%  jited BYTES B"
PROG = re.compile(r"^\s+(\S+)\s+(\d+) runs/s\s+(\d+) ns/run\s+([\d.]+)%(?:\s+jited (\d+) B)?")
NAMES = {"observe io,net,sched (default)": "this build", "other build, default": "previous build"}


def measure(rate, n):
    """run.py's output for one rate, and {build: {"total": [...], "progs": {name: [...]}}}."""
    mode = ["compare", old, n] if os.path.exists(old) else ["default", n]
    argv = [sys.executable, os.path.join(here, "run.py"), payload, secs, rate] + mode
    out = subprocess.run(argv, capture_output=True, text=True, env=env)
    text = out.stdout + out.stderr
    res, cur = {}, None
    for line in text.splitlines():
        if "could not run" in line:
            label = line.split("  ")[0].strip()
            res.setdefault(NAMES.get(label, label), {"total": [], "progs": {}, "failed": 0})["failed"] += 1
            continue
        m = TOTAL.match(line)
        if m:
            cur = res.setdefault(NAMES.get(m.group(1), m.group(1)), {"total": [], "progs": {}, "failed": 0})
            cur["total"].append(tuple(float(m.group(i)) for i in (2, 3, 4, 5)))
            continue
        m = PROG.match(line)
        if m and cur is not None:
            cur["progs"].setdefault(m.group(1), []).append(
                (float(m.group(2)), float(m.group(3)), float(m.group(4)), int(m.group(5) or 0)))
    return text, res


def med(xs, i):
    return statistics.median(x[i] for x in xs)


def report(f, rate, res):
    f.write(f"\n== {rate} reads/s ==\n")
    for build, r in res.items():
        t = r["total"]
        if r["failed"]:
            f.write(f"{build}: {r['failed']} run(s) saw no program run (the observer started too late "
                    "for the window, or failed: see the raw output)\n")
        if not t:
            continue
        f.write(f"{build}: {len(t)} runs, median {med(t, 0):.2f}% of one CPU (programs {med(t, 1):.2f}%, "
                f"process {med(t, 3):.2f}%), {med(t, 2):.0f} program runs/s; programs per run: "
                + ", ".join(f"{x[1]:.2f}%" for x in t) + "\n")
        for name, p in sorted(r["progs"].items()):
            f.write(f"    {name:24s} {med(p, 0):9.0f} runs/s {med(p, 1):6.0f} ns/run {med(p, 2):5.2f}%  "
                    f"jited {p[0][3]} B  (runs seen {len(p)})\n")


logs = []
with open(summary, "w") as f:
    f.write(f"observe idle cost, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; "
            f"{os.cpu_count()} CPUs, kernel {os.uname().release}; payload {payload}; "
            f"previous build: {'yes' if os.path.exists(old) else 'no'}; {secs} s per run\n")
    for rate, n in (("10000", repeat), ("60000", "2")):
        text, res = measure(rate, n)
        logs.append(f"\n---- run.py at {rate} reads/s ----\n{text}")
        report(f, rate, res)
        f.flush()
    f.write("\n".join(logs))
print(open(summary).read())
