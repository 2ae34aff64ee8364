// EXPECT: warn
// The value written is a constant, but whether it is written depends on a random number.
#include <ncclbpf/policy.h>

SEC("tuner")
int branch_on_random(struct ncclbpf_tuner_ctx *ctx)
{
	if (bpf_get_prandom_u32() & 1)
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
