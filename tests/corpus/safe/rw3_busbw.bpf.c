/* Profiler computing algorithm and bus bandwidth with 64-bit multiplies and
 * divides by n_ranks, guarded by n_ranks > 1 and latency > 0. */
#include <ncclbpf/policy.h>

struct bw {
	__u64 algbw_mbps;
	__u64 busbw_mbps;
	__u64 best_busbw;
	__u64 samples;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct bw);
} bws SEC(".maps");

SEC("profiler")
int busbw(struct ncclbpf_coll_record *rec)
{
	__u32 key = rec->coll_type * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(rec->n_bytes);
	struct bw *b, init = {};
	__u64 algbw, bus;

	if (rec->latency_ns == 0)
		return 0;
	/* bytes/ns * 1000 = MB/s */
	algbw = rec->n_bytes * 1000 / rec->latency_ns;
	bus = algbw;
	if (rec->n_ranks > 1) {
		__u64 n = rec->n_ranks;

		switch (rec->coll_type) {
		case NCCLBPF_COLL_ALLREDUCE:
			bus = algbw * 2 * (n - 1) / n;
			break;
		case NCCLBPF_COLL_ALLGATHER:
		case NCCLBPF_COLL_REDUCESCATTER:
			bus = algbw * (n - 1) / n;
			break;
		default:
			break;
		}
	}
	b = bpf_map_lookup_elem(&bws, &key);
	if (!b) {
		bpf_map_update_elem(&bws, &key, &init, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&bws, &key);
		if (!b)
			return 0;
	}
	b->algbw_mbps = algbw;
	b->busbw_mbps = bus;
	if (bus > b->best_busbw)
		b->best_busbw = bus;
	b->samples++;
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
