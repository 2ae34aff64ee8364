// EXPECT: warn
// The table holds constants, but which entry is read depends on a random number.
#include <ncclbpf/policy.h>

SEC("tuner")
int adv_stack_table_random_idx(struct ncclbpf_tuner_ctx *ctx)
{
	volatile unsigned char tab[8];
	unsigned i;

	tab[0] = 0; tab[1] = 1; tab[2] = 2; tab[3] = 0;
	tab[4] = 1; tab[5] = 2; tab[6] = 0; tab[7] = 1;
	i = bpf_get_prandom_u32() & 7;
	ctx->algo = tab[i];
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
