// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nvlink_ring_mid - AllReduce in the middle of the size range on NVLink.
 *
 * On NVLink-connected GPUs NCCL's cost model tends to keep LL128 too long
 * or to switch algorithms where measured bus bandwidth says otherwise for
 * mid-sized AllReduce.  This policy pins the two bands where Ring wins:
 *
 *   4 MiB  ..  32 MiB   Ring / LL128  (pipelined lines, low per-chunk cost)
 *   64 MiB .. 192 MiB   Ring / Simple (large chunks, full link bandwidth)
 *
 * (both bounds inclusive).  Everything else, including every other
 * collective and the 32-64 MiB gap, is NCCL's own pick.  The bands are
 * properties of one topology: measure yours with bench/gpu before reusing
 * them.  Inputs are size, collective and offered cells: rank-invariant.
 */
#include <ncclbpf/policy.h>

#define MIB (1ull << 20)

SEC("tuner")
int nvlink_ring_mid(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;
	int proto;

	if (ctx->coll_type != NCCLBPF_COLL_ALLREDUCE)
		return NCCLBPF_TUNER_APPLY;
	if (n >= 4 * MIB && n <= 32 * MIB)
		proto = NCCLBPF_PROTO_LL128;
	else if (n >= 64 * MIB && n <= 192 * MIB)
		proto = NCCLBPF_PROTO_SIMPLE;
	else
		return NCCLBPF_TUNER_APPLY;

	if (ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, proto)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = proto;
	}
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
