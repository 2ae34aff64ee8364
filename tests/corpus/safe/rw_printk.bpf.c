/* bpf_printk for debugging, from a tuner and a profiler. */
#include <ncclbpf/policy.h>

SEC("tuner")
int printk_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes > (1ull << 30))
		bpf_printk("huge op %llu bytes coll %u", ctx->n_bytes, ctx->coll_type);
	return 0;
}

SEC("profiler")
int printk_prof(const struct ncclbpf_coll_record *r)
{
	if (r->latency_ns > 1000000000ull)
		bpf_printk("slow: rank %u seq %llu lat %llu", r->rank, r->seq, r->latency_ns);
	bpf_printk("done");
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
