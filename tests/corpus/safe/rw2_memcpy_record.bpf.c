/* __builtin_memset/__builtin_memcpy between stack structs, then ringbuf_output of a stack struct. */
#include <ncclbpf/policy.h>

struct event {
	struct ncclbpf_coll_record rec;
	__u64 extra[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

SEC("profiler")
int memcpy_out(const struct ncclbpf_coll_record *r)
{
	struct event e;

	struct ncclbpf_coll_record copy = {};

	copy.comm_id = r->comm_id;
	copy.n_bytes = r->n_bytes;
	copy.seq = r->seq;
	copy.latency_ns = r->latency_ns;
	copy.coll_type = r->coll_type;
	copy.algo = r->algo;
	copy.proto = r->proto;
	__builtin_memset(&e, 0, sizeof(e));
	__builtin_memcpy(&e.rec, &copy, sizeof(copy));
	e.extra[0] = r->latency_ns >> 10;
	e.extra[1] = r->n_bytes / 1024;
	e.extra[3] = e.rec.seq;
	bpf_ringbuf_output(&events, &e, sizeof(e), 0);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
