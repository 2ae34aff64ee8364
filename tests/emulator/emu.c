/*
 * emu.c - the NCCL emulator's cost model, plugin loading and tuner calls
 * (see emu.h).
 */
#include "emu.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- cost model ----------------------------------------------------------- */

/*
 * Constants in the spirit of NCCL's tuning.cc for Hopper on NVLink: base
 * latencies per algorithm/protocol (us), per-hop latencies, and bus
 * bandwidths (GB/s) per protocol.  Not NCCL's exact numbers; what matters is
 * the shape: LL wins small messages, LL128 the middle, Simple (and NVLS on
 * NVSwitch) large ones, and unsupported cells are IGNORE.
 */
static const double base_lat[NBPF_NCCL_NUM_ALGORITHMS][3] = {
	{ 6.8, 14.0, 8.4 },  /* TREE */
	{ 6.6, 14.0, 8.4 },  /* RING */
	{ 0.0, 0.0, 10.0 },  /* COLLNET_DIRECT */
	{ 0.0, 0.0, 14.0 },  /* COLLNET_CHAIN */
	{ 0.0, 0.0, 25.0 },  /* NVLS */
	{ 0.0, 0.0, 25.0 },  /* NVLS_TREE */
	{ 8.0, 14.0, 8.4 },  /* PAT */
};
static const double hop_lat_nvl[3] = { 0.6, 1.25, 3.4 };
static const double hop_lat_net[3] = { 5.0, 8.0, 14.0 };
static const double bus_bw_nvl[3] = { 60.0, 330.0, 360.0 };
static const double bus_bw_net[3] = { 12.0, 42.0, 46.0 };

static double bus_factor(int coll, int n)
{
	switch (coll) {
	case 4: return 2.0 * (n - 1) / n;               /* AllReduce */
	case 2: case 3: return (double)(n - 1) / n;     /* AllGather, ReduceScatter */
	default: return 1.0;                            /* Broadcast, Reduce */
	}
}

void emu_cost_table(const struct emu_topo *topo, int coll, uint64_t n_bytes,
		    float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS])
{
	int n = topo->n_ranks > 1 ? topo->n_ranks : 2;
	int nodes = topo->n_nodes > 0 ? topo->n_nodes : 1;
	bool multi = nodes > 1;
	double factor = bus_factor(coll, n), mb = (double)n_bytes;

	for (int a = 0; a < NBPF_NCCL_NUM_ALGORITHMS; a++)
		for (int p = 0; p < 3; p++)
			table[a][p] = NBPF_NCCL_ALGO_PROTO_IGNORE;
	for (int p = 0; p < 3; p++) {
		double hop = multi ? hop_lat_net[p] : hop_lat_nvl[p];
		double bw = multi ? bus_bw_net[p] * (p == 2 ? 1.0 : 1.0) : bus_bw_nvl[p];
		double steps = coll == 4 ? 2.0 * (n - 1) : (double)(n - 1);

		/* Ring: every collective. */
		table[1][p] = (float)(base_lat[1][p] + steps * hop * (multi ? 0.25 : 1.0) +
				      mb * factor / (1000.0 * bw));
		/* Tree: AllReduce only; log-depth latency, a little less bandwidth. */
		if (coll == 4)
			/* Within one node NCCL's tree is a chain: no latency advantage. */
			table[0][p] = (float)(base_lat[0][p] +
					      2.0 * (multi ? log2((double)nodes) + (double)(n / nodes - 1) * 0.25
							   : (double)(n - 1)) * hop +
					      mb * factor / (1000.0 * bw * (multi ? 0.95 : 0.8)));
		/* PAT: AllGather/ReduceScatter with one rank per node. */
		if ((coll == 2 || coll == 3) && multi && n == nodes)
			table[6][p] = (float)(base_lat[6][p] + log2((double)n) * hop +
					      mb * factor / (1000.0 * bw));
	}
	/* NVLS: AllReduce (and AllGather/ReduceScatter) on NVSwitch, Simple only. */
	if (topo->nvls && (coll == 4 || coll == 2 || coll == 3)) {
		double bw = multi ? bus_bw_net[2] * 1.1 : 480.0;

		if (!multi) /* across nodes NVLS runs as NVLS Tree */
			table[4][2] = (float)(base_lat[4][2] + mb * factor / (1000.0 * bw));
		else if (coll == 4)
			table[5][2] = (float)(base_lat[5][2] + 2.0 * hop_lat_net[2] +
					      mb * factor / (1000.0 * bw * 0.95));
	}
	if (topo->collnet && multi && coll == 4) {
		table[2][2] = (float)(base_lat[2][2] + mb / (1000.0 * bus_bw_net[2] * 1.8));
		table[3][2] = (float)(base_lat[3][2] + mb / (1000.0 * bus_bw_net[2] * 1.6));
	}
}

void emu_pick(const float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS],
	      int *algo, int *proto)
{
	float min = NBPF_NCCL_COST_START_MIN;

	*algo = *proto = -1;
	for (int a = 0; a < NBPF_NCCL_NUM_ALGORITHMS; a++)
		for (int p = 0; p < NBPF_NCCL_NUM_PROTOCOLS; p++) {
			float v = table[a][p];

			if (v == NBPF_NCCL_ALGO_PROTO_IGNORE)
				continue;
			if (v >= 0.0f && v < min) {
				min = v;
				*algo = a;
				*proto = p;
			}
		}
}

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
		snprintf(name, sizeof(name), "libnccl-%s-%s.so", kind_names[kind], value);
		p->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
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

/* ---- tuner ------------------------------------------------------------------ */

int emu_tuner_init(struct emu_tuner *t, const struct emu_plugin *pl, uint64_t comm_id,
		   const struct emu_topo *topo, emu_logger_t logger)
{
	nbpf_nvl_domain_info_v5_t nvl = { topo->n_nodes, topo->n_ranks / (topo->n_nodes ? topo->n_nodes : 1),
					  topo->n_ranks / (topo->n_nodes ? topo->n_nodes : 1) };
	static nbpf_tuner_constants_v5_t constants; /* NCCL's defaults would be here */
	nbpf_tuner_constants_v5_t c = constants;
	size_t nr = (size_t)topo->n_ranks, nn = (size_t)topo->n_nodes;

	t->pl = pl;
	t->ctx = NULL;
	switch (pl->version) {
	case 2: return ((const nbpf_tuner_v2_t *)pl->table)->init(nr, nn, logger, &t->ctx);
	case 3: return ((const nbpf_tuner_v3_t *)pl->table)->init(nr, nn, logger, &t->ctx);
	case 4: return ((const nbpf_tuner_v4_t *)pl->table)->init(nr, nn, logger, &t->ctx);
	case 5: return ((const nbpf_tuner_v5_t *)pl->table)->init(&t->ctx, comm_id, nr, nn, logger, &nvl, &c);
	case 6: return ((const nbpf_tuner_v6_t *)pl->table)->init(&t->ctx, comm_id, nr, nn, logger, &nvl, &c);
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
	}
	t->ctx = NULL;
	return r;
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
	}
	emu_pick(table, &d->algo, &d->proto);
	d->n_channels = nch;
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
