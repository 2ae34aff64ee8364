/* A noinline helper that looks up a map with a key built on its own stack and returns a value. */
#include <ncclbpf/policy.h>

struct ckey {
	__u32 coll;
	__u32 bucket;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct ckey);
	__type(value, __u32);
} chmap SEC(".maps");

static __noinline __u32 lookup_ch(__u32 coll, __u32 bucket, __u32 dflt)
{
	struct ckey k = { .coll = coll, .bucket = bucket };
	__u32 *v = bpf_map_lookup_elem(&chmap, &k);

	return v ? *v : dflt;
}

SEC("tuner")
int subprog_map(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 ch = lookup_ch(ctx->coll_type, ncclbpf_size_bucket(ctx->n_bytes), 0);

	if (!ch)
		return NCCLBPF_TUNER_SKIP;
	ctx->n_channels = ch > 32 ? 32 : ch;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
