/* libbpf-style const volatile configuration plus .data and .bss globals. */
#include <ncclbpf/policy.h>

const volatile __u64 threshold = 1 << 20;
const volatile __s32 small_algo = NCCLBPF_ALGO_TREE;
const volatile __s32 large_algo = NCCLBPF_ALGO_RING;
const volatile __u32 max_channels = 32;
const volatile __u8 enabled = 1;
__u64 decisions = 1;
__u64 skipped;

SEC("tuner")
int rodata_cfg(struct ncclbpf_tuner_ctx *ctx)
{
	if (!enabled) {
		skipped++;
		return NCCLBPF_TUNER_SKIP;
	}
	ctx->algo = ctx->n_bytes < threshold ? small_algo : large_algo;
	if (max_channels >= 1 && max_channels <= 64)
		ctx->n_channels = max_channels;
	__sync_fetch_and_add(&decisions, 1);
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
