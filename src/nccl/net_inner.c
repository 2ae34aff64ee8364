// SPDX-License-Identifier: Apache-2.0
/*
 * net_inner.c - calls into an inner net plugin at whatever version it
 * exports (v6..v12), as NCCL's own adaptors would: sizes narrowed to int
 * for v6..v8 (ncclInternalError above INT_MAX, as NCCL's), the receive's
 * optional-completion pre-set (0x1) cleared for v6..v8 and passed to
 * v9+, the device-handle and config arguments where the version has them
 * (a pointer to a NULL handle where NCCL gave none: a v7+ plugin may
 * read it), phandles NULL where NCCL gave none, properties widened to the
 * v12 layout with NCCL's defaults for what the version lacks.  Everything
 * else NCCL gives passes through untouched.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "net_inner.h"

struct net_inner {
	void *dl;
	int v;
	const void *tbl;
	char name[64];
	int refs;              /* under inner_lock */
	bool legacy_ready;     /* v6..v10 init done, under inner_lock */
};

static pthread_mutex_t inner_lock = PTHREAD_MUTEX_INITIALIZER;
static struct net_inner *inner_lib;

#define T(n) ((const nbpf_net_v##n##_t *)in->tbl)

/* NCCL's logger for the inner plugin: ours, or (before NCCL gave one) the host's. */
static void inner_log(int level, unsigned long flags, const char *file, int line,
		      const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nbpf_host_log(level, flags, "net inner: %s", msg);
}

static void *open_lib(const char *spec, char *err, size_t errlen)
{
	char alt[512];
	void *dl = dlopen(spec, RTLD_NOW | RTLD_LOCAL);

	if (!dl && !strchr(spec, '/')) {
		snprintf(alt, sizeof(alt), "libnccl-net-%s.so", spec);
		dl = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	}
	if (!dl)
		snprintf(err, errlen, "cannot open %s: %s", spec, dlerror());
	return dl;
}

/*
 * NCCLBPF_NET=inner:ncclbpf, our own path or a link to it would have this
 * library wrap itself, each call calling itself until the stack runs out
 * (dlopen of any path to our file hands back our own link map: glibc
 * matches the inode, and runs no constructor again); another copy of it
 * would read NCCLBPF_NET and wrap again.  Returns whether refused.
 */
static bool is_self(const char *spec, const void *tbl, char *err, size_t errlen)
{
	Dl_info me, it;

	if (!dladdr((void *)net_inner_open, &me) || !dladdr(tbl, &it))
		return false;
	if (it.dli_fbase == me.dli_fbase) {
		snprintf(err, errlen, "%s is this plugin itself (%s); it cannot wrap itself", spec,
			 me.dli_fname);
		return true;
	}
	if (((const nbpf_net_v6_t *)tbl)->name &&
	    !strcmp(((const nbpf_net_v6_t *)tbl)->name, NET_PLUGIN_NAME)) {
		snprintf(err, errlen, "%s is another copy of %s (%s); it cannot wrap itself", spec,
			 NET_PLUGIN_NAME, it.dli_fname);
		return true;
	}
	return false;
}

int net_inner_open(const char *spec, struct net_inner **out, char *err, size_t errlen)
{
	struct net_inner *in;
	int rc = 0;

	*out = NULL;
	pthread_mutex_lock(&inner_lock);
	if (inner_lib) {
		inner_lib->refs++;
		*out = inner_lib;
		goto out;
	}
	in = calloc(1, sizeof(*in));
	if (!in) {
		rc = -ENOMEM;
		goto out;
	}
	in->dl = open_lib(spec, err, errlen);
	for (int v = 12; in->dl && v >= 6 && !in->tbl; v--) {
		char sym[32];

		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		in->tbl = dlsym(in->dl, sym);
		in->v = v;
	}
	if (!in->tbl || is_self(spec, in->tbl, err, errlen)) {
		rc = in->tbl ? -ELOOP : -ENOENT;
		if (in->dl && !in->tbl)
			snprintf(err, errlen, "%s exports no ncclNetPlugin_v6..v12", spec);
		if (in->dl)
			dlclose(in->dl);
		free(in);
		goto out;
	}
	/* The name is read from the table, the same for every version. */
	snprintf(in->name, sizeof(in->name), "%s", T(6)->name ? T(6)->name : "?");
	in->refs = 1;
	inner_lib = in;
	*out = in;
out:
	pthread_mutex_unlock(&inner_lock);
	return rc;
}

