/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net_drv.h - drives any ncclNetPlugin_vN table (v6..v12) the way NCCL
 * does, behind one version-free set of calls, for the net tests and the
 * net benchmark.  Header-only: each test binary includes it once.
 */
#ifndef NCCLBPF_TEST_NET_DRV_H
#define NCCLBPF_TEST_NET_DRV_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl/abi_net.h"

/* pHandle passed to v10+ isend/irecv (NCCL's proxy-step event), NULL for none. */
static void *drv_phandle;

struct drv {
	int v;
	const void *tbl;
	void *ctx;               /* v11+ */
};

#define DRV_T(d, n) ((const nbpf_net_v##n##_t *)(d)->tbl)

static inline uint64_t drv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void *drv_open(const char *path)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
	return lib;
}

static inline int drv_bind(struct drv *d, void *lib, int v)
{
	char sym[32];

	snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
	memset(d, 0, sizeof(*d));
	d->v = v;
	d->tbl = dlsym(lib, sym);
	return d->tbl ? 0 : -1;
}

static inline int drv_init(struct drv *d, uint64_t comm_id, int tc, nbpf_net_prof_cb_t prof)
{
	nbpf_net_comm_config_t cfg = { .trafficClass = tc };

	switch (d->v) {
	case 6: return DRV_T(d, 6)->init(NULL);
	case 7: return DRV_T(d, 7)->init(NULL);
	case 8: return DRV_T(d, 8)->init(NULL);
	case 9: return DRV_T(d, 9)->init(NULL);
	case 10: return DRV_T(d, 10)->init(NULL, prof);
	default: return DRV_T(d, 11)->init(&d->ctx, comm_id, &cfg, NULL, prof);
	}
}

static inline int drv_finalize(struct drv *d)
{
	return d->v >= 11 ? DRV_T(d, 11)->finalize(d->ctx) : 0;
}

static inline int drv_devices(struct drv *d, int *n)
{
	return DRV_T(d, 6)->devices(n); /* same slot in every version */
}

/* The fields every version has, read through that version's layout. */
struct drv_props {
	const char *name;
	int ptr_support, speed, max_recvs, max_comms;
	size_t max_p2p;
};

static inline int drv_props(struct drv *d, int dev, struct drv_props *p)
{
	union {
		nbpf_net_props_v6_t v6; nbpf_net_props_v7_t v7; nbpf_net_props_v8_t v8;
		nbpf_net_props_v9_t v9; nbpf_net_props_v11_t v11; nbpf_net_props_v12_t v12;
	} u;
	int r;

	memset(&u, 0xa5, sizeof(u));
	memset(p, 0, sizeof(*p));
#define PROPS(n, f) do { r = DRV_T(d, n)->getProperties(dev, &u.f); if (r) return r; \
	p->name = u.f.name; p->ptr_support = u.f.ptrSupport; p->speed = u.f.speed; \
	p->max_recvs = u.f.maxRecvs; p->max_comms = u.f.maxComms; } while (0)
	switch (d->v) {
	case 6: PROPS(6, v6); break;
	case 7: PROPS(7, v7); break;
	case 8: PROPS(8, v8); break;
	case 9: case 10: PROPS(9, v9); p->max_p2p = u.v9.maxP2pBytes; break;
	case 11: PROPS(11, v11); p->max_p2p = u.v11.maxP2pBytes; break;
	default: PROPS(12, v12); p->max_p2p = u.v12.maxP2pBytes; break;
	}
#undef PROPS
	return 0;
}

static inline int drv_listen(struct drv *d, int dev, void *handle, void **lc)
{
	if (d->v >= 11)
		return DRV_T(d, 11)->listen(d->ctx, dev, handle, lc);
	return DRV_T(d, 6)->listen(dev, handle, lc);
}

static inline int drv_connect(struct drv *d, int dev, void *handle, void **sc)
{
	void *dc = NULL;

	switch (d->v) {
	case 6: return DRV_T(d, 6)->connect(dev, handle, sc);
	case 7: case 8: case 9: return DRV_T(d, 7)->connect(dev, handle, sc, &dc);
	case 10: { nbpf_net_comm_config_t cfg = { -1 };
		return DRV_T(d, 10)->connect(dev, &cfg, handle, sc, &dc); }
	default: return DRV_T(d, 11)->connect(d->ctx, dev, handle, sc, &dc);
	}
}

static inline int drv_accept(struct drv *d, void *lc, void **rc)
{
	void *dc = NULL;

	if (d->v == 6)
		return DRV_T(d, 6)->accept(lc, rc);
	return DRV_T(d, 7)->accept(lc, rc, &dc);
}

