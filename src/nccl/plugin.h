/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin.h - the plugin's entry into the layers below: the one place where
 * the host and the control plane meet.
 */
#ifndef NCCLBPF_PLUGIN_H
#define NCCLBPF_PLUGIN_H

#include "abi_common.h"

/*
 * Every adapter context (tuner, profiler, env) holds one reference.  The
 * first acquire acquires the host (settings, NCCLBPF_POLICY) and then
 * starts the control plane; the last release stops the control plane
 * (joining its thread) before the host frees what that thread reads.
 * Never fails: a control plane that does not start is logged.  Init and
 * finalize only, never the hot path.
 */
void nbpf_plugin_acquire(nbpf_nccl_logger_t logger);
void nbpf_plugin_release(void);

#endif
