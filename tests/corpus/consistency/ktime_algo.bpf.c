// EXPECT: warn
// A decision from the clock: every rank reads a different time.
#include <ncclbpf/policy.h>

SEC("tuner")
int ktime_algo(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = (bpf_ktime_get_ns() >> 10) & 1;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
