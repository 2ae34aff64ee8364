// EXPECT: return value out of range
#include <ncclbpf/policy.h>

SEC("tuner")
int ret_range(struct ncclbpf_tuner_ctx *ctx)
{
	return ctx->n_ranks > 8 ? 2 : 0; /* tuners return 0 or 1 */
}
char LICENSE[] SEC("license") = "GPL";
