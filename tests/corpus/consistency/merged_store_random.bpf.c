// EXPECT: warn
/* A merged algo+proto store under a branch on a random number. */
#include <ncclbpf/policy.h>

SEC("tuner")
int merged_random(struct ncclbpf_tuner_ctx *ctx)
{
	if (bpf_get_prandom_u32() & 1) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
