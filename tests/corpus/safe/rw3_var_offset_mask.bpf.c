/* Reading map value + variable offset after & masks: a byte table of 256 entries
 * and a u32 table indexed by a masked size bucket. */
#include <ncclbpf/policy.h>

struct tbl {
	__u8 proto_by_hash[256];
	__u32 ch_by_bucket[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tbl);
} tables SEC(".maps");

SEC("tuner")
int var_offset(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 zero = 0;
	struct tbl *t = bpf_map_lookup_elem(&tables, &zero);
	__u32 h, b;
	__u8 p;
	__u32 ch;

	if (!t)
		return NCCLBPF_TUNER_SKIP;
	h = (__u32)(ctx->comm_id ^ (ctx->comm_id >> 32)) & 0xff;
	p = t->proto_by_hash[h];
	b = (ncclbpf_size_bucket(ctx->n_bytes) >> 1) & 15;
	ch = t->ch_by_bucket[b];
	if (p < NCCLBPF_NUM_PROTOS)
		ctx->proto = p;
	if (ch >= 1 && ch <= 64)
		ctx->n_channels = ch;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
