// SPDX-License-Identifier: Apache-2.0
/*
 * calib.c - loads the named calibration programs (calib.bpf.c), the job's
 * process as the target, for SECONDS with kernel.bpf_stats_enabled on, and
 * prints each one's runs/s and ns per run, then what c_stamp_cmpl saw.
 *
 * usage: obs_calib SECONDS PID PROG...   (e.g. obs_calib 5 1234 c_empty_sw c_pchash_sw)
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "observe_abi.h"
/* The skeleton names calib.bpf.c's value type. */
struct cal_val {
	obs_u64 n;
	struct obs_hist h;
};

#include "calib.skel.h"

int main(int argc, char **argv)
{
	unsigned int secs = argc > 1 ? (unsigned int)atoi(argv[1]) : 0;
	int pid = argc > 2 ? atoi(argv[2]) : 0, stats = -1, rc = 1;
	struct bpf_link *links[32] = {};
	struct bpf_program *p;
	struct obs_calib *skel;
	int n = 0;

	if (argc < 4 || !secs || pid <= 0 || argc - 3 > 32) {
		fprintf(stderr, "usage: obs_calib SECONDS PID PROG...\n");
		return 2;
	}
	skel = obs_calib__open();
	if (!skel) {
		fprintf(stderr, "obs_calib: open: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->obs_cfg.mode = OBS_MODE_PIDS;
	skel->rodata->obs_cfg.flags = OBS_CFG_SCHED_INFO | OBS_CFG_URING_REQ_VOID;
	bpf_object__for_each_program(p, skel->obj) {
		bool on = false;

		for (int i = 3; i < argc; i++)
			on |= !strcmp(bpf_program__name(p), argv[i]);
		bpf_program__set_autoload(p, on);
	}
	if (obs_calib__load(skel)) {
		fprintf(stderr, "obs_calib: load: %s\n", strerror(errno));
		goto out;
	}
	{
		__u32 w = (__u32)pid / 64;
		__u64 bits = 1ull << (pid % 64);

		bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &w, &bits, BPF_ANY);
	}
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	bpf_object__for_each_program(p, skel->obj) {
		if (!bpf_program__autoload(p))
			continue;
		links[n] = bpf_program__attach(p);
		if (!links[n]) {
			fprintf(stderr, "obs_calib: attach %s: %s\n", bpf_program__name(p), strerror(errno));
			goto out;
		}
		n++;
	}
	sleep(secs);
	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (!bpf_program__autoload(p) ||
		    bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			continue;
		printf("%-16s %9.0f runs/s %6.1f ns/run  jited %u B\n", bpf_program__name(p),
		       (double)info.run_cnt / secs,
		       info.run_cnt ? (double)info.run_time_ns / (double)info.run_cnt : 0.0,
		       info.jited_prog_len);
	}
	if (skel->bss->cal_cmpl)
		printf("completions %llu: on the submitting CPU %llu, start_time_ns set %llu, "
		       "io_start_time_ns set %llu\n", (unsigned long long)skel->bss->cal_cmpl,
		       (unsigned long long)skel->bss->cal_same_cpu,
		       (unsigned long long)skel->bss->cal_start_ns,
		       (unsigned long long)skel->bss->cal_io_start_ns);
	if (skel->bss->infl_full)
		printf("in-flight table full %llu times\n", (unsigned long long)skel->bss->infl_full);
	rc = 0;
out:
	for (int i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	if (stats >= 0)
		close(stats);
	obs_calib__destroy(skel);
	return rc;
}
