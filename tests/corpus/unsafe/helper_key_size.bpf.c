// EXPECT: invalid helper memory or size argument
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u64);
	__type(value, __u32);
} by_comm SEC(".maps");

SEC("tuner")
int helper_key_size(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 small = ctx->coll_type; /* 4 bytes where the map wants 8 */
	__u32 *v = bpf_map_lookup_elem(&by_comm, &small);

	return v ? 1 : 0;
}
char LICENSE[] SEC("license") = "GPL";
