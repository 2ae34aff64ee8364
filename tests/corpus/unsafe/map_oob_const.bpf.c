// EXPECT: map value access out of bounds
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cfg SEC(".maps");

SEC("tuner")
int map_oob_const(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&cfg, &key);

	if (!v)
		return 0;
	ctx->n_channels = ((volatile __u32 *)v)[2] & 63; /* bytes 8..11 of an 8-byte value */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
