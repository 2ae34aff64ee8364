// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slo_enforcer - latency targets per collective and size, set by the
 * operator; the tuner leans towards speed where a target is tight, the
 * profiler counts violations.
 *
 * `slo_config[coll * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(bytes)]`
 * holds a target (ns; 0 = none) and an optional channel count.  Only the
 * operator writes it (ncclbpf map update, the control plane), never a
 * program, so it is rank-invariant and the tuner may decide on it.
 *
 * A target is tight when it is below TIGHT_LATENCY_NS (a latency SLO) or
 * demands at least TIGHT_GBPS of algorithm bandwidth (n_bytes / target,
 * bytes per ns = GB/s).  For a tight target the tuner picks the protocol
 * with the lowest time at that size, on Ring (Tree for AllReduce across
 * nodes at small sizes):
 *
 *     <  256 KiB  LL      (lowest latency)
 *     <   64 MiB  LL128   (near-full bandwidth, low per-chunk cost)
 *     larger      Simple  (full bandwidth)
 *
 * and the configured channel count if one is set (more channels: more
 * SMs and links in parallel).  Loose or absent targets keep NCCL's pick.
 * Decisions read only the config map and the context's rank-invariant
 * fields, so every rank decides alike.
 *
 * The profiler program compares each completed collective's latency with
 * its target and counts samples, violations and the worst latency in
 * `slo_stats` (rank-local telemetry, read by operator tools only).
 */
#include <ncclbpf/policy.h>

#define N_KEYS           (NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS)
#define TIGHT_LATENCY_NS 50000ull /* 50 us */
#define TIGHT_GBPS       100ull
#define LL_MAX           (256ull << 10)
#define LL128_MAX        (64ull << 20)

struct slo_target {
	__u64 target_ns;  /* 0: no target */
	__u32 n_channels; /* 0: NCCL's; 1..64 when tight */
	__u32 reserved;
};

struct slo_counts {
	__u64 samples;
	__u64 violations;
	__u64 worst_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, N_KEYS);
	__type(key, __u32);
	__type(value, struct slo_target);
} slo_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, N_KEYS);
	__type(key, __u32);
	__type(value, struct slo_counts);
} slo_stats SEC(".maps");

SEC("tuner")
int slo_enforcer_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes, target;
	struct slo_target *cfg;
	int algo = NCCLBPF_ALGO_RING, proto;
	__u32 key;

	if (ctx->coll_type >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_APPLY;
	key = ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(n);
	cfg = bpf_map_lookup_elem(&slo_config, &key);
	if (!cfg)
		return NCCLBPF_TUNER_APPLY;
	target = cfg->target_ns;
	if (!target || (target >= TIGHT_LATENCY_NS && n < target * TIGHT_GBPS))
		return NCCLBPF_TUNER_APPLY;

	if (n < LL_MAX) {
		proto = NCCLBPF_PROTO_LL;
		if (ctx->coll_type == NCCLBPF_COLL_ALLREDUCE && ctx->n_nodes > 1 &&
		    ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL))
			algo = NCCLBPF_ALGO_TREE;
	} else if (n < LL128_MAX) {
		proto = NCCLBPF_PROTO_LL128;
	} else {
		proto = NCCLBPF_PROTO_SIMPLE;
	}
	if (ncclbpf_cell_offered(ctx, algo, proto)) {
		ctx->algo = algo;
		ctx->proto = proto;
	}
	if (cfg->n_channels >= 1 && cfg->n_channels <= 64)
		ctx->n_channels = cfg->n_channels;
	return NCCLBPF_TUNER_APPLY;
}

SEC("profiler")
int slo_enforcer_observe(const struct ncclbpf_coll_record *rec)
{
	struct slo_target *cfg;
	struct slo_counts *st;
	__u64 lat = rec->latency_ns;
	__u32 key;

	if (rec->coll_type >= NCCLBPF_NUM_COLLS)
		return 0;
	key = rec->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(rec->n_bytes);
	cfg = bpf_map_lookup_elem(&slo_config, &key);
	if (!cfg || !cfg->target_ns)
		return 0;
	st = bpf_map_lookup_elem(&slo_stats, &key);
	if (!st)
		return 0;
	__sync_fetch_and_add(&st->samples, 1);
	if (lat > cfg->target_ns)
		__sync_fetch_and_add(&st->violations, 1);
	if (lat > st->worst_ns)
		st->worst_ns = lat; /* racy max: may miss a concurrent larger one */
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
