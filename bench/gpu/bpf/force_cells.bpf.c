// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * force_cells - the real-NCCL check's forcing policy (bench/gpu/realnccl.sh):
 * call k of a communicator forces the (k mod n)-th of the n cells NCCL
 * offers for it, and a channel count that cycles through NCCL's own, 1, 2
 * and 4 every n calls, so a short job makes NCCL run every offered
 * (algorithm, protocol) pair with every count, and the recorder shows
 * whether what ran is what was forced, call by call.  Everything it reads
 * (the call number, the offered cells) is the same on every rank.
 */
#include <ncclbpf/policy.h>

SEC("tuner")
int force_cells(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 m = ctx->avail_mask, n = 0, want, i, cell = 0, round;
	__u64 s = ctx->call_seq;

	for (i = 0; i < NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS; i++)
		n += (m >> i) & 1;
	if (!n)
		return NCCLBPF_TUNER_APPLY;
	want = (__u32)(s % n);
	for (i = 0; i < NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS; i++) {
		if (!((m >> i) & 1))
			continue;
		if (!want) {
			cell = i;
			break;
		}
		want--;
	}
	ctx->algo = (__s32)(cell / NCCLBPF_NUM_PROTOS);
	ctx->proto = (__s32)(cell % NCCLBPF_NUM_PROTOS);
	round = (__u32)((s / n) % 4);
	if (round)
		ctx->n_channels = (__s32)(1u << (round - 1));
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
