/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_traces.c - the recorded NCCL jobs under tests/traces/nccl-VERSION/ as
 * fixtures (README.md there says where each comes from).
 *
 *   traces_replay DIR     (a) the plugin replays every rank's trace: the
 *                         same NCCL calls with the same arguments (cost
 *                         tables, descriptors, states, in the order NCCL
 *                         made them), with the trace's policy; its
 *                         answers must be the recorded ones (tuner edits
 *                         and channels, profiler mask, return codes), and
 *                         when coll_stats is loaded its maps must count
 *                         every Coll under the algorithm and protocol NCCL
 *                         reported and the tuner's bytes.
 *   traces_emulator DIR   (b) the emulator, given the trace's collectives
 *                         and shape, presents them as NCCL did: the same
 *                         offered cells (cost table pattern), nChannels
 *                         passed in, Coll count semantics, KernelCh per
 *                         channel after the Coll's stop; and a policy that
 *                         decides from the offered cells alone
 *                         (force_cells) decides the same, call by call.
 *
 * Net calls are not replayed: NCCL's net call sequence needs a peer
 * (tests/net drives our transport with one); the traces keep them as a
 * record of what NCCL does (sizes, tags, NULL requests, test() polls).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "emulator/emu.h"
#include "emulator/emu_job.h"
#include "emulator/emu_trace.h"
#include "ncclbpf/runtime.h"

#define MAX_RANKS 16

/* The rank<N>.txt files of dir, in rank order. */
static int rank_files(const char *dir, char paths[MAX_RANKS][4200])
{
	int n = 0;

	for (int r = 0; r < MAX_RANKS; r++) {
		snprintf(paths[n], sizeof(paths[n]), "%s/rank%d.txt", dir, r);
		if (access(paths[n], R_OK))
			break;
		n++;
	}
	return n;
}

