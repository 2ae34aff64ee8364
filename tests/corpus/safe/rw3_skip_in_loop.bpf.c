/* Early SKIP returns from inside a loop over a deny list. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} deny_comms SEC(".maps");

SEC("tuner")
int deny_loop(struct ncclbpf_tuner_ctx *ctx)
{
	for (__u32 i = 0; i < 16; i++) {
		__u64 *id = bpf_map_lookup_elem(&deny_comms, &i);

		if (!id)
			return NCCLBPF_TUNER_SKIP;
		if (*id == 0)
			break;
		if (*id == ctx->comm_id)
			return NCCLBPF_TUNER_SKIP;
	}
	for (int a = NCCLBPF_NUM_ALGOS - 1; a >= 0; a--) {
		if (a == NCCLBPF_ALGO_PAT && ctx->n_nodes == 1)
			return NCCLBPF_TUNER_SKIP;
		if (ncclbpf_cell_offered(ctx, a, NCCLBPF_PROTO_SIMPLE)) {
			ctx->algo = a;
			ctx->proto = NCCLBPF_PROTO_SIMPLE;
			return NCCLBPF_TUNER_APPLY;
		}
	}
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
