/* Ringbuf reserve with an early discard path when the sample is uninteresting. */
#include <ncclbpf/policy.h>

struct sample {
	__u64 comm_id;
	__u64 lat;
	__u32 coll;
	__u32 bucket;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

SEC("profiler")
int rb_discard(const struct ncclbpf_coll_record *r)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);

	if (!s)
		return 0;
	if (r->latency_ns < 1000 || !r->gpu_timed) {
		bpf_ringbuf_discard(s, 0);
		return 0;
	}
	s->comm_id = r->comm_id;
	s->lat = r->latency_ns;
	s->coll = r->coll_type;
	s->bucket = ncclbpf_size_bucket(r->n_bytes);
	if (s->bucket > 20)
		bpf_ringbuf_submit(s, BPF_RB_FORCE_WAKEUP);
	else
		bpf_ringbuf_submit(s, 0);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
