/*
 * native_common.h - what a hand-written C tuner plugin needs to implement
 * the same policies as the shipped BPF policies, for overhead comparisons: the
 * tuner v5 table and the offered-cell test on NCCL's cost table.
 */
#ifndef NCCLBPF_BENCH_NATIVE_H
#define NCCLBPF_BENCH_NATIVE_H

#include <stdlib.h>

#include "nccl/abi_tuner.h"
#include "ncclbpf/policy.h"

struct native_ctx {
	size_t n_ranks, n_nodes;
};

static nbpf_nccl_result_t native_init(void **ctx, uint64_t comm_id, size_t n_ranks,
				      size_t n_nodes, nbpf_nccl_logger_t logger,
				      nbpf_nvl_domain_info_v5_t *nvl, nbpf_tuner_constants_v5_t *c)
{
	struct native_ctx *n = calloc(1, sizeof(*n));

	(void)comm_id; (void)logger; (void)nvl; (void)c;
	if (!n)
		return NBPF_NCCL_SYSTEM_ERROR;
	n->n_ranks = n_ranks;
	n->n_nodes = n_nodes;
	*ctx = n;
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t native_fini(void *ctx)
{
	free(ctx);
	return NBPF_NCCL_SUCCESS;
}

static inline int native_offered(float **table, int num_proto, int a, int p)
{
	float v = ((float *)table)[a * num_proto + p];

	return v != NBPF_NCCL_ALGO_PROTO_IGNORE && v >= 0.0f;
}

static inline void native_choose(float **table, int num_algo, int num_proto, int a, int p)
{
	if (a < num_algo && p < num_proto && native_offered(table, num_proto, a, p))
		((float *)table)[a * num_proto + p] = 0.0f;
}

#define NATIVE_EXPORT(fn) \
	__attribute__((visibility("default"))) const nbpf_tuner_v5_t ncclTunerPlugin_v5 = { \
		.name = "native", .init = native_init, .getCollInfo = fn, .finalize = native_fini, \
	}

#endif
