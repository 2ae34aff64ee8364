/*
 * emu_model.c - the emulator's cost model: the table of (algorithm x
 * protocol) times NCCL 2.28 hands a tuner plugin, computed the way NCCL
 * computes it for Hopper GPUs.
 *
 * NCCL builds the table in two stages.  At communicator creation its tune
 * model turns topology graphs (channels, per-channel bandwidth, link types)
 * and the tuner constants into a bandwidth and a latency per (collective,
 * algorithm, protocol); a cell whose bandwidth is 0 was never modelled or is
 * disabled.  Per call it turns those into a time: latency plus bytes over
 * bandwidth, with a size-dependent correction for Tree and a latency
 * penalty for multi-node Ring/Simple; a zero-bandwidth cell becomes IGNORE.
 * This file does both stages from the topology presets below; the numbers
 * are NCCL's defaults (see the constants layout in the ABI facts document),
 * the graphs are what NCCL's topology search typically finds on the
 * machines emulated (assumptions, named as such).
 */
#include "emu.h"


enum { A_TREE, A_RING, A_COLLNET_DIRECT, A_COLLNET_CHAIN, A_NVLS, A_NVLS_TREE, A_PAT };
enum { P_LL, P_LL128, P_SIMPLE };
enum { C_BROADCAST, C_REDUCE, C_ALLGATHER, C_REDUCESCATTER, C_ALLREDUCE };
enum { HW_NVLINK, HW_PCI, HW_NET };

/* NCCL's default tuner constants (us), the rows a Hopper system uses. */
static const double base_lat[7][3] = {
	{ 6.8, 14.0, 8.4 }, { 6.6, 14.0, 8.4 },     /* Tree, Ring */
	{ 0, 0, 0 }, { 0, 0, 0 },                   /* CollNet Direct, Chain */
	{ 0, 0, 0 }, { 0, 0, 0 },                   /* NVLS, NVLS Tree */
	{ 8.0, 8.0, 8.0 },                          /* PAT */
};
static const double hw_lat[3][7][3] = {
	{ /* NVLink */
	  { 0.6, 1.25, 4.0 }, { 0.6, 1.9, 3.4 }, { 0, 0, 3.7 }, { 0, 0, 2.8 },
	  { 0, 0, 25 }, { 0, 0, 25 }, { 0, 0, 4.0 } },
	{ /* PCI */
	  { 1.0, 1.9, 4.0 }, { 1.0, 2.5, 5.7 }, { 0, 0, 3.7 }, { 0, 0, 2.8 },
	  { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 4.0 } },
	{ /* network */
	  { 5.0, 8.5, 14 }, { 2.7, 4.0, 14.0 }, { 0, 0, 31 }, { 0, 0, 30 },
	  { 0, 0, 18 }, { 0, 0, 20.9 }, { 0, 0, 14 } },
};
/* LL bandwidth caps (GB/s) by node count 1 / 2 / 4+: Hopper within a node,
 * the Intel CPU row across nodes (NCCL looks at the CPU there). */
static const double ll_max_bw_hopper[3] = { 141.0, 45.0, 35.0 };
static const double ll_max_bw_intel[3] = { 39.0, 39.0, 20.4 };
/* Hopper per-channel caps (GB/s) by node count 1 / 2 / 4+. */
static const double per_ch_ring_ll128[3] = { 36.7, 36.7, 36.7 };
static const double per_ch_tree_ll128[3] = { 36.7, 36.7, 29.0 };
static const double per_ch_tree[3] = { 38.7, 41.4, 36.0 };
static const double per_ch_nvls_tree[3] = { 0.0, 57.7, 45.5 };
static const double nvls_efficiency_hopper = 0.85;
/* x86 Intel network post overhead (us); tripled for Simple. */
static const double net_overhead = 1.0;

/* NCCL's Tree/AllReduce bandwidth correction for sizes 64 B << k (k < 23). */
static const float tree_correction[3][23] = {
	{ 1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0 },
	{ 1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0 },
	{ .9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9 },
};

/*
 * One topology graph as NCCL's search reports it.  Assumed presets:
 * within an H100 NVSwitch node, Ring/Tree find 16 channels of 24 GB/s
 * (~384 GB/s bus bandwidth) and NVLS 16 channels of 30 GB/s (~480 GB/s);
 * across nodes with one 400 Gb/s NIC per GPU, two channels of 24 GB/s per
 * NIC (48 GB/s a NIC), up to 16.
 */
struct graph {
	int n_channels;
	double bw_intra, bw_inter;
};

