// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * sched.bpf.c - the job's threads on the CPU: run-queue latency (woken or
 * preempted -> running again), off-CPU time (blocked -> running again),
 * the time they ran on each NUMA node, and migrations, counting those that
 * cross nodes.
 *
 * Where the kernel keeps sched_info (OBS_CFG_SCHED_INFO), the scheduler
 * accounts every run itself (when the task arrived on the CPU, how long it
 * waited in run queues, how many such runs): sched_switch reads that for
 * the job thread leaving the CPU, once per run, and runs nothing for the
 * thread coming in, nor on wakeups, which fire for every thread of the
 * machine.  The waits are then the scheduler's own, as its schedstat
 * counts them.  Elsewhere the wakeup programs stamp job threads in task
 * storage, and the switch-in reads the stamps.
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
	/*
	 * With sched_info, the scheduler's figures for the thread at its last
	 * switch-out (its runs after a wait, their total wait, its runtime):
	 * the next switch-out's less these are that one run's.
	 */
	__u64 runs, delay, sum;
	__u32 seen;    /* sched_info: the figures above are a baseline */
	__u32 slot;    /* its process's slot in sched, + 1; 0: not known yet */
	/* Without: */
	__u64 run_in;  /* its sum_exec_runtime when it last went on a CPU (| 1); 0: not seen */
	__u64 ran_ns;  /* its last slice, not yet added to its process's node time */
	__u32 ran_node, in_node; /* that slice's node; the node of its last switch-in */
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

/*
 * The clock of the run queue p is on (this CPU's, for prev and next), 0 if
 * unreadable, reached through the task's fair class queue
 * (CONFIG_FAIR_GROUP_SCHED, which user space checked): every task's points
 * at its CPU's, whatever its class; the run queues themselves are per-CPU
 * data, which a program can name only on kernels with KALLSYMS_ALL.
 */
static __always_inline __u64 rq_clock_of(struct task_struct *p)
{
	struct cfs_rq *cfs = p->se.cfs_rq;

	if (!cfs || !bpf_core_field_exists(cfs->rq))
		return 0;
	return cfs->rq->clock;
}

