/*
 * abi_tuner.h - NCCL tuner plugin tables v2..v7 (docs/nccl-plugin-abi.md §2).
 * Every offset and size is pinned; the cost table is float[numAlgo][numProto]
 * on NCCL's stack passed as float** (index it as base[a * numProto + p]).
 */
#ifndef NCCLBPF_ABI_TUNER_H
#define NCCLBPF_ABI_TUNER_H

#include "abi_common.h"

#define NBPF_NCCL_NUM_ALGORITHMS 7
#define NBPF_NCCL_NUM_PROTOCOLS  3
#define NBPF_NCCL_ALGO_PROTO_IGNORE (-1.0f)
/* Starting minimum of NCCL's selection scan in 2.28.x (FLT_MAX from 2.29.2). */
#define NBPF_NCCL_COST_START_MIN 3.6e9f

typedef struct {
	int nNvlDomains;
	int minRanksPerNvlDomain;
	int maxRanksPerNvlDomain;
} nbpf_nvl_domain_info_v5_t;
NBPF_ABI_ASSERT_SIZE(nbpf_nvl_domain_info_v5_t, 12);
NBPF_ABI_ASSERT_OFF(nbpf_nvl_domain_info_v5_t, maxRanksPerNvlDomain, 8);

typedef struct {
	double baseLatencies[7][3];
	double hwLatencies[3][7][3];
	double llMaxBws[4][3];
	double perChMaxRingLL128Bws[4][3];
	double perChMaxTreeLL128Bws[4][3];
	double perChMaxTreeBws[4][3];
	double perChMaxNVLSTreeBws[4][3];
} nbpf_tuner_constants_v5_t;
NBPF_ABI_ASSERT_SIZE(nbpf_tuner_constants_v5_t, 1152);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v5_t, hwLatencies, 168);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v5_t, llMaxBws, 672);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v5_t, perChMaxRingLL128Bws, 768);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v5_t, perChMaxTreeLL128Bws, 864);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v5_t, perChMaxTreeBws, 960);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v5_t, perChMaxNVLSTreeBws, 1056);

/*
 * v7: the per-compute-capability rows gain a fifth (Rubin) entry; the
 * latencies and everything else are v5's.
 */
#define NBPF_NCCL_NUM_COMPCAPS_V7 5
typedef struct {
	double baseLatencies[7][3];
	double hwLatencies[3][7][3];
	double llMaxBws[NBPF_NCCL_NUM_COMPCAPS_V7][3];
	double perChMaxRingLL128Bws[NBPF_NCCL_NUM_COMPCAPS_V7][3];
	double perChMaxTreeLL128Bws[NBPF_NCCL_NUM_COMPCAPS_V7][3];
	double perChMaxTreeBws[NBPF_NCCL_NUM_COMPCAPS_V7][3];
	double perChMaxNVLSTreeBws[NBPF_NCCL_NUM_COMPCAPS_V7][3];
} nbpf_tuner_constants_v7_t;
NBPF_ABI_ASSERT_SIZE(nbpf_tuner_constants_v7_t, 1272);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v7_t, hwLatencies, 168);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v7_t, llMaxBws, 672);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v7_t, perChMaxRingLL128Bws, 792);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v7_t, perChMaxTreeLL128Bws, 912);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v7_t, perChMaxTreeBws, 1032);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_constants_v7_t, perChMaxNVLSTreeBws, 1152);

/* collType is ncclFunc_t, an int-sized enum. */
typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(size_t nRanks, size_t nNodes, nbpf_nccl_logger_t logger,
				   void **ctx);
	nbpf_nccl_result_t (*getCollInfo)(void *ctx, int collType, size_t nBytes,
					  int collNetSupport, int nvlsSupport, int numPipeOps,
					  int *algorithm, int *protocol, int *nChannels);
	nbpf_nccl_result_t (*destroy)(void *ctx);
} nbpf_tuner_v2_t;

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(size_t nRanks, size_t nNodes, nbpf_nccl_logger_t logger,
				   void **ctx);
	nbpf_nccl_result_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps,
					  float **collCostTable, int numAlgo, int numProto,
					  int *nChannels);
	nbpf_nccl_result_t (*destroy)(void *ctx);
} nbpf_tuner_v3_t;

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(size_t nRanks, size_t nNodes, nbpf_nccl_logger_t logger,
				   void **ctx);
	nbpf_nccl_result_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps,
					  float **collCostTable, int numAlgo, int numProto,
					  int regBuff, int *nChannels);
	nbpf_nccl_result_t (*destroy)(void *ctx);
} nbpf_tuner_v4_t;

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
				   nbpf_nccl_logger_t logger,
				   nbpf_nvl_domain_info_v5_t *nvlDomainInfo,
				   nbpf_tuner_constants_v5_t *constants);
	nbpf_nccl_result_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, int numPipeOps,
					  float **collCostTable, int numAlgo, int numProto,
					  int regBuff, int *nChannels);
	nbpf_nccl_result_t (*finalize)(void *ctx);
} nbpf_tuner_v5_t;

/* v6 and v7: v5's slots plus the optional getChunkSize; v7 takes v7's constants. */
#define NBPF_TUNER_TABLE_V6(ver, constants_t) \
	typedef struct { \
		const char *name; \
		nbpf_nccl_result_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes, \
					   nbpf_nccl_logger_t logger, \
					   nbpf_nvl_domain_info_v5_t *nvlDomainInfo, \
					   constants_t *constants); \
		nbpf_nccl_result_t (*getCollInfo)(void *ctx, int collType, size_t nBytes, \
						  int numPipeOps, float **collCostTable, \
						  int numAlgo, int numProto, int regBuff, \
						  int *nChannels); \
		nbpf_nccl_result_t (*finalize)(void *ctx); \
		/* Optional (may be NULL). */ \
		nbpf_nccl_result_t (*getChunkSize)(void *ctx, int collType, size_t nBytes, \
						   int algo, int proto, int nChannels, \
						   size_t *chunkSize); \
	} nbpf_tuner_##ver##_t
NBPF_TUNER_TABLE_V6(v6, nbpf_tuner_constants_v5_t);
NBPF_TUNER_TABLE_V6(v7, nbpf_tuner_constants_v7_t);

#define NBPF_TUNER_ASSERTS(t) \
	NBPF_ABI_ASSERT_SIZE(t, 32); \
	NBPF_ABI_ASSERT_OFF(t, name, 0); \
	NBPF_ABI_ASSERT_OFF(t, init, 8); \
	NBPF_ABI_ASSERT_OFF(t, getCollInfo, 16)
NBPF_TUNER_ASSERTS(nbpf_tuner_v2_t);
NBPF_TUNER_ASSERTS(nbpf_tuner_v3_t);
NBPF_TUNER_ASSERTS(nbpf_tuner_v4_t);
NBPF_TUNER_ASSERTS(nbpf_tuner_v5_t);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v2_t, destroy, 24);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v3_t, destroy, 24);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v4_t, destroy, 24);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v5_t, finalize, 24);
NBPF_ABI_ASSERT_SIZE(nbpf_tuner_v6_t, 40);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v6_t, getCollInfo, 16);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v6_t, finalize, 24);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v6_t, getChunkSize, 32);
NBPF_ABI_ASSERT_SIZE(nbpf_tuner_v7_t, 40);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v7_t, init, 8);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v7_t, getCollInfo, 16);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v7_t, finalize, 24);
NBPF_ABI_ASSERT_OFF(nbpf_tuner_v7_t, getChunkSize, 32);

#endif
