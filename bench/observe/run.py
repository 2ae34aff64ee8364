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

usage: run.py BUILD_DIR [SECONDS] [READS_PER_SECOND] [tiers | default [REPEAT] |
              compare OTHER_NCCLBPF [REPEAT]]
"""
import json, os, subprocess, sys, time

build = sys.argv[1] if len(sys.argv) > 1 else "build"
secs = int(sys.argv[2]) if len(sys.argv) > 2 else 6
rate = sys.argv[3] if len(sys.argv) > 3 else "60000"
mode = sys.argv[4] if len(sys.argv) > 4 else ""
tiers = mode == "tiers"
# "default": the job unobserved and under the default set, alternating, REPEAT times each,
# with the per-program breakdown of every observed run.
per_prog = mode in ("default", "compare")
# "compare OTHER_NCCLBPF [REPEAT]": the same, with another build's observer (e.g. the previous
# commit's) run on the same job between ours, so both see the same machine.
other = sys.argv[5] if mode == "compare" else None
repeat = int(sys.argv[6 if other else 5]) if len(sys.argv) > (6 if other else 5) else 3
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


def run(label, observer, env=None):
    """Runs the job, and observer (argv with {pid}, or None) beside it."""
    first = max(progs() or {0: None})
    # An observer gets GRACE seconds more of the job to load in (bpftrace and bcc compile first;
    # a loaded machine verifies slowly): the window counts only programs present when it begins.
    grace = GRACE if observer else 0
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
    a, c0, t0 = progs(), proc_cpu(obs.pid) if obs else 0, time.time()
    time.sleep(max(1.0, start + secs + grace - 1.3 - time.time()))
    b, c1, t1 = progs(), proc_cpu(obs.pid) if obs else 0, time.time()
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
    if observer and not ns and not runs:
        line = err.strip().splitlines()[-1] if err.strip() else "no programs ran"
        print(f"{label:34s} could not run: {line}")
        return
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
subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"])
try:
    print(f"job: {rate} reads/s target, {secs} s per run, {os.cpu_count()} CPUs; "
          f"kernel {os.uname().release}")
    if not per_prog:
        run("unobserved", None)
    obs = [ncclbpf, "observe", "--pid", "{pid}", "--duration", str(secs + GRACE + 5), "--interval", "1000"]
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
