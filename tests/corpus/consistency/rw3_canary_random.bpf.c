// EXPECT: warn
/* A canary rollout: 5% of calls try LL128, chosen by a random number (rank-local). */
#include <ncclbpf/policy.h>

SEC("tuner")
int canary(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 r = bpf_get_prandom_u32() % 100;

	if (r < 5 && ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_LL128;
	}
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
