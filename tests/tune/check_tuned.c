// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * check_tuned.c - runs a policy `ncclbpf tune` generated for tune_e2e's
 * planted skew (AllReduce 64 KiB..1 MiB -> Tree/LL on 8 ranks, 1 node) on
 * hand-made contexts: the change covers whole size buckets, and nothing is
 * forced when NCCL does not offer the cell, on another communicator shape,
 * for another collective or outside the band.
 *   usage: tune_check_tuned OBJ
 */
#include <stdio.h>

#include "check.h"
#include "host/hooks.h"
#include "ncclbpf/policy.h"
#include "ncclbpf/runtime.h"

#define ALL_TREE_RING (NCCLBPF_CELL(0, 0) | NCCLBPF_CELL(0, 1) | NCCLBPF_CELL(0, 2) | \
		       NCCLBPF_CELL(1, 0) | NCCLBPF_CELL(1, 1) | NCCLBPF_CELL(1, 2))

static void expect(struct ncclbpf_program *p, uint32_t coll, uint64_t bytes, uint32_t ranks,
		   uint32_t nodes, uint32_t avail, int algo, int proto)
{
	struct ncclbpf_tuner_ctx c = {
		.n_bytes = bytes, .coll_type = coll, .n_ranks = ranks, .n_nodes = nodes,
		.num_pipe_ops = 1, .avail_mask = avail, .nccl_algo = 1, .nccl_proto = 0,
		.abi_version = 5, .algo = NCCLBPF_KEEP, .proto = NCCLBPF_KEEP,
		.n_channels = NCCLBPF_KEEP,
	};
	uint64_t r0 = 1;

	CHECK(ncclbpf_program__run(p, &c, sizeof(c), &r0) == 0 && r0 == NCCLBPF_TUNER_APPLY);
	CHECK_MSG(c.algo == algo && c.proto == proto && c.n_channels == NCCLBPF_KEEP,
		  "coll %u %llu B %u ranks %u nodes avail %#x: got %d/%d/%d, want %d/%d", coll,
		  (unsigned long long)bytes, ranks, nodes, avail, c.algo, c.proto, c.n_channels,
		  algo, proto);
}

int main(int argc, char **argv)
{
	struct ncclbpf_verify_opts vo = { .sz = sizeof(vo), .strict_consistency = true };
	struct ncclbpf_prepare_opts po = { .sz = sizeof(po), .verify = &vo };
	struct ncclbpf_object *obj = NULL;
	struct ncclbpf_program *p;
	const int K = NCCLBPF_KEEP, AR = NCCLBPF_COLL_ALLREDUCE;

	if (argc != 2 || ncclbpf_object__open_file(argv[1], NULL, &obj)) {
		fprintf(stderr, "usage: tune_check_tuned OBJ (%s)\n", ncclbpf_errmsg());
		return 2;
	}
	p = ncclbpf_object__prog_count(obj) == 1 ? ncclbpf_object__prog(obj, 0) : NULL;
	CHECK(p && ncclbpf_program__prepare(p, ncclbpf_hook_find_section(ncclbpf_program__section(p)), &po) == 0);
	if (p) {
		expect(p, AR, 64 << 10, 8, 1, ALL_TREE_RING, 0, 0);
		expect(p, AR, 96 << 10, 8, 1, ALL_TREE_RING, 0, 0);          /* same bucket */
		expect(p, AR, (2 << 20) - 1, 8, 1, ALL_TREE_RING, 0, 0);     /* top of 1 MiB's */
		expect(p, AR, 2 << 20, 8, 1, ALL_TREE_RING, K, K);
		expect(p, AR, (64 << 10) - 1, 8, 1, ALL_TREE_RING, K, K);
		expect(p, AR, 64 << 10, 8, 1, ALL_TREE_RING & ~NCCLBPF_CELL(0, 0), K, K); /* not offered */
		expect(p, AR, 64 << 10, 16, 1, ALL_TREE_RING, K, K);         /* another shape */
		expect(p, AR, 64 << 10, 8, 2, ALL_TREE_RING, K, K);
		expect(p, NCCLBPF_COLL_ALLGATHER, 64 << 10, 8, 1, ALL_TREE_RING, K, K);
		expect(p, 7, 64 << 10, 8, 1, ALL_TREE_RING, K, K);           /* no such collective */
	}
	ncclbpf_object__close(obj);
	return check_summary("tune_check_tuned");
}
