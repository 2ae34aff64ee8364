// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * gpu.bpf.c - how the job's host threads feed the GPU, without a GPU
 * profiler: uprobes on the CUDA driver library (kernel launches, time
 * blocked in synchronize, synchronous copies) and the rate and latency of
 * ioctls on /dev/nvidia* descriptors (the driver's submission path).
 * User space attaches the uprobes to every entry point the library has.
 */
#include "observe.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct obs_gpu_val);
} gpu SEC(".maps");

/* Entry time per thread and kind (sync, copy, ioctl). */
struct gpu_key {
	__u32 tid, kind;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct gpu_key);
	__type(value, __u64);
} gpu_ts SEC(".maps");

enum { K_SYNC = 0, K_COPY = 1, K_IOCTL = 2 };

/* Per process: when it last launched, and when a synchronize last returned (0: consumed). */
struct gpu_proc {
	__u64 last_launch, sync_ret;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct gpu_proc);
} gpu_proc SEC(".maps");

const struct obs_gpu_val gpu_zero = {};

static __always_inline struct obs_gpu_val *gpu_val(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return obs_lookup_init(&gpu, &tgid, &gpu_zero);
}

static __always_inline void enter(__u32 kind)
{
	struct gpu_key k = { .tid = (__u32)bpf_get_current_pid_tgid(), .kind = kind };
	__u64 ts = bpf_ktime_get_ns();

	bpf_map_update_elem(&gpu_ts, &k, &ts, BPF_ANY);
}

/* Time since enter(kind), or 0 when this thread did not enter. */
static __always_inline __u64 leave(__u32 kind)
{
	struct gpu_key k = { .tid = (__u32)bpf_get_current_pid_tgid(), .kind = kind };
	__u64 *ts = bpf_map_lookup_elem(&gpu_ts, &k), d;

	if (!ts)
		return 0;
	d = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&gpu_ts, &k);
	return d ? d : 1;
}

static __always_inline struct gpu_proc *gpu_proc_of(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gpu_proc zero = {};

	return obs_lookup_init(&gpu_proc, &tgid, &zero);
}

/*
 * A launch: counted, and the gaps it closes.  Threads of one process
 * launch concurrently, so the stamps are exchanged atomically: each gap
 * is measured once, between two launches that followed each other.
 */
SEC("uprobe")
int gpu_launch(void *ctx)
{
	struct obs_gpu_val *v;
	struct gpu_proc *p;
	__u64 now, prev, sret;

	if (!obs_current_is_target() || !(v = gpu_val()))
		return 0;
	__sync_fetch_and_add(&v->launches, 1);
	p = gpu_proc_of();
	if (!p)
		return 0;
	now = bpf_ktime_get_ns();
	prev = __sync_lock_test_and_set(&p->last_launch, now);
	if (prev && now > prev)
		obs_hist_add_atomic(&v->launch_gap, now - prev);
	sret = __sync_lock_test_and_set(&p->sync_ret, 0);
	if (sret && now > sret)
		obs_hist_add_atomic(&v->sync_gap, now - sret);
	return 0;
}

SEC("uprobe")
int gpu_sync_enter(void *ctx)
{
	if (obs_current_is_target())
		enter(K_SYNC);
	return 0;
}

SEC("uretprobe")
int gpu_sync_exit(void *ctx)
{
	__u64 d = leave(K_SYNC), id = bpf_get_current_pid_tgid();
	struct obs_gpu_val *v;

	if (!d || !(v = gpu_val()))
		return 0;
	obs_hist_add_atomic(&v->sync, d);
	{
		struct gpu_proc *p = gpu_proc_of();

		if (p)
			p->sync_ret = bpf_ktime_get_ns();
	}
	if (d > obs_cfg.outlier_ns)
		obs_outlier(OBS_EV_SYNC, id >> 32, (__u32)id, d, 0, 0);
	return 0;
}

SEC("uprobe")
int gpu_copy_enter(void *ctx)
{
	if (obs_current_is_target())
		enter(K_COPY);
	return 0;
}

SEC("uretprobe")
int gpu_copy_exit(void *ctx)
{
	__u64 d = leave(K_COPY);
	struct obs_gpu_val *v;

	if (d && (v = gpu_val()))
		obs_hist_add_atomic(&v->copy, d);
	return 0;
}

/* Is fd of the current task a character device of one of the configured majors? */
static __always_inline bool fd_is_gpu(__u32 fd)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct file **fds, *f = NULL;
	__u32 major, max;

	max = BPF_CORE_READ(t, files, fdt, max_fds);
	if (fd >= max)
		return false;
	fds = BPF_CORE_READ(t, files, fdt, fd);
	if (bpf_core_read(&f, sizeof(f), &fds[fd]) || !f)
		return false;
	major = BPF_CORE_READ(f, f_inode, i_rdev) >> 20;
	if (!major)
		return false;
	for (int i = 0; i < OBS_MAX_DEV_MAJORS; i++) {
		if (!obs_cfg.gpu_majors[i])
			break;
		if (obs_cfg.gpu_majors[i] == major)
			return true;
	}
	return false;
}

SEC("tp/syscalls/sys_enter_ioctl")
int gpu_ioctl_enter(struct trace_event_raw_sys_enter *ctx)
{
	if (!obs_cfg.gpu_majors[0] || !obs_current_is_target() || !fd_is_gpu((__u32)ctx->args[0]))
		return 0;
	enter(K_IOCTL);
	return 0;
}

SEC("tp/syscalls/sys_exit_ioctl")
int gpu_ioctl_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 d, id;
	struct obs_gpu_val *v;

	if (!obs_cfg.gpu_majors[0])
		return 0;
	d = leave(K_IOCTL);
	if (!d || !(v = gpu_val()))
		return 0;
	obs_hist_add(&v->ioctl, d);
	if (d > obs_cfg.outlier_ns) {
		id = bpf_get_current_pid_tgid();
		obs_outlier(OBS_EV_IOCTL, id >> 32, (__u32)id, d, 0, 0);
	}
	return 0;
}
