/* PERCPU_ARRAY scratch struct per coll used by both programs (tuner counts its own calls). */
#include <ncclbpf/policy.h>

struct scratch {
	__u64 calls;
	__u64 applied;
	__u32 last_ch;
	__u32 last_coll;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct scratch);
} scr SEC(".maps");

SEC("tuner")
int pc_arr_tune(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type;
	struct scratch *s;
	__u32 ch = ctx->n_bytes > (1 << 24) ? 32 : 8;

	if (k >= NCCLBPF_NUM_COLLS)
		return NCCLBPF_TUNER_SKIP;
	s = bpf_map_lookup_elem(&scr, &k);
	if (s) {
		__sync_fetch_and_add(&s->calls, 1);
		s->applied++;
		s->last_ch = ch;
		s->last_coll = k;
	}
	ctx->n_channels = ch;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
