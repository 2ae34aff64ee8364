// EXPECT: warn
// The tuner reads latencies the profiler side wrote on this rank.
/* Two programs in one object share static (non-inlined and inlined) helpers and a map. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} lat SEC(".maps");

static __noinline __u32 slot_of(__u32 coll, __u64 bytes)
{
	if (coll >= NCCLBPF_NUM_COLLS)
		coll = 0;
	return coll * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(bytes);
}

static __noinline __u64 ewma(__u64 old, __u64 sample)
{
	if (!old)
		return sample;
	return old - (old >> 3) + (sample >> 3);
}

static __always_inline int clamp_ch(__u64 v)
{
	return v < 1 ? 1 : v > 64 ? 64 : (int)v;
}

SEC("profiler")
int prof_side(struct ncclbpf_coll_record *rec)
{
	__u32 k = slot_of(rec->coll_type, rec->n_bytes);
	__u64 *v = bpf_map_lookup_elem(&lat, &k);

	if (v)
		*v = ewma(*v, rec->latency_ns);
	return 0;
}

SEC("tuner")
int tune_side(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = slot_of(ctx->coll_type, ctx->n_bytes);
	__u64 *v = bpf_map_lookup_elem(&lat, &k);

	if (!v || !*v)
		return NCCLBPF_TUNER_SKIP;
	ctx->n_channels = clamp_ch(*v / 10000);
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
