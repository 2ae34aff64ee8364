// EXPECT: "%s" in format
// %s would read memory at an address the program chose; the helper does
// not print it, and the verifier says so.
#include <ncclbpf/policy.h>

SEC("tuner")
int printk_conv_s(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_printk("name %s", ctx->n_bytes);
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
