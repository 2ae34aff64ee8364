// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * sched.bpf.c - the job's threads on the CPU: run-queue latency (woken or
 * preempted -> running again), off-CPU time (blocked -> running again)
 * and migrations, counting those that cross NUMA nodes.
 *
 * Where the kernel keeps sched_info (OBS_CFG_SCHED_INFO), everything is
 * taken as a job thread leaves the CPU, from the counters the scheduler
 * keeps in the thread itself: one program run per switch does work, for
 * the thread going out, and no program runs on wakeups, which fire for
 * every thread of the machine.  Elsewhere the wakeup programs stamp job
 * threads in task storage and the switch-in times them.
 */
#include "observe.bpf.h"

#define TASK_RUNNING_ 0

/*
 * Per job thread, in the thread itself (task storage): the hot switch path
 * allocates and frees nothing, and the record dies with the thread.  At
 * each switch-out the thread's own counters are stamped: the slice that
 * ends is its CPU time since the last stamp, and (sched_info) the wait
 * before it is its run_delay since the last stamp.
 */
struct task_ts {
	__u64 wake;    /* wakeup route: when it became runnable, 0: not pending */
	__u64 off;     /* when it blocked (the run queues' clock with sched_info), 0: not pending */
	__u64 run_sum; /* its sum_exec_runtime at its last switch-out */
	__u64 delay;   /* sched_info: its run_delay then */
	__u64 pcount;  /* sched_info: its pcount then */
	__u64 seen;    /* the stamps are set */
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

/* The clock of the run queue p is on (this CPU's, for prev and next), 0 if unreadable. */
static __always_inline __u64 rq_clock_of(struct task_struct *p)
{
	struct cfs_rq *cfs = p->se.cfs_rq;

	if (!cfs || !bpf_core_field_exists(cfs->rq))
		return 0;
	return cfs->rq->clock;
}

/* Wakeup route (no sched_info): job threads stamped when woken, in ktime. */
static __always_inline void mark_woken(struct task_struct *p)
{
	struct task_ts *t = bpf_task_storage_get(&task_ts, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (t)
		t->wake = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wake, struct task_struct *p)
{
	if (obs_is_target(p))
		mark_woken(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wake_new, struct task_struct *p)
{
	if (obs_is_target(p))
		mark_woken(p);
	return 0;
}

static __always_inline unsigned int task_state(struct task_struct *t)
{
	struct task_struct___oldstate {
		long state;
	} __attribute__((preserve_access_index)) *o = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return (unsigned int)BPF_CORE_READ(o, state);
}

/*
 * A job thread leaves the CPU: everything is taken here, from its own
 * task_struct, which this CPU has just been running (the switch-in side
 * does nothing on the sched_info route).
 *
 * - node time: the CPU time since its last switch-out is the slice that
 *   ends, all of it on this CPU (a running task cannot change CPUs), so on
 *   this CPU's node.
 * - run-queue wait (sched_info): the scheduler adds each wait to the
 *   thread's run_delay as the thread arrives on a CPU and counts the
 *   arrival in pcount, so the growth of run_delay since the last
 *   switch-out is the wait before this slice: the kernel's own
 *   /proc/PID/schedstat figures, a wait cut by a migration whole.
 * - off-CPU: from a blocked switch-out to the next arrival, which the
 *   scheduler stamped (sched_info.last_arrival, the run queues' clock).
 *
 * A thread first seen here is stamped, and counted only from the next
 * switch-out; one that has not switched out before (a new thread) counts
 * from its start.
 */
static __always_inline void slice_end(struct task_struct *p, bool preempt, bool si)
{
	struct task_ts *t = bpf_task_storage_get(&task_ts, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 sum, delay = 0, pcount = 0, now, d;
	bool blocked = !preempt && task_state(p) != TASK_RUNNING_;
	struct obs_sched_val *v;
	__u32 tgid, cpu, *node;

	if (!t)
		return;
	sum = p->se.sum_exec_runtime;
	if (si) {
		delay = p->sched_info.run_delay;
		pcount = p->sched_info.pcount;
	}
	/* The switch counters include this switch: 1 on a thread's first. */
	if (!t->seen && p->nvcsw + p->nivcsw > 1) {
		t->seen = 1;
		goto stamp;
	}
	t->seen = 1;
	tgid = p->tgid;
	v = obs_lookup_init(&sched, &tgid, &sched_zero);
	if (!v)
		goto stamp;
	cpu = bpf_get_smp_processor_id();
	node = bpf_map_lookup_elem(&cpu_node, &cpu);
	if (sum > t->run_sum)
		v->node_ns[node && *node < OBS_NUMA_NODES ? *node : OBS_NUMA_NODES - 1] += sum - t->run_sum;
	if (si && pcount != t->pcount) {
		d = delay > t->delay ? delay - t->delay : 0;
		obs_hist_add(&v->runq, d);
		obs_latency_event(OBS_EV_RUNQ, tgid, p->pid, d, 0, 0);
	}
	if (si && t->off) {
		d = p->sched_info.last_arrival;
		obs_hist_add(&v->offcpu, d > t->off ? d - t->off : 0);
		t->off = 0;
	}
stamp:
	t->run_sum = sum;
	t->delay = delay;
	t->pcount = pcount;
	/*
	 * Preempted means runnable, whatever __state says: a task preempted
	 * between set_current_state() and schedule() still reads as sleeping.
	 * With sched_info the scheduler stamps runnable ones itself.
	 */
	if (blocked || !si) {
		now = si ? rq_clock_of(p) : bpf_ktime_get_ns();
		if (blocked)
			t->off = now;
		else
			t->wake = now;
	}
}

/* Wakeup route: the stamps of the thread coming in, against ktime. */
static __always_inline void wakeup_route_in(struct task_struct *next)
{
	struct task_ts *t = bpf_task_storage_get(&task_ts, next, 0, 0);
	struct obs_sched_val *v;
	__u64 now;
	__u32 tgid;

	if (!t || !(t->wake | t->off))
		return;
	now = bpf_ktime_get_ns();
	tgid = next->tgid;
	v = obs_lookup_init(&sched, &tgid, &sched_zero);
	if (!v)
		return;
	if (t->wake) {
		__u64 wait = now > t->wake ? now - t->wake : 0;

		obs_hist_add(&v->runq, wait);
		obs_latency_event(OBS_EV_RUNQ, tgid, next->pid, wait, 0, 0);
		t->wake = 0;
	}
	if (t->off) {
		obs_hist_add(&v->offcpu, now > t->off ? now - t->off : 0);
		t->off = 0;
	}
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	bool si = obs_cfg.flags & OBS_CFG_SCHED_INFO;

	if (obs_is_target(prev))
		slice_end(prev, preempt, si);
	if (!si && obs_is_target(next))
		wakeup_route_in(next);
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
