/*
 * Reload test policy A: Ring/LL for every collective; counts its runs in
 * ctl_runs (same shape in B, so a reload keeps the count) and takes a
 * channel count from ctl_cfg, which only the operator writes.
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
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ctl_cfg SEC(".maps");

SEC("tuner") int pick_a(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *runs = bpf_map_lookup_elem(&ctl_runs, &k);
	__u32 *ch = bpf_map_lookup_elem(&ctl_cfg, &k);

	if (runs)
		__sync_fetch_and_add(runs, 1);
	ctx->algo = NCCLBPF_ALGO_RING;
	barrier();
	ctx->proto = NCCLBPF_PROTO_LL;
	if (ch && *ch >= 1 && *ch <= 64)
		ctx->n_channels = (__s32)*ch;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
