/* Test policy: Ring/LL128 for 64 KiB..16 MiB, 4 channels from 1 MiB, else NCCL's pick. */
#include <ncclbpf/policy.h>

#define barrier() asm volatile("" ::: "memory")

SEC("tuner") int pick(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;

	if (n >= (64u << 10) && n <= (16u << 20)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		barrier(); /* keep two 4-byte stores (the context allows exact-width access only) */
		ctx->proto = NCCLBPF_PROTO_LL128;
	}
	if (n >= (1u << 20) && n <= (16u << 20))
		ctx->n_channels = 4;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
