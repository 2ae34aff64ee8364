// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * sched.bpf.c - the job's threads on the CPU: run-queue latency (woken or
 * preempted -> running again), off-CPU time (blocked -> running again)
 * and migrations, counting those that cross NUMA nodes.
 *
 * Where the kernel keeps sched_info (OBS_CFG_SCHED_INFO), the scheduler
 * has already stamped when each task was queued, in the run queue's clock:
 * sched_switch reads that for the task coming in, and no program runs on
 * wakeups, which fire for every thread of the machine.  Elsewhere the
 * wakeup programs stamp job threads in task storage.
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
	__u64 run_in;  /* its sum_exec_runtime when it last went on a CPU (| 1); 0: not seen */
	__u64 ran_ns;  /* its last slice, not yet added to its process's node time */
	__u32 ran_node, in_node; /* that slice's node; the node of its last switch-in */
	__u32 slot, pad;         /* its process's slot in sched, + 1; 0: not known yet */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ts);
} task_ts SEC(".maps");

/*
 * Per process figures, in a per-CPU array: its slot is found once per
 * thread (sched_slot, then cached in the thread's task_ts), so a switch
 * costs an array index, not a hash lookup.  Slots are handed out in
 * order and never reused: a pid given to a new process finds its old
 * slot, as a key would; a full table leaves new processes out.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OBS_SCHED_SLOTS);
	__type(key, __u32);
	__type(value, struct obs_sched_val);
} sched SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OBS_SCHED_SLOTS);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* its slot in sched */
} sched_slot SEC(".maps");

/* Slots handed out (a slot lost to a race of two first sightings is not handed out again). */
__u64 sched_slots_used = 0;

/* CPU -> NUMA node, filled by user space from sysfs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OBS_MAX_CPUS);
	__type(key, __u32);
	__type(value, __u32);
} cpu_node SEC(".maps");

/* The figures of tgid's process (t: one of its threads' task_ts, or NULL), NULL if the table is full. */
static __always_inline struct obs_sched_val *sched_val(__u32 tgid, struct task_ts *t)
{
	__u32 *sp, slot;
	__u64 n;

	if (t && t->slot) {
		slot = t->slot - 1;
		return bpf_map_lookup_elem(&sched, &slot);
	}
	sp = bpf_map_lookup_elem(&sched_slot, &tgid);
	if (!sp) {
		n = __sync_fetch_and_add(&sched_slots_used, 1);
		if (n >= OBS_SCHED_SLOTS)
			return NULL;
		slot = (__u32)n;
		/* Another thread of the process may have got there first: its slot wins. */
		bpf_map_update_elem(&sched_slot, &tgid, &slot, BPF_NOEXIST);
		sp = bpf_map_lookup_elem(&sched_slot, &tgid);
		if (!sp)
			return NULL;
	}
	slot = *sp;
	if (t)
		t->slot = slot + 1;
	return bpf_map_lookup_elem(&sched, &slot);
}

/* The clock of the run queue p is on (this CPU's, for prev and next), 0 if unreadable. */
static __always_inline __u64 rq_clock_of(struct task_struct *p)
{
	struct cfs_rq *cfs = p->se.cfs_rq;

	if (!cfs || !bpf_core_field_exists(cfs->rq))
		return 0;
	return cfs->rq->clock;
}

/*
 * When next was queued (woken, created, or preempted) on the run queue it
 * now leaves, and that queue's clock now (updated by __schedule before
 * this tracepoint): false if it was not queued, else its wait in *wait.
 * A wait of 0 is common and counts: the queue's clock advances only when
 * the scheduler updates it, so a task woken and run within one update
 * waited 0 in the scheduler's own terms (its schedstat counts it too).
 * The scheduler consumes the stamp only after the tracepoint
 * (sched_info_arrive in prepare_task_switch).  The queue is reached
 * through the task's fair class queue (CONFIG_FAIR_GROUP_SCHED, which user
 * space checked): every task's points at its CPU's, whatever its class;
 * the run queues themselves are per-CPU data, which a program can name
 * only on kernels with KALLSYMS_ALL.
 */
