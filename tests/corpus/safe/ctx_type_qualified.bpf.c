/*
 * The context type matches through typedefs and qualifiers: a const
 * record behind a typedef for the profiler, a typedef'd tuner context.
 */
#include <ncclbpf/policy.h>

typedef const struct ncclbpf_coll_record rec_t;
typedef struct ncclbpf_tuner_ctx tctx_t;

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } lat SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("profiler")
int typed_record(rec_t *volatile r)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&lat, &k);

	if (v)
		*v = r->latency_ns;
	return 0;
}

SEC("tuner")
int typed_tuner(tctx_t *ctx)
{
	if (ctx->n_bytes < 65536)
		ctx->n_channels = 2;
	return NCCLBPF_TUNER_APPLY;
}

SEC("tuner")
int no_params(void)
{
	return NCCLBPF_TUNER_SKIP;
}
