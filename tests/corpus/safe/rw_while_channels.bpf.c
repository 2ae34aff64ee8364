/* Bounded while loop: double channels while bytes per channel stay above a floor. */
#include <ncclbpf/policy.h>

SEC("tuner")
int while_channels(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;
	int ch = 1;

	while (ch < 64 && n / (ch * 2) >= 131072)
		ch *= 2;
	ctx->n_channels = ch;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
