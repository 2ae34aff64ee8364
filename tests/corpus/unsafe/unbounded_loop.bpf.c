// EXPECT: loop not proven to terminate
#include <ncclbpf/policy.h>

SEC("tuner")
int unbounded_loop(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;
	volatile __u64 acc = 0;

	for (__u64 i = 0; i < n; i++) /* bound is an input */
		acc += i;
	ctx->n_channels = acc & 31;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
