/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sweep_stub.c - nccl_sweep's command line and outputs without a GPU, for
 * dry runs of the scripts that drive it (realnccl.sh, ranks.sh, tune):
 * each process is one rank and makes the calls NCCL would make for every
 * collective of the sweep through the NCCL emulator (tuner and profiler
 * from $NCCL_TUNER_PLUGIN / $NCCL_PROFILER_PLUGIN, loaded as NCCL loads
 * them), so the plugin, the recorder, the control plane and the trace
 * checks all see a live job.  Nothing is transferred: every result is
 * "correct", and times are the emulator's model, not measurements.
 *
 * Ranks meet only where nccl_sweep's ranks agree to stop (--until-file):
 * after each pass every rank writes FILE.r<rank> with the pass number and
 * waits for the others' (a file barrier), then rank 0 writes its verdict
 * to FILE.d<pass> and the others read it, so every rank stops after the
 * same pass, as the Broadcast does in nccl_sweep.  --serve answers
 * "ok BYTES US 0" per request.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emulator/emu.h"

static const char *const op_names[] = { "broadcast", "reduce", "allgather", "reducescatter",
					"allreduce" };

struct stub {
	struct emu_topo topo;
	struct emu_plugin tp, pp;
	struct emu_tuner tu;
	const nbpf_profiler_v5_t *p5;
	void *pctx;
	int mask, rank;
	uint64_t seq[5], gpu_ns;
};

static int coll_of(const char *name)
{
	for (int i = 0; i < 5; i++)
		if (!strcmp(name, op_names[i]))
			return i;
	return -1;
}

/* One collective as NCCL 2.28 presents it (see emu_job.c): time in us. */
static double one(struct stub *s, int coll, uint64_t bytes)
{
	float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS];
	struct emu_decision d;
	double us = 1.0;

	if (s->tu.ctx && !emu_tuner_call(&s->tu, &s->topo, coll, bytes, &d)) {
		emu_cost_table(&s->topo, coll, bytes, table);
		if (d.algo >= 0 && d.proto >= 0 && table[d.algo][d.proto] > 0)
			us = table[d.algo][d.proto];
	} else {
		memset(&d, 0, sizeof(d));
		d.algo = 1;
		d.proto = 2;
	}
	if (s->p5 && s->pctx) {
		nbpf_prof_descr_v5_t cd = { .type = NBPF_PROF_COLL, .rank = s->rank };
		nbpf_prof_descr_v5_t kd = { .type = NBPF_PROF_KERNEL_CH, .rank = s->rank };
		nbpf_prof_state_args_v4_t ka = { 0 };
		int nch = d.n_channels ? d.n_channels : d.nccl_channels ? d.nccl_channels : 1;
		void *hc = NULL, *hk = NULL;

		cd.coll.seqNumber = s->seq[coll]++;
		cd.coll.func = emu_coll_name(coll);
		cd.coll.count = bytes / 4 / (coll == 2 || coll == 3 ? (uint64_t)s->topo.n_ranks : 1);
		cd.coll.datatype = "ncclFloat32";
		cd.coll.nChannels = (uint8_t)nch;
		cd.coll.algo = emu_algo_name(d.algo);
		cd.coll.proto = emu_proto_name(d.proto);
		s->p5->startEvent(s->pctx, &hc, &cd);
		if (hc)
			s->p5->stopEvent(hc);
		for (int c = 0; hc && c < nch && (s->mask & NBPF_PROF_KERNEL_CH); c++) {
			kd.parentObj = hc;
			kd.kernelCh.channelId = (uint8_t)c;
			kd.kernelCh.pTimer = s->gpu_ns;
			hk = NULL;
			s->p5->startEvent(s->pctx, &hk, &kd);
			ka.kernelCh.pTimer = s->gpu_ns + (uint64_t)(us * 1000);
			if (hk) {
				s->p5->recordEventState(hk, NBPF_PROF_STATE_KERNEL_CH_STOP, &ka);
				s->p5->stopEvent(hk);
			}
		}
		s->gpu_ns += (uint64_t)(us * 1000) + 1000;
	}
	return us;
}