void net_inner_close(struct net_inner *in)
{
	pthread_mutex_lock(&inner_lock);
	if (in && --in->refs == 0) {
		/* v6..v10 have no finalize: the library goes when we do. */
		if (in->v >= 11) {
			dlclose(in->dl);
			free(in);
			inner_lib = NULL;
		} else {
			in->refs = 1; /* keep it: a legacy inner plugin cannot be initialised twice */
		}
	}
	pthread_mutex_unlock(&inner_lock);
}

void net_inner_unload(void)
{
	if (inner_lib) {
		dlclose(inner_lib->dl);
		free(inner_lib);
		inner_lib = NULL;
	}
}

int net_inner_version(const struct net_inner *in)
{
	return in->v;
}

const char *net_inner_name(const struct net_inner *in)
{
	return in->name;
}

nbpf_nccl_result_t net_inner_init(struct net_inner *in, void **ictx, uint64_t comm_id,
				  int traffic_class, nbpf_net_prof_cb_t prof)
{
	nbpf_net_comm_config_t cfg = { .trafficClass = traffic_class };
	nbpf_nccl_result_t res = NBPF_NCCL_SUCCESS;

	*ictx = NULL;
	if (in->v >= 11)
		return T(11)->init(ictx, comm_id, &cfg, inner_log, prof);
	pthread_mutex_lock(&inner_lock);
	if (!in->legacy_ready) {
		res = in->v == 10 ? T(10)->init(inner_log, prof) : T(6)->init(inner_log);
		in->legacy_ready = res == NBPF_NCCL_SUCCESS;
	}
	pthread_mutex_unlock(&inner_lock);
	return res;
}

nbpf_nccl_result_t net_inner_finalize(struct net_inner *in, void *ictx)
{
	return in->v >= 11 ? T(11)->finalize(ictx) : NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_inner_devices(struct net_inner *in, int *ndev)
{
	return T(6)->devices(ndev);
}

#define COPY_COMMON(dst, src) do { \
	(dst)->name = (src)->name; (dst)->pciPath = (src)->pciPath; (dst)->guid = (src)->guid; \
	(dst)->ptrSupport = (src)->ptrSupport; (dst)->speed = (src)->speed; \
	(dst)->port = (src)->port; (dst)->latency = (src)->latency; \
	(dst)->maxComms = (src)->maxComms; (dst)->maxRecvs = (src)->maxRecvs; } while (0)

