// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * chunk_plan - NCCL's pipeline chunk size from a plan operators write,
 * switched on every rank at the same collective.
 *
 * NCCL 2.30 (tuner v6+) asks the tuner for the chunk size of every channel
 * part of a collective it plans.  The chunk trades pipelining (small
 * chunks: more steps in flight) against per-step overhead (large chunks:
 * fewer steps); the best one depends on the fabric and the message size,
 * and online tuners change it while the job runs.  A chunk size is a
 * decision like the algorithm: ranks that disagree pipeline different
 * steps and hang.  So this program reads only `chunk_plan`, which no
 * program writes (the verifier then treats it as rank-invariant), and an
 * operator (`ncclbpf map update`) or a control loop writes the same word
 * into it on every rank, with the call number from which it applies.
 * `ncclbpf tune --chunks` finds good values by measurement; its output is
 * a fixed table, this is the live counterpart.
 *
 * Keys: (coll * NCCLBPF_NUM_PROTOS + proto) * NCCLBPF_SIZE_BUCKETS +
 * ncclbpf_size_bucket(n_bytes), where n_bytes is the bytes of the channel
 * part NCCL asks about (not the whole collective).  Values: one 64-bit
 * word, so a rank reads the old plan or the new one, never half: bits
 * 0-15 the chunk from call `from` on, bits 16-31 the chunk before it, both
 * in units of 128 bytes (0: NCCL's own; up to 8 MiB), bits 32-63 `from`,
 * compared with the communicator's getCollInfo count (call_seq), the same
 * on every rank at the same point.  A chunk below the protocol's grain is
 * left to NCCL here; NCCL lowers one above its buffer itself.
 */
#include <ncclbpf/policy.h>

#define N_KEYS     (NCCLBPF_NUM_COLLS * NCCLBPF_NUM_PROTOS * NCCLBPF_SIZE_BUCKETS)
#define CHUNK_UNIT 128

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, N_KEYS);
	__type(key, __u32);
	__type(value, __u64);
} chunk_plan SEC(".maps");

SEC("tuner/chunk")
int chunk_plan_apply(struct ncclbpf_chunk_ctx *ctx)
{
	__u64 *plan, word;
	__u32 key, chunk;

	if (ctx->coll_type >= NCCLBPF_NUM_COLLS || ctx->proto < 0 ||
	    ctx->proto >= NCCLBPF_NUM_PROTOS)
		return NCCLBPF_CHUNK_APPLY;
	key = (ctx->coll_type * NCCLBPF_NUM_PROTOS + (__u32)ctx->proto) * NCCLBPF_SIZE_BUCKETS +
	      ncclbpf_size_bucket(ctx->n_bytes);
	plan = bpf_map_lookup_elem(&chunk_plan, &key);
	if (!plan)
		return NCCLBPF_CHUNK_APPLY;
	word = *plan; /* one load: the chunk and its call come from the same plan */
	chunk = (ctx->call_seq >= (word >> 32) ? word : word >> 16) & 0xffff;
	chunk *= CHUNK_UNIT;
	if (chunk && chunk >= ctx->grain)
		ctx->chunk_size = (int)chunk;
	return NCCLBPF_CHUNK_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