static void put_file(const char *path, const char *text)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
		rename(tmp, path);
	}
}

static long get_file(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* After pass `pass` (from 1): whether every rank stops now (rank 0 decides). */
static bool until_reached(const char *until, int rank, int n, int pass)
{
	char path[4200], num[32];
	long d;

	snprintf(path, sizeof(path), "%s.r%d", until, rank);
	snprintf(num, sizeof(num), "%d\n", pass);
	put_file(path, num);
	for (int r = 0; r < n; r++) {
		snprintf(path, sizeof(path), "%s.r%d", until, r);
		while (get_file(path) < pass)
			nanosleep(&(struct timespec){ .tv_nsec = 1000 * 1000 }, NULL);
	}
	if (rank == 0 && pass > 2) {
		/* Every rank read it before it reached this pass's barrier. */
		snprintf(path, sizeof(path), "%s.d%d", until, pass - 2);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s.d%d", until, pass);
	if (rank == 0)
		put_file(path, access(until, F_OK) ? "0\n" : "1\n");
	while ((d = get_file(path)) < 0)
		nanosleep(&(struct timespec){ .tv_nsec = 1000 * 1000 }, NULL);
	return d == 1;
}

static int parse_size(const char *v, size_t *out)
{
	uint64_t x;

	if (emu_parse_size(v, &x))
		return -EINVAL;
	*out = (size_t)x;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "op", 1, 0, 'o' }, { "min-bytes", 1, 0, 'b' }, { "max-bytes", 1, 0, 'e' },
		{ "factor", 1, 0, 'f' }, { "iters", 1, 0, 'n' }, { "warmup", 1, 0, 'w' },
		{ "ngpus", 1, 0, 'g' }, { "check", 1, 0, 'c' }, { "csv", 1, 0, 'v' },
		{ "label", 1, 0, 'l' }, { "no-check", 0, 0, 'C' }, { "serve", 0, 0, 'S' },
		{ "repeat", 1, 0, 'r' }, { "rank", 1, 0, 'R' }, { "nranks", 1, 0, 'N' },
		{ "id-file", 1, 0, 'I' }, { "device", 1, 0, 'd' }, { "until-file", 1, 0, 'u' },
		{ 0, 0, 0, 0 },
	};
	/* Ranks on their own hosts joined over sockets, as ranks.sh makes them. */
	struct stub s = { .topo = { .n_ranks = 2, .n_nodes = 2, .host_net = true }, .rank = 0,
			  .gpu_ns = 1000000 };
	size_t lo_b = 8, hi_b = 1 << 30;
	double factor = 2;
	int iters = 20, warmup = 5, repeat = 0, c, ngpus = 0, serve = 0;
	unsigned ops = 1u << 4;
	const char *until = NULL, *csv = NULL, *label = "", *id = NULL, *tuner, *prof;
	char err[512];
	FILE *cf = NULL;

	while ((c = getopt_long(argc, argv, "b:e:f:n:w:g:c:", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!strcmp(optarg, "all")) {
				ops = 31;
				break;
			}
			ops = 0;
			for (char *t = strtok(optarg, ","); t; t = strtok(NULL, ",")) {
				if (coll_of(t) < 0) {
					fprintf(stderr, "sweep_stub: unknown op '%s'\n", t);
					return 2;
				}
				ops |= 1u << coll_of(t);
			}
			break;
		case 'b': parse_size(optarg, &lo_b); break;
		case 'e': parse_size(optarg, &hi_b); break;
		case 'f': factor = atof(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		case 'g': ngpus = atoi(optarg); break;
		case 'v': csv = optarg; break;
		case 'l': label = optarg; break;
		case 'S': serve = 1; break;
		case 'r': repeat = atoi(optarg); break;
		case 'R': s.rank = atoi(optarg); break;
		case 'N': s.topo.n_ranks = s.topo.n_nodes = atoi(optarg); break;
		case 'I': id = optarg; break;
		case 'u': until = optarg; break;
		default: break;
		}
	}
	if (ngpus > 0)
		s.topo.n_ranks = ngpus, s.topo.n_nodes = 1;
	if (!repeat)
		repeat = until ? 1 << 30 : 1;
	(void)id;
	/*
	 * Each rank its own host's process: the tuner and profiler as NCCL loads
	 * them, falling back to the net plugin's library as NCCL does.
	 */
	tuner = getenv("NCCL_TUNER_PLUGIN") ? getenv("NCCL_TUNER_PLUGIN") : getenv("NCCL_NET_PLUGIN");
	prof = getenv("NCCL_PROFILER_PLUGIN") ? getenv("NCCL_PROFILER_PLUGIN") : getenv("NCCL_NET_PLUGIN");
	if (tuner && !emu_open(&s.tp, EMU_TUNER, tuner, 5, err, sizeof(err)))
		emu_tuner_init(&s.tu, &s.tp, 0x5707000000000001ull, &s.topo, NULL);
	if (prof && !emu_open(&s.pp, EMU_PROFILER, prof, 5, err, sizeof(err)) &&
	    s.pp.version == 5) {
		s.p5 = s.pp.table;
		if (s.p5->init(&s.pctx, 0x5707000000000001ull, &s.mask, "stub", s.topo.n_nodes,
			       s.topo.n_ranks, s.rank, NULL))
			s.p5 = NULL;
	}
	if (serve) {
		char line[256], op[32];
		unsigned long long bytes;
		int it, wu;

		printf("# stub (no GPU), rank %d of %d\nready %d\n", s.rank, s.topo.n_ranks, s.topo.n_ranks);
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			double us = 0;

			if (sscanf(line, "%31s %llu %d %d", op, &bytes, &it, &wu) != 4 || coll_of(op) < 0) {
				printf("err bad request\n");
			} else {
				for (int i = 0; i < it + wu; i++)
					us = one(&s, coll_of(op), bytes);
				printf("ok %llu %.3f 0\n", bytes, us);
			}
			fflush(stdout);
		}
		goto out;
	}
	if (csv && s.rank == 0)
		cf = fopen(csv, "a");
	printf("# NCCL 0.0.0 (stub, no GPU), %d rank(s) (1 in this process, pid %d)\n", s.topo.n_ranks,
	       (int)getpid());
	fflush(stdout);
	for (int rep = 0; rep < repeat; rep++) {
		for (int op = 0; op < 5; op++) {
			if (!(ops & (1u << op)))
				continue;
			for (double b = (double)lo_b; b <= (double)hi_b; b *= factor) {
				/* Whole elements per rank, as nccl_sweep rounds (AllGather, ReduceScatter). */
				uint64_t per = op == 2 || op == 3 ? 4ull * (uint64_t)s.topo.n_ranks : 4;
				uint64_t bytes = (uint64_t)b / per * per;
				double us = 0;

				if (!bytes)
					continue;
				for (int i = 0; i < warmup + iters; i++)
					us = one(&s, op, bytes);
				printf("  %12llu %10.2f (model)\n", (unsigned long long)bytes, us);
				fflush(stdout);
				if (rep == 0 && cf)
					fprintf(cf, "%s,%s,%d,%zu,%.3f,%.3f,%.3f,0\n", label, op_names[op],
						s.topo.n_ranks, (size_t)b, us, b / (us * 1e3), b / (us * 1e3));
				/* Roughly the pace of ranks sharing a GPU, so operators can act mid-job. */
				nanosleep(&(struct timespec){ .tv_nsec = 2 * 1000 * 1000 }, NULL);
			}
		}
		if (until) {
			one(&s, 0, 4); /* the 4-byte Broadcast that carries rank 0's verdict */
			if (until_reached(until, s.rank, s.topo.n_ranks, rep + 1))
				break;
		}
	}
	printf("# Out of bounds values : 0 OK\n");
out:
	if (cf)
		fclose(cf);
	if (s.p5)
		s.p5->finalize(s.pctx);
	if (s.tu.ctx)
		emu_tuner_fini(&s.tu);
	return 0;
}
