// EXPECT: warn
// A config map only the operator writes, looked up with a random key: the entry read differs between ranks.
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __s32);
} rules SEC(".maps");

SEC("tuner")
int adv_config_map_random_key(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = bpf_get_prandom_u32() & 3;
	__s32 *r;

	r = bpf_map_lookup_elem(&rules, &key);
	if (r)
		ctx->algo = *r;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
