// EXPECT: warn
/* Per-communicator state in an LRU hash, lazily created with BPF_NOEXIST then
 * looked up again.  The channel count comes from inputs only, but whether the
 * program gets that far depends on the (rank-local) map lookup succeeding. */
#include <ncclbpf/policy.h>

struct comm_st {
	__u64 calls;
	__u64 bytes;
	__u32 n_ranks;
	__u32 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 128);
	__type(key, __u64);
	__type(value, struct comm_st);
} per_comm SEC(".maps");

SEC("tuner")
int lazy_init(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->comm_id;
	struct comm_st *st = bpf_map_lookup_elem(&per_comm, &key);

	if (!st) {
		struct comm_st zero = { .n_ranks = ctx->n_ranks };

		bpf_map_update_elem(&per_comm, &key, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&per_comm, &key);
		if (!st)
			return NCCLBPF_TUNER_SKIP;
	}
	__sync_fetch_and_add(&st->calls, 1);
	__sync_fetch_and_add(&st->bytes, ctx->n_bytes);
	if (ctx->n_ranks >= 8 && ctx->n_bytes >= (4u << 20))
		ctx->n_channels = 24;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
