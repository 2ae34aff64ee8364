// EXPECT: map value access out of bounds
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Near miss of safe/rw4_sidx_clamp_rodata: clamped to [0, 8] on a table of
 * 8 entries.  The link between the extensions carries the bound, and the
 * bound is one too large.
 */
#include <ncclbpf/policy.h>

static const volatile __u32 chans_by_mib[8] = { 2, 4, 8, 8, 16, 16, 32, 32 };

SEC("tuner")
int sidx_clamp_off_by_one(struct ncclbpf_tuner_ctx *ctx)
{
	int i = (int)(ctx->n_bytes >> 20);

	if (i < 0)
		i = 0;
	if (i > 8)
		i = 8;
	ctx->n_channels = chans_by_mib[i];
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
