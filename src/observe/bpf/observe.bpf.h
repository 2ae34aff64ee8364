/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe.bpf.h - what every probe set shares: the configuration, the
 * target filter, the shared maps (user space creates them once and hands
 * the same map to every object) and the histogram and outlier helpers.
 */
#ifndef NCCLBPF_OBSERVE_BPF_H
#define NCCLBPF_OBSERVE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "observe_abi.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct obs_cfg obs_cfg = {};

/* Dropped outliers (ring buffer full); read by user space from .bss. */
__u64 obs_events_lost = 0;

/*
 * The target processes, one bit per tgid (OBS_MODE_PIDS), shared with the
 * other probe sets (bpf_map__reuse_fd) and written by user space through
 * mmap.  Every program asks this first, on every event of the machine: an
 * array lookup the verifier inlines into a bounds check and a load, where
 * a hash lookup costs a jhash and a bucket walk.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, OBS_PID_WORDS);
	__type(key, __u32);   /* tgid / 64 */
	__type(value, __u64); /* bit tgid % 64 */
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct obs_tier_ctl);
} tier_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct obs_tier_bucket);
} tier_bucket SEC(".maps");

static __always_inline bool obs_comm_match(const char *comm)
{
	for (int i = 0; i < OBS_COMM_LEN; i++) {
		if (comm[i] != obs_cfg.comm[i])
			return false;
		if (!comm[i])
			return true;
	}
	return true;
}

/*
 * Is t one of the job's threads?  pids: its process is in targets.
 * cgroup: its v2 cgroup is the configured one or below it.  comm: its
 * process's name (the group leader's: threads may rename themselves).
 */
static __always_inline bool obs_tgid_is_target(__u32 tgid)
{
	__u32 w = tgid / 64;
	__u64 *bits;

	/*
	 * The idle tasks (tgid 0) are never the job's, and one side of most
	 * switches on a machine with idle CPUs: no line of the table for them.
	 */
	if (!tgid)
		return false;
	bits = bpf_map_lookup_elem(&targets, &w);
	return bits && (*bits >> (tgid % 64)) & 1;
}

static __always_inline bool obs_is_target(struct task_struct *t)
{
	/* t is a BTF pointer: a direct load, not a probe-read helper call. */
	if (obs_cfg.mode == OBS_MODE_PIDS)
		return obs_tgid_is_target(t->tgid);
	if (obs_cfg.mode == OBS_MODE_CGROUP) {
		struct cgroup *cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);
		__u32 lvl = obs_cfg.cg_level;
		struct cgroup *anc = NULL;

		if (!cg || BPF_CORE_READ(cg, level) < (int)lvl || lvl > 255)
			return false;
		bpf_core_read(&anc, sizeof(anc), &cg->ancestors[lvl]);
		return anc && BPF_CORE_READ(anc, kn, id) == obs_cfg.cg_id;
	}
	if (obs_cfg.mode == OBS_MODE_COMM) {
		char comm[OBS_COMM_LEN];

		/* A child the job forked is the job's, whatever it exec'd since (obs_fork). */
		if (obs_tgid_is_target(t->tgid))
			return true;
		BPF_CORE_READ_STR_INTO(&comm, t, group_leader, comm);
		return obs_comm_match(comm);
	}
	return false;
}

static __always_inline bool obs_current_is_target(void)
{
	/* The tgid from the helper: no task pointer walk in the common mode. */
	if (obs_cfg.mode == OBS_MODE_PIDS)
		return obs_tgid_is_target(bpf_get_current_pid_tgid() >> 32);
	return obs_is_target(bpf_get_current_task_btf());
}

