// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * calib.bpf.c - what each kind of work costs a program on the observe
 * tracepoints, for the benchmark only (obs_calib loads a few at a time
 * beside the synthetic job): an empty program, the target filter, a
 * task-storage get, a per-CPU hash and a per-CPU array lookup, a clock,
 * a histogram add, an in-flight table claim and release (as built, with a
 * compare-and-swap as the first touch of the slot, and the claim's writes
 * to this CPU's own memory instead: what the slot's crossing costs).  The
 * probe sets are compiled in, so their own helpers are what is measured.
 */
#include "../../src/observe/bpf/io.bpf.c"
#include "../../src/observe/bpf/sched.bpf.c"

struct cal_val {
	__u64 n;
	struct obs_hist h;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct cal_val);
} cal_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct cal_val);
} cal_arr SEC(".maps");

struct cal_ts {
	__u64 a, b;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cal_ts);
} cal_ts SEC(".maps");

const struct cal_val cal_zero = {};

/* The incoming thread's slot in cal_arr, if it is a job thread: the prelude of the array programs. */
static __always_inline struct cal_val *cal_next_slot(struct task_struct *next)
{
	__u32 i;

	if (!obs_is_target(next))
		return NULL;
	i = next->tgid & 1023;
	return bpf_map_lookup_elem(&cal_arr, &i);
}

/* Facts about the machine's requests, read by obs_calib. */
__u64 cal_cmpl = 0, cal_same_cpu = 0, cal_start_ns = 0, cal_io_start_ns = 0;

SEC("tp_btf/sched_switch")
int BPF_PROG(c_empty_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(c_filter_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (obs_is_target(prev))
		return 1;
	return obs_is_target(next) ? 2 : 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(c_tstor_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cal_ts *t;

	if (!obs_is_target(next))
		return 0;
	t = bpf_task_storage_get(&cal_ts, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		t->a++;
	return 0;
}

/* A stamp at a job thread's switch-out and its use at the switch-in. */
SEC("tp_btf/sched_switch")
int BPF_PROG(c_tstor2_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cal_ts *t;

	if (obs_is_target(prev)) {
		t = bpf_task_storage_get(&cal_ts, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (t)
			t->b = prev->se.sum_exec_runtime;
	}
	if (!obs_is_target(next))
		return 0;
	t = bpf_task_storage_get(&cal_ts, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		t->a += t->b;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(c_pchash_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tgid;
	struct cal_val *v;

	if (!obs_is_target(next))
		return 0;
	tgid = next->tgid;
	v = obs_lookup_init(&cal_hash, &tgid, &cal_zero);
	if (v)
		v->n++;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(c_pcarr_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cal_val *v = cal_next_slot(next);

	if (v)
		v->n++;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(c_hist_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cal_val *v = cal_next_slot(next);

	if (v)
		obs_hist_add(&v->h, next->se.sum_exec_runtime);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(c_clock_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cal_val *v = cal_next_slot(next);

	if (v)
		v->n += bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(c_rqclk_sw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cal_val *v = cal_next_slot(next);

	if (v)
		v->n += rq_clock_of(next) + next->sched_info.last_queued;
	return 0;
}

SEC("tp_btf/block_io_start")
int BPF_PROG(c_empty_start, struct request *rq)
{
	return 0;
}

SEC("tp_btf/block_io_start")
int BPF_PROG(c_filter_start, struct request *rq)
{
	return obs_current_is_target();
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(c_empty_issue, struct request *rq)
{
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(c_empty_cmpl, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return 0;
}

/* The in-flight table alone: claimed at submit, released at completion. */
SEC("tp_btf/block_io_start")
int BPF_PROG(c_claim_start, struct request *rq)
{
	enum infl_prior prior;

	if (!obs_current_is_target())
		return 0;
	return infl_claim(&uring_infl, uring_shape, INFL_KEY(uring_infl, rq), &prior) != NULL;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(c_free_cmpl, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	struct obs_inflight *e = infl_find(&uring_infl, uring_shape, INFL_KEY(uring_infl, rq));

	if (e)
		e->key = 0;
	return 0;
}

/* The block layer's own stamps, and where requests complete. */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(c_stamp_cmpl, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u32 i = 0;
	struct cal_val *v;

	__sync_fetch_and_add(&cal_cmpl, 1);
	if (rq->start_time_ns)
		__sync_fetch_and_add(&cal_start_ns, 1);
	if (rq->io_start_time_ns)
		__sync_fetch_and_add(&cal_io_start_ns, 1);
	if (rq->mq_ctx && rq->mq_ctx->cpu == bpf_get_smp_processor_id())
		__sync_fetch_and_add(&cal_same_cpu, 1);
	v = bpf_map_lookup_elem(&cal_arr, &i);
	if (v && rq->start_time_ns)
		obs_hist_add(&v->h, bpf_ktime_get_ns() - rq->start_time_ns);
	return 0;
}

/*
 * The same claim and release, each touching the slot first with a locked
 * instruction: the line is asked for once, for writing, where a load then
 * a store ask for it twice (shared, then owned).
 */
SEC("tp_btf/block_io_start")
int BPF_PROG(c_claimx_start, struct request *rq)
{
	__u64 key = INFL_KEY(uring_infl, rq);
	__u32 i = infl_first(key, OBS_INFL_SLOTS - 1);
	enum infl_prior prior;
	struct obs_inflight *e;

	if (!obs_current_is_target())
		return 0;
	e = bpf_map_lookup_elem(&uring_infl, &i);
	if (!e)
		return 0;
	if (__sync_val_compare_and_swap(&e->key, 0, key) == 0) {
		e->j = (__u32)bpf_jiffies64();
		e->tgid = bpf_get_current_pid_tgid() >> 32;
		return 1;
	}
	return infl_claim(&uring_infl, uring_shape, key, &prior) != NULL;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(c_freex_cmpl, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = INFL_KEY(uring_infl, rq);
	__u32 i = infl_first(key, OBS_INFL_SLOTS - 1), t;
	struct obs_inflight *e = bpf_map_lookup_elem(&uring_infl, &i);

	if (e && __sync_val_compare_and_swap(&e->key, key, key) == key) {
		t = e->tgid;
		e->key = 0;
		return t;
	}
	e = infl_find(&uring_infl, uring_shape, key);
	if (e)
		e->key = 0;
	return 0;
}

/* A claim's writes to this CPU's own memory: what the claim costs without the line moving. */
SEC("tp_btf/block_io_start")
int BPF_PROG(c_local_start, struct request *rq)
{
	__u32 i = (__u32)(INFL_KEY(uring_infl, rq) >> 6) & 1023;
	struct cal_val *v;

	if (!obs_current_is_target())
		return 0;
	v = bpf_map_lookup_elem(&cal_arr, &i);
	if (v) {
		v->n = bpf_get_current_pid_tgid();
		v->h.sum = (__u32)bpf_jiffies64();
	}
	return 0;
}
