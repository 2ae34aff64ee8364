/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status.c - the plugin's status table, ncclbpfStatus_v1 (ncclbpf/status.h):
 * what each load attempt loaded or refused, for a program that loads this
 * library itself (ncclbpf sim/bench through the emulator).  Not an NCCL
 * interface: NCCL never looks it up.
 */
#include "abi_common.h"
#include "host/host.h"
#include "ncclbpf/status.h"

static int status_load(unsigned back, struct ncclbpf_load_status *out, size_t size)
{
	return nbpf_host_load_status(back, out, size);
}

NBPF_EXPORT const ncclbpf_status_v1_t ncclbpfStatus_v1 = {
	.name = "ncclbpf",
	.loadStatus = status_load,
};
