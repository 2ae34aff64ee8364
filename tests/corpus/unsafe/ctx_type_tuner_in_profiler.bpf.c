// EXPECT: program tuner_in_profiler takes struct ncclbpf_tuner_ctx *; hook profiler passes struct ncclbpf_coll_record *
// A profiler program written against the tuner's context: every access is
// inside the record (so memory safe), but n_ranks and coll_type read the
// two halves of latency_ns.  The object's BTF says which type it takes.
#include <ncclbpf/policy.h>

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } big SEC(".maps");
char LICENSE[] SEC("license") = "GPL";

SEC("profiler")
int tuner_in_profiler(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&big, &k);

	if (v && ctx->n_ranks > 64 && ctx->coll_type == NCCLBPF_COLL_ALLREDUCE)
		*v += 1;
	return 0;
}
