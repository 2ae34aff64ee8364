/*
 * abi_env.h - NCCL env plugin tables v1 and v2 (docs/nccl-plugin-abi.md §5).
 */
#ifndef NCCLBPF_ABI_ENV_H
#define NCCLBPF_ABI_ENV_H

#include "abi_common.h"

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(uint8_t major, uint8_t minor, uint8_t patch,
				   const char *suffix);
	nbpf_nccl_result_t (*finalize)(void);
	const char *(*getEnv)(const char *name);
} nbpf_env_v1_t;

typedef struct {
	const char *name;
	nbpf_nccl_result_t (*init)(uint8_t major, uint8_t minor, uint8_t patch,
				   const char *suffix, nbpf_nccl_logger_t logger);
	nbpf_nccl_result_t (*finalize)(void);
	const char *(*getEnv)(const char *name);
} nbpf_env_v2_t;

NBPF_ABI_ASSERT_SIZE(nbpf_env_v1_t, 32);
NBPF_ABI_ASSERT_OFF(nbpf_env_v1_t, init, 8);
NBPF_ABI_ASSERT_OFF(nbpf_env_v1_t, finalize, 16);
NBPF_ABI_ASSERT_OFF(nbpf_env_v1_t, getEnv, 24);
NBPF_ABI_ASSERT_SIZE(nbpf_env_v2_t, 32);
NBPF_ABI_ASSERT_OFF(nbpf_env_v2_t, getEnv, 24);

#endif
