// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rank_policy.h - the model-based tester's policy (tests/rank), built as
 * three versions that differ only in the protocol they pick (RANK_PROTO),
 * so a reload or rollback shows in every decision.  Channels come from
 * the operator's `rank_cfg[0]` when set (a decision map: writes must be
 * agreed), else from the loop's `channel_plan` word (policies/
 * adaptive_channels.bpf.c's format and maps, so `ncclbpf loop` drives it),
 * else NCCL's own.  The profiler program keeps adaptive_channels' telemetry.
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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} rank_cfg SEC(".maps");

SEC("profiler")
int rank_observe(const struct ncclbpf_coll_record *rec)
{
	struct ac_telemetry *t;
	__u32 key, slot;

	if (rec->coll_type >= NCCLBPF_NUM_COLLS)
		return 0;
	key = rec->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(rec->n_bytes);
	t = bpf_map_lookup_elem(&latency_ewma, &key);
	if (!t)
		return 0;
	t->ewma_ns = t->samples ? (t->ewma_ns * 7 + rec->latency_ns) >> 3 : rec->latency_ns;
	t->samples++;
	if (rec->n_channels < 1 || rec->n_channels > CH_SLOTS)
		return 0;
	slot = (rec->n_channels - 1) & (CH_SLOTS - 1);
	t->sum_by_ch_ns[slot] += rec->latency_ns;
	t->samples_by_ch[slot]++;
	return 0;
}

SEC("tuner")
int rank_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 zero = 0, key, ch = 0, *cfg;
	__u64 *plan, word;

	if (ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, RANK_PROTO)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = RANK_PROTO;
	}
	cfg = bpf_map_lookup_elem(&rank_cfg, &zero);
	if (cfg && *cfg)
		ch = *cfg;
	if (!ch && ctx->coll_type < NCCLBPF_NUM_COLLS) {
		key = ctx->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(ctx->n_bytes);
		plan = bpf_map_lookup_elem(&channel_plan, &key);
		if (plan) {
			word = *plan;
			ch = ctx->call_seq >= (word >> 16) ? (word & 0xff) : ((word >> 8) & 0xff);
		}
	}
	if (ch >= 1 && ch <= 64)
		ctx->n_channels = ch;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
