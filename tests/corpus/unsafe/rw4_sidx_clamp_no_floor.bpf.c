// EXPECT: unbounded variable offset into map value
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Near miss of safe/rw4_sidx_clamp_rodata: only the upper bound is
 * clamped, so a negative int (a huge zero-extended index) gets through.
 */
#include <ncclbpf/policy.h>

static const volatile __u32 chans_by_mib[8] = { 2, 4, 8, 8, 16, 16, 32, 32 };

SEC("tuner")
int sidx_clamp_no_floor(struct ncclbpf_tuner_ctx *ctx)
{
	int i = (int)(ctx->n_bytes >> 20);

	if (i > 7)
		i = 7;
	ctx->n_channels = chans_by_mib[i];
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
