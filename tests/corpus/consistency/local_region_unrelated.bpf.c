// EXPECT: clean
// A rank-local branch whose region writes only a statistics counter and a value that is
// dead afterwards; the decision comes from the operator's configuration map only.
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cfg_algo SEC(".maps");

__u64 slow_calls;
__u64 last_slow_ns;

SEC("tuner")
int local_region_unrelated(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 zero = 0, *a;
	__u64 now = bpf_ktime_get_ns();

	if (now - last_slow_ns > 1000000) {
		__u64 gap = now - last_slow_ns;

		__sync_fetch_and_add(&slow_calls, gap > 5000000 ? 2 : 1);
		last_slow_ns = now;
	}
	a = bpf_map_lookup_elem(&cfg_algo, &zero);
	if (!a || *a >= NCCLBPF_NUM_ALGOS)
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = *a;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