/* This CPU's NUMA node. */
static __always_inline __u32 this_node(void)
{
	__u32 cpu = bpf_get_smp_processor_id(), *node = bpf_map_lookup_elem(&cpu_node, &cpu);

	return node && *node < OBS_NUMA_NODES ? *node : OBS_NUMA_NODES - 1;
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

#define PF_EXITING_ 0x4

/*
 * One run of a job thread, at its end (sched_info): the scheduler has
 * counted it at its arrival on this CPU (sched_info_arrive: pcount, and
 * run_delay grown by the wait since it was queued, on this run queue and
 * on any it was moved off while waiting), and brought its runtime up to
 * date.  So, against the figures kept at the thread's previous switch-out:
 *
 * - one more run: its wait is the growth of run_delay, the scheduler's own
 *   figure, to the nanosecond (0 is common and counts, as in schedstat: the
 *   queue's clock advances only when the scheduler updates it);
 * - blocked at that switch-out: off CPU from then (the run queue's clock
 *   there) to its arrival (last_arrival, the clock of the queue it arrived
 *   on: one clock across CPUs, as the scheduler's own waits assume);
 * - its runtime's growth ran on this CPU's node (a running task cannot
 *   change CPUs).
 *
 * A thread first seen here has no figures before, unless it was born since
 * observe began and this is its first run: then they were all 0.  A
 * process's last thread leaves the target table (obs_exit) as it starts
 * to exit, and can still switch several times before its death (blocked
 * closing its files, preempted): an exiting thread's task storage, which
 * only job threads get, says it was the job's.  A wait is reported as its
 * run ends, not as it ends.
 */
static __always_inline int sched_out(bool preempt, struct task_struct *prev)
{
	__u64 runs, delay, sum, arrived;
	struct obs_sched_val *v;
	struct task_ts *t;
	__u32 tgid;

	if (obs_is_target(prev))
		t = bpf_task_storage_get(&task_ts, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	else if (prev->flags & PF_EXITING_)
		t = bpf_task_storage_get(&task_ts, prev, 0, 0);
	else
		return 0;
	if (!t)
		return 0;
	runs = prev->sched_info.pcount;
	delay = prev->sched_info.run_delay;
	arrived = prev->sched_info.last_arrival;
	sum = prev->se.sum_exec_runtime;
	if (!t->seen && runs == 1 && prev->start_time >= obs_cfg.t0_ns)
		t->seen = 1; /* born since observe began: its baseline is all 0 */
	if (t->seen) {
		tgid = prev->tgid;
		v = sched_val(tgid, t);
		if (v && runs == t->runs + 1) {
			obs_hist_add(&v->runq, delay - t->delay);
			obs_latency_event(OBS_EV_RUNQ, tgid, prev->pid, delay - t->delay, 0, 0);
			/* Arrived on another CPU's clock just behind the one it left: no time, not a wrap. */
			if (t->off)
				obs_hist_add(&v->offcpu, arrived > t->off ? arrived - t->off : 0);
		}
		if (v && sum > t->sum)
			v->node_ns[this_node()] += sum - t->sum;
	}
	/* Preempted is runnable, whatever __state says (set_current_state() then preempted). */
	t->off = !preempt && task_state(prev) != TASK_RUNNING_ ? rq_clock_of(prev) : 0;
	t->runs = runs;
	t->delay = delay;
	t->sum = sum;
	t->seen = 1;
	return 0;
}

/*
 * Stamps in task storage, in ktime, for kernels without sched_info: the
 * wakeup programs stamp runnable job threads, the switch-out blocked ones.
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

/*
 * Node time without sched_info, at the switch-in: the task's runtime now
 * less its runtime at its previous switch-in is the slice it ran since,
 * all of it on that switch-in's node, and added to its process below,
 * where the process is looked up anyway.
 */
static __always_inline void slice_in(struct task_struct *next, struct task_ts *t)
{
	__u64 sum = next->se.sum_exec_runtime;

	if (t->run_in && sum > t->run_in) {
		t->ran_ns = sum - t->run_in;
		t->ran_node = t->in_node;
	}
	t->run_in = sum | 1;
	t->in_node = this_node();
}

/* Without sched_info: the stamps the wakeups and switch-outs left, read at the switch-in. */
static __always_inline int sched_stamped(bool preempt, struct task_struct *prev,
					 struct task_struct *next)
{
	struct obs_sched_val *v;
	struct task_ts *t;
	__u64 now, d;
	__u32 tgid;

	/* Preempted means runnable, whatever __state says (see sched_out). */
	if (obs_is_target(prev))
		mark(prev, !preempt && task_state(prev) != TASK_RUNNING_, bpf_ktime_get_ns());
	if (!obs_is_target(next))
		return 0;
	t = bpf_task_storage_get(&task_ts, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	slice_in(next, t);
	if (!(t->wake | t->off | t->ran_ns))
		return 0;
	now = bpf_ktime_get_ns();
	tgid = next->tgid;
	v = sched_val(tgid, t);
	if (!v)
		return 0;
	if (t->wake) {
		d = now - t->wake;
		obs_hist_add(&v->runq, d);
		obs_latency_event(OBS_EV_RUNQ, tgid, next->pid, d, 0, 0);
		t->wake = 0;
	}
	if (t->off) {
		d = now > t->off ? now - t->off : 0;
		obs_hist_add(&v->offcpu, d);
		t->off = 0;
	}
	if (t->ran_ns) {
		v->node_ns[t->ran_node & (OBS_NUMA_NODES - 1)] += t->ran_ns;
		t->ran_ns = 0;
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (obs_cfg.flags & OBS_CFG_SCHED_INFO)
		return sched_out(preempt, prev);
	return sched_stamped(preempt, prev, next);
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
