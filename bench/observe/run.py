#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Overhead of `ncclbpf observe` on a busy synthetic job, side by side in one run.

The job (obs_job: paced random 4 KiB O_DIRECT reads through io_uring and pread on a loop
device, a TCP loopback stream, a CPU-hopping thread) runs unobserved, under observe's default
probe set, under each probe set alone, and under the tools that do the same work: bcc's
biolatency, tcprtt, runqlat (bpfcc-tools) and, where bcc cannot run, bpftrace scripts doing
the same on tracepoints (bench/observe/bt).  Cost = the kernel programs' run time
(kernel.bpf_stats_enabled; programs loaded by the observer) + the observer process's CPU
time, over a window in the middle of the run, per second of wall time.

With "tiers" as the fourth argument it measures the tiers instead: the io set's cheap tier,
and its deep tier held on (--deep-when block-p99 below any request's latency) under two
budgets, every block and io_uring record of the job sent to the ring up to the budget.

With "default" as the fourth argument it alternates unobserved and default-set runs REPEAT
times (fifth argument, 3 by default) and prints each program's runs/s and ns per run.

With "compare OTHER_NCCLBPF" it also runs another build's observer between them, first in
every other round: the first observed run after an unobserved one was measured dearer (each
build 4-8% at 60,000 reads/s when first), so a fixed order biases the comparison.

With "busy [REPEAT]" it measures without kernel.bpf_stats_enabled, whose own clock reads are
timed as part of every program run: the machine's busy CPU time (/proc/stat: all CPUs, all but
idle, iowait and steal) over the same window of the job's life, unobserved and under the
default set, alternating (each first in every other round), REPEAT times (5 by default).  The
observed runs' median less the unobserved runs' is observe's whole cost to the machine (its
programs, its process, and what they slow down), where the job's own spread lets it show.

usage: run.py BUILD_DIR [SECONDS] [READS_PER_SECOND] [tiers | default [REPEAT] |
              compare OTHER_NCCLBPF [REPEAT] | busy [REPEAT]]
"""
import json, os, statistics, subprocess, sys, time

build = sys.argv[1] if len(sys.argv) > 1 else "build"
secs = int(sys.argv[2]) if len(sys.argv) > 2 else 6
rate = sys.argv[3] if len(sys.argv) > 3 else "60000"
mode = sys.argv[4] if len(sys.argv) > 4 else ""
tiers = mode == "tiers"
# "default": the job unobserved and under the default set, alternating, REPEAT times each,
# with the per-program breakdown of every observed run.
per_prog = mode in ("default", "compare")
busy = mode == "busy"
# "compare OTHER_NCCLBPF [REPEAT]": the same, with another build's observer (e.g. the previous
# commit's) run on the same job between ours, so both see the same machine.
other = sys.argv[5] if mode == "compare" else None
repeat = int(sys.argv[6 if other else 5]) if len(sys.argv) > (6 if other else 5) else (5 if busy else 3)
here = os.path.dirname(os.path.abspath(__file__))
job_bin = os.path.join(build, "bench/observe/obs_job")
ncclbpf = os.path.join(build, "ncclbpf")
clk = os.sysconf("SC_CLK_TCK")
GRACE = 4


def progs():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    return {p["id"]: p for p in json.loads(out or "[]")}


def proc_cpu(pid):
    """utime + stime of pid and its reaped children, in seconds."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / clk
    except OSError:
        return 0.0


def machine_busy():
    """Seconds all CPUs spent on anything but idle, iowait and steal (guest time is in user)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4] - f[7]) / clk


def run(label, observer, env=None):
    """Runs the job, and observer (argv with {pid}, or None) beside it.  In busy mode, returns
    the machine's busy time over the window, in % of one CPU."""
    first = max(progs() or {0: None})
    # An observer gets GRACE seconds more of the job to load in (bpftrace and bcc compile first;
    # a loaded machine verifies slowly): the window counts only programs present when it begins.
    # Compared by busy time, the unobserved job waits as long, so both windows cover the same
    # part of its life.
    grace = GRACE if observer or busy else 0
    job = subprocess.Popen([job_bin, dev, str(secs + grace), rate], stdout=subprocess.PIPE, text=True)
    start = time.time()
    time.sleep(0.2)
    obs = None
    if observer:
        argv = [a.replace("{pid}", str(job.pid)) for a in observer]
        obs = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, **(env or {})))
        # Until its programs are loaded and have stood still for a second.
        seen, still = -1, 0
        while time.time() - start < 0.2 + grace and still < 4:
            time.sleep(0.25)
            n = sum(1 for i in progs() if i > first)
            still = still + 1 if n and n == seen else 0
            seen = n
    if busy:
        time.sleep(max(0.0, start + 0.2 + grace - time.time()))
    a, c0, t0, m0 = progs(), proc_cpu(obs.pid) if obs else 0, time.time(), machine_busy()
    time.sleep(max(1.0, start + secs + grace - 1.3 - time.time()))
    m1, t1, c1, b = machine_busy(), time.time(), proc_cpu(obs.pid) if obs else 0, progs()
    out = job.communicate()[0].strip()
    err = ""
    if obs:
        obs.terminate()
        try:
            err = obs.communicate(timeout=20)[1]
        except subprocess.TimeoutExpired:
            obs.kill()
    ns = sum(p.get("run_time_ns", 0) - a[i].get("run_time_ns", 0)
             for i, p in b.items() if i > first and i in a)
    runs = sum(p.get("run_cnt", 0) - a[i].get("run_cnt", 0) for i, p in b.items() if i > first and i in a)
    wall = t1 - t0
    # Without statistics, loaded means its programs were there when the window began.
    loaded = any(i > first for i in a) and obs is not None and obs.returncode in (0, -15)
    if observer and (not loaded if busy else not ns and not runs):
        line = err.strip().splitlines()[-1] if err.strip() else "no programs ran"
        print(f"{label:34s} could not run: {line}")
        return
    if busy:
        load = 100 * (m1 - m0) / wall
        print(f"{label:34s} machine busy {load:6.2f}% of one CPU (process "
              f"{100 * (c1 - c0) / wall:5.2f}%)  job: {out}")
        return load
    cost = 100 * (ns / 1e9 + (c1 - c0)) / wall
    print(f"{label:34s} {cost:6.2f}% of one CPU (programs {100 * ns / 1e9 / wall:5.2f}%, "
          f"{runs / wall:8.0f} runs/s; process {100 * (c1 - c0) / wall:5.2f}%)  job: {out}")
    if per_prog:
        for i, p in sorted(b.items()):
            if i <= first or i not in a:
                continue
            n = p.get("run_cnt", 0) - a[i].get("run_cnt", 0)
            t = p.get("run_time_ns", 0) - a[i].get("run_time_ns", 0)
            if n:
                print(f"    {p.get('name', '?'):24s} {n / wall:9.0f} runs/s {t / n:6.0f} ns/run "
                      f"{100 * t / 1e9 / wall:5.2f}%  jited {p.get('bytes_jited', 0)} B")


