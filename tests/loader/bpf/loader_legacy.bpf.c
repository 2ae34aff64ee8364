/*
 * loader_legacy.bpf.c - maps declared the pre-BTF way, in SEC("maps") as
 * struct bpf_map_def (libbpf 1.x no longer declares the struct).
 */
#include <ncclbpf/policy.h>

struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};

struct bpf_map_def SEC("maps") legacy_hash = {
	.type = 1, /* BPF_MAP_TYPE_HASH */
	.key_size = 8,
	.value_size = 16,
	.max_entries = 32,
};

struct bpf_map_def SEC("maps") legacy_arr = {
	.type = 2, /* BPF_MAP_TYPE_ARRAY */
	.key_size = 4,
	.value_size = 8,
	.max_entries = 3,
};

char _license[] SEC("license") = "GPL";

SEC("profiler") int count(struct ncclbpf_coll_record *r)
{
	__u32 k = 2;
	__u64 *v = bpf_map_lookup_elem(&legacy_arr, &k);

	if (v)
		*v += 1;
	bpf_map_lookup_elem(&legacy_hash, &r->comm_id);
	return 0;
}
