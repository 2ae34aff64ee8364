/* Test policy: asks for what the adapter must refuse, by message size:
 * <= 1 KiB: CollNet Direct/Simple (IGNORE on one node) + 100 channels;
 * <= 1 MiB: algorithm only (Ring: cheapest Ring cell);
 * <= 64 MiB: protocol only (LL: cheapest LL cell);
 * else: SKIP with outputs set (nothing applies). */
#include <ncclbpf/policy.h>

#define barrier() asm volatile("" ::: "memory")

SEC("tuner") int pick(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;

	if (n <= 1024) {
		ctx->algo = NCCLBPF_ALGO_COLLNET_DIRECT;
		barrier(); /* keep two 4-byte stores (the context allows exact-width access only) */
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		ctx->n_channels = 100;
		return NCCLBPF_TUNER_APPLY;
	}
	if (n <= (1u << 20)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		barrier(); /* keep two 4-byte stores (the context allows exact-width access only) */
		return NCCLBPF_TUNER_APPLY;
	}
	if (n <= (64u << 20)) {
		ctx->proto = NCCLBPF_PROTO_LL;
		return NCCLBPF_TUNER_APPLY;
	}
	ctx->algo = NCCLBPF_ALGO_TREE;
	barrier(); /* keep two 4-byte stores (the context allows exact-width access only) */
	ctx->proto = NCCLBPF_PROTO_LL;
	return NCCLBPF_TUNER_SKIP;
}

char LICENSE[] SEC("license") = "GPL";
