/*
 * Agreed-change test policy: A's tuner (Ring/LL, channels from ctl_cfg),
 * with ctl_cfg declared NCCLBPF_MAP_IMMEDIATE: the operator's opt-out, so
 * a write to it is not an agreed change (test_change.c).
 */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ctl_cfg SEC(".maps");

NCCLBPF_MAP_IMMEDIATE(ctl_cfg);

SEC("tuner") int pick_imm(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0, *ch = bpf_map_lookup_elem(&ctl_cfg, &k);

	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = NCCLBPF_PROTO_LL;
	if (ch && *ch >= 1 && *ch <= 64)
		ctx->n_channels = (__s32)*ch;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