static __always_inline bool queued_wait(struct task_struct *next, __u64 now, __u64 *wait)
{
	__u64 q = next->sched_info.last_queued;

	if (!q || !now)
		return false;
	/* Queued on another CPU's clock just ahead of this one's: no wait, not a wrap. */
	*wait = now > q ? now - q : 0;
	return true;
}

/*
 * Stamps in task storage.  With sched_info they are in the run queues'
 * clock too (sched_switch has it at hand, already updated; the queues'
 * clocks are one clock across CPUs, as sched_info's own waits assume), so
 * the switch path reads no clock of its own; the wakeup route uses ktime.
 */
static __always_inline void mark(struct task_struct *p, bool blocked, __u64 now)
{
	struct task_ts *t = bpf_task_storage_get(&task_ts, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!t)
		return;
	if (blocked)
		t->off = now;
	else
		t->wake = now;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wake, struct task_struct *p)
{
	if (obs_is_target(p))
		mark(p, false, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wake_new, struct task_struct *p)
{
	if (obs_is_target(p))
		mark(p, false, bpf_ktime_get_ns());
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
 * Node time, all at the switch-in: the task's runtime now less its runtime
 * at its previous switch-in is the slice it ran since, all of it on that
 * switch-in's node (a running task cannot change CPUs without a switch),
 * and added to its process below, where the process is looked up anyway.
 * The scheduler's own prev_sum_exec_runtime would need no stamp, but it is
 * reset when the scheduler picks the same task again, with no switch seen.
 */
static __always_inline void slice_in(struct task_struct *next, struct task_ts *t)
{
	__u64 sum = next->se.sum_exec_runtime;
	__u32 cpu = bpf_get_smp_processor_id(), *node = bpf_map_lookup_elem(&cpu_node, &cpu);

	if (t->run_in && sum > t->run_in) {
		t->ran_ns = sum - t->run_in;
		t->ran_node = t->in_node;
	}
	t->run_in = sum | 1;
	t->in_node = node && *node < OBS_NUMA_NODES ? *node : OBS_NUMA_NODES - 1;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	bool si = obs_cfg.flags & OBS_CFG_SCHED_INFO;
	struct obs_sched_val *v;
	struct task_ts *t;
	__u64 now, d, wait = 0;
	bool queued = false;
	__u32 tgid;

	/*
	 * Preempted means runnable, whatever __state says: a task preempted
	 * between set_current_state() and schedule() still reads as sleeping.
	 * With sched_info the scheduler stamps runnable ones itself.
	 */
	if (obs_is_target(prev)) {
		bool blocked = !preempt && task_state(prev) != TASK_RUNNING_;

		if (blocked || !si)
			mark(prev, blocked, si ? rq_clock_of(prev) : bpf_ktime_get_ns());
	}
	if (!obs_is_target(next))
		return 0;
	t = bpf_task_storage_get(&task_ts, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		slice_in(next, t);
	now = si ? rq_clock_of(next) : 0;
	if (si)
		queued = queued_wait(next, now, &wait);
	if (!queued && !(t && (t->wake | t->off | t->ran_ns)))
		return 0;
	if (!si)
		now = bpf_ktime_get_ns();
	tgid = next->tgid;
	v = sched_val(tgid, t);
	if (!v)
		return 0;
	if (!si && t && t->wake) {
		wait = now - t->wake;
		queued = true;
		t->wake = 0;
	}
	if (queued) {
		obs_hist_add(&v->runq, wait);
		obs_latency_event(OBS_EV_RUNQ, tgid, next->pid, wait, 0, 0);
	}
	if (t && t->off) {
		d = now > t->off ? now - t->off : 0;
		obs_hist_add(&v->offcpu, d);
		t->off = 0;
	}
	if (t && t->ran_ns) {
		v->node_ns[t->ran_node & (OBS_NUMA_NODES - 1)] += t->ran_ns;
		t->ran_ns = 0;
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
	v = sched_val(tgid, bpf_task_storage_get(&task_ts, p, 0, 0));
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
