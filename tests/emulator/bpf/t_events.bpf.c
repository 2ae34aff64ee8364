/* Test policy for SEC("profiler/event"): counts every event by type and
 * keeps the last record of each type, for the emulator test to read back. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_EV_TYPES);
	__type(key, __u32);
	__type(value, __u64);
} ev_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_EV_TYPES);
	__type(key, __u32);
	__type(value, struct ncclbpf_prof_event);
} ev_last SEC(".maps");

SEC("profiler/event") int events(const struct ncclbpf_prof_event *ev)
{
	struct ncclbpf_prof_event *last;
	__u32 k = ncclbpf_log2(ev->type);
	__u64 *n;

	if (k >= NCCLBPF_EV_TYPES)
		return 0;
	n = bpf_map_lookup_elem(&ev_count, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	last = bpf_map_lookup_elem(&ev_last, &k);
	if (last)
		__builtin_memcpy(last, ev, sizeof(*ev));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