static int log2i(uint64_t n)
{
	int l = -1;

	while (n) {
		n >>= 1;
		l++;
	}
	return l;
}

static inline double dmin(double a, double b) { return a < b ? a : b; }
static inline double dmax(double a, double b) { return a > b ? a : b; }

struct cell {
	double bw;  /* algorithm bandwidth, GB/s; 0: not offered */
	double lat; /* us */
};

/*
 * The tune model for one (collective, algorithm, protocol) of a comm with
 * n ranks on nodes nodes.  Returns bw 0 for cells NCCL never models or
 * disables (CollNet off, NVLS Tree on one node, PAT unless one GPU per
 * node, NVLS/NVLS Tree only Simple, Tree only AllReduce, ...).
 */
static struct cell tune_cell(int coll, int a, int p, int n, int nodes, bool nvls, bool host_net)
{
	struct cell c = { 0, 0 };
	int ppn_i = n / nodes, idx = nodes <= 2 ? nodes - 1 : 2;
	double ppn = (double)n / nodes;
	bool multi = nodes > 1;
	int nsteps = coll == C_ALLREDUCE ? 2 * (n - 1) :
		     (coll == C_ALLGATHER || coll == C_REDUCESCATTER) ? n - 1 : n;
	int nch_net = 2 * (ppn_i < 8 ? (ppn_i > 0 ? ppn_i : 1) : 8);
	struct graph g = multi ? (struct graph){ nch_net, 24.0, 24.0 } : (struct graph){ 16, 24.0, 24.0 };
	/* One GPU per node has no NVLink peers: intra hops count as PCI. */
	int intra_hw = ppn_i > 1 ? HW_NVLINK : HW_PCI, hw = multi ? HW_NET : intra_hw;
	double ll_max = multi ? ll_max_bw_intel[idx] : ll_max_bw_hopper[idx];
	double bw, bus, intra_lat, inter_lat;

	if (a == A_NVLS || a == A_NVLS_TREE)
		g = (struct graph){ 16, 30.0, multi ? 24.0 : 30.0 };
	/* Which cells the tune model computes at all. */
	if ((coll == C_BROADCAST || coll == C_REDUCE) && a != A_RING)
		return c;
	if ((coll == C_ALLGATHER || coll == C_REDUCESCATTER) && a != A_PAT && a != A_RING &&
	    a != A_NVLS && a != A_COLLNET_DIRECT)
		return c;
	if (coll == C_ALLREDUCE && a == A_PAT)
		return c;
	if ((a == A_NVLS || a == A_NVLS_TREE) && p != P_SIMPLE)
		return c;
	if (a == A_PAT && (p != P_SIMPLE || nodes != n))
		return c;
	/* Disabled: CollNet (collnetEnable=0, so NVLS across nodes too), NVLS Tree on
	 * one node, NVLS without NVLink SHARP enabled. */
	if (a == A_COLLNET_DIRECT || a == A_COLLNET_CHAIN || (a == A_NVLS && multi) ||
	    (a == A_NVLS_TREE && !multi))
		return c;
	if ((a == A_NVLS || a == A_NVLS_TREE) && (!nvls || ppn_i < 2))
		return c;
	if (p == P_LL128 && multi && host_net)
		return c;

	bw = nodes <= 2 ? g.bw_intra : g.bw_inter;
	if (a == A_NVLS || a == A_NVLS_TREE) {
		double ibw = g.bw_intra * nvls_efficiency_hopper * (g.n_channels - 1) / g.n_channels;
		double obw = g.bw_inter * ((nodes <= 2 && a == A_NVLS_TREE) ? 2 : 1);

		ibw *= coll == C_ALLREDUCE ? 2.0 : (ppn - 1) / ppn;
		bw = dmin(ibw, obw);
		if (a == A_NVLS_TREE)
			bw = dmin(bw, per_ch_nvls_tree[idx]);
	}
	bus = g.n_channels * bw;
	if (a == A_RING && p == P_LL)
		bus = dmin(ll_max, bus * 0.5);
	if (a == A_RING && p == P_LL128)
		bus = dmin(bus * 0.92, g.n_channels * per_ch_ring_ll128[idx]);
	if (a == A_TREE && coll == C_ALLREDUCE)
		bus = dmin(bus * 0.92, g.n_channels * per_ch_tree[idx]);
	if (a == A_TREE && p == P_LL)
		bus = dmin(bus / 3.8, ll_max);
	if (a == A_TREE && p == P_LL128)
		bus = dmin(bus * (multi ? 120.0 / 128.0 : 7.0 / 9.0), g.n_channels * per_ch_tree_ll128[idx]);
	if (a == A_PAT)
		bus *= 0.75;
	/* Bus to algorithm bandwidth; non-ring AllGather/ReduceScatter already are. */
	if (!(a != A_RING && (coll == C_ALLGATHER || coll == C_REDUCESCATTER)))
		bus *= (a == A_RING || a == A_NVLS || a == A_NVLS_TREE) ? (double)n / nsteps : 0.5;
	c.bw = bus;

