// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * env_overrides - NCCL parameters set by policy, through NCCL's env plugin
 * (NCCL_ENV_PLUGIN=ncclbpf, NCCL 2.28.7+).
 *
 * The table is one string of NAME=VALUE lines in a global named
 * ncclbpf_env; the env adapter reads it from the object and answers NCCL's
 * getEnv with it, falling back to the real environment for other names.
 * NCCL reads most parameters once at startup, so treat these as launch-time
 * settings.  Here: keep NCCL from using more than 16 channels and log what
 * the tuner does.  The object has no programs: the plugin loads an
 * env-only object as it loads any other, so it can be deployed alone
 * (NCCL_ENV_PLUGIN only) or next to tuner and profiler objects in
 * NCCLBPF_POLICY.
 */
#include <ncclbpf/policy.h>

const char ncclbpf_env[] =
	"NCCL_MAX_NCHANNELS=16\n"
	"NCCL_DEBUG_SUBSYS=INIT,TUNING\n";

char LICENSE[] SEC("license") = "Dual BSD/GPL";
