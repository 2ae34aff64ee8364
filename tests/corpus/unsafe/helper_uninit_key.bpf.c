// EXPECT: read of uninitialised stack
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u64);
	__type(value, __u32);
} by_comm SEC(".maps");

SEC("tuner")
int helper_uninit_key(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key;
	__u32 *v;

	*(volatile __u32 *)&key = ctx->coll_type; /* upper half never written */
	v = bpf_map_lookup_elem(&by_comm, &key);
	return v ? 1 : 0;
}
char LICENSE[] SEC("license") = "GPL";
