// EXPECT: wrong helper argument type
#include <ncclbpf/policy.h>

SEC("tuner")
int helper_arg_kind(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;

	/* the context is not a map */
	if (bpf_map_lookup_elem((void *)ctx, &key))
		return 1;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
