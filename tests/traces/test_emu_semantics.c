/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_emu_semantics.c - the emulator presents collectives to the plugin
 * with NCCL's semantics, checked through the same recorder and the same
 * join that check real NCCL (bench/gpu/realnccl.sh): an emulated job runs
 * with libncclbpf-rec.so between it and the plugin, and every collective
 * of every rank must show
 *   - the Coll's count x type size (x ranks for AllGather and
 *     ReduceScatter: NCCL counts one rank's part there) equal to the
 *     tuner's nBytes for the same call (the emulator passed the tuner's
 *     total as the count, so `top` showed ~8x AllGather bandwidth);
 *   - what ran equal to what the tuner decided, on every rank;
 *   - one KernelCh per channel the Coll announces, started after the Coll
 *     stopped (NCCL stops a Coll once enqueued; its kernel runs later);
 *   - one Group, one GroupApi and one CollApi event per collective, and
 *     Broadcast and AllGather counted in bytes (ncclInt8), as NCCL 2.28
 *     raises them.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "emulator/emu_job.h"
#include "emulator/emu_trace.h"

/* The one trace file the recorder wrote into dir. */
static int find_trace(const char *dir, char *out, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "trace.", 6)) {
			snprintf(out, n, "%s/%s", dir, e->d_name);
			found++;
		}
	if (d)
		closedir(d);
	return found == 1 ? 0 : -ENOENT;
}

static void rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4200];

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

int main(void)
{
	static const struct emu_job_step steps[] = {
		{ 4, 8 }, { 2, 4096 }, { 3, 4096 }, { 4, 1 << 20 }, { 2, 1 << 20 },
		{ 3, 1 << 20 }, { 2, 64 << 20 }, { 3, 64 << 20 }, { 4, 256 << 20 },
	};
	char dir[] = "/tmp/ncclbpf-emu-sem.XXXXXX", path[4200], err[512];
	struct emu_job_opts o = {
		.sz = sizeof(o), .plugin = EMU_REC,
		.policy = EMU_POLICY_DIR "/size_aware.bpf.o:" EMU_POLICY_DIR "/latency_hist.bpf.o",
		.topo = { .n_ranks = 4, .n_nodes = 4 }, .steps = steps,
		.n_steps = sizeof(steps) / sizeof(steps[0]), .collectives = 3 * 9,
	};
	struct emu_job_stats st;
	struct emu_trace t;
	struct emu_trace_comm *c = NULL;
	size_t n = 0;

	if (!mkdtemp(dir))
		return 1;
	setenv("NCCLBPF_RECORD_DIR", dir, 1);
	setenv("NCCLBPF_RECORD_TARGET", EMU_PLUGIN, 1);
	CHECK_MSG(!emu_job_run(&o, &st, err, sizeof(err)), "%s", err);
	CHECK_EQ_U64(st.diverged, 0);
	CHECK(!find_trace(dir, path, sizeof(path)));
	CHECK_MSG(!emu_trace_load(path, &t, err, sizeof(err)), "%s", err);
	CHECK(!emu_trace_comms(&t, &c, &n));
	CHECK_EQ_U64(n, 4);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_U64(c[i].n_tuner_calls, 27);
		CHECK_EQ_U64(c[i].n_prof_colls, 27);
		CHECK_EQ_U64(c[i].starts[0], 27); /* Group */
		CHECK_EQ_U64(c[i].starts[8], 27); /* GroupApi */
		CHECK_EQ_U64(c[i].starts[9], 27); /* CollApi */
		for (size_t k = 0; k < c[i].n_colls; k++) {
			const struct emu_trace_coll *x = &c[i].colls[k];
			uint64_t per = x->count * (uint64_t)x->dsize;

			CHECK(x->have_coll);
			CHECK_EQ_U64(x->dsize, x->coll == 0 || x->coll == 2 ? 1 : 4);
			CHECK_MSG((x->coll == 2 || x->coll == 3 ? per * 4 : per) == x->bytes,
				  "rank %d call %zu: coll %d count %llu x %d for %llu tuner bytes", c[i].rank,
				  k, x->coll, (unsigned long long)x->count, x->dsize,
				  (unsigned long long)x->bytes);
			CHECK(x->ran_algo == x->dec_algo && x->ran_proto == x->dec_proto);
			CHECK_MSG(x->kch == x->ran_nch, "rank %d call %zu: %d KernelCh for %d channels",
				  c[i].rank, k, x->kch, x->ran_nch);
			CHECK_MSG(x->kch_after_stop == x->kch, "rank %d call %zu: %d of %d KernelCh "
				  "before the Coll stopped", c[i].rank, k, x->kch - x->kch_after_stop, x->kch);
			CHECK_EQ_U64(x->kch_stop_states, x->kch);
			CHECK(x->nch_in == 0); /* NCCL 2.28 passes nMaxChannels = 0 */
			/* Every rank ran the same as rank 0's view. */
			CHECK(x->ran_algo == c[0].colls[k].ran_algo && x->ran_nch == c[0].colls[k].ran_nch);
		}
	}
	emu_trace_comms_free(c, n);
	emu_trace_free(&t);
	rm_dir(dir);
	return check_summary("traces_emu_semantics");
}