nbpf_nccl_result_t net_inner_props(struct net_inner *in, int dev, nbpf_net_props_v12_t *p)
{
	union { nbpf_net_props_v6_t v6; nbpf_net_props_v7_t v7; nbpf_net_props_v8_t v8;
		nbpf_net_props_v9_t v9; nbpf_net_props_v11_t v11; } u;
	nbpf_nccl_result_t res;

	memset(p, 0, sizeof(*p));
	memset(&u, 0, sizeof(u));
	/* What NCCL's adaptors assume for versions that do not say. */
	p->maxP2pBytes = 1ull << 30;
	p->maxCollBytes = 512ull << 20;
	p->maxMultiRequestSize = 1;
	p->vProps.ndevs = 1;
	p->vProps.devs[0] = dev;
	p->railId = p->planeId = -1;
	switch (in->v) {
	case 12:
		res = T(12)->getProperties(dev, p);
		if (!res && p->maxRecvs > NET_MAX_RECVS)
			p->maxRecvs = NET_MAX_RECVS;
		return res;
	case 11:
		res = T(11)->getProperties(dev, &u.v11);
		break;
	case 9: case 10:
		res = T(9)->getProperties(dev, &u.v9);
		break;
	case 8:
		res = T(8)->getProperties(dev, &u.v8);
		break;
	case 7:
		res = T(7)->getProperties(dev, &u.v7);
		break;
	default:
		res = T(6)->getProperties(dev, &u.v6);
		break;
	}
	if (res)
		return res;
	p->maxRecvs = p->maxRecvs > NET_MAX_RECVS ? NET_MAX_RECVS : p->maxRecvs;
	if (in->v >= 9) {
		COPY_COMMON(p, &u.v9);
		p->regIsGlobal = u.v9.regIsGlobal;
		p->forceFlush = u.v9.forceFlush;
		p->netDeviceType = u.v9.netDeviceType;
		p->netDeviceVersion = u.v9.netDeviceVersion;
		p->vProps.ndevs = u.v9.vProps.ndevs;
		memcpy(p->vProps.devs, u.v9.vProps.devs, sizeof(u.v9.vProps.devs));
		p->maxP2pBytes = u.v9.maxP2pBytes;
		p->maxCollBytes = u.v9.maxCollBytes;
		if (in->v == 11)
			p->maxMultiRequestSize = u.v11.maxMultiRequestSize;
	} else if (in->v == 8) {
		COPY_COMMON(p, &u.v8);
		p->regIsGlobal = u.v8.regIsGlobal;
		p->netDeviceType = u.v8.netDeviceType;
		p->netDeviceVersion = u.v8.netDeviceVersion;
	} else if (in->v == 7) {
		COPY_COMMON(p, &u.v7);
		p->netDeviceType = u.v7.netDeviceType;
		p->netDeviceVersion = u.v7.netDeviceVersion;
	} else {
		COPY_COMMON(p, &u.v6);
	}
	return NBPF_NCCL_SUCCESS;
}

nbpf_nccl_result_t net_inner_listen(struct net_inner *in, void *ictx, int dev, void *handle,
				    void **lc)
{
	return in->v >= 11 ? T(11)->listen(ictx, dev, handle, lc) : T(6)->listen(dev, handle, lc);
}

nbpf_nccl_result_t net_inner_connect(struct net_inner *in, void *ictx, int dev, int traffic_class,
				     void *handle, void **sc, void **dc)
{
	nbpf_net_comm_config_t cfg = { .trafficClass = traffic_class };
	void *none = NULL;

	if (!dc)
		dc = &none;
	switch (in->v) {
	case 6:
		return T(6)->connect(dev, handle, sc);
	case 7: case 8: case 9:
		return T(7)->connect(dev, handle, sc, (nbpf_net_dev_handle_t **)dc);
	case 10:
		return T(10)->connect(dev, &cfg, handle, sc, (nbpf_net_dev_handle_t **)dc);
	default:
		return T(11)->connect(ictx, dev, handle, sc, (nbpf_net_dev_handle_t **)dc);
	}
}

nbpf_nccl_result_t net_inner_accept(struct net_inner *in, void *lc, void **rc, void **dc)
{
	void *none = NULL;

	if (!dc)
		dc = &none;
	if (in->v == 6)
		return T(6)->accept(lc, rc);
	return T(7)->accept(lc, rc, (nbpf_net_dev_handle_t **)dc);
}

nbpf_nccl_result_t net_inner_regmr(struct net_inner *in, void *comm, void *data, size_t size,
				   int type, void **mh)
{
	if (in->v <= 7)
		return size > INT_MAX ? NBPF_NCCL_INVALID_ARGUMENT
				      : T(6)->regMr(comm, data, (int)size, type, mh);
	return T(8)->regMr(comm, data, size, type, mh);
}

