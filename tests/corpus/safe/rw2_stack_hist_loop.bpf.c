/* A stack histogram filled in a loop and scanned with a bounded index; argmax picks channels. */
#include <ncclbpf/policy.h>

SEC("tuner")
int stack_hist(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 hist[8];
	__u32 i, arg = 0;
	__u64 m = ctx->avail_mask;

	__builtin_memset(hist, 0, sizeof(hist));
	for (i = 0; i < 21; i++) {
		if (m & (1ull << i))
			hist[i & 7]++;
	}
	for (i = 1; i < 8; i++)
		if (hist[i] > hist[arg])
			arg = i;
	ctx->n_channels = 4 * (arg + 1);
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
