/*
 * emu.c - the NCCL emulator's plugin loading and tuner calls (see emu.h;
 * the cost model is in emu_model.c).
 */
#include "emu.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- loading ---------------------------------------------------------------- */

static const char *const kind_names[] = { "tuner", "profiler", "env" };
static const char *const sym_fmt[] = { "ncclTunerPlugin_v%d", "ncclProfiler_v%d", "ncclEnvPlugin_v%d" };
static const int min_version[] = { 2, 1, 1 };

int emu_open(struct emu_plugin *p, enum emu_kind kind, const char *value, int max_version,
	     char *err, size_t errlen)
{
	char name[512];

	memset(p, 0, sizeof(*p));
	p->kind = kind;
	if (!value || !*value) {
		snprintf(name, sizeof(name), "libnccl-%s.so", kind_names[kind]);
		value = name;
	}
	p->dl = dlopen(value, RTLD_NOW | RTLD_LOCAL);
	if (!p->dl && !strchr(value, '/') &&
	    !(strncmp(value, "lib", 3) == 0 && strlen(value) > 3 &&
	      !strcmp(value + strlen(value) - 3, ".so"))) {
		char retry[600];
		int n = snprintf(retry, sizeof(retry), "libnccl-%s-%s.so", kind_names[kind], value);

		if (n > 0 && (size_t)n < sizeof(retry))
			p->dl = dlopen(retry, RTLD_NOW | RTLD_LOCAL);
	}
	if (!p->dl) {
		snprintf(err, errlen, "dlopen %s: %s", value, dlerror());
		return -ENOENT;
	}
	for (int v = max_version; v >= min_version[kind]; v--) {
		char sym[64];

		snprintf(sym, sizeof(sym), sym_fmt[kind], v);
		p->table = dlsym(p->dl, sym);
		if (p->table) {
			p->version = v;
			return 0;
		}
	}
	snprintf(err, errlen, "%s: no %s symbol up to v%d", value, kind_names[kind], max_version);
	dlclose(p->dl);
	p->dl = NULL;
	return -ENOENT;
}

void emu_close(struct emu_plugin *p)
{
	/* EMU_NO_DLCLOSE=1 keeps the library mapped so leak reports have symbols. */
	if (p->dl && !getenv("EMU_NO_DLCLOSE"))
		dlclose(p->dl);
	memset(p, 0, sizeof(*p));
}

int emu_load_status(const struct emu_plugin *p, unsigned back, struct ncclbpf_load_status *out)
{
	const ncclbpf_status_v1_t *st = p->dl ? dlsym(p->dl, NCCLBPF_STATUS_SYMBOL_V1) : NULL;

	if (!st || !st->loadStatus)
		return -ENOSYS;
	return st->loadStatus(back, out, sizeof(*out));
}

/* ---- tuner ------------------------------------------------------------------ */

int emu_tuner_init(struct emu_tuner *t, const struct emu_plugin *pl, uint64_t comm_id,
		   const struct emu_topo *topo, emu_logger_t logger)
{
	nbpf_nvl_domain_info_v5_t nvl = { topo->n_nodes, topo->n_ranks / (topo->n_nodes ? topo->n_nodes : 1),
					  topo->n_ranks / (topo->n_nodes ? topo->n_nodes : 1) };
	/* NCCL's defaults would be here; the plugin leaves them alone. */
	static const nbpf_tuner_constants_v5_t c0;
	static const nbpf_tuner_constants_v7_t c70;
	nbpf_tuner_constants_v5_t c = c0;
	nbpf_tuner_constants_v7_t c7 = c70;
	size_t nr = (size_t)topo->n_ranks, nn = (size_t)topo->n_nodes;

	t->pl = pl;
	t->ctx = NULL;
	switch (pl->version) {
	case 2: return ((const nbpf_tuner_v2_t *)pl->table)->init(nr, nn, logger, &t->ctx);
	case 3: return ((const nbpf_tuner_v3_t *)pl->table)->init(nr, nn, logger, &t->ctx);
	case 4: return ((const nbpf_tuner_v4_t *)pl->table)->init(nr, nn, logger, &t->ctx);
	case 5: return ((const nbpf_tuner_v5_t *)pl->table)->init(&t->ctx, comm_id, nr, nn, logger, &nvl, &c);
	case 6: return ((const nbpf_tuner_v6_t *)pl->table)->init(&t->ctx, comm_id, nr, nn, logger, &nvl, &c);
	case 7: return ((const nbpf_tuner_v7_t *)pl->table)->init(&t->ctx, comm_id, nr, nn, logger, &nvl, &c7);
	}
	return NBPF_NCCL_INVALID_ARGUMENT;
}

int emu_tuner_fini(struct emu_tuner *t)
{
	int r = NBPF_NCCL_INVALID_ARGUMENT;

	switch (t->pl->version) {
	case 2: r = ((const nbpf_tuner_v2_t *)t->pl->table)->destroy(t->ctx); break;
	case 3: r = ((const nbpf_tuner_v3_t *)t->pl->table)->destroy(t->ctx); break;
	case 4: r = ((const nbpf_tuner_v4_t *)t->pl->table)->destroy(t->ctx); break;
	case 5: r = ((const nbpf_tuner_v5_t *)t->pl->table)->finalize(t->ctx); break;
	case 6: r = ((const nbpf_tuner_v6_t *)t->pl->table)->finalize(t->ctx); break;
	case 7: r = ((const nbpf_tuner_v7_t *)t->pl->table)->finalize(t->ctx); break;
	}
	t->ctx = NULL;
	return r;
}