img = subprocess.run(["mktemp", "/var/tmp/obsbench.XXXXXX"], capture_output=True, text=True).stdout.strip()
subprocess.run(["truncate", "-s", "256M", img], check=True)
dev = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True).stdout.strip()
subprocess.run(["dd", f"if={img}", "of=/dev/null", "bs=1M", "status=none"])
subprocess.run(["sysctl", "-qw", f"kernel.bpf_stats_enabled={0 if busy else 1}"])
try:
    print(f"job: {rate} reads/s target, {secs} s per run, {os.cpu_count()} CPUs; "
          f"kernel {os.uname().release}")
    if not per_prog:
        run("unobserved", None)
    obs = [ncclbpf, "observe", "--pid", "{pid}", "--duration", str(secs + GRACE + 5), "--interval", "1000"]
    if busy:
        base, seen = [], []
        pair = [("unobserved", None), ("observe io,net,sched (default)", obs + ["--probes", "io,net,sched"])]
        for i in range(repeat):
            for label, argv in pair if i % 2 == 0 else pair[::-1]:
                x = run(label, argv)
                if x is not None:
                    (seen if argv else base).append(x)
        if base and seen:
            b = statistics.median(base)
            print(f"median machine busy: unobserved {b:.2f}% of one CPU ({len(base)} runs, "
                  f"{min(base):.2f}-{max(base):.2f}), observed {statistics.median(seen):.2f}% "
                  f"({len(seen)} runs, {min(seen):.2f}-{max(seen):.2f}); difference "
                  f"{statistics.median(seen) - b:+.2f}")
        sys.exit(0)
    if per_prog:
        for i in range(repeat):
            run("unobserved", None)
            pair = [("observe io,net,sched (default)", obs + ["--probes", "io,net,sched"])]
            if other:
                pair.append(("other build, default", [other] + obs[1:] + ["--probes", "io,net,sched"]))
            for label, argv in pair if i % 2 == 0 else pair[::-1]:
                run(label, argv)
        sys.exit(0)
    if tiers:
        io = obs + ["--probes", "io"]
        run("observe io, cheap tier", io)
        for budget in ("1000", "1000000"):
            run(f"observe io, deep tier, {budget}/s", io + ["--deep-when", "block-p99=0.000001",
                                                           "--deep-budget", budget])
        sys.exit(0)
    run("observe io,net,sched (default)", obs + ["--probes", "io,net,sched"])
    for s, tool in (("io", "biolatency"), ("net", "tcprtt"), ("sched", "runqlat")):
        run(f"observe {s}", obs + ["--probes", s])
        if s == "io":
            # The signal biolatency measures alone: io_uring and page-cache programs renamed away.
            off = ",".join(t + "=off" for t in ("io_uring_submit_req", "io_uring_complete",
                                                "mm_filemap_get_pages", "mm_filemap_add_to_page_cache"))
            run("observe io, block latency only", obs + ["--probes", "io"],
                {"NCCLBPF_OBSERVE_TP_RENAME": off})
        bcc = f"/usr/sbin/{tool}-bpfcc"
        if os.path.exists(bcc):
            run(f"bcc {tool}", [bcc] + (["-d", str(secs + GRACE + 5)] if tool == "tcprtt" else [str(secs + GRACE + 5), "1"]))
        else:
            print(f"{'bcc ' + tool:34s} not installed (NCCLBPF_BENCH_DEPS=1 sh scripts/deps.sh)")
        bt = os.path.join(here, "bt", tool + ".bt")
        if subprocess.run(["which", "bpftrace"], capture_output=True).returncode == 0:
            run(f"bpftrace {tool}.bt", ["bpftrace", bt])
finally:
    subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=0"])
    subprocess.run(["losetup", "-d", dev])
    os.unlink(img)
