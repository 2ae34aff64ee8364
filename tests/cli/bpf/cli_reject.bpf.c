/* A tuner that writes past its context: `ncclbpf verify` must exit 1. */
#include <ncclbpf/policy.h>

SEC("tuner")
int cli_reject(struct ncclbpf_tuner_ctx *ctx)
{
	((__u32 *)ctx)[40] = 1;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
