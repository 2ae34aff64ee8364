// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpf-to-bpf calls: scalars and pointers to the caller's stack as arguments. */
#include <ncclbpf/policy.h>

static __attribute__((noinline)) int pick_proto(__u64 bytes)
{
	if (bytes < 65536)
		return NCCLBPF_PROTO_LL;
	if (bytes < (16 << 20))
		return NCCLBPF_PROTO_LL128;
	return NCCLBPF_PROTO_SIMPLE;
}

static __attribute__((noinline)) void fill(__u32 *out, __u32 n, __u32 v)
{
	out[0] = v;
	out[1] = n;
}

static __attribute__((noinline)) int channels(__u32 ranks)
{
	__u32 buf[2];

	fill(buf, ranks, 8);
	if (buf[1] > 16)
		return 16;
	return buf[0];
}

SEC("tuner")
int subprog(struct ncclbpf_tuner_ctx *ctx)
{
	int proto = pick_proto(ctx->n_bytes);

	if (ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, proto)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = proto;
	}
	ctx->n_channels = channels(ctx->n_ranks);
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
