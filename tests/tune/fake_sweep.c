// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fake_sweep.c - bench/gpu/nccl_sweep --serve's protocol without GPUs, for
 * testing `ncclbpf tune --backend nccl` on CPU: a separate process that
 * loads the plugin through the NCCL emulator as NCCL would (tuner from
 * $NCCL_TUNER_PLUGIN, policy from $NCCLBPF_POLICY), so tune must reach its
 * maps over another process's control socket exactly as with real NCCL.
 * Each request is one getCollInfo; the answer is the emulator's true time
 * of the cell NCCL then runs ($FAKE_SWEEP_SKEW: skews as --emu-skew,
 * separated by ','; no noise).  "--serve --ngpus N" as nccl_sweep takes.
 * $FAKE_SWEEP_FAIL=hang:K or exit:K makes request K (from 1) hang or the
 * process exit, as a collective that never completes or a crash would.
 * "--serve --rank R --nranks N --id-file F" is one rank of N processes, as
 * nccl_sweep's multi-process mode: rank 0 creates F, the others wait for
 * it; with $FAKE_SWEEP_LOG each rank writes "REQUEST ALGO/PROTO/CHANNELS
 * NCCL_HOSTID" per request to $FAKE_SWEEP_LOG.rank<R>, so a test can
 * compare what the ranks ran.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emulator/emu.h"
#include "tune/tune.h"
#include "tune/tune_backend.h"

static const char *const ops[] = { "broadcast", "reduce", "allgather", "reducescatter", "allreduce" };

int main(int argc, char **argv)
{
	struct tune_emu_opts e = { .topo = EMU_TOPO_DEFAULT };
	const char *skews = getenv("FAKE_SWEEP_SKEW");
	struct emu_plugin pl;
	struct emu_tuner t;
	char err[512], line[256], op[32], logpath[4200];
	const char *id_file = NULL;
	int rank = -1;
	FILE *log = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ngpus") && i + 1 < argc && atoi(argv[i + 1]) > 0)
			e.topo.n_ranks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--nranks") && i + 1 < argc && atoi(argv[i + 1]) > 0)
			e.topo.n_ranks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rank") && i + 1 < argc)
			rank = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--id-file") && i + 1 < argc)
			id_file = argv[++i];
	}
	if (rank >= 0 && id_file) {
		/* The id exchange of nccl_sweep: rank 0 creates the file, the others wait. */
		if (rank == 0) {
			FILE *f = fopen(id_file, "w");

			if (!f || fclose(f))
				return 1;
		}
		for (int w = 0; access(id_file, F_OK); w++) {
			if (w > 3000)
				return 1;
			nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
		}
		if (getenv("FAKE_SWEEP_LOG")) {
			snprintf(logpath, sizeof(logpath), "%s.rank%d", getenv("FAKE_SWEEP_LOG"), rank);
			log = fopen(logpath, "w");
		}
	}
	if (skews && *skews) {
		char buf[1024], *save = NULL;

		snprintf(buf, sizeof(buf), "%s", skews);
		for (char *s = strtok_r(buf, ",", &save); s && e.n_skews < TUNE_MAX_SKEWS;
		     s = strtok_r(NULL, ",", &save))
			if (tune_parse_skew(s, &e.skews[e.n_skews++])) {
				fprintf(stderr, "fake_sweep: bad skew %s\n", s);
				return 2;
			}
	}
	printf("# fake nccl_sweep: emulator, %d ranks\n", e.topo.n_ranks);
	/* $FAKE_SWEEP_TUNER: the newest tuner version to look for, as an older NCCL would (7). */
	if (emu_open(&pl, EMU_TUNER, getenv("NCCL_TUNER_PLUGIN"),
		     getenv("FAKE_SWEEP_TUNER") ? atoi(getenv("FAKE_SWEEP_TUNER")) : 7, err, sizeof(err)) ||
	    emu_tuner_init(&t, &pl, 0xfa4eull, &e.topo, NULL) || !t.ctx) {
		printf("err %s\n", err);
		return 1;
	}
	printf("ready %d\n", e.topo.n_ranks);
	fflush(stdout);
	const char *fail = getenv("FAKE_SWEEP_FAIL");
	int fail_at = fail && strchr(fail, ':') ? atoi(strchr(fail, ':') + 1) : 0, req = 0;

	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long bytes;
		int it, wu, coll = -1;
		struct emu_decision d;

		if (++req == fail_at && !strncmp(fail, "hang", 4))
			for (;;)
				pause();
		if (req == fail_at)
			_exit(3);
		if (sscanf(line, "%31s %llu %d %d", op, &bytes, &it, &wu) != 4) {
			printf("err bad request\n");
		} else {
			for (int i = 0; i < 5; i++)
				if (!strcmp(op, ops[i]))
					coll = i;
			if (coll < 0 || emu_tuner_call(&t, &e.topo, coll, bytes, &d))
				printf("err %s %llu\n", op, bytes);
			else
				printf("ok %llu %.4f 0\n", bytes,
				       tune_emu_truth_of(&e, coll, bytes, &d));
			if (log)
				fprintf(log, "%d %s/%s/%d %s\n", req, emu_algo_name(d.algo),
					emu_proto_name(d.proto), d.n_channels,
					getenv("NCCL_HOSTID") ? getenv("NCCL_HOSTID") : "-");
		}
		fflush(stdout);
	}
	if (log)
		fclose(log);
	emu_tuner_fini(&t);
	emu_close(&pl);
	return 0;
}
