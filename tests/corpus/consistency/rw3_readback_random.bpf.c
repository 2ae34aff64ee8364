// EXPECT: warn
/* An output set under a random branch, then read back to pick the protocol: the
 * first store is reported (reading the output back does not hide it). */
#include <ncclbpf/policy.h>

SEC("tuner")
int readback_rand(struct ncclbpf_tuner_ctx *ctx)
{
	if ((bpf_get_prandom_u32() & 7) == 0)
		ctx->algo = NCCLBPF_ALGO_RING;
	if (ctx->algo == NCCLBPF_ALGO_RING)
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
