/* __u8/__u16 config fields and arithmetic with implicit promotions. */
#include <ncclbpf/policy.h>

struct knob {
	__u8 enabled;
	__u8 algo;
	__u8 proto;
	__u8 shift;
	__u16 min_kib;
	__u16 max_kib;
	__u8 ch_lo;
	__u8 ch_hi;
	__s8 bias;
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct knob);
} knobs SEC(".maps");

SEC("tuner")
int small_fields(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = ctx->coll_type;
	struct knob *k = bpf_map_lookup_elem(&knobs, &key);
	__u64 kib = ctx->n_bytes >> 10;
	int ch;

	if (!k || !k->enabled)
		return NCCLBPF_TUNER_SKIP;
	if (kib < k->min_kib || kib > (__u64)k->max_kib * 1024)
		return NCCLBPF_TUNER_SKIP;
	ch = k->ch_lo + ((k->ch_hi - k->ch_lo) >> (k->shift & 3)) + k->bias;
	if (ch < 1)
		ch = 1;
	if (ch > 64)
		ch = 64;
	ctx->n_channels = ch;
	if (k->algo < NCCLBPF_NUM_ALGOS && k->proto < NCCLBPF_NUM_PROTOS)  {
		__u16 cell = (__u16)(k->algo * NCCLBPF_NUM_PROTOS + k->proto);

		if (ctx->avail_mask & (1u << cell)) {
			ctx->algo = k->algo;
			ctx->proto = k->proto;
		}
	}
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
