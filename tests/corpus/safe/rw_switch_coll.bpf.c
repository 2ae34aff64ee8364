/* A switch on coll_type picking per-collective defaults. */
#include <ncclbpf/policy.h>

SEC("tuner")
int switch_coll(struct ncclbpf_tuner_ctx *ctx)
{
	switch (ctx->coll_type) {
	case NCCLBPF_COLL_ALLREDUCE:
		ctx->algo = ctx->n_nodes > 1 ? NCCLBPF_ALGO_TREE : NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		break;
	case NCCLBPF_COLL_ALLGATHER:
	case NCCLBPF_COLL_REDUCESCATTER:
		ctx->algo = NCCLBPF_ALGO_RING;
		if (ctx->n_bytes < 32768)
			ctx->proto = NCCLBPF_PROTO_LL;
		break;
	case NCCLBPF_COLL_BROADCAST:
		ctx->n_channels = 4;
		break;
	default:
		return NCCLBPF_TUNER_SKIP;
	}
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
