/* switch on coll_type with five cases and a default; each case sets several outputs. */
#include <ncclbpf/policy.h>

SEC("tuner")
int switch5(struct ncclbpf_tuner_ctx *ctx)
{
	int a, p, ch;

	switch (ctx->coll_type) {
	case NCCLBPF_COLL_BROADCAST:
		a = NCCLBPF_ALGO_RING; p = NCCLBPF_PROTO_SIMPLE; ch = 8;
		break;
	case NCCLBPF_COLL_REDUCE:
		a = NCCLBPF_ALGO_RING; p = NCCLBPF_PROTO_LL128; ch = 4;
		break;
	case NCCLBPF_COLL_ALLGATHER:
		a = NCCLBPF_ALGO_RING; p = ctx->n_bytes < 65536 ? NCCLBPF_PROTO_LL : NCCLBPF_PROTO_SIMPLE;
		ch = 16;
		break;
	case NCCLBPF_COLL_REDUCESCATTER:
		a = NCCLBPF_ALGO_PAT; p = NCCLBPF_PROTO_SIMPLE; ch = 12;
		break;
	case NCCLBPF_COLL_ALLREDUCE:
		a = ctx->n_nodes > 1 ? NCCLBPF_ALGO_TREE : NCCLBPF_ALGO_RING;
		p = NCCLBPF_PROTO_LL128; ch = 24;
		break;
	default:
		return NCCLBPF_TUNER_SKIP;
	}
	if (!ncclbpf_cell_offered(ctx, a, p))
		return NCCLBPF_TUNER_SKIP;
	ctx->algo = a;
	ctx->proto = p;
	ctx->n_channels = ch;
	return NCCLBPF_TUNER_APPLY;
}
char LICENSE[] SEC("license") = "GPL";
