/*
 * Native equivalent of policies/slo_enforcer.bpf.c's tuner: a per-process
 * config table (coll x log2 size bucket) of latency targets; tight targets
 * pick the protocol by size on Ring (Tree for multi-node small AllReduce)
 * and the configured channel count.  NATIVE_SLO_TARGET_NS sets one target
 * for every bucket (the bench sets the same in the BPF policy's map).
 */
#include <stdlib.h>

#include "native_common.h"

struct slo_target {
	uint64_t target_ns;
	uint32_t n_channels;
	uint32_t reserved;
};

static struct slo_target cfg[NCCLBPF_NUM_COLLS * NCCLBPF_SIZE_BUCKETS];
static int cfg_ready;

static nbpf_nccl_result_t get(void *ctx, int coll, size_t n, int pipe, float **t, int na,
			      int np, int reg, int *nch)
{
	struct native_ctx *c = ctx;
	int algo = NCCLBPF_ALGO_RING, proto;
	const struct slo_target *s;
	uint64_t target;

	(void)pipe; (void)reg;
	if (!cfg_ready) {
		const char *v = getenv("NATIVE_SLO_TARGET_NS");

		for (size_t i = 0; v && i < sizeof(cfg) / sizeof(cfg[0]); i++)
			cfg[i].target_ns = strtoull(v, NULL, 0);
		cfg_ready = 1;
	}
	if (coll < 0 || coll >= NCCLBPF_NUM_COLLS)
		return NBPF_NCCL_SUCCESS;
	s = &cfg[coll * NCCLBPF_SIZE_BUCKETS + ncclbpf_size_bucket(n)];
	target = s->target_ns;
	if (!target || (target >= 50000ull && n < target * 100ull))
		return NBPF_NCCL_SUCCESS;
	if (n < (256ull << 10)) {
		proto = NCCLBPF_PROTO_LL;
		if (coll == NCCLBPF_COLL_ALLREDUCE && c->n_nodes > 1 &&
		    native_offered(t, np, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL))
			algo = NCCLBPF_ALGO_TREE;
	} else if (n < (64ull << 20)) {
		proto = NCCLBPF_PROTO_LL128;
	} else {
		proto = NCCLBPF_PROTO_SIMPLE;
	}
	native_choose(t, na, np, algo, proto);
	if (s->n_channels >= 1 && s->n_channels <= 64)
		*nch = (int)s->n_channels;
	return NBPF_NCCL_SUCCESS;
}
NATIVE_EXPORT(get);
