/* Native equivalent of policies/noop.bpf.c: leaves every decision to NCCL. */
#include "native_common.h"

static nbpf_nccl_result_t get(void *ctx, int coll, size_t n, int pipe, float **t, int na,
			      int np, int reg, int *nch)
{
	(void)ctx; (void)coll; (void)n; (void)pipe; (void)t; (void)na; (void)np; (void)reg; (void)nch;
	return NBPF_NCCL_SUCCESS;
}
NATIVE_EXPORT(get);
