// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * sched.bpf.c - the job's threads on the CPU: run-queue latency (woken or
 * preempted -> running again), off-CPU time (blocked -> running again)
 * and migrations, counting those that cross NUMA nodes.
 */
#include "observe.bpf.h"

#define TASK_RUNNING_ 0

/*
 * When a job thread became runnable (woken or preempted) and when it
 * blocked: in the task itself (task storage), so the hot sched_switch path
 * allocates and frees nothing, and the record dies with the thread.
 */
struct task_ts {
	__u64 wake, off;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ts);
} task_ts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
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

static __always_inline void mark(struct task_struct *p, bool blocked)
{
	struct task_ts *t = bpf_task_storage_get(&task_ts, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!t)
		return;
	if (blocked)
		t->off = bpf_ktime_get_ns();
	else
		t->wake = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wake, struct task_struct *p)
{
	if (obs_is_target(p))
		mark(p, false);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wake_new, struct task_struct *p)
{
	if (obs_is_target(p))
		mark(p, false);
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
	struct obs_sched_val *v;
	struct task_ts *t;
	__u64 now, d;
	__u32 tgid;

	/*
	 * Preempted means runnable, whatever __state says: a task preempted
	 * between set_current_state() and schedule() still reads as sleeping.
	 */
	if (obs_is_target(prev))
		mark(prev, !preempt && task_state(prev) != TASK_RUNNING_);
	if (!obs_is_target(next))
		return 0;
	t = bpf_task_storage_get(&task_ts, next, 0, 0);
	if (!t || !(t->wake | t->off))
		return 0;
	now = bpf_ktime_get_ns();
	tgid = next->tgid;
	v = obs_lookup_init(&sched, &tgid, &sched_zero);
	if (!v)
		return 0;
	if (t->wake) {
		d = now - t->wake;
		obs_hist_add(&v->runq, d);
		obs_latency_event(OBS_EV_RUNQ, tgid, next->pid, d, 0, 0);
		t->wake = 0;
	}
	if (t->off) {
		d = now - t->off;
		obs_hist_add(&v->offcpu, d);
		t->off = 0;
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
	v->migrations += 1;
	ns = bpf_map_lookup_elem(&cpu_node, &src);
	nd = bpf_map_lookup_elem(&cpu_node, &dst);
	if (ns && nd && *ns != *nd) {
		v->cross_node += 1;
		if (obs_cfg.flags & OBS_CFG_NUMA_EVENTS)
			obs_outlier(OBS_EV_NUMA, tgid, p->pid, 0, src, dst);
	}
	return 0;
}
