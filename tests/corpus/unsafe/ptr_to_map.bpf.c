// EXPECT: pointer stored into map value
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} leak SEC(".maps");

SEC("tuner")
int ptr_to_map(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&leak, &key);

	if (v)
		*v = (__u64)ctx; /* an address into shared memory */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