/* The trace's policy ("PAYLOAD/x/name.bpf.o:...") as the build's objects; "" none. */
static int local_policy(const char *rec, char *out, size_t n)
{
	char buf[1024], *save = NULL;
	size_t o = 0;

	out[0] = 0;
	snprintf(buf, sizeof(buf), "%s", rec);
	for (char *t = strtok_r(buf, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
		const char *base = strrchr(t, '/') ? strrchr(t, '/') + 1 : t;
		static const char *const dirs[] = { EMU_POLICY_DIR, EMU_LANE_DIR };
		char p[2048] = "";

		for (size_t d = 0; d < 2; d++) {
			snprintf(p, sizeof(p), "%s/%s", dirs[d], base);
			if (!access(p, R_OK))
				break;
			p[0] = 0;
		}
		if (!p[0])
			return -ENOENT;
		o += (size_t)snprintf(out + o, n - o, "%s%s", o ? ":" : "", p);
	}
	return 0;
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

/* ---- (a) replay ------------------------------------------------------------- */

struct hmap {
	uint64_t rec, ours;
};

/* Handle the plugin gave for a recorded one (0 unknown); open addressing. */
static uint64_t *hslot(struct hmap *m, size_t cap, uint64_t rec, bool insert)
{
	size_t i = (size_t)((rec ^ rec >> 29) * 0x9e3779b97f4a7c15ull) & (cap - 1);

	for (size_t k = 0; rec && k < cap; k++, i = (i + 1) & (cap - 1)) {
		if (m[i].rec == rec)
			return &m[i].ours;
		if (!m[i].rec) {
			if (!insert)
				return NULL;
			m[i].rec = rec;
			return &m[i].ours;
		}
	}
	return NULL;
}

struct coll_key {
	uint32_t coll;
	int32_t algo, proto;
	uint32_t pad;
};

/* coll_stats's maps against what the trace says NCCL ran. */
static void check_coll_stats(const char *map_dir, const struct emu_trace_comm *c)
{
	struct ncclbpf_map *calls = NULL, *bytes = NULL;
	DIR *d = opendir(map_dir);
	struct dirent *e;
	uint64_t want_calls = 0, got_calls = 0, want_bytes = 0, got_bytes = 0;
	struct coll_key key, next;
	int n_keys = 0;

	while (d && (e = readdir(d))) {
		struct ncclbpf_map *m = NULL;
		char p[4200];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", map_dir, e->d_name);
		if (ncclbpf_map__open_path(p, false, &m))
			continue;
		if (!strcmp(ncclbpf_map__name(m), "coll_calls") && !calls)
			calls = m;
		else if (!strcmp(ncclbpf_map__name(m), "coll_bytes") && !bytes)
			bytes = m;
		else
			ncclbpf_map__put(m);
	}
	if (d)
		closedir(d);
	CHECK_MSG(calls && bytes, "coll_stats maps in %s", map_dir);
	if (!calls || !bytes)
		goto out;
	/* Every (coll, algo, proto) key against the joined Colls, and the totals. */
	for (int have = ncclbpf_map__next_key(calls, NULL, &next); !have;
	     have = ncclbpf_map__next_key(calls, &key, &next)) {
		uint64_t v = 0, b = 0, wc = 0, wb = 0;

		key = next;
		ncclbpf_map__lookup(calls, &key, &v);
		ncclbpf_map__lookup(bytes, &key, &b);
		for (size_t k = 0; k < c->n_colls; k++) {
			const struct emu_trace_coll *x = &c->colls[k];

			if (x->have_coll && (uint32_t)x->coll == key.coll && x->ran_algo == key.algo &&
			    x->ran_proto == key.proto) {
				wc++;
				wb += x->bytes;
			}
		}
		CHECK_MSG(v == wc && b == wb, "coll %u %s/%s: %llu calls %llu B, trace %llu calls %llu B",
			  key.coll, emu_algo_name(key.algo), emu_proto_name(key.proto),
			  (unsigned long long)v, (unsigned long long)b, (unsigned long long)wc,
			  (unsigned long long)wb);
		got_calls += v;
		got_bytes += b;
		n_keys++;
	}
	for (size_t k = 0; k < c->n_colls; k++)
		if (c->colls[k].have_coll) {
			want_calls++;
			want_bytes += c->colls[k].bytes;
		}
	CHECK_EQ_U64(got_calls, want_calls);
	CHECK_EQ_U64(got_bytes, want_bytes);
	CHECK(n_keys > 0);
out:
	if (calls)
		ncclbpf_map__put(calls);
	if (bytes)
		ncclbpf_map__put(bytes);
}

/* Replays one rank's trace into the plugin; returns tuner calls compared. */
static int replay_rank(const char *path)
{
	char err[512], policy[4096], map_dir[] = "/tmp/ncclbpf-replay.XXXXXX";
	char s_func[64], s_dtype[64], s_algo[64], s_proto[64];
	struct emu_plugin tp = { 0 }, pp = { 0 };
	const nbpf_tuner_v5_t *t5;
	const nbpf_profiler_v5_t *p5;
	struct { long long id; void *ctx; } tctx[8];
	/* The plugin keeps the mask's address (NCCL's is process-global): it lives as long as the context. */
	struct { long long id; void *ctx; int mask; } pctx[8];
	int nt = 0, np = 0, compared = 0;
	struct hmap *hm = calloc(1 << 16, sizeof(*hm));
	struct emu_trace t;
	struct emu_trace_comm *comms = NULL;
	size_t n_comms = 0;
	nbpf_tuner_constants_v5_t cst;
	long long pending_ctx = -1;
	float table[21];
	int nch = 0;
	bool coll_stats, answered = false;

	if (!hm || emu_trace_load(path, &t, err, sizeof(err))) {
		CHECK_MSG(0, "%s", err);
		free(hm);
		return 0;
	}
	CHECK(!emu_trace_comms(&t, &comms, &n_comms));
	CHECK_MSG(!local_policy(t.policy, policy, sizeof(policy)), "policy %s", t.policy);
	coll_stats = strstr(policy, "coll_stats") != NULL;
	/* Recorded with no plugin behind the recorder: the mask and the handles were its own. */
	answered = strcmp(t.target, "none") != 0;
	if (!mkdtemp(map_dir))
		goto out;
	setenv("NCCLBPF_MAP_DIR", map_dir, 1);
	setenv("NCCLBPF_CTL", "0", 1);
	if (policy[0])
		setenv("NCCLBPF_POLICY", policy, 1);
	else
		unsetenv("NCCLBPF_POLICY");
	if (emu_open(&tp, EMU_TUNER, EMU_PLUGIN, 5, err, sizeof(err)) ||
	    emu_open(&pp, EMU_PROFILER, EMU_PLUGIN, 5, err, sizeof(err))) {
		CHECK_MSG(0, "%s", err);
		goto out;
	}
	t5 = tp.table;
	p5 = pp.table;
	memset(&cst, 0, sizeof(cst));
	for (size_t i = 0; i < t.n; i++) {
		const struct emu_trace_ev *e = &t.ev[i];
		long long ctx = emu_trace_int(e, "ctx", -1);
		void **cp = NULL;

		for (int k = 0; k < nt && e->kind[0] == 't'; k++)
			if (tctx[k].id == ctx)
				cp = &tctx[k].ctx;
		for (int k = 0; k < np && e->kind[0] == 'p'; k++)
			if (pctx[k].id == ctx)
				cp = &pctx[k].ctx;
		if (!strcmp(e->kind, "tinit") && nt < 8) {
			nbpf_nvl_domain_info_v5_t nvl = { 0 };
			const char *v = emu_trace_get(e, "nvl", NULL);

			if (v)
				sscanf(v, "%d,%d,%d", &nvl.nNvlDomains, &nvl.minRanksPerNvlDomain,
				       &nvl.maxRanksPerNvlDomain);
			tctx[nt].id = ctx;
			CHECK_EQ_U64(t5->init(&tctx[nt].ctx, emu_trace_u64(e, "comm", 0),
					      (size_t)emu_trace_int(e, "ranks", 0),
					      (size_t)emu_trace_int(e, "nodes", 0), NULL, &nvl, &cst),
				     emu_trace_int(e, "rc", 0));
			nt++;
		} else if (!strcmp(e->kind, "tcall") && cp) {
			int n = emu_trace_floats(e, "cost", table, 21);

			CHECK_EQ_U64(n, 21);
			nch = (int)emu_trace_int(e, "nch", 0);
			pending_ctx = ctx;
			{
				float before[21];
				char edit[400];
				size_t o = 0;
				const char *rec_edit;
				size_t len;
				int rc;

				memcpy(before, table, sizeof(before));
				rc = t5->getCollInfo(*cp, (int)emu_trace_int(e, "coll", 0),
						     (size_t)emu_trace_u64(e, "bytes", 0),
						     (int)emu_trace_int(e, "pipe", 1), (float **)table, 7, 3,
						     (int)emu_trace_int(e, "reg", 0), &nch);
				/* The recorded answer is the next tret of this context. */
				for (size_t j = i + 1; j < t.n; j++) {
					const struct emu_trace_ev *r = &t.ev[j];

					if (strcmp(r->kind, "tret") || emu_trace_int(r, "ctx", -1) != pending_ctx)
						continue;
					edit[0] = 0;
					for (int c = 0; c < 21 && o < sizeof(edit); c++)
						if (memcmp(&table[c], &before[c], sizeof(float)))
							o += (size_t)snprintf(edit + o, sizeof(edit) - o, "%s%d:%.9g",
									      o ? "," : "", c, table[c]);
					rec_edit = emu_trace_get(r, "edit", &len);
					CHECK_EQ_U64(rc, emu_trace_int(r, "rc", 0));
					CHECK_MSG(nch == emu_trace_int(r, "nch", -1), "%s line %zu: nch %d",
						  path, j, nch);
					CHECK_MSG(rec_edit && (o ? strlen(edit) == len && !strncmp(edit, rec_edit, len)
								 : len == 1 && *rec_edit == '-'),
						  "%s call %d: edit %s, recorded %.*s", path, compared,
						  o ? edit : "-", rec_edit ? (int)len : 1, rec_edit ? rec_edit : "?");
					compared++;
					break;
				}
			}
		} else if (!strcmp(e->kind, "pinit") && np < 8) {
			int *mask = &pctx[np].mask;
			char name[64];

			*mask = (int)emu_trace_int(e, "mask_in", 0);
			pctx[np].id = ctx;
			CHECK_EQ_U64(p5->init(&pctx[np].ctx, emu_trace_u64(e, "comm", 0), mask,
					      emu_trace_str(e, "name", name, sizeof(name), "-"),
					      (int)emu_trace_int(e, "nodes", 0),
					      (int)emu_trace_int(e, "ranks", 0),
					      (int)emu_trace_int(e, "rank", 0), NULL),
				     emu_trace_int(e, "rc", 0));
			if (answered)
				CHECK_EQ_U64(*mask, emu_trace_int(e, "mask", -1));
			np++;
		} else if (!strcmp(e->kind, "pstart") && cp) {
			nbpf_prof_descr_v5_t d = { 0 };
			uint64_t *ours, *par;
			void *h = NULL;

			d.type = emu_trace_u64(e, "type", 0);
			d.rank = (int)emu_trace_int(e, "rank", -1);
			par = hslot(hm, 1 << 16, emu_trace_u64(e, "parent", 0), false);
			d.parentObj = par ? (void *)(uintptr_t)*par : NULL;
			if (d.type == NBPF_PROF_COLL) {
				d.coll.seqNumber = emu_trace_u64(e, "seq", 0);
				d.coll.func = emu_trace_str(e, "func", s_func, sizeof(s_func), "");
				d.coll.count = emu_trace_u64(e, "count", 0);
				d.coll.root = (int)emu_trace_int(e, "root", 0);
				d.coll.datatype = emu_trace_str(e, "dtype", s_dtype, sizeof(s_dtype), "");
				d.coll.nChannels = (uint8_t)emu_trace_int(e, "nch", 0);
				d.coll.nWarps = (uint8_t)emu_trace_int(e, "warps", 0);
				d.coll.algo = emu_trace_str(e, "algo", s_algo, sizeof(s_algo), "");
				d.coll.proto = emu_trace_str(e, "proto", s_proto, sizeof(s_proto), "");
			} else if (d.type == NBPF_PROF_KERNEL_CH) {
				d.kernelCh.channelId = (uint8_t)emu_trace_int(e, "ch", 0);
				d.kernelCh.pTimer = emu_trace_u64(e, "ptimer", 0);
			}
			CHECK_EQ_U64(p5->startEvent(*cp, &h, &d), emu_trace_int(e, "rc", 0));
			/* A handle where NCCL got one, none where it got none. */
			if (answered)
				CHECK_MSG(!h == !emu_trace_u64(e, "h", 0), "%s line %zu: handle %p", path, i, h);
			ours = hslot(hm, 1 << 16, emu_trace_u64(e, "h", 0), true);
			if (ours)
				*ours = (uint64_t)(uintptr_t)h;
		} else if (!strcmp(e->kind, "pstate") || !strcmp(e->kind, "pstop")) {
			uint64_t *h = hslot(hm, 1 << 16, emu_trace_u64(e, "h", 0), false);
			void *hp = h ? (void *)(uintptr_t)*h : NULL;

			if (!strcmp(e->kind, "pstate")) {
				nbpf_prof_state_args_v4_t a = { 0 };

				a.kernelCh.pTimer = emu_trace_u64(e, "ptimer", emu_trace_u64(e, "arg", 0));
				CHECK_EQ_U64(p5->recordEventState(hp, (int)emu_trace_int(e, "state", 0), &a),
					     emu_trace_int(e, "rc", 0));
			} else {
				CHECK_EQ_U64(p5->stopEvent(hp), emu_trace_int(e, "rc", 0));
			}
		}
	}
	if (coll_stats && n_comms)
		check_coll_stats(map_dir, &comms[0]);
	for (int k = 0; k < np; k++)
		CHECK_EQ_U64(p5->finalize(pctx[k].ctx), 0);
	for (int k = 0; k < nt; k++)
		CHECK_EQ_U64(t5->finalize(tctx[k].ctx), 0);
out:
	if (pp.table)
		emu_close(&pp);
	if (tp.table)
		emu_close(&tp);
	rm_dir(map_dir);
	emu_trace_comms_free(comms, n_comms);
	emu_trace_free(&t);
	free(hm);
	return compared;
}

/* ---- (b) the emulator against the recording ----------------------------------- */

static uint32_t offered(const float *cost, int n)
{
	uint32_t m = 0;

	for (int i = 0; i < n; i++)
		if (cost[i] >= 0.0f)
			m |= 1u << i;
	return m;
}

/* The emulator given rank rec's collectives and shape, recorded the same way. */
static void emulate(const char *dir, const struct emu_trace *rt, const struct emu_trace_comm *rec,
		    const char *policy)
{
	char tdir[] = "/tmp/ncclbpf-emu-rec.XXXXXX", path[4200] = "", err[512];
	struct emu_job_step *steps = calloc(rec->n_colls + 1, sizeof(*steps));
	struct emu_trace_comm *c = NULL;
	struct emu_job_stats st;
	struct emu_trace t;
	size_t n = 0;
	DIR *d;
	struct dirent *e;
	bool force = strstr(policy, "force_cells") != NULL;

	if (!steps || !mkdtemp(tdir)) {
		free(steps);
		return;
	}
	for (size_t k = 0; k < rec->n_colls; k++)
		steps[k] = (struct emu_job_step){ rec->colls[k].coll, rec->colls[k].bytes };
	{
		struct emu_job_opts o = {
			.sz = sizeof(o), .plugin = EMU_REC, .policy = policy[0] ? policy : NULL,
			.topo = { .n_ranks = rec->n_ranks, .n_nodes = rec->n_nodes, .host_net = true },
			.steps = steps, .n_steps = rec->n_colls, .collectives = rec->n_colls,
		};

		bool alone = !strcmp(rt->target, "none");

		unsetenv("NCCLBPF_MAP_DIR");
		setenv("NCCLBPF_RECORD_DIR", tdir, 1);
		/* NCCL alone: the recorder answered with the mask it was given, as it did there. */
		setenv("NCCLBPF_RECORD_TARGET", alone ? "none" : EMU_PLUGIN, 1);
		for (size_t i = 0; alone && i < rt->n; i++)
			if (!strcmp(rt->ev[i].kind, "pinit")) {
				char m[32];

				setenv("NCCLBPF_RECORD_MASK", emu_trace_str(&rt->ev[i], "mask", m, sizeof(m), "0"), 1);
				break;
			}
		CHECK_MSG(!emu_job_run(&o, &st, err, sizeof(err)), "%s", err);
		unsetenv("NCCLBPF_RECORD_DIR");
		unsetenv("NCCLBPF_RECORD_MASK");
	}
	d = opendir(tdir);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "trace.", 6))
			snprintf(path, sizeof(path), "%s/%s", tdir, e->d_name);
	if (d)
		closedir(d);
	if (!path[0] || emu_trace_load(path, &t, err, sizeof(err))) {
		CHECK_MSG(0, "%s: no emulator trace", dir);
		goto out;
	}
	CHECK(!emu_trace_comms(&t, &c, &n));
	CHECK_EQ_U64(n, (uint64_t)rec->n_ranks);
	for (size_t r = 0; r < n; r++) {
		long diff_cells = 0, diff_dec = 0;

		CHECK_EQ_U64(c[r].n_colls, rec->n_colls);
		/* The events around each collective: Group, GroupApi, CollApi, Coll. */
		for (int b = 0; b < 16; b++)
			if (b == 0 || b == 1 || b == 8 || b == 9)
				CHECK_MSG(c[r].starts[b] == rec->starts[b], "%s: %llu type %#x events, NCCL %llu",
					  dir, (unsigned long long)c[r].starts[b], 1u << b,
					  (unsigned long long)rec->starts[b]);
		for (size_t k = 0; k < c[r].n_colls && k < rec->n_colls; k++) {
			const struct emu_trace_coll *x = &c[r].colls[k], *y = &rec->colls[k];
			uint64_t per = x->count * (uint64_t)x->dsize;

			CHECK(x->coll == y->coll && x->bytes == y->bytes);
			CHECK_MSG(!y->have_coll || x->dsize == y->dsize, "%s call %zu: %s counted in %d-byte "
				  "elements, NCCL %d", dir, k, emu_coll_name(x->coll), x->dsize, y->dsize);
			CHECK_EQ_U64(x->nch_in, y->nch_in);
			if (offered(x->cost, x->n_cells) != offered(y->cost, y->n_cells) && diff_cells++ < 4)
				fprintf(stderr, "%s call %zu: %s %llu B: emulator offers %#x, NCCL %#x\n",
					dir, k, emu_coll_name(x->coll), (unsigned long long)x->bytes,
					offered(x->cost, x->n_cells), offered(y->cost, y->n_cells));
			CHECK_EQ_U64(x->have_coll, y->have_coll);
			CHECK_MSG(!y->have_coll || x->count == y->count, "%s call %zu: %s %llu B: count %llu, "
				  "NCCL %llu", dir, k, emu_coll_name(x->coll), (unsigned long long)x->bytes,
				  (unsigned long long)x->count, (unsigned long long)y->count);
			CHECK((x->coll == 2 || x->coll == 3 ? per * (uint64_t)rec->n_ranks : per) == x->bytes);
			if (y->kch) { /* NCCL reported kernels: one per channel, after the Coll's stop */
				CHECK_EQ_U64(x->kch, (uint64_t)x->ran_nch);
				CHECK_EQ_U64(x->kch_after_stop > 0, y->kch_after_stop > 0);
			}
			if (force && (x->dec_algo != y->dec_algo || x->dec_proto != y->dec_proto) &&
			    diff_dec++ < 4)
				fprintf(stderr, "%s call %zu: emulator decided %s/%s, NCCL's run %s/%s\n", dir,
					k, emu_algo_name(x->dec_algo), emu_proto_name(x->dec_proto),
					emu_algo_name(y->dec_algo), emu_proto_name(y->dec_proto));
		}
		CHECK_MSG(diff_cells == 0, "%s: %ld calls with other offered cells", dir, diff_cells);
		CHECK_MSG(diff_dec == 0, "%s: %ld calls decided otherwise", dir, diff_dec);
	}
	emu_trace_comms_free(c, n);
	emu_trace_free(&t);
out:
	rm_dir(tdir);
	free(steps);
}

