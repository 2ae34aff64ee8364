/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emu_chunk.c - the getChunkSize calls NCCL (2.30, tuner v6+) makes while
 * it plans a collective, and the chunk it proposes in each: the parts of
 * scheduleCollTasksToPlan, calcCollChunking and topoGetAlgoInfo
 * (enqueue.cc) that decide them, for a plan holding that one collective on
 * the emulator's topologies (emu_model.c: Hopper GPUs, NVSwitch within a
 * node, NVLS chunk 128 KiB).
 *
 * NCCL asks once per channel part of a collective, not once per
 * collective: the collective's traffic is cut into cells of about 32 KiB
 * of traffic and spread over its channels, the first channel taking the
 * "lo" part, the last the "hi" part and the ones between equal "mid"
 * parts; for each part that is not empty NCCL computes a chunk for that
 * part's bytes on one channel and hands it to the plugin.  Elements are
 * one byte here (the emulator speaks in bytes).
 */
#include "emu.h"

enum { A_TREE, A_RING, A_COLLNET_DIRECT, A_COLLNET_CHAIN, A_NVLS, A_NVLS_TREE, A_PAT };
enum { P_LL, P_LL128, P_SIMPLE };
enum { C_BROADCAST, C_REDUCE, C_ALLGATHER, C_REDUCESCATTER, C_ALLREDUCE };

/* NCCL_STEPS and the default buffers of each protocol (init.cc). */
#define STEPS 8
static const uint32_t buff_size[3] = {
	8 * 512 * STEPS * 16,  /* LL: lines per thread x threads x steps x 16-byte line */
	120 * 640 * STEPS * 8, /* LL128: elements per thread x threads x steps x 8 */
	1u << 22,              /* Simple: 4 MiB */
};
#define NVLS_CHUNK  (128u << 10) /* NCCL_NVLS_CHUNKSIZE's default */
#define MIN_TRAFFIC (32u << 10)  /* MinTrafficPerChannel */

static uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static int log2_int(int n)
{
	int l = 0;

	while (n >>= 1)
		l++;
	return l;
}

uint32_t emu_proto_grain(int proto)
{
	return proto == P_LL ? 16u : proto == P_LL128 ? 1920u : proto == P_SIMPLE ? 512u : 0u;
}

uint32_t emu_chunk_final(int proto, uint32_t max_chunk, size_t answer)
{
	uint32_t grain = emu_proto_grain(proto);
	size_t c = answer > max_chunk ? max_chunk : answer;

	return grain ? (uint32_t)(c / grain * grain) : 0;
}

static int ranks_per_node(const struct emu_topo *t)
{
	int n = t->n_nodes > 0 ? t->n_ranks / t->n_nodes : t->n_ranks;

	return n > 0 ? n : 1;
}

/* calcCollChunking up to the plugin call: NCCL's chunk for nbytes on nch channels. */
static void nccl_chunk(const struct emu_topo *t, int coll, uint64_t nbytes, int algo, int proto,
		       int nch, uint32_t *chunk, uint32_t *max)
{
	int ppn = ranks_per_node(t), nodes = t->n_nodes > 0 ? t->n_nodes : 1;
	int csteps = proto == P_SIMPLE && algo == A_RING &&
		     (coll == C_ALLREDUCE || coll == C_ALLGATHER || coll == C_REDUCESCATTER) ? STEPS / 2 : 1;
	int64_t c = (int64_t)(buff_size[proto] / STEPS) * csteps;
	/* NVLS heads: one per GPU of a node (an assumption of the emulator's NVSwitch node). */
	uint64_t ops = (uint64_t)nch * (uint64_t)ppn;

	if (proto == P_LL)
		c /= 2;
	if (proto == P_LL128)
		c = c / 16 * 15;
	*max = (uint32_t)c;
	if (algo == A_NVLS) {
		if (c > NVLS_CHUNK)
			c = NVLS_CHUNK;
		if (nbytes < 64 * ops * (uint64_t)c && c > 65536)
			c = 65536;
		if (nbytes < 8 * ops * (uint64_t)c && c > 32768)
			c = 32768;
		if (nbytes < 2 * ops * (uint64_t)c && c > 16384)
			c = 16384;
	} else if (algo == A_NVLS_TREE) {
		c = nodes >= 4 ? 65536 : NVLS_CHUNK; /* min(nvlsChunkSize, nvlsTreeMaxChunkSize) */
		if (nbytes < 32 * ops * (uint64_t)c && c > 262144)
			c = 262144;
		if (nbytes < 16 * ops * (uint64_t)c && c > 131072)
			c = 131072;
		if (nbytes < 4 * ops * (uint64_t)c && c > 65536)
			c = 65536;
		if (nbytes < ops * (uint64_t)c && c > 32768)
			c = 32768;
	} else if (algo == A_TREE && proto == P_LL128) {
		float fppn = (float)t->n_ranks / (float)nodes;
		float steps = 1 + log2_int(nodes) + 0.1f * fppn;

		while ((float)(nbytes / ((uint64_t)nch * (uint64_t)c)) < steps * 64 / fppn && c > 131072)
			c /= 2;
		while ((float)(nbytes / ((uint64_t)nch * (uint64_t)c)) < steps * 16 / fppn && c > 32768)
			c /= 2;
	} else if (coll == C_ALLGATHER && algo == A_PAT) {
		while ((uint64_t)c * (uint64_t)nch * 32 > nbytes && c > 65536)
			c /= 2;
	} else if (coll == C_REDUCESCATTER && algo == A_PAT) {
		while ((uint64_t)c * (uint64_t)nch * 16 > nbytes && c > 65536)
			c /= 2;
	}
	*chunk = (uint32_t)c;
}

