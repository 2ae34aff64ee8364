// EXPECT: context access out of bounds
#include <ncclbpf/policy.h>

SEC("tuner")
int ctx_oob_read(struct ncclbpf_tuner_ctx *ctx)
{
	/* the prototype's 144-byte layout: reads past the 88-byte context */
	__u32 v = *(volatile __u32 *)((char *)ctx + 120);

	ctx->n_channels = v & 63;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