nbpf_nccl_result_t net_inner_regmr_dmabuf(struct net_inner *in, void *comm, void *data,
					  size_t size, int type, uint64_t offset, int fd,
					  void **mh)
{
	if (!T(6)->regMrDmaBuf)
		return NBPF_NCCL_INTERNAL_ERROR;
	return T(6)->regMrDmaBuf(comm, data, size, type, offset, fd, mh);
}

nbpf_nccl_result_t net_inner_deregmr(struct net_inner *in, void *comm, void *mh)
{
	return T(6)->deregMr(comm, mh);
}

nbpf_nccl_result_t net_inner_isend(struct net_inner *in, void *sc, void *data, size_t size,
				   int tag, void *mh, void *ph, void **req)
{
	if (in->v <= 8)
		return size > INT_MAX ? NBPF_NCCL_INTERNAL_ERROR
				      : T(6)->isend(sc, data, (int)size, tag, mh, req);
	if (in->v == 9)
		return T(9)->isend(sc, data, size, tag, mh, req);
	return T(10)->isend(sc, data, size, tag, mh, ph, req);
}

nbpf_nccl_result_t net_inner_irecv(struct net_inner *in, void *rc, int n, void **data,
				   size_t *sizes, int *tags, void **mh, void **ph, void **req)
{
	static void *no_ph[NET_MAX_RECVS]; /* v10+ plugins may read phandles[i]: all NULL */

	if (n < 1 || n > NET_MAX_RECVS)
		return NBPF_NCCL_INTERNAL_ERROR;
	if (in->v <= 8) {
		int isz[NET_MAX_RECVS];

		for (int i = 0; i < n; i++) {
			if (sizes[i] > INT_MAX)
				return NBPF_NCCL_INTERNAL_ERROR;
			isz[i] = (int)sizes[i];
		}
		if (*req == NET_OPTIONAL_RECV)
			*req = NULL; /* NCCL's v6-v8 adaptor: those plugins never see the marker */
		return T(6)->irecv(rc, n, data, isz, tags, mh, req);
	}
	if (in->v == 9)
		return T(9)->irecv(rc, n, data, sizes, tags, mh, req);
	return T(10)->irecv(rc, n, data, sizes, tags, mh, ph ? ph : no_ph, req);
}

nbpf_nccl_result_t net_inner_iflush(struct net_inner *in, void *rc, int n, void **data,
				    int *sizes, void **mh, void **req)
{
	return T(6)->iflush(rc, n, data, sizes, mh, req);
}

nbpf_nccl_result_t net_inner_test(struct net_inner *in, void *req, int *done, int *sizes)
{
	return T(6)->test(req, done, sizes);
}

nbpf_nccl_result_t net_inner_close_send(struct net_inner *in, void *sc)
{
	return T(6)->closeSend(sc);
}

nbpf_nccl_result_t net_inner_close_recv(struct net_inner *in, void *rc)
{
	return T(6)->closeRecv(rc);
}

nbpf_nccl_result_t net_inner_close_listen(struct net_inner *in, void *lc)
{
	return T(6)->closeListen(lc);
}

nbpf_nccl_result_t net_inner_get_device_mr(struct net_inner *in, void *comm, void *mh,
					   void **dptr)
{
	if (in->v < 7 || !T(7)->getDeviceMr)
		return NBPF_NCCL_INTERNAL_ERROR;
	return T(7)->getDeviceMr(comm, mh, dptr);
}

nbpf_nccl_result_t net_inner_irecv_consumed(struct net_inner *in, void *rc, int n, void *req)
{
	if (in->v < 7 || !T(7)->irecvConsumed)
		return NBPF_NCCL_SUCCESS;
	return T(7)->irecvConsumed(rc, n, req);
}

nbpf_nccl_result_t net_inner_set_attr(struct net_inner *in, void *ictx, nbpf_net_attr_v11_t *a)
{
	if (in->v < 11 || !T(11)->setNetAttr)
		return NBPF_NCCL_SUCCESS;
	return T(11)->setNetAttr(ictx, a);
}
