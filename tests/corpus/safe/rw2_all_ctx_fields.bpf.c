/* Reads every tuner input field and every profiler record field. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sink SEC(".maps");

SEC("tuner")
int all_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 h = ctx->n_bytes ^ ctx->comm_id ^ ctx->call_seq;

	h += ctx->coll_type + ctx->n_ranks + ctx->n_nodes + ctx->num_pipe_ops;
	h += ctx->reg_buff + ctx->avail_mask + (__u32)ctx->nccl_algo + (__u32)ctx->nccl_proto;
	h += ctx->nvl_domains + ctx->min_ranks_per_nvl_domain + ctx->max_ranks_per_nvl_domain;
	h += ctx->abi_version;
	if (h & 1)
		return NCCLBPF_TUNER_SKIP;
	ctx->n_channels = 2 + (h & 7);
	return NCCLBPF_TUNER_APPLY;
}

SEC("profiler")
int all_prof(const struct ncclbpf_coll_record *r)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&sink, &key);
	__u64 h = r->comm_id + r->n_bytes + r->seq + r->latency_ns;

	h += r->rank + r->n_ranks + r->coll_type + (__u32)r->algo + (__u32)r->proto;
	h += r->n_channels + r->gpu_timed;
	if (v)
		*v = h;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
