// EXPECT: write to read-only context field
#include <ncclbpf/policy.h>

SEC("tuner")
int ctx_reserved(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->reserved = 1; /* readable (always 0), never writable */
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