static inline int drv_regmr(struct drv *d, void *comm, void *data, size_t size, int type, void **mh)
{
	if (d->v <= 7)
		return DRV_T(d, 6)->regMr(comm, data, (int)size, type, mh);
	return DRV_T(d, 8)->regMr(comm, data, size, type, mh);
}

static inline int drv_deregmr(struct drv *d, void *comm, void *mh)
{
	return DRV_T(d, 6)->deregMr(comm, mh);
}

static inline int drv_isend(struct drv *d, void *sc, void *data, size_t size, int tag, void *mh,
			    void **req)
{
	if (d->v <= 8)
		return DRV_T(d, 6)->isend(sc, data, (int)size, tag, mh, req);
	if (d->v == 9)
		return DRV_T(d, 9)->isend(sc, data, size, tag, mh, req);
	return DRV_T(d, 10)->isend(sc, data, size, tag, mh, drv_phandle, req);
}

static inline int drv_irecv(struct drv *d, void *rc, void *data, size_t size, int tag, void *mh,
			    void **req)
{
	void *ph = drv_phandle;

	if (d->v <= 8) {
		int isz = (int)size;

		return DRV_T(d, 6)->irecv(rc, 1, &data, &isz, &tag, &mh, req);
	}
	/* NCCL pre-sets *request to 0x1 for optional completion (v9+): the plugin overwrites it. */
	*req = (void *)0x1;
	if (d->v == 9)
		return DRV_T(d, 9)->irecv(rc, 1, &data, &size, &tag, &mh, req);
	return DRV_T(d, 10)->irecv(rc, 1, &data, &size, &tag, &mh, &ph, req);
}

/*
 * Grouped receive (n >= 1) as NCCL posts it: *req holds NCCL's pre-set (0x1
 * for an optional completion, else NULL), which NCCL's own adaptor clears
 * before calling a v6-v8 plugin; sizes are narrowed to int for v6-v8.
 */
static inline int drv_irecvn(struct drv *d, void *rc, int n, void **data, size_t *sizes,
			     int *tags, void **mh, void **ph, void **req)
{
	if (d->v <= 8) {
		int isz[64];

		if (*req == (void *)0x1)
			*req = NULL;
		for (int i = 0; i < n && i < 64; i++)
			isz[i] = (int)sizes[i];
		return DRV_T(d, 6)->irecv(rc, n, data, isz, tags, mh, req);
	}
	if (d->v == 9)
		return DRV_T(d, 9)->irecv(rc, n, data, sizes, tags, mh, req);
	return DRV_T(d, 10)->irecv(rc, n, data, sizes, tags, mh, ph, req);
}

static inline int drv_iflush(struct drv *d, void *rc, int n, void **data, int *sizes, void **mh,
			     void **req)
{
	return DRV_T(d, 6)->iflush(rc, n, data, sizes, mh, req);
}

/* NCCL calls irecvConsumed only where the table has it (v7+, non-NULL). */
static inline int drv_irecv_consumed(struct drv *d, void *rc, int n, void *req)
{
	if (d->v < 7 || !DRV_T(d, 7)->irecvConsumed)
		return 0;
	return DRV_T(d, 7)->irecvConsumed(rc, n, req);
}

static inline int drv_get_device_mr(struct drv *d, void *comm, void *mh, void **dptr)
{
	return d->v < 7 ? -1 : DRV_T(d, 7)->getDeviceMr(comm, mh, dptr);
}

static inline int drv_regmr_dmabuf(struct drv *d, void *comm, void *data, size_t size, int type,
				   uint64_t offset, int fd, void **mh)
{
	return DRV_T(d, 6)->regMrDmaBuf(comm, data, size, type, offset, fd, mh);
}

static inline int drv_set_attr(struct drv *d, nbpf_net_attr_v11_t *a)
{
	return d->v < 11 ? -1 : DRV_T(d, 11)->setNetAttr(d->ctx, a);
}

/* connect/accept with NCCL's device-handle pointer (v7+; ignored before). */
static inline int drv_connect_dc(struct drv *d, int dev, void *handle, void **sc, void **dc)
{
	switch (d->v) {
	case 6: return DRV_T(d, 6)->connect(dev, handle, sc);
	case 7: case 8: case 9: return DRV_T(d, 7)->connect(dev, handle, sc, dc);
	case 10: { nbpf_net_comm_config_t cfg = { -1 };
		return DRV_T(d, 10)->connect(dev, &cfg, handle, sc, dc); }
	default: return DRV_T(d, 11)->connect(d->ctx, dev, handle, sc, dc);
	}
}

