// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A signed index clamped to [0, 7], then used on a .rodata table.  clang
 * clamps a sign-extended copy computed straight from the source
 * ((n_bytes << 12) s>> 32, i.e. (int)(n_bytes >> 20)) and indexes through
 * a zero extension of n_bytes >> 20: the bound reaches the index only
 * through the link between the two extensions of one value.
 */
#include <ncclbpf/policy.h>

static const volatile __u32 chans_by_mib[8] = { 2, 4, 8, 8, 16, 16, 32, 32 };

SEC("tuner")
int sidx_clamp_rodata(struct ncclbpf_tuner_ctx *ctx)
{
	int i = (int)(ctx->n_bytes >> 20);

	if (i < 0)
		i = 0;
	if (i > 7)
		i = 7;
	ctx->n_channels = chans_by_mib[i];
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
