/*
 * bpf_printk without global data keeps its format on the stack, built
 * with byte stores the verifier does not follow; with all three value
 * arguments set nothing stale can be printed, so it is accepted.
 */
#define BPF_NO_GLOBAL_DATA
#include <ncclbpf/policy.h>

SEC("tuner")
int printk_no_global_data(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_printk("coll %u ranks %u bytes %llu", ctx->coll_type, ctx->n_ranks, ctx->n_bytes);
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
