/*
 * Reload test policy B: Ring/Simple for every collective; shares ctl_runs
 * with A (same name and shape: the count survives a reload) and has its
 * own ctl_cfg of a different shape (so that one starts fresh).
 */
#include <ncclbpf/policy.h>

#define barrier() asm volatile("" ::: "memory")

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ctl_runs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} ctl_cfg SEC(".maps");

SEC("tuner") int pick_b(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *runs = bpf_map_lookup_elem(&ctl_runs, &k);

	if (runs)
		__sync_fetch_and_add(runs, 1);
	ctx->algo = NCCLBPF_ALGO_RING;
	barrier();
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
