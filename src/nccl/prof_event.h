/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prof_event.h - NCCL's profiler event descriptors, every version and
 * type, as the struct ncclbpf_prof_event SEC("profiler/event") programs
 * read (strings become numbers, pointers are left out), and the facts the
 * profiler adapter needs about the types.
 */
#ifndef NCCLBPF_PROF_EVENT_H
#define NCCLBPF_PROF_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "abi_profiler.h"
#include "ncclbpf/policy.h"

/*
 * Fills ev from descriptor d of profiler ABI version abi (1..7): type,
 * rank and the members of its type; n_ranks (the context's, 0 if
 * unknown) scales AllGather/ReduceScatter bytes as the tuner's n_bytes.
 * Everything that does not apply is 0, -1 for the signed fields, and
 * last_state 0xffffffff.  Times, parent type and states are the caller's.
 */
void nbpf_prof_event_decode(int abi, const void *d, uint32_t n_ranks,
			    struct ncclbpf_prof_event *ev);

/* Every event type version abi knows (NCCL raises no other). */
uint32_t nbpf_prof_types_of(int abi);

/* Types NCCL raises per proxy step or per progress loop: left out of the default mask. */
#define NBPF_PROF_CHATTY (NBPF_PROF_PROXY_STEP | NBPF_PROF_PROXY_CTRL | NBPF_PROF_NET_PLUGIN)

/* Types the proxy and profiler threads raise (struct nbpf_comm.prof_events[1]). */
static inline bool nbpf_prof_proxy_side(uint32_t type)
{
	return type & (NBPF_PROF_PROXY_OP | NBPF_PROF_PROXY_STEP | NBPF_PROF_PROXY_CTRL |
		       NBPF_PROF_KERNEL_CH | NBPF_PROF_NET_PLUGIN | NBPF_PROF_KERNEL_PHASE);
}

/* Size of an NCCL datatype by NCCL's name ("ncclFloat32") or number; 1 if unknown. */
int nbpf_prof_dtype_size_name(const char *s);
int nbpf_prof_dtype_size_enum(unsigned v);

#endif
