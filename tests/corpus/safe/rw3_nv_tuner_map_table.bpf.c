/* The example tuner's table, but loaded by the operator into an array map with a
 * row count in slot 0's header; the scan stops at the count or the capacity. */
#include <ncclbpf/policy.h>

struct tune_row {
	__u32 coll;
	__s32 algo;
	__s32 proto;
	__s32 channels;
	__u64 min_bytes;
	__u64 max_bytes;
	__s32 n_nodes;
	__s32 n_ranks;
};

#define MAX_ROWS 32

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_ROWS);
	__type(key, __u32);
	__type(value, struct tune_row);
} tune_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tune_count SEC(".maps");

SEC("tuner")
int map_table_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 zero = 0, n;
	__u32 *cnt = bpf_map_lookup_elem(&tune_count, &zero);

	if (!cnt)
		return NCCLBPF_TUNER_SKIP;
	n = *cnt;
	for (__u32 i = 0; i < MAX_ROWS && i < n; i++) {
		struct tune_row *r = bpf_map_lookup_elem(&tune_rows, &i);

		if (!r)
			break;
		if (r->coll != ctx->coll_type)
			continue;
		if (ctx->n_bytes < r->min_bytes || ctx->n_bytes > r->max_bytes)
			continue;
		if (r->n_nodes >= 0 && (__u32)r->n_nodes != ctx->n_nodes)
			continue;
		if (r->n_ranks >= 0 && (__u32)r->n_ranks != ctx->n_ranks)
			continue;
		if (r->algo >= 0 && r->algo < NCCLBPF_NUM_ALGOS &&
		    r->proto >= 0 && r->proto < NCCLBPF_NUM_PROTOS &&
		    (ctx->avail_mask & NCCLBPF_CELL(r->algo, r->proto))) {
			ctx->algo = r->algo;
			ctx->proto = r->proto;
		}
		if (r->channels > 0 && r->channels <= 64)
			ctx->n_channels = r->channels;
		return NCCLBPF_TUNER_APPLY;
	}
	return NCCLBPF_TUNER_SKIP;
}
char LICENSE[] SEC("license") = "GPL";
