// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * size_aware - algorithm and protocol by message size.
 *
 * The three protocols trade latency for bandwidth: LL sends 8-byte
 * flag+data words (lowest latency, at most half the link bandwidth), LL128
 * 128-byte lines with 8 flag bytes (near-full bandwidth on NVLink, small
 * latency), Simple whole chunks behind memory fences (full bandwidth, the
 * highest fixed cost).  So:
 *
 *   n_bytes <  64 KiB   latency-bound: LL; Tree for AllReduce across
 *                       nodes (log-depth latency), Ring otherwise;
 *   n_bytes <   8 MiB   LL128 on Ring;
 *   larger              Simple on Ring (bandwidth-bound; Ring reaches the
 *                       full bus bandwidth on NVLink and within a node).
 *
 * Every input is rank-invariant (size, collective, node count, offered
 * cells), so all ranks choose alike.  A cell NCCL does not offer (disabled
 * by NCCL_ALGO/NCCL_PROTO, unsupported for this collective) is never
 * chosen: the output then stays NCCLBPF_KEEP and NCCL's pick stands.
 * Channels are left to NCCL.
 */
#include <ncclbpf/policy.h>

#define SMALL_MAX (64ull << 10)
#define MID_MAX   (8ull << 20)

SEC("tuner")
int size_aware(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;
	int algo = NCCLBPF_ALGO_RING;
	int proto;

	if (n < SMALL_MAX) {
		proto = NCCLBPF_PROTO_LL;
		if (ctx->coll_type == NCCLBPF_COLL_ALLREDUCE && ctx->n_nodes > 1 &&
		    ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL))
			algo = NCCLBPF_ALGO_TREE;
	} else if (n < MID_MAX) {
		proto = NCCLBPF_PROTO_LL128;
	} else {
		proto = NCCLBPF_PROTO_SIMPLE;
	}

	if (ncclbpf_cell_offered(ctx, algo, proto)) {
		ctx->algo = algo;
		ctx->proto = proto;
	}
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
