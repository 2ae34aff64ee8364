// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Ring buffer records: reserve, fill, submit or discard on every path; output copies. */
#include <ncclbpf/policy.h>

struct event {
	__u64 comm_id;
	__u64 latency_ns;
	__u32 rank;
	__u32 coll;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

SEC("profiler")
int ringbuf(const struct ncclbpf_coll_record *rec)
{
	struct event *e, copy;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->comm_id = rec->comm_id;
	e->latency_ns = rec->latency_ns;
	e->rank = rec->rank;
	e->coll = rec->coll_type;
	if (rec->latency_ns == 0) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	bpf_ringbuf_submit(e, 0);

	copy.comm_id = rec->comm_id;
	copy.latency_ns = rec->seq;
	copy.rank = rec->rank;
	copy.coll = rec->coll_type;
	bpf_ringbuf_output(&events, &copy, sizeof(copy), 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
