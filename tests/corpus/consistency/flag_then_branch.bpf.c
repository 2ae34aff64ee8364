// EXPECT: warn
// A flag set under a branch on the clock, tested later by a branch that stores a constant
// algorithm: the flag differs between ranks, so the decision does too.
#include <ncclbpf/policy.h>

SEC("tuner")
int flag_then_branch(struct ncclbpf_tuner_ctx *ctx)
{
	volatile int slow = 0; /* kept in the stack: the compiler cannot thread the branches */

	if ((bpf_ktime_get_ns() & 0xffff) > 40000)
		slow = 1;
	if (ctx->n_bytes > 4096 && slow)
		ctx->algo = NCCLBPF_ALGO_RING;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
