// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sweep - the policy `ncclbpf tune` measures with: it forces the one
 * (algorithm, protocol, channels, chunk size) cell written into
 * `sweep_cell`, and records what NCCL would have done.
 *
 * `ncclbpf tune` loads this object once and then, between runs, writes
 * the cell to measure into `sweep_cell` through the map's shared-memory
 * file (found over the process's control socket), so a whole sweep runs
 * in one process without restarting NCCL.  Nothing changes mid-run: the
 * tool only writes while no collective is in flight.
 *
 *   sweep_cell[0]  { enabled, algo, proto, n_channels, chunk }: enabled 0
 *                  keeps NCCL's choice (the reference runs); n_channels 0
 *                  keeps NCCL's count, chunk 0 NCCL's chunk size.  Only the
 *                  tool writes it, so the decision is rank-invariant.
 *   sweep_seen[k]  per (collective, size bucket) key k = coll * 32 +
 *                  bucket: NCCL's own pick, the cells it offered, how many
 *                  calls saw the key and how many had the forced cell
 *                  applied.  The tool reads it to learn which cells exist
 *                  and to check that each measurement ran the cell it
 *                  meant.  The program writes it, so it is rank-local:
 *                  nothing is decided from it.
 *
 *   sweep_chunk_seen[k]  per (collective, size bucket of the part) key:
 *                  NCCL asks for a chunk size once per channel part of a
 *                  collective (tuner v6+), so the key is the part's bytes.
 *                  NCCL's chunk, the calls seen and the calls that had the
 *                  forced chunk applied; rank-local like sweep_seen.
 *
 * A forced cell NCCL does not offer is not applied (NCCL's choice stands)
 * and does not count as applied, so the tool discards that measurement;
 * likewise a forced chunk below the protocol's grain, or for a part NCCL
 * plans with another cell.
 */
#include <ncclbpf/policy.h>

struct sweep_cell {
	__u32 enabled;
	__s32 algo;
	__s32 proto;
	__s32 n_channels;
	__u32 chunk;
};

struct sweep_seen {
	__s32 nccl_algo;
	__s32 nccl_proto;
	__u32 avail_mask;
	__u32 reserved;
	__u64 calls;
	__u64 applied;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sweep_cell);
} sweep_cell SEC(".maps");

struct sweep_chunk_seen {
	__u32 nccl_chunk;
	__u32 reserved;
	__u64 calls;
	__u64 applied;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS);
	__type(key, __u32);
	__type(value, struct sweep_seen);
} sweep_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS);
	__type(key, __u32);
	__type(value, struct sweep_chunk_seen);
} sweep_chunk_seen SEC(".maps");

SEC("tuner")
int sweep(struct ncclbpf_tuner_ctx *ctx)
{
	struct sweep_cell *c;
	struct sweep_seen *s;
	__u32 zero = 0, key;
	int applied = 0;

	if (ctx->coll_type >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_APPLY;
	c = bpf_map_lookup_elem(&sweep_cell, &zero);
	if (c && c->enabled && c->algo >= 0 && c->algo < NCCLBPF_NUM_ALGOS &&
	    c->proto >= 0 && c->proto < NCCLBPF_NUM_PROTOS &&
	    ncclbpf_cell_offered(ctx, c->algo, c->proto)) {
		ctx->algo = c->algo;
		ctx->proto = c->proto;
		if (c->n_channels >= 1 && c->n_channels <= 64)
			ctx->n_channels = c->n_channels;
		applied = 1;
	}
	key = ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(ctx->n_bytes);
	s = bpf_map_lookup_elem(&sweep_seen, &key);
	if (s) {
		s->nccl_algo = ctx->nccl_algo;
		s->nccl_proto = ctx->nccl_proto;
		s->avail_mask = ctx->avail_mask;
		__sync_fetch_and_add(&s->calls, 1);
		if (applied)
			__sync_fetch_and_add(&s->applied, 1);
	}
	return NCCLBPF_TUNER_APPLY;
}

/* The forced chunk size, for parts NCCL plans with the forced cell. */
SEC("tuner/chunk")
int sweep_chunk(struct ncclbpf_chunk_ctx *ctx)
{
	struct sweep_chunk_seen *s;
	struct sweep_cell *c;
	__u32 zero = 0, key;
	int applied = 0;

	if (ctx->coll_type >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_CHUNK_APPLY;
	c = bpf_map_lookup_elem(&sweep_cell, &zero);
	if (c && c->enabled && c->chunk && c->chunk <= 0x7fffffff && c->chunk >= ctx->grain &&
	    c->algo == ctx->algo && c->proto == ctx->proto) {
		ctx->chunk_size = (int)c->chunk;
		applied = 1;
	}
	key = ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(ctx->n_bytes);
	s = bpf_map_lookup_elem(&sweep_chunk_seen, &key);
	if (s) {
		s->nccl_chunk = ctx->nccl_chunk;
		__sync_fetch_and_add(&s->calls, 1);
		if (applied)
			__sync_fetch_and_add(&s->applied, 1);
	}
	return NCCLBPF_CHUNK_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
