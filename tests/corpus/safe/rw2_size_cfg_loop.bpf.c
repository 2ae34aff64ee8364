/* A threshold ladder in const volatile config scanned with a bounded loop and break. */
#include <ncclbpf/policy.h>

#define N_STEPS 6
const volatile __u64 thresholds[N_STEPS] = { 4096, 65536, 1 << 20, 8 << 20, 64 << 20, 512 << 20 };
const volatile __s32 protos[N_STEPS + 1] = { 0, 0, 1, 1, 2, 2, 2 };
const volatile __s32 chans[N_STEPS + 1] = { 2, 4, 8, 16, 24, 32, 32 };

SEC("tuner")
int size_cfg(struct ncclbpf_tuner_ctx *ctx)
{
	int i;

	for (i = 0; i < N_STEPS; i++)
		if (ctx->n_bytes < thresholds[i])
			break;
	if (protos[i] >= 0 && protos[i] < NCCLBPF_NUM_PROTOS &&
	    ncclbpf_cell_offered(ctx, NCCLBPF_ALGO_RING, protos[i])) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = protos[i];
	}
	ctx->n_channels = chans[i] < 1 ? 1 : chans[i] > 32 ? 32 : chans[i];
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
