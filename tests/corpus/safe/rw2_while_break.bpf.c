/* Bounded while loop with break: pick the smallest power-of-two channel count covering the bytes. */
#include <ncclbpf/policy.h>

SEC("tuner")
int while_pow2(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 ch = 1;
	__u64 per = 256 * 1024;

	while (ch < 32) {
		if ((__u64)ch * per >= ctx->n_bytes)
			break;
		ch <<= 1;
	}
	ctx->n_channels = ch;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
