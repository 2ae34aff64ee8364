/* A large stack struct zeroed with __builtin_memset (clang may emit a loop) used as a hash key. */
#include <ncclbpf/policy.h>

struct big_key {
	__u64 comm_id;
	__u32 coll;
	__u32 bucket;
	__u32 ranks;
	__u32 nodes;
	__u8 tag[40];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, struct big_key);
	__type(value, __s32);
} ovr SEC(".maps");

SEC("tuner")
int memset_key(struct ncclbpf_tuner_ctx *ctx)
{
	struct big_key k;
	__s32 *p;

	__builtin_memset(&k, 0, sizeof(k));
	k.comm_id = ctx->comm_id;
	k.coll = ctx->coll_type;
	k.bucket = ncclbpf_size_bucket(ctx->n_bytes);
	k.ranks = ctx->n_ranks;
	k.nodes = ctx->n_nodes;
	k.tag[0] = 'n';
	p = bpf_map_lookup_elem(&ovr, &k);
	if (!p)
		return NCCLBPF_TUNER_SKIP;
	if (*p >= 0 && *p < NCCLBPF_NUM_PROTOS)
		ctx->proto = *p;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