int main(int argc, char **argv)
{
	char paths[MAX_RANKS][4200], err[512], policy[4096];
	bool emu = argc == 3 && !strcmp(argv[1], "emulator");
	int n, played = 0;

	if (argc != 3 || (strcmp(argv[1], "replay") && !emu)) {
		fprintf(stderr, "usage: test_traces replay|emulator DIR\n");
		return 2;
	}
	n = rank_files(argv[2], paths);
	CHECK_MSG(n > 0, "no rank<N>.txt in %s", argv[2]);
	for (int r = 0; r < n; r++) {
		struct emu_trace t;
		struct emu_trace_comm *c = NULL;
		size_t nc = 0;

		if (!emu) {
			int calls = replay_rank(paths[r]);

			printf("%s: %d tuner calls replayed\n", paths[r], calls);
			CHECK_MSG(calls > 0, "%s: no tuner call replayed", paths[r]);
			continue;
		}
		/* The emulator plays every rank at once: once per job, from rank 0's view
		 * (a job may keep fewer rank files than it had ranks). */
		if (r)
			break;
		CHECK(!emu_trace_load(paths[r], &t, err, sizeof(err)));
		CHECK(!emu_trace_comms(&t, &c, &nc));
		CHECK(!local_policy(t.policy, policy, sizeof(policy)));
		for (size_t k = 0; k < nc; k++)
			if (c[k].n_tuner_calls && c[k].n_ranks >= n) {
				emulate(argv[2], &t, &c[k], policy);
				played++;
			}
		/* A job the emulator does not play would pass having checked nothing. */
		CHECK_MSG(played > 0, "%s: no communicator played", argv[2]);
		emu_trace_comms_free(c, nc);
		emu_trace_free(&t);
	}
	return check_summary(emu ? "traces_emulator" : "traces_replay");
}
