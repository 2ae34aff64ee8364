/* log2 size bucket computed with a loop, indexing a per-bucket config array. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __s32);
} algo_by_bucket SEC(".maps");

SEC("tuner")
int bucket_loop(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;
	__u32 b = 0;
	__s32 *algo;

	while (n > 1 && b < 63) {
		n >>= 1;
		b++;
	}
	algo = bpf_map_lookup_elem(&algo_by_bucket, &b);
	if (algo && *algo >= 0 && *algo < NCCLBPF_NUM_ALGOS)
		ctx->algo = *algo;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
