/* The same shift loop written with a for counter, result used as an index into a
 * stack table. */
#include <ncclbpf/policy.h>

SEC("tuner")
int shift_bucket2(struct ncclbpf_tuner_ctx *ctx)
{
	__u8 ch_by_bucket[40];
	__u64 v = ctx->n_bytes;
	int b;

	for (int i = 0; i < 40; i++)
		ch_by_bucket[i] = (__u8)(i < 10 ? 2 : i < 20 ? 8 : 32);
	for (b = 0; b < 64; b++) {
		v >>= 1;
		if (!v)
			break;
	}
	if (b >= 40)
		b = 39;
	ctx->n_channels = ch_by_bucket[b];
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
