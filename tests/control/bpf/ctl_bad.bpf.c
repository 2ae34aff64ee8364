/* Reload test policy the verifier must reject: dereferences a map value without a NULL check. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ctl_runs SEC(".maps");

SEC("tuner") int pick_bad(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *runs = bpf_map_lookup_elem(&ctl_runs, &k);

	*runs += 1;
	ctx->algo = NCCLBPF_ALGO_TREE;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
