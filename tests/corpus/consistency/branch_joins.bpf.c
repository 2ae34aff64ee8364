// EXPECT: clean
// A rank-local branch that only counts: the decision after the join does not depend on it.
#include <ncclbpf/policy.h>

__u64 slow_calls;

SEC("tuner")
int branch_joins(struct ncclbpf_tuner_ctx *ctx)
{
	if (bpf_ktime_get_ns() & 1)
		__sync_fetch_and_add(&slow_calls, 1);
	if (ctx->n_bytes < 65536)
		ctx->proto = NCCLBPF_PROTO_LL;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
