// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A policy the verifier must refuse: it writes through a map value without a NULL check. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} load_bad_runs SEC(".maps");

SEC("tuner") int load_bad(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *runs = bpf_map_lookup_elem(&load_bad_runs, &k);

	*runs += 1;
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
