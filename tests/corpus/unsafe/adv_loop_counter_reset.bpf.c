// EXPECT: loop not proven to terminate within the instruction budget
#include <ncclbpf/policy.h>
struct val { __u64 a, b; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, struct val); } arr2 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u64); __type(value, __u64); } h8 SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

/* the counter is reset inside the body on some inputs: never terminates */
SEC("tuner") int loop_counter_reset(struct ncclbpf_tuner_ctx *ctx)
{
	volatile __u32 i;
	__u32 s = 0;

	for (i = 0; i < 16; i++) {
		s += i;
		if (ctx->n_ranks == 3)
			i = 0;
	}
	ctx->n_channels = s;
	return 0;
}