/* topoGetAlgoInfo's channel count for nbytes (before a plugin's nChannels). */
static int nccl_channels(const struct emu_topo *t, int algo, int proto, uint64_t nbytes)
{
	static const int max_threads[3] = { 512, 640, 512 }; /* LL, LL128, Simple: Ring/Tree */
	int nc = emu_channels(t, algo), nt = algo == A_PAT ? 0 : max_threads[proto];
	int thr = proto == P_SIMPLE ? 64 : 8;

	if (algo == A_NVLS || algo == A_NVLS_TREE)
		return nc;
	if (algo == A_RING && proto == P_LL)
		thr *= t->n_ranks;
	while (nbytes < (uint64_t)nc * (uint64_t)nt * (uint64_t)thr && nc >= 2)
		nc--;
	return nc;
}

static int traffic_per_byte(int coll, int n_ranks)
{
	return coll == C_ALLREDUCE ? 2 : coll == C_ALLGATHER || coll == C_REDUCESCATTER ? n_ranks : 1;
}

int emu_chunk_calls(const struct emu_topo *t, int coll, uint64_t n_bytes, int algo, int proto,
		    int n_channels, struct emu_chunk_call calls[EMU_MAX_CHUNK_CALLS])
{
	bool per_rank = coll == C_ALLGATHER || coll == C_REDUCESCATTER;
	uint64_t per_elem = per_rank ? (uint64_t)t->n_ranks : 1; /* global bytes per element */
	uint64_t count = n_bytes / per_elem;
	int kind_max = algo == A_NVLS || algo == A_NVLS_TREE ? emu_channels(t, A_NVLS)
							     : emu_channels(t, A_RING);
	int task_max = n_channels > 0 ? n_channels : nccl_channels(t, algo, proto, n_bytes);
	uint64_t tpb = (uint64_t)traffic_per_byte(coll, t->n_ranks), traffic, per_channel;
	uint64_t cell_size, cells, per_cell, cells_per_ch, lo, hi, mid_count, lo_count, hi_count;
	int nch, n_mid, n = 0;

	if (algo < 0 || algo == A_COLLNET_DIRECT || algo == A_COLLNET_CHAIN || proto < 0 ||
	    proto > P_SIMPLE || !count || t->n_ranks < 2)
		return 0; /* no plan (or CollNet, which the emulator never offers) */
	nch = task_max < kind_max ? task_max : kind_max;
	traffic = count * tpb > MIN_TRAFFIC ? count * tpb : MIN_TRAFFIC;
	per_channel = div_up(traffic / (uint64_t)nch, 16) * 16;
	if (proto == P_LL)
		tpb *= 4;
	cell_size = div_up(div_up(MIN_TRAFFIC, tpb), 16) * 16;
	cells = div_up(count, cell_size);
	per_cell = cell_size * tpb;
	cells_per_ch = min_u64(cells, div_up(per_channel, per_cell));
	lo = kind_max == 1 ? cells : min_u64(cells, div_up(per_channel, per_cell));
	n_mid = (int)((cells - lo) / cells_per_ch);
	hi = (cells - lo) % cells_per_ch;
	if (kind_max < (lo ? 1 : 0) + n_mid + (hi ? 1 : 0)) {
		n_mid = kind_max - 2;
		cells_per_ch = (cells - lo) / (uint64_t)(n_mid + 1);
		hi = cells_per_ch + (cells - lo) % (uint64_t)(n_mid + 1);
	}
	if (hi == 0 && n_mid != 0) {
		hi = cells_per_ch;
		n_mid -= 1;
	}
	mid_count = n_mid ? cells_per_ch * cell_size : 0;
	lo_count = lo * cell_size;
	hi_count = hi * cell_size;
	*(hi_count ? &hi_count : &lo_count) -= cells * cell_size - count;
	/* NCCL's order: the first channel's part, the last's, then the middle ones'. */
	const uint64_t part[3] = { lo_count, hi_count, mid_count };
	const int parts[3] = { 1, 1, n_mid };

	for (int i = 0; i < 3; i++) {
		if (!part[i])
			continue;
		calls[n].n_bytes = per_elem * part[i];
		calls[n].n_channels = 1;
		calls[n].n_parts = parts[i];
		nccl_chunk(t, coll, calls[n].n_bytes, algo, proto, 1, &calls[n].nccl_chunk,
			   &calls[n].max_chunk);
		n++;
	}
	return n;
}
