/* Exploration: every N-th call (N from config, checked non-zero) tries another algorithm. */
#include <ncclbpf/policy.h>

const volatile __u64 explore_every = 16;

SEC("tuner")
int explore_divide(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 every = explore_every;
	__u64 round;

	if (every == 0)
		return NCCLBPF_TUNER_SKIP;
	if (ctx->call_seq % every)
		return NCCLBPF_TUNER_SKIP;
	round = ctx->call_seq / every;
	ctx->algo = round % NCCLBPF_NUM_ALGOS;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
