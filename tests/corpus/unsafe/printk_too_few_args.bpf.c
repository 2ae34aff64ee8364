// EXPECT: r4 (conversion 2) is not set
// bpf_printk with two conversions and one argument: the helper would print
// whatever r4 last held (stale register data, a host address under the JIT).
#include <ncclbpf/policy.h>

SEC("tuner")
int printk_too_few_args(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_printk("ranks %u bytes %llu", ctx->n_ranks);
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
