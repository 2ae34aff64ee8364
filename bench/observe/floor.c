// SPDX-License-Identifier: Apache-2.0
/*
 * floor.c - the least a program on a tracepoint can cost here: an empty
 * program (r0 = 0; exit) attached as a typed raw tracepoint to each named
 * tracepoint for SECONDS, with kernel.bpf_stats_enabled on, and its run
 * count and run time per run as the kernel's statistics report them.
 * The observe benchmark's per-program figures include the same statistics
 * overhead, so this is their zero.
 *
 * usage: obs_floor SECONDS TRACEPOINT...   (e.g. obs_floor 3 sched_switch block_rq_issue)
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "empty_prog.h"

#define MAX_TP 16

int main(int argc, char **argv)
{
	int pfd[MAX_TP], lfd[MAX_TP], n = 0, rc = 1;
	struct btf *btf = btf__load_vmlinux_btf();
	unsigned int secs = argc > 1 ? (unsigned int)atoi(argv[1]) : 0;

	if (argc < 3 || !secs || argc - 2 > MAX_TP) {
		fprintf(stderr, "usage: obs_floor SECONDS TRACEPOINT... (at most %d)\n", MAX_TP);
		return 2;
	}
	if (!btf) {
		fprintf(stderr, "obs_floor: no kernel BTF: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 2; i < argc; i++, n++) {
		pfd[n] = empty_prog_load(btf, argv[i], "obs_floor");
		if (pfd[n] == -ENOENT) {
			fprintf(stderr, "obs_floor: no typed tracepoint %s\n", argv[i]);
			goto out;
		}
		lfd[n] = pfd[n] < 0 ? -1 : bpf_link_create(pfd[n], 0, BPF_TRACE_RAW_TP, NULL);
		if (lfd[n] < 0) {
			fprintf(stderr, "obs_floor: %s: %s\n", argv[i], strerror(errno));
			if (pfd[n] >= 0)
				close(pfd[n]);
			goto out;
		}
	}
	sleep(secs);
	for (int i = 0; i < n; i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(pfd[i], &info, &len))
			continue;
		printf("%-28s %10.0f runs/s %6.1f ns/run%s\n", argv[i + 2],
		       (double)info.run_cnt / secs,
		       info.run_cnt ? (double)info.run_time_ns / (double)info.run_cnt : 0.0,
		       info.run_cnt && !info.run_time_ns ? " (bpf_stats_enabled is off)" : "");
	}
	rc = 0;
out:
	for (int i = 0; i < n; i++) {
		close(lfd[i]);
		close(pfd[i]);
	}
	btf__free(btf);
	return rc;
}
