/* Native equivalent of policies/size_aware.bpf.c (same thresholds and rules). */
#include "native_common.h"

static nbpf_nccl_result_t get(void *ctx, int coll, size_t n, int pipe, float **t, int na,
			      int np, int reg, int *nch)
{
	struct native_ctx *c = ctx;
	int algo = NCCLBPF_ALGO_RING, proto;

	(void)pipe; (void)reg; (void)nch;
	if (n < (64ull << 10)) {
		proto = NCCLBPF_PROTO_LL;
		if (coll == NCCLBPF_COLL_ALLREDUCE && c->n_nodes > 1 &&
		    native_offered(t, np, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL))
			algo = NCCLBPF_ALGO_TREE;
	} else if (n < (8ull << 20)) {
		proto = NCCLBPF_PROTO_LL128;
	} else {
		proto = NCCLBPF_PROTO_SIMPLE;
	}
	native_choose(t, na, np, algo, proto);
	return NBPF_NCCL_SUCCESS;
}
NATIVE_EXPORT(get);
