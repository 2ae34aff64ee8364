/*
 * abi_common.h - NCCL ABI basics shared by every plugin kind: result codes
 * and the logger type.  The project's own declarations, checked against
 * docs/nccl-plugin-abi.md (NCCL 2.28.9 and 2.30.7).
 */
#ifndef NCCLBPF_ABI_COMMON_H
#define NCCLBPF_ABI_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ncclResult_t (an int-sized enum in NCCL). */
typedef int nbpf_nccl_result_t;
#define NBPF_NCCL_SUCCESS          0
#define NBPF_NCCL_SYSTEM_ERROR     2
#define NBPF_NCCL_INTERNAL_ERROR   3
#define NBPF_NCCL_INVALID_ARGUMENT 4

/* ncclDebugLogger_t: (level, flags, file, line, fmt, ...). */
typedef void (*nbpf_nccl_logger_t)(int level, unsigned long flags, const char *file,
				   int line, const char *fmt, ...);

/* Marks the exported plugin tables; everything else in the library is hidden. */
#define NBPF_EXPORT __attribute__((visibility("default")))

#define NBPF_ABI_ASSERT_OFF(type, field, off) \
	_Static_assert(offsetof(type, field) == (off), #type "." #field " offset")
#define NBPF_ABI_ASSERT_SIZE(type, size) \
	_Static_assert(sizeof(type) == (size), #type " size")

#endif
