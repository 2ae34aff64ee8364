// EXPECT: variable-offset context access
#include <ncclbpf/policy.h>

SEC("tuner")
int ctx_varoff(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 i = ctx->coll_type & 3;
	__u32 v = ((volatile __u32 *)&ctx->coll_type)[i];

	ctx->n_channels = v & 63;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
