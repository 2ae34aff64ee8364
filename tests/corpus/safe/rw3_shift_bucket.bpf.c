/* A size bucket from a shift loop bounded by 64, then a per-bucket counter. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

SEC("tuner")
int shift_bucket(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 v = ctx->n_bytes;
	__u32 b = 0;
	__u64 *c;

	while ((v >>= 1) && b < 63)
		b++;
	c = bpf_map_lookup_elem(&hist, &b);
	if (c)
		__sync_fetch_and_add(c, 1);
	if (b < 14)
		ctx->proto = NCCLBPF_PROTO_LL;
	else if (b < 22)
		ctx->proto = NCCLBPF_PROTO_LL128;
	else
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