/* v6+: getChunkSize for each part of the collective NCCL plans (emu_chunk.c). */
static int chunk_calls(struct emu_tuner *t, const struct emu_topo *topo, int coll,
		       uint64_t n_bytes, struct emu_decision *d)
{
	/* v6 and v7 share the slot (pinned in abi_tuner.h). */
	const nbpf_tuner_v6_t *tab = t->pl->table;

	d->n_chunks = emu_chunk_calls(topo, coll, n_bytes, d->algo, d->proto, d->n_channels,
				      d->chunks);
	for (int i = 0; i < d->n_chunks; i++) {
		const struct emu_chunk_call *c = &d->chunks[i];
		size_t answer = c->nccl_chunk;

		if (tab->getChunkSize) {
			int r = tab->getChunkSize(t->ctx, coll, c->n_bytes, d->algo, d->proto,
						  c->n_channels, &answer);

			if (r)
				return r;
		}
		d->chunk[i] = emu_chunk_final(d->proto, c->max_chunk, answer);
	}
	return NBPF_NCCL_SUCCESS;
}

int emu_tuner_call(struct emu_tuner *t, const struct emu_topo *topo, int coll,
		   uint64_t n_bytes, struct emu_decision *d)
{
	float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS];
	int nch = 0, r = NBPF_NCCL_INVALID_ARGUMENT;

	emu_cost_table(topo, coll, n_bytes, table);
	emu_pick(table, &d->nccl_algo, &d->nccl_proto);
	switch (t->pl->version) {
	case 2: {
		/* NCCL's v2 adaptor: flags from the table; the answer becomes a 0.0 cell. */
		int cn = table[3][2] != NBPF_NCCL_ALGO_PROTO_IGNORE;
		int nv = table[4][2] != NBPF_NCCL_ALGO_PROTO_IGNORE || table[5][2] != NBPF_NCCL_ALGO_PROTO_IGNORE;
		int a = -1, p = -1;

		r = ((const nbpf_tuner_v2_t *)t->pl->table)->getCollInfo(t->ctx, coll, n_bytes, cn, nv, 1,
									 &a, &p, &nch);
		if (a >= 0 && a < NBPF_NCCL_NUM_ALGORITHMS && p >= 0 && p < NBPF_NCCL_NUM_PROTOCOLS &&
		    table[a][p] != NBPF_NCCL_ALGO_PROTO_IGNORE)
			table[a][p] = 0.0f;
		break;
	}
	case 3:
		r = ((const nbpf_tuner_v3_t *)t->pl->table)->getCollInfo(t->ctx, coll, n_bytes, 1,
									 (float **)table, 7, 3, &nch);
		break;
	case 4:
		r = ((const nbpf_tuner_v4_t *)t->pl->table)->getCollInfo(t->ctx, coll, n_bytes, 1,
									 (float **)table, 7, 3, 0, &nch);
		break;
	case 5:
		r = ((const nbpf_tuner_v5_t *)t->pl->table)->getCollInfo(t->ctx, coll, n_bytes, 1,
									 (float **)table, 7, 3, 0, &nch);
		break;
	case 6:
		r = ((const nbpf_tuner_v6_t *)t->pl->table)->getCollInfo(t->ctx, coll, n_bytes, 1,
									 (float **)table, 7, 3, 0, &nch);
		break;
	case 7:
		r = ((const nbpf_tuner_v7_t *)t->pl->table)->getCollInfo(t->ctx, coll, n_bytes, 1,
									 (float **)table, 7, 3, 0, &nch);
		break;
	}
	emu_pick(table, &d->algo, &d->proto);
	d->n_channels = nch;
	d->nccl_channels = emu_channels(topo, d->nccl_algo);
	d->n_chunks = 0;
	if (!r && t->pl->version >= 6)
		r = chunk_calls(t, topo, coll, n_bytes, d);
	return r;
}

/* ---- names ------------------------------------------------------------------ */

static const char *const algo_names[] = { "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
					  "NVLS", "NVLS_TREE", "PAT" };
static const char *const proto_names[] = { "LL", "LL128", "SIMPLE" };
static const char *const coll_names[] = { "Broadcast", "Reduce", "AllGather", "ReduceScatter",
					  "AllReduce" };

const char *emu_algo_name(int a) { return a >= 0 && a < 7 ? algo_names[a] : "NONE"; }
const char *emu_proto_name(int p) { return p >= 0 && p < 3 ? proto_names[p] : "NONE"; }
const char *emu_coll_name(int c) { return c >= 0 && c < 5 ? coll_names[c] : "?"; }

int emu_coll_from_name(const char *s)
{
	for (int i = 0; s && i < 5; i++)
		if (!strcasecmp(s, coll_names[i]))
			return i;
	return -1;
}

int emu_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return -EINVAL;
		}
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}
