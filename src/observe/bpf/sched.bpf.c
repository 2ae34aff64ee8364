// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * sched.bpf.c - the job's threads on the CPU: run-queue latency (woken or
 * preempted -> running again), off-CPU time (blocked -> running again)
 * and migrations, counting those that cross NUMA nodes.
 */
#include "observe.bpf.h"

#define TASK_RUNNING_ 0

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);  /* tid */
	__type(value, __u64);
} wake_ts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);  /* tid */
	__type(value, __u64);
} off_ts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);  /* tgid */
	__type(value, struct obs_sched_val);
} sched SEC(".maps");

/* CPU -> NUMA node, filled by user space from sysfs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OBS_MAX_CPUS);
	__type(key, __u32);
	__type(value, __u32);
} cpu_node SEC(".maps");

const struct obs_sched_val sched_zero = {};

static __always_inline void mark(void *map, struct task_struct *p)
{
	__u32 tid = p->pid;
	__u64 ts = bpf_ktime_get_ns();

	bpf_map_update_elem(map, &tid, &ts, BPF_ANY);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wake, struct task_struct *p)
{
	if (obs_is_target(p))
		mark(&wake_ts, p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wake_new, struct task_struct *p)
{
	if (obs_is_target(p))
		mark(&wake_ts, p);
	return 0;
}

static __always_inline unsigned int task_state(struct task_struct *t)
{
	struct task_struct___oldstate {
		long state;
	} __attribute__((preserve_access_index)) *o = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ(o, state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now, *ts, d;
	__u32 tid, tgid;
	struct obs_sched_val *v;

	if (obs_is_target(prev))
		mark(task_state(prev) == TASK_RUNNING_ ? (void *)&wake_ts : (void *)&off_ts, prev);
	if (!obs_is_target(next))
		return 0;
	now = bpf_ktime_get_ns();
	tid = next->pid;
	tgid = next->tgid;
	v = obs_lookup_init(&sched, &tgid, &sched_zero);
	if (!v)
		return 0;
	ts = bpf_map_lookup_elem(&wake_ts, &tid);
	if (ts) {
		d = now - *ts;
		obs_hist_add(&v->runq, d);
		if (d > obs_cfg.outlier_ns)
			obs_outlier(OBS_EV_RUNQ, tgid, tid, d, 0, 0);
		bpf_map_delete_elem(&wake_ts, &tid);
	}
	ts = bpf_map_lookup_elem(&off_ts, &tid);
	if (ts) {
		d = now - *ts;
		obs_hist_add(&v->offcpu, d);
		bpf_map_delete_elem(&off_ts, &tid);
	}
	return 0;
}

/* The CPU a task is leaving: thread_info.cpu since 5.16, task_struct.cpu before. */
static __always_inline __u32 task_cpu_(struct task_struct *p)
{
	struct task_struct___old {
		unsigned int cpu;
	} __attribute__((preserve_access_index)) *o = (void *)p;

	if (bpf_core_field_exists(p->thread_info.cpu))
		return BPF_CORE_READ(p, thread_info.cpu);
	return BPF_CORE_READ(o, cpu);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(sched_migrate, struct task_struct *p, int dest_cpu)
{
	__u32 src = task_cpu_(p), dst = dest_cpu, tgid, *ns, *nd;
	struct obs_sched_val *v;

	if (!obs_is_target(p))
		return 0;
	tgid = p->tgid;
	v = obs_lookup_init(&sched, &tgid, &sched_zero);
	if (!v)
		return 0;
	__sync_fetch_and_add(&v->migrations, 1);
	ns = bpf_map_lookup_elem(&cpu_node, &src);
	nd = bpf_map_lookup_elem(&cpu_node, &dst);
	if (ns && nd && *ns != *nd)
		__sync_fetch_and_add(&v->cross_node, 1);
	return 0;
}
