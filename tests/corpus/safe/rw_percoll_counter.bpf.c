/* Global per-collective counters in .bss, indexed by a clamped coll_type, atomics. */
#include <ncclbpf/policy.h>

__u64 calls_by_coll[NCCLBPF_NUM_COLLS];
__u64 bytes_by_coll[NCCLBPF_NUM_COLLS];

SEC("profiler")
int percoll_counter(const struct ncclbpf_coll_record *r)
{
	__u32 c = r->coll_type;

	if (c >= NCCLBPF_NUM_COLLS)
		return 0;
	__sync_fetch_and_add(&calls_by_coll[c], 1);
	__sync_fetch_and_add(&bytes_by_coll[c], r->n_bytes);
	return 0;
}
char LICENSE[] SEC("license") = "GPL";
