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
 *   2. `ncclbpf loop` (src/loop/) reads `latency_ewma` from every rank
 *      of the job, aggregates (the worst rank per channel count), picks
 *      one channel count per key and writes it into `channel_plan` on
 *      every rank, identically, together with the call number from which
 *      it applies;
 *   3. the tuner program (adaptive_channels_tune) reads `channel_plan`
 *      only.  No program writes that map, so the verifier treats it as
 *      rank-invariant, and the decision stays consistent: the call number
 *      it compares against is the per-communicator getCollInfo counter,
 *      the same on every rank for the same collective.
 *
 * Keys: coll * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(n_bytes).
 * channel_plan values are one 64-bit word (an aligned 8-byte word is
 * never torn, so a rank sees the old plan or the new one, never half):
 * bits 0-7 the channel count from call `from` on, bits 8-15 the count
 * before it, bits 16-63 `from`.  A count of 0 = NCCL's own (the adapter
 * still clamps to safe bounds).  Telemetry: the overall EWMA (weight 1/8)
 * and, per channel count NCCL ran with (1..64, slot n-1), the number of
 * samples and their sum, so an aggregator gets exact means per count.
 * Concurrent profiler callbacks on one key may lose an update; a mean
 * over thousands of samples tolerates that, and no 8-byte store is ever
 * torn.
 */
#include <ncclbpf/policy.h>

#define N_KEYS   (NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS)
#define CH_SLOTS 64

struct ac_telemetry {
	__u64 samples;
	__u64 ewma_ns;
	__u64 samples_by_ch[CH_SLOTS];
	__u64 sum_by_ch_ns[CH_SLOTS];
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
	__type(value, __u64);
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

	if (rec->n_channels < 1 || rec->n_channels > CH_SLOTS)
		return 0;
	slot = (rec->n_channels - 1) & (CH_SLOTS - 1);
	t->sum_by_ch_ns[slot] += lat;
	t->samples_by_ch[slot]++;
	return 0;
}

SEC("tuner")
int adaptive_channels_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 *plan, word;
	__u32 key, ch;

	if (ctx->coll_type >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_APPLY;
	key = ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(ctx->n_bytes);
	plan = bpf_map_lookup_elem(&channel_plan, &key);
	if (!plan)
		return NCCLBPF_TUNER_APPLY;
	word = *plan; /* one load: the count and its call come from the same plan */
	ch = ctx->call_seq >= (word >> 16) ? (word & 0xff) : ((word >> 8) & 0xff);
	if (ch >= 1 && ch <= 64)
		ctx->n_channels = ch;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
