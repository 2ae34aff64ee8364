/* volatile counters in .bss, read back to pick a channel count. */
#include <ncclbpf/policy.h>

volatile __u64 calls;
volatile __u64 big_calls;
volatile __u32 last_coll;
volatile __s32 last_algo = -1;

SEC("tuner")
int vol_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	calls++;
	last_coll = ctx->coll_type;
	if (ctx->n_bytes >= (1 << 20)) {
		big_calls++;
		ctx->n_channels = 32;
	}
	last_algo = ctx->nccl_algo;
	if (calls > 1000 && big_calls * 2 > calls)
		__sync_fetch_and_add(&big_calls, 0);
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
