/* bpf_printk with 0 to 3 arguments (formats are .rodata strings). */
#include <ncclbpf/policy.h>


SEC("tuner")
int printk_tune(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_printk("coll %u", ctx->coll_type);
	bpf_printk("bytes %llu ranks %u", ctx->n_bytes, ctx->n_ranks);
	bpf_printk("nccl %d/%d seq %llu", ctx->nccl_algo, ctx->nccl_proto, ctx->call_seq);
	if (ctx->coll_type == NCCLBPF_COLL_ALLREDUCE)
		bpf_printk("allreduce");
	return NCCLBPF_TUNER_SKIP;
}

SEC("profiler")
int printk_prof(const struct ncclbpf_coll_record *r)
{
	if (r->latency_ns > 1000000)
		bpf_printk("slow: %llu ns rank %u of %u", r->latency_ns, r->rank, r->n_ranks);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
