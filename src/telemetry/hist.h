/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hist.h - the shape of collective telemetry: latency histograms in log2
 * buckets, message size classes, and the per-communicator record the
 * profiler adapter writes on every completed collective.  The host keeps
 * one record per (collective, size class) in each communicator; the control
 * plane reads them and prom.h aggregates and exposes them.
 *
 * Numbering follows policy.h (pinned by static asserts in prom.c), so this
 * header need not include it: policy.h's __u64 typedefs clash with
 * <linux/types.h> in the files that include both.
 */
#ifndef NCCLBPF_TELEMETRY_HIST_H
#define NCCLBPF_TELEMETRY_HIST_H

#include <stdatomic.h>
#include <stdint.h>

/* Log2 buckets of latency in ns: bucket i holds [2^i, 2^(i+1)), bucket 0 also 0. */
#define NBPF_LAT_BUCKETS 40
/* Message size classes: <=1K, <=16K, <=256K, <=4M, <=64M, <=1G, larger. */
#define NBPF_SIZE_CLASSES 7
#define NBPF_TELE_COLLS 6   /* NCCLBPF_NUM_COLLS + 1; last: other */
#define NBPF_TELE_ALGOS 8   /* NCCLBPF_NUM_ALGOS + 1; last: unknown */
#define NBPF_TELE_PROTOS 4  /* NCCLBPF_NUM_PROTOS + 1; last: unknown */

/*
 * Completed collectives of one (collective, size class) of one
 * communicator.  Written by the thread driving that communicator's
 * profiler context with relaxed atomics; readers get slightly stale but
 * never torn values.
 */
struct nbpf_telemetry {
	_Atomic uint64_t count;
	_Atomic uint64_t bytes;
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t gpu_timed;               /* how many came from KernelCh spans */
	_Atomic uint64_t hist[NBPF_LAT_BUCKETS];
	_Atomic uint64_t mix[NBPF_TELE_ALGOS][NBPF_TELE_PROTOS]; /* last = unknown */
};

/* Size class of a message size (0..NBPF_SIZE_CLASSES-1). */
unsigned nbpf_size_class(uint64_t bytes);

#endif
