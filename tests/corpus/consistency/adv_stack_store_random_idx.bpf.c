// EXPECT: warn
// Constants are written, but where depends on a random number.
#include <ncclbpf/policy.h>

SEC("tuner")
int adv_stack_store_random_idx(struct ncclbpf_tuner_ctx *ctx)
{
	volatile unsigned char tab[8];
	unsigned i;

	tab[0] = 0; tab[1] = 0; tab[2] = 0; tab[3] = 0;
	tab[4] = 0; tab[5] = 0; tab[6] = 0; tab[7] = 0;
	i = bpf_get_prandom_u32() & 7;
	tab[i] = 1;
	ctx->algo = tab[0];
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
