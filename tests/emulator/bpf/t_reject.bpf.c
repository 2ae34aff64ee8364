/* Test policy the verifier must reject: writes a read-only input field. */
#include <ncclbpf/policy.h>

SEC("tuner") int pick(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_bytes = 0;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