/*
 * Processes the job forks (data-loader workers, helpers that exec another
 * program) are the job's too: the child's bit is set as it is created,
 * before it runs, so none of its events is missed.  Threads share their
 * process's bit already.  Every set carries this program; user space
 * loads the first set's only.  cgroup targets need nothing: a child starts
 * in its parent's cgroup.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(obs_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 tgid = child->tgid, w = tgid / 64;
	__u64 *bits;

	if (obs_cfg.mode == OBS_MODE_CGROUP || child->pid != tgid || !obs_is_target(parent))
		return 0;
	bits = bpf_map_lookup_elem(&targets, &w);
	if (bits)
		__sync_fetch_and_or(bits, 1ull << (tgid % 64));
	return 0;
}

/*
 * A target process that exits leaves the table (its last thread's exit:
 * the group's live count is 0 by then), so a later process given the same
 * pid is not counted.  Loaded with obs_fork.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(obs_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid, w = tgid / 64;
	__u64 *bits, m = 1ull << (tgid % 64);

	if (obs_cfg.mode == OBS_MODE_CGROUP || BPF_CORE_READ(p, signal, live.counter))
		return 0;
	bits = bpf_map_lookup_elem(&targets, &w);
	if (bits && (*bits & m))
		__sync_fetch_and_and(bits, ~m);
	return 0;
}

/*
 * The histogram slot of v: floor(log2(v)), capped.  A global (not inlined)
 * function on purpose: the verifier checks it once and the caller sees an
 * unknown slot in [0, OBS_HIST_SLOTS), so states stay prunable.  Inlined,
 * every path through the bit search stays a distinct state, and three
 * histograms in one program already exceed the verifier's budget.
 */
__noinline __u32 obs_slot(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8)  { v >>= 8;  r += 8; }
	if (v >> 4)  { v >>= 4;  r += 4; }
	if (v >> 2)  { v >>= 2;  r += 2; }
	if (v >> 1)  { r += 1; }
	return r < OBS_HIST_SLOTS ? r : OBS_HIST_SLOTS - 1;
}

/*
 * Aggregates live in per-CPU maps: plain adds, no locked instruction and no
 * cache line shared between CPUs; user space sums the CPUs when it reads.
 */
static __always_inline void obs_hist_add(struct obs_hist *h, __u64 v)
{
	__u32 s = obs_slot(v);

	if (s >= OBS_HIST_SLOTS) /* bounds the index for the verifier */
		return;
	h->slot[s]++;
	h->count++;
	h->sum += v;
}

/* The same where a program can be preempted by another on its CPU (uprobes). */
static __always_inline void obs_hist_add_atomic(struct obs_hist *h, __u64 v)
{
	__u32 s = obs_slot(v);

	if (s >= OBS_HIST_SLOTS)
		return;
	__sync_fetch_and_add(&h->slot[s], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum, v);
}

/* The value for key, created zeroed on first use (NULL only when the map is full). */
static __always_inline void *obs_lookup_init(void *map, const void *key, const void *zero)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

static __always_inline void obs_outlier(__u32 kind, __u32 tgid, __u32 tid, __u64 value_ns,
					__u64 a, __u64 b)
{
	struct obs_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&obs_events_lost, 1);
		return;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->value_ns = value_ns;
	e->a = a;
	e->b = b;
	e->tgid = tgid;
	e->tid = tid;
	e->kind = kind;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
}

/*
 * Deep tier: may this CPU send one more record?  A token bucket refilled at
 * per_cpu_per_s, holding at most that many (a second's worth); a program
 * nested in another on the same CPU (block completion in an interrupt) can
 * make the count off by one, never unbounded.
 */
static __always_inline bool obs_deep_take(void)
{
	struct obs_tier_bucket *b;
	struct obs_tier_ctl *c;
	__u64 now, el, add;
	__u32 z = 0;

	c = bpf_map_lookup_elem(&tier_ctl, &z);
	if (!c || !c->until_ns)
		return false;
	now = bpf_ktime_get_ns();
	if (now >= c->until_ns)
		return false;
	b = bpf_map_lookup_elem(&tier_bucket, &z);
	if (!b)
		return false;
	el = now - b->last_ns;
	if (el > 1000000000ull)
		el = 1000000000ull;
	add = el * c->per_cpu_per_s / 1000000000ull;
	if (add) {
		b->tokens += add;
		if (b->tokens > c->per_cpu_per_s)
			b->tokens = c->per_cpu_per_s;
		b->last_ns = now;
	}
	if (!b->tokens) {
		b->dropped++;
		return false;
	}
	b->tokens--;
	b->sent++;
	return true;
}

/* A latency: to the ring buffer if it is an outlier, or if the deep tier is on and has budget. */
static __always_inline void obs_latency_event(__u32 kind, __u32 tgid, __u32 tid, __u64 d,
					      __u64 a, __u64 b)
{
	if (d > obs_cfg.outlier_ns || ((obs_cfg.flags & OBS_CFG_DEEP) && obs_deep_take()))
		obs_outlier(kind, tgid, tid, d, a, b);
}

#endif
