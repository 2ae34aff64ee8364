// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test tuner that reads 6 bits of the shared prof_stats map per call:
 * n_bytes = slot << 8 | shift selects the slot and the shift, and
 * n_channels = 1 + ((value >> shift) & 63), so a test reads a whole
 * counter in a few calls. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} prof_stats SEC(".maps");

SEC("tuner") int probe_wide(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = (__u32)(ctx->n_bytes >> 8) & 7;
	__u32 shift = (__u32)ctx->n_bytes & 63;
	__u64 *v = bpf_map_lookup_elem(&prof_stats, &k);

	if (!v)
		return NCCLBPF_TUNER_SKIP;
	ctx->n_channels = 1 + (int)((*v >> shift) & 63);
	return NCCLBPF_TUNER_APPLY;
}

char LICENSE[] SEC("license") = "GPL";