static inline int drv_accept_dc(struct drv *d, void *lc, void **rc, void **dc)
{
	if (d->v == 6)
		return DRV_T(d, 6)->accept(lc, rc);
	return DRV_T(d, 7)->accept(lc, rc, dc);
}

/*
 * Every property through the version's own layout, widened to v12's;
 * fields the version lacks keep the 0xa5 fill (so a test can tell).
 */
static inline int drv_props_all(struct drv *d, int dev, nbpf_net_props_v12_t *out)
{
	union {
		nbpf_net_props_v6_t v6; nbpf_net_props_v7_t v7; nbpf_net_props_v8_t v8;
		nbpf_net_props_v9_t v9; nbpf_net_props_v11_t v11;
	} u;
	int r;

	memset(out, 0xa5, sizeof(*out));
	memset(&u, 0xa5, sizeof(u));
#define BASE(x) do { out->name = (x)->name; out->pciPath = (x)->pciPath; out->guid = (x)->guid; \
	out->ptrSupport = (x)->ptrSupport; out->speed = (x)->speed; out->port = (x)->port; \
	out->latency = (x)->latency; out->maxComms = (x)->maxComms; out->maxRecvs = (x)->maxRecvs; } while (0)
	switch (d->v) {
	case 6:
		if ((r = DRV_T(d, 6)->getProperties(dev, &u.v6)))
			return r;
		BASE(&u.v6);
		break;
	case 7:
		if ((r = DRV_T(d, 7)->getProperties(dev, &u.v7)))
			return r;
		BASE(&u.v7);
		out->netDeviceType = u.v7.netDeviceType;
		out->netDeviceVersion = u.v7.netDeviceVersion;
		break;
	case 8:
		if ((r = DRV_T(d, 8)->getProperties(dev, &u.v8)))
			return r;
		BASE(&u.v8);
		out->regIsGlobal = u.v8.regIsGlobal;
		out->netDeviceType = u.v8.netDeviceType;
		out->netDeviceVersion = u.v8.netDeviceVersion;
		break;
	case 12:
		return DRV_T(d, 12)->getProperties(dev, out);
	default:
		if ((r = d->v == 11 ? DRV_T(d, 11)->getProperties(dev, &u.v11)
				    : DRV_T(d, 9)->getProperties(dev, &u.v9)))
			return r;
		BASE(&u.v9);
		out->regIsGlobal = u.v9.regIsGlobal;
		out->forceFlush = u.v9.forceFlush;
		out->netDeviceType = u.v9.netDeviceType;
		out->netDeviceVersion = u.v9.netDeviceVersion;
		out->vProps.ndevs = u.v9.vProps.ndevs;
		memcpy(out->vProps.devs, u.v9.vProps.devs, sizeof(u.v9.vProps.devs));
		out->maxP2pBytes = u.v9.maxP2pBytes;
		out->maxCollBytes = u.v9.maxCollBytes;
		if (d->v == 11)
			out->maxMultiRequestSize = u.v11.maxMultiRequestSize;
		break;
	}
#undef BASE
	return 0;
}

static inline int drv_test(struct drv *d, void *req, int *done, int *size)
{
	return DRV_T(d, 6)->test(req, done, size);
}

static inline int drv_close_send(struct drv *d, void *c) { return DRV_T(d, 6)->closeSend(c); }
static inline int drv_close_recv(struct drv *d, void *c) { return DRV_T(d, 6)->closeRecv(c); }
static inline int drv_close_listen(struct drv *d, void *c) { return DRV_T(d, 6)->closeListen(c); }

/* Calls connect/accept until both give a comm (one side may be NULL); 0 or the first error. */
static inline int drv_pair(struct drv *d, int dev, void *handle, void *lc, void **sc, void **rc,
			   unsigned timeout_ms)
{
	uint64_t end = drv_now_ms() + timeout_ms;

	*sc = *rc = NULL;
	while ((handle && !*sc) || (lc && !*rc)) {
		int r;

		if (handle && !*sc && (r = drv_connect(d, dev, handle, sc)))
			return r;
		if (lc && !*rc && (r = drv_accept(d, lc, rc)))
			return r;
		if (drv_now_ms() > end)
			return -1;
	}
	return 0;
}

/* Tests req until done or error; returns the result, -1 on timeout. */
static inline int drv_wait(struct drv *d, void *req, int *size, unsigned timeout_ms)
{
	uint64_t end = drv_now_ms() + timeout_ms;
	int done = 0, r;

	while (!done) {
		r = drv_test(d, req, &done, size);
		if (r)
			return r;
		if (!done && drv_now_ms() > end)
			return -1;
	}
	return 0;
}

#endif