	c.lat = base_lat[a][p];
	intra_lat = hw_lat[intra_hw][a][p];
	/* One GPU per node exposes the network latency fully: Tree's is used. */
	inter_lat = hw_lat[HW_NET][ppn_i == 1 ? A_TREE : a][p];
	if (a == A_RING) {
		if (coll == C_REDUCE || coll == C_BROADCAST) {
			/* NVSwitch rings do not reuse channels: a chunk latency per step. */
			c.lat += nsteps * hw_lat[hw][p == P_SIMPLE ? A_TREE : A_RING][p];
		} else {
			int inter_steps = !multi ? 0 : coll == C_ALLREDUCE ? 2 * (nodes - 1) : nodes - 1;
			double ovh = multi ? net_overhead * (p == P_SIMPLE ? 3 : 1) : 0.0;

			c.lat += (nsteps - inter_steps) * dmax(intra_lat, ovh) + inter_steps * inter_lat;
		}
	} else if (a == A_TREE) {
		c.lat += 2 * ((ppn_i - 1) * intra_lat + log2i((uint64_t)nodes) * inter_lat);
	} else if (a == A_NVLS) {
		c.lat = intra_lat;
	} else if (a == A_NVLS_TREE) {
		c.lat += intra_lat + 2 * log2i((uint64_t)nodes) * inter_lat;
	} else if (a == A_PAT) {
		c.lat += log2i((uint64_t)nodes) * (inter_lat / 3.5) + n * 2.8;
	}
	return c;
}

int emu_channels(const struct emu_topo *topo, int algo)
{
	int ppn = topo->n_nodes > 0 ? topo->n_ranks / topo->n_nodes : topo->n_ranks;

	/* The graphs of tune_cell: 16 in a node, two per NIC (one per GPU) across nodes. */
	if (algo == A_NVLS || algo == A_NVLS_TREE || topo->n_nodes <= 1)
		return 16;
	return 2 * (ppn < 8 ? (ppn > 0 ? ppn : 1) : 8);
}

void emu_cost_table(const struct emu_topo *topo, int coll, uint64_t n_bytes,
		    float table[NBPF_NCCL_NUM_ALGORITHMS][NBPF_NCCL_NUM_PROTOCOLS])
{
	int n = topo->n_ranks, nodes = topo->n_nodes;
	int log_size = log2i(n_bytes >> 6);

	for (int a = 0; a < NBPF_NCCL_NUM_ALGORITHMS; a++)
		for (int p = 0; p < NBPF_NCCL_NUM_PROTOCOLS; p++)
			table[a][p] = NBPF_NCCL_ALGO_PROTO_IGNORE;
	if (coll < 0 || coll > C_ALLREDUCE)
		return;
	/* A one-rank comm is a copy: NCCL offers Ring/Simple at zero cost. */
	if (n <= 1) {
		table[A_RING][P_SIMPLE] = 0.0f;
		return;
	}
	if (nodes < 1)
		nodes = 1;
	if (nodes > n)
		nodes = n;
	for (int a = 0; a < NBPF_NCCL_NUM_ALGORITHMS; a++)
		for (int p = 0; p < NBPF_NCCL_NUM_PROTOCOLS; p++) {
			struct cell c = tune_cell(coll, a, p, n, nodes, topo->nvls, topo->host_net);
			int ring_ch = nodes > 1 ? 2 * (n / nodes < 8 ? n / nodes : 8) : 16;

			if (c.bw <= 0)
				continue;
			if (a == A_TREE && coll == C_ALLREDUCE && log_size >= 0 && log_size < 23)
				c.bw *= tree_correction[p][log_size];
			/* The ring's plateau once every rank's per-channel slice is 64 B or more. */
			if (a == A_RING && p == P_SIMPLE && nodes > 1 && coll == C_ALLREDUCE &&
			    n_bytes / ((uint64_t)ring_ch * (uint64_t)n) >= 64)
				c.lat *= 1.4;
			table[a][p] = (float)(c.lat + (double)n_bytes / (1000.0 * c.bw));
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
