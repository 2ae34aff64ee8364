// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * adaptive_channels - measured latency drives the channel count, without
 * letting ranks disagree.
 *
 * The tempting design (the tuner reads latencies its own profiler wrote)
 * is wrong: each rank measures its own GPU, the numbers differ, so ranks
 * would pick different channel counts for the same collective and NCCL
 * would hang.  The verifier flags exactly that (a decision depending on a
 * program-written map).  So the loop is split in three:
 *
 *   1. the profiler program (adaptive_channels_observe) keeps, per
 *      (collective, size bucket), a latency EWMA overall and per channel
 *      count NCCL ran with, in the rank-local map `latency_ewma`;
 *   2. an operator tool or control plane reads `latency_ewma` from every
 *      rank (ncclbpf map dump / the exporter), aggregates (e.g. the worst
 *      rank per channel count), picks the best channel count per key and
 *      writes it into `channel_plan` on every rank, identically;
 *   3. the tuner program (adaptive_channels_tune) reads `channel_plan`
 *      only.  No program writes that map, so the verifier treats it as
 *      rank-invariant, and the decision stays consistent.  Writers should
 *      change it between jobs' steps, or pair it with a reload at an
 *      agreed call number, so a plan lands on every rank for the same call.
 *
 * Keys: coll * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(n_bytes).
 * channel_plan values: 0 = NCCL's count, 1..64 = that many channels
 * (the adapter still clamps to safe bounds).  EWMA weight 1/8; EWMA slots
 * by channel count: slot log2(n_channels), 1..64 channels in slots 0..6.
 * Concurrent profiler callbacks on one key may lose an update; an EWMA
 * tolerates that, and no 8-byte store is ever torn.
 */
#include <ncclbpf/policy.h>

#define N_KEYS   (NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS)
#define CH_SLOTS 8

struct ac_telemetry {
	__u64 samples;
	__u64 ewma_ns;
	__u64 samples_by_ch[CH_SLOTS];
	__u64 ewma_by_ch_ns[CH_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, N_KEYS);
	__type(key, __u32);
	__type(value, struct ac_telemetry);
} latency_ewma SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, N_KEYS);
	__type(key, __u32);
	__type(value, __u32);
} channel_plan SEC(".maps");

/* First sample seeds the average; then avg += (x - avg) / 8. */
static __always_inline __u64 ewma_step(__u64 avg, __u64 n, __u64 x)
{
	return n ? (avg * 7 + x) >> 3 : x;
}

SEC("profiler")
int adaptive_channels_observe(const struct ncclbpf_coll_record *rec)
{
	__u64 lat = rec->latency_ns;
	struct ac_telemetry *t;
	__u32 key, slot;

	if (rec->coll_type >= NCCLBPF_NUM_COLLS)
		return 0;
	key = rec->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(rec->n_bytes);
	t = bpf_map_lookup_elem(&latency_ewma, &key);
	if (!t)
		return 0;

	t->ewma_ns = ewma_step(t->ewma_ns, t->samples, lat);
	t->samples++;

	slot = ncclbpf_log2(rec->n_channels) & (CH_SLOTS - 1);
	t->ewma_by_ch_ns[slot] = ewma_step(t->ewma_by_ch_ns[slot], t->samples_by_ch[slot], lat);
	t->samples_by_ch[slot]++;
	return 0;
}

SEC("tuner")
int adaptive_channels_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key, *plan;

	if (ctx->coll_type >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_APPLY;
	key = ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(ctx->n_bytes);
	plan = bpf_map_lookup_elem(&channel_plan, &key);
	if (plan && *plan >= 1 && *plan <= 64)
		ctx->n_channels = *plan;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
