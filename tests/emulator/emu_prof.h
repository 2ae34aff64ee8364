/*
 * emu_prof.h - profiler calls as NCCL makes them, for any ABI version:
 * descriptors, start/stop/record, init/finalize.  Shared by the emulator
 * tests.
 */
#ifndef NCCLBPF_EMU_PROF_H
#define NCCLBPF_EMU_PROF_H

#include <stdint.h>
#include <string.h>

#include "emu_test.h"

struct prof {
	struct emu_plugin pl;
	void *ctx;
	int mask;
	int v;
};

/* ---- descriptors for any version --------------------------------------------- */

union descr {
	nbpf_prof_descr_v1_t v1;
	nbpf_prof_descr_v2_t v2;
	nbpf_prof_descr_v3_t v3;
	nbpf_prof_descr_v4_t v4;
	nbpf_prof_descr_v5_t v5;
	nbpf_prof_descr_v6_t v6;
	nbpf_prof_descr_v7_t v7;
};

__attribute__((unused)) static void set_hdr(union descr *d, int v, uint32_t type, void *parent, int rank)
{
	memset(d, 0, sizeof(*d));
	if (v >= 5)
		d->v5.type = type;
	else
		d->v1.type = (uint8_t)type;
	d->v4.parentObj = parent; /* same offsets in every version */
	d->v4.rank = rank;
}

__attribute__((unused)) static void *start(struct prof *p, union descr *d)
{
	void *h = (void *)0x1; /* NCCL does not clear it; the plugin must write it */

	switch (p->v) {
	case 1: ((const nbpf_profiler_v1_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v1); break;
	case 2: ((const nbpf_profiler_v2_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v2); break;
	case 3: ((const nbpf_profiler_v3_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v3); break;
	case 4: ((const nbpf_profiler_v4_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v4); break;
	case 5: ((const nbpf_profiler_v5_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v5); break;
	case 6: ((const nbpf_profiler_v6_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v6); break;
	case 7: ((const nbpf_profiler_v7_t *)p->pl.table)->startEvent(p->ctx, &h, &d->v7); break;
	}
	return h;
}

__attribute__((unused)) static int stop(struct prof *p, void *h)
{
	return ((const nbpf_profiler_v5_t *)p->pl.table)->stopEvent(h);
}

__attribute__((unused)) static int record_kch_stop(struct prof *p, void *h, uint64_t t)
{
	if (p->v >= 4) {
		nbpf_prof_state_args_v4_t a = { .kernelCh = { .pTimer = t } };

		return ((const nbpf_profiler_v5_t *)p->pl.table)->recordEventState(h, NBPF_PROF_STATE_KERNEL_CH_STOP, &a);
	}
	nbpf_prof_state_args_v1_t a = { .proxyOp = { .transSize = 1 } };

	return ((const nbpf_profiler_v3_t *)p->pl.table)->recordEventState(h, 22, &a);
}

__attribute__((unused)) static void *start_group(struct prof *p)
{
	union descr d;

	set_hdr(&d, p->v, NBPF_PROF_GROUP, NULL, 3);
	return start(p, &d);
}

/* AllReduce of count floats (4 bytes each) on nch channels with Ring/LL128. */
__attribute__((unused)) static void *start_coll(struct prof *p, void *parent, uint64_t seq, size_t count, int nch)
{
	union descr d;

	set_hdr(&d, p->v, NBPF_PROF_COLL, parent, 3);
	switch (p->v) {
	case 1:
		d.v1.coll.seqNumber = seq; d.v1.coll.func = 4; d.v1.coll.count = count;
		d.v1.coll.datatype = 7; d.v1.coll.nMaxChannels = (uint8_t)nch;
		d.v1.coll.algo = 1; d.v1.coll.proto = 1;
		break;
	case 2:
		d.v2.coll.seqNumber = seq; d.v2.coll.func = "AllReduce"; d.v2.coll.count = count;
		d.v2.coll.datatype = "ncclFloat32"; d.v2.coll.nMaxChannels = (uint8_t)nch;
		d.v2.coll.algo = "RING"; d.v2.coll.proto = "LL128";
		break;
	case 3:
		d.v3.coll.seqNumber = seq; d.v3.coll.func = "AllReduce"; d.v3.coll.count = count;
		d.v3.coll.datatype = "ncclFloat32"; d.v3.coll.nMaxChannels = (uint8_t)nch;
		d.v3.coll.algo = "RING"; d.v3.coll.proto = "LL128";
		break;
	case 4:
		d.v4.coll.seqNumber = seq; d.v4.coll.func = "AllReduce"; d.v4.coll.count = count;
		d.v4.coll.datatype = "ncclFloat32"; d.v4.coll.nChannels = (uint8_t)nch;
		d.v4.coll.algo = "RING"; d.v4.coll.proto = "LL128";
		break;
	default:
		d.v5.coll.seqNumber = seq; d.v5.coll.func = "AllReduce"; d.v5.coll.count = count;
		d.v5.coll.datatype = "ncclFloat32"; d.v5.coll.nChannels = (uint8_t)nch;
		d.v5.coll.algo = "RING"; d.v5.coll.proto = "LL128"; d.v5.coll.parentGroup = NULL;
		break;
	}
	return start(p, &d);
}

__attribute__((unused)) static void *start_kch(struct prof *p, void *coll, int ch, uint64_t t0)
{
	union descr d;

	set_hdr(&d, p->v, NBPF_PROF_KERNEL_CH, coll, 3);
	if (p->v == 3)
		d.v3.kernelCh.channelId = (uint8_t)ch;
	else if (p->v == 4)
		d.v4.kernelCh.channelId = (uint8_t)ch, d.v4.kernelCh.pTimer = t0;
	else if (p->v >= 5)
		d.v5.kernelCh.channelId = (uint8_t)ch, d.v5.kernelCh.pTimer = t0;
	return start(p, &d);
}

__attribute__((unused)) static void *start_proxy_op(struct prof *p, void *coll)
{
	union descr d;

	set_hdr(&d, p->v, NBPF_PROF_PROXY_OP, coll, 3);
	d.v4.proxyOp.pid = 1;
	d.v4.proxyOp.peer = 1;
	return start(p, &d);
}

__attribute__((unused)) static int prof_init(struct prof *p, uint64_t comm_id)
{
	p->mask = 0;
	switch (p->v) {
	case 1: return ((const nbpf_profiler_v1_t *)p->pl.table)->init(&p->ctx, &p->mask);
	case 2: return ((const nbpf_profiler_v2_t *)p->pl.table)->init(&p->ctx, &p->mask);
	case 3: return ((const nbpf_profiler_v3_t *)p->pl.table)->init(&p->ctx, &p->mask);
	case 4: return ((const nbpf_profiler_v4_t *)p->pl.table)->init(&p->ctx, &p->mask, "c", comm_id, 1, 8, 3, emu_logger);
	case 5: return ((const nbpf_profiler_v5_t *)p->pl.table)->init(&p->ctx, comm_id, &p->mask, NULL, 1, 8, 3, emu_logger);
	case 6: return ((const nbpf_profiler_v6_t *)p->pl.table)->init(&p->ctx, comm_id, &p->mask, "c", 1, 8, 3, emu_logger);
	case 7: return ((const nbpf_profiler_v7_t *)p->pl.table)->init(&p->ctx, comm_id, &p->mask, "c", 1, 8, 3, emu_logger);
	}
	return -1;
}

__attribute__((unused)) static int prof_fini(struct prof *p)
{
	return ((const nbpf_profiler_v5_t *)p->pl.table)->finalize(p->ctx);
}

#endif
