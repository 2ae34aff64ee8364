/* Reserve a struct record, fill all of it, submit; tuner logs its decision too. */
#include <ncclbpf/policy.h>

struct decision {
	__u64 comm_id;
	__u64 call_seq;
	__u64 n_bytes;
	__s32 algo;
	__s32 proto;
	__u32 coll;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} log_rb SEC(".maps");

SEC("tuner")
int rb_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	struct decision *d;
	__s32 algo = ctx->n_bytes < 8192 ? NCCLBPF_ALGO_TREE : NCCLBPF_ALGO_RING;

	ctx->algo = algo;
	d = bpf_ringbuf_reserve(&log_rb, sizeof(*d), 0);
	if (!d)
		return 0;
	d->comm_id = ctx->comm_id;
	d->call_seq = ctx->call_seq;
	d->n_bytes = ctx->n_bytes;
	d->algo = algo;
	d->proto = NCCLBPF_KEEP;
	d->coll = ctx->coll_type;
	d->pad = 0;
	bpf_ringbuf_submit(d, BPF_RB_NO_WAKEUP);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
