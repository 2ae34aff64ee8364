// EXPECT: pointer passed as scalar argument
// An address cast to an integer is still a pointer to the verifier:
// printing it would reveal where the context lives.
#include <ncclbpf/policy.h>

SEC("tuner")
int printk_ptr_as_int(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_printk("ctx at %llx", (unsigned long long)ctx);
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
