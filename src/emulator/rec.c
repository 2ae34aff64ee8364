/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec.c - libncclbpf-rec.so, a recording shim between NCCL and a plugin:
 * it is NCCL's tuner (v5), profiler (v5) and net (v11) plugin, forwards
 * every call to the same table of a target library (NCCLBPF_RECORD_TARGET,
 * default libnccl-ncclbpf.so beside the shim) and writes one text line per
 * call, with the arguments NCCL passed and what came back, to
 * NCCLBPF_RECORD_DIR/trace.<pid>.<n>.txt (emu_trace.h describes the
 * lines).  Without NCCLBPF_RECORD_DIR it records nothing and only forwards.
 *
 * Why a shim and not a mode of the plugin: what NCCL does at each plugin
 * boundary is recorded exactly, whatever the target (ours, another plugin,
 * or none: the shim then answers as a plugin that changes nothing), and the
 * plugin's own paths carry no recording branch at all.  It is a test and
 * measurement tool: a mutex serialises the lines, and the net test() polls
 * that found nothing are counted and written with the completion.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "nccl/abi_net.h"
#include "nccl/abi_profiler.h"
#include "nccl/abi_tuner.h"

static pthread_once_t rec_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *rec_file;             /* NULL: not recording */
static void *rec_dl;               /* the target */
static const nbpf_tuner_v5_t *tgt_tuner;
static const nbpf_profiler_v5_t *tgt_prof;
static const nbpf_net_v11_t *tgt_net;
static uint64_t rec_t0;
static int rec_mask = -1;          /* NCCLBPF_RECORD_MASK: profiler mask forced after init */
static atomic_int rec_threads;
static _Thread_local int rec_tid;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The time stamp counter, ordered after earlier loads (0 where there is none). */
static inline uint64_t cyc_now(void)
{
#if defined(__x86_64__)
	_mm_lfence();
	return __rdtsc();
#else
	return 0;
#endif
}

/* A pair the reader converts cycles with; under rec_lock. */
static void clock_line(void)
{
	uint64_t c = cyc_now(), ns = mono_ns();

	fprintf(rec_file, "# clock %" PRIu64 " %" PRIu64 "\n", ns, (c + cyc_now()) / 2);
}

static void rec_flush(void)
{
	pthread_mutex_lock(&rec_lock);
	if (rec_file) {
		clock_line();
		fflush(rec_file);
	}
	pthread_mutex_unlock(&rec_lock);
}

/* The target: NCCLBPF_RECORD_TARGET, else libnccl-ncclbpf.so in the shim's directory. */
static void *open_target(char *path, size_t n)
{
	const char *env = getenv("NCCLBPF_RECORD_TARGET");
	Dl_info di;

	if (env && *env) {
		if (!strcmp(env, "none"))
			return NULL;
		snprintf(path, n, "%s", env);
	} else if (dladdr((void *)open_target, &di) && di.dli_fname) {
		const char *slash = strrchr(di.dli_fname, '/');

		snprintf(path, n, "%.*slibnccl-ncclbpf.so",
			 slash ? (int)(slash - di.dli_fname + 1) : 0, di.dli_fname);
	} else {
		snprintf(path, n, "libnccl-ncclbpf.so");
	}
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void rec_init(void)
{
	const char *dir = getenv("NCCLBPF_RECORD_DIR"), *m = getenv("NCCLBPF_RECORD_MASK");
	char target[4096] = "none";

	rec_dl = open_target(target, sizeof(target));
	if (rec_dl) {
		tgt_tuner = dlsym(rec_dl, "ncclTunerPlugin_v5");
		tgt_prof = dlsym(rec_dl, "ncclProfiler_v5");
		tgt_net = dlsym(rec_dl, "ncclNetPlugin_v11");
	} else if (strcmp(target, "none")) {
		fprintf(stderr, "ncclbpf-rec: cannot load %s: %s; recording without a target\n",
			target, dlerror());
	}
	if (m && *m)
		rec_mask = (int)strtol(m, NULL, 0);
	rec_t0 = mono_ns();
	if (!dir || !*dir)
		return;
	for (int i = 0; i < 100 && !rec_file; i++) {
		char path[4096];
		int fd;

		snprintf(path, sizeof(path), "%s/trace.%d.%d.txt", dir, (int)getpid(), i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0)
			rec_file = fdopen(fd, "w");
		else if (errno != EEXIST)
			break;
	}
	if (!rec_file) {
		fprintf(stderr, "ncclbpf-rec: cannot create a trace in %s: %s\n", dir, strerror(errno));
		return;
	}
	setvbuf(rec_file, NULL, _IOFBF, 1 << 20);
	fprintf(rec_file, "# ncclbpf-trace 1\n# pid %d target %s tuner %s profiler %s net %s\n",
		(int)getpid(), target, tgt_tuner ? "v5" : "-", tgt_prof ? "v5" : "-",
		tgt_net ? "v11" : "-");
	fprintf(rec_file, "# policy %s\n", getenv("NCCLBPF_POLICY") ? getenv("NCCLBPF_POLICY") : "");
	clock_line();
	atexit(rec_flush);
}

static void rec_start(void)
{
	pthread_once(&rec_once, rec_init);
}

/* One trace line: kind, thread, time since the first call (us), then the fields. */
__attribute__((format(printf, 2, 3)))
static void rec(const char *kind, const char *fmt, ...)
{
	va_list ap;

	if (!rec_file)
		return;
	if (!rec_tid)
		rec_tid = atomic_fetch_add(&rec_threads, 1) + 1;
	pthread_mutex_lock(&rec_lock);
	fprintf(rec_file, "%s t=%d us=%.1f ", kind, rec_tid, (double)(mono_ns() - rec_t0) / 1e3);
	va_start(ap, fmt);
	vfprintf(rec_file, fmt, ap);
	va_end(ap);
	fputc('\n', rec_file);
	pthread_mutex_unlock(&rec_lock);
}

/* Comma-separated values into a caller buffer (floats exact with %.9g). */
static const char *floats(char *b, size_t n, const float *v, int cnt)
{
	size_t o = 0;

	b[0] = 0;
	for (int i = 0; i < cnt && o < n; i++)
		o += (size_t)snprintf(b + o, n - o, "%s%.9g", i ? "," : "", v[i]);
	return b;
}

static const char *doubles(char *b, size_t n, const double *v, int cnt)
{
	size_t o = 0;

	b[0] = 0;
	for (int i = 0; i < cnt && o < n; i++)
		o += (size_t)snprintf(b + o, n - o, "%s%.17g", i ? "," : "", v[i]);
	return b;
}

static const char *str(const char *s)
{
	return s && *s ? s : "-";
}

/* ---- tuner v5 ------------------------------------------------------------ */

struct rtuner {
	void *inner;
	unsigned id;
};

static atomic_uint rec_ctx_ids;

static nbpf_nccl_result_t t_init(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
				 nbpf_nccl_logger_t logger, nbpf_nvl_domain_info_v5_t *nvl,
				 nbpf_tuner_constants_v5_t *c)
{
	struct rtuner *t = calloc(1, sizeof(*t));
	nbpf_nccl_result_t rc = NBPF_NCCL_SUCCESS;
	char b[7][1600];

	rec_start();
	if (!t)
		return NBPF_NCCL_SYSTEM_ERROR;
	t->id = atomic_fetch_add(&rec_ctx_ids, 1) + 1;
	if (tgt_tuner)
		rc = tgt_tuner->init(&t->inner, comm_id, n_ranks, n_nodes, logger, nvl, c);
	rec("tinit", "ctx=%u v=5 comm=0x%" PRIx64 " ranks=%zu nodes=%zu nvl=%d,%d,%d rc=%d", t->id,
	    comm_id, n_ranks, n_nodes, nvl ? nvl->nNvlDomains : -1,
	    nvl ? nvl->minRanksPerNvlDomain : -1, nvl ? nvl->maxRanksPerNvlDomain : -1, rc);
	if (c)
		rec("tconst", "ctx=%u base=%s hw=%s llmax=%s ring128=%s tree128=%s tree=%s nvlstree=%s",
		    t->id, doubles(b[0], sizeof(b[0]), &c->baseLatencies[0][0], 21),
		    doubles(b[1], sizeof(b[1]), &c->hwLatencies[0][0][0], 63),
		    doubles(b[2], sizeof(b[2]), &c->llMaxBws[0][0], 12),
		    doubles(b[3], sizeof(b[3]), &c->perChMaxRingLL128Bws[0][0], 12),
		    doubles(b[4], sizeof(b[4]), &c->perChMaxTreeLL128Bws[0][0], 12),
		    doubles(b[5], sizeof(b[5]), &c->perChMaxTreeBws[0][0], 12),
		    doubles(b[6], sizeof(b[6]), &c->perChMaxNVLSTreeBws[0][0], 12));
	if (rc != NBPF_NCCL_SUCCESS) {
		free(t);
		*ctx = NULL;
		return rc;
	}
	*ctx = t;
	return rc;
}

static nbpf_nccl_result_t t_call(void *ctx, int coll, size_t n_bytes, int pipe, float **table,
				 int na, int np, int reg, int *nch)
{
	struct rtuner *t = ctx;
	float before[64];
	int cells = na * np, nch0 = nch ? *nch : -1;
	nbpf_nccl_result_t rc = NBPF_NCCL_SUCCESS;
	char b[1200], e[400];
	uint64_t cyc = 0;
	size_t o = 0;

	if (cells < 0 || cells > 64 || !table)
		cells = 0;
	if (cells)
		memcpy(before, table, (size_t)cells * sizeof(float));
	rec("tcall", "ctx=%u coll=%d bytes=%zu pipe=%d reg=%d na=%d np=%d nch=%d cost=%s",
	    t ? t->id : 0, coll, n_bytes, pipe, reg, na, np, nch0,
	    floats(b, sizeof(b), before, cells));
	if (t && t->inner && tgt_tuner) {
		uint64_t c0 = cyc_now();

		rc = tgt_tuner->getCollInfo(t->inner, coll, n_bytes, pipe, table, na, np, reg, nch);
		cyc = cyc_now() - c0;
	}
	e[0] = 0;
	for (int i = 0; i < cells && o < sizeof(e); i++) {
		float v = ((float *)table)[i];

		if (memcmp(&v, &before[i], sizeof(v)))
			o += (size_t)snprintf(e + o, sizeof(e) - o, "%s%d:%.9g", o ? "," : "", i, v);
	}
	rec("tret", "ctx=%u rc=%d nch=%d edit=%s cyc=%" PRIu64, t ? t->id : 0, rc, nch ? *nch : -1,
	    e[0] ? e : "-", cyc);
	return rc;
}

static nbpf_nccl_result_t t_fini(void *ctx)
{
	struct rtuner *t = ctx;
	nbpf_nccl_result_t rc = NBPF_NCCL_SUCCESS;

	if (!t)
		return rc;
	if (t->inner && tgt_tuner)
		rc = tgt_tuner->finalize(t->inner);
	rec("tfini", "ctx=%u rc=%d", t->id, rc);
	rec_flush();
	free(t);
	return rc;
}

__attribute__((visibility("default"))) const nbpf_tuner_v5_t ncclTunerPlugin_v5 = {
	.name = "ncclbpf-rec", .init = t_init, .getCollInfo = t_call, .finalize = t_fini,
};

/* ---- profiler v5 ----------------------------------------------------------- */

struct rprof {
	void *inner;
	unsigned id;
};

static atomic_ullong rec_fake_handles; /* handles handed out when there is no target */

static nbpf_nccl_result_t p_init(void **ctx, uint64_t comm_id, int *mask, const char *name,
				 int n_nodes, int n_ranks, int rank, nbpf_nccl_logger_t logger)
{
	struct rprof *p = calloc(1, sizeof(*p));
	nbpf_nccl_result_t rc = NBPF_NCCL_SUCCESS;
	int in = mask ? *mask : -1;

	rec_start();
	if (!p)
		return NBPF_NCCL_SYSTEM_ERROR;
	p->id = atomic_fetch_add(&rec_ctx_ids, 1) + 1;
	if (tgt_prof)
		rc = tgt_prof->init(&p->inner, comm_id, mask, name, n_nodes, n_ranks, rank, logger);
	if (mask && rec_mask >= 0)
		*mask = rec_mask;
	rec("pinit", "ctx=%u v=5 comm=0x%" PRIx64 " name=%s nodes=%d ranks=%d rank=%d mask_in=%#x "
	    "mask=%#x rc=%d", p->id, comm_id, str(name), n_nodes, n_ranks, rank, in,
	    mask ? *mask : -1, rc);
	*ctx = p;
	return rc;
}

static void descr_fields(char *b, size_t n, const nbpf_prof_descr_v5_t *d)
{
	switch (d->type) {
	case NBPF_PROF_COLL:
		snprintf(b, n, "seq=%" PRIu64 " func=%s count=%zu root=%d dtype=%s nch=%u warps=%u "
			 "algo=%s proto=%s", d->coll.seqNumber, str(d->coll.func), d->coll.count,
			 d->coll.root, str(d->coll.datatype), d->coll.nChannels, d->coll.nWarps,
			 str(d->coll.algo), str(d->coll.proto));
		break;
	case NBPF_PROF_P2P:
		snprintf(b, n, "func=%s count=%zu dtype=%s peer=%d nch=%u", str(d->p2p.func),
			 d->p2p.count, str(d->p2p.datatype), d->p2p.peer, d->p2p.nChannels);
		break;
	case NBPF_PROF_PROXY_OP:
		snprintf(b, n, "ch=%u peer=%d steps=%d chunk=%d send=%d", d->proxyOp.channelId,
			 d->proxyOp.peer, d->proxyOp.nSteps, d->proxyOp.chunkSize, d->proxyOp.isSend);
		break;
	case NBPF_PROF_PROXY_STEP:
		snprintf(b, n, "step=%d", d->proxyStep.step);
		break;
	case NBPF_PROF_KERNEL_CH:
		snprintf(b, n, "ch=%u ptimer=%" PRIu64, d->kernelCh.channelId, d->kernelCh.pTimer);
		break;
	case NBPF_PROF_NET_PLUGIN:
		snprintf(b, n, "id=%" PRId64, d->netPlugin.id);
		break;
	case NBPF_PROF_GROUP_API:
		snprintf(b, n, "graph=%d depth=%d", d->groupApi.graphCaptured, d->groupApi.groupDepth);
		break;
	case NBPF_PROF_COLL_API:
		snprintf(b, n, "func=%s count=%zu dtype=%s root=%d graph=%d", str(d->collApi.func),
			 d->collApi.count, str(d->collApi.datatype), d->collApi.root,
			 d->collApi.graphCaptured);
		break;
	case NBPF_PROF_P2P_API:
		snprintf(b, n, "func=%s count=%zu dtype=%s graph=%d", str(d->p2pApi.func),
			 d->p2pApi.count, str(d->p2pApi.datatype), d->p2pApi.graphCaptured);
		break;
	default:
		b[0] = 0;
	}
}

static nbpf_nccl_result_t p_start(void *ctx, void **h, nbpf_prof_descr_v5_t *d)
{
	struct rprof *p = ctx;
	nbpf_nccl_result_t rc = NBPF_NCCL_SUCCESS;
	char b[512] = "";
	uint64_t cyc = 0;

	if (!h)
		return rc;
	*h = NULL;
	if (p && p->inner && tgt_prof) {
		uint64_t c0 = cyc_now();

		rc = tgt_prof->startEvent(p->inner, h, d);
		cyc = cyc_now() - c0;
	}
	else if (p && d)
		*h = (void *)(uintptr_t)(atomic_fetch_add(&rec_fake_handles, 1) + 1);
	if (d)
		descr_fields(b, sizeof(b), d);
	rec("pstart", "ctx=%u type=%#" PRIx64 " parent=%#" PRIxPTR " rank=%d %s h=%#" PRIxPTR
	    " rc=%d cyc=%" PRIu64, p ? p->id : 0, d ? d->type : 0, d ? (uintptr_t)d->parentObj : 0,
	    d ? d->rank : -1, b, (uintptr_t)*h, rc, cyc);
	return rc;
}

static nbpf_nccl_result_t p_stop(void *h)
{
	uint64_t c0 = cyc_now();
	nbpf_nccl_result_t rc = tgt_prof ? tgt_prof->stopEvent(h) : NBPF_NCCL_SUCCESS;
	uint64_t cyc = tgt_prof ? cyc_now() - c0 : 0;

	rec("pstop", "h=%#" PRIxPTR " rc=%d cyc=%" PRIu64, (uintptr_t)h, rc, cyc);
	return rc;
}

static nbpf_nccl_result_t p_state(void *h, int state, nbpf_prof_state_args_v4_t *a)
{
	uint64_t c0 = cyc_now();
	nbpf_nccl_result_t rc = tgt_prof ? tgt_prof->recordEventState(h, state, a)
					 : NBPF_NCCL_SUCCESS;
	uint64_t cyc = tgt_prof ? cyc_now() - c0 : 0;

	/* KernelCh stop carries the GPU timer; other states, their union's first word. */
	if (a && state == NBPF_PROF_STATE_KERNEL_CH_STOP)
		rec("pstate", "h=%#" PRIxPTR " state=%d ptimer=%" PRIu64 " rc=%d cyc=%" PRIu64,
		    (uintptr_t)h, state, a->kernelCh.pTimer, rc, cyc);
	else
		rec("pstate", "h=%#" PRIxPTR " state=%d arg=%#" PRIx64 " rc=%d cyc=%" PRIu64,
		    (uintptr_t)h, state, a ? a->kernelCh.pTimer : 0, rc, cyc);
	return rc;
}

static nbpf_nccl_result_t p_fini(void *ctx)
{
	struct rprof *p = ctx;
	nbpf_nccl_result_t rc = NBPF_NCCL_SUCCESS;

	if (!p)
		return rc;
	if (p->inner && tgt_prof)
		rc = tgt_prof->finalize(p->inner);
	rec("pfini", "ctx=%u rc=%d", p->id, rc);
	rec_flush();
	free(p);
	return rc;
}

__attribute__((visibility("default"))) const nbpf_profiler_v5_t ncclProfiler_v5 = {
	.name = "ncclbpf-rec", .init = p_init, .startEvent = p_start, .stopEvent = p_stop,
	.recordEventState = p_state, .finalize = p_fini,
};

/* ---- net v11 ------------------------------------------------------------------ */

/*
 * test() polls that found nothing, per request, written with the poll that
 * completes it (NCCL polls every pending request in a loop).  An open
 * addressing table; a request that never completes is simply never written.
 */
#define POLL_SLOTS 4096u
#define POLL_GONE  ((uintptr_t)-1) /* a completed request's slot: probing goes on, inserts reuse it */
static struct { uintptr_t req; uint32_t polls; } rec_polls[POLL_SLOTS];

static uint32_t poll_hash(uintptr_t req)
{
	return (uint32_t)((req >> 4) * 2654435761u) & (POLL_SLOTS - 1);
}

/* req's slot (made when insert); -1 when absent or the table is full. */
static int poll_slot(uintptr_t req, bool insert)
{
	uint32_t i = poll_hash(req), reuse = POLL_SLOTS;

	for (uint32_t k = 0; k < POLL_SLOTS; k++, i = (i + 1) & (POLL_SLOTS - 1)) {
		if (rec_polls[i].req == req)
			return (int)i;
		if (rec_polls[i].req == POLL_GONE && reuse == POLL_SLOTS)
			reuse = i;
		if (!rec_polls[i].req) {
			if (reuse == POLL_SLOTS)
				reuse = i;
			break;
		}
	}
	if (!insert || reuse == POLL_SLOTS)
		return -1;
	rec_polls[reuse].req = req;
	rec_polls[reuse].polls = 0;
	return (int)reuse;
}

/* A handle's identity: FNV-1a of its bytes (the listener writes it, the peer connects with it). */
static uint64_t handle_hash(const void *h)
{
	const unsigned char *p = h;
	uint64_t x = 1469598103934665603ull;

	for (int i = 0; p && i < NBPF_NET_HANDLE_MAXSIZE; i++)
		x = (x ^ p[i]) * 1099511628211ull;
	return x;
}

#define NET_CALL(fn, ...) (tgt_net && tgt_net->fn ? tgt_net->fn(__VA_ARGS__) : NBPF_NCCL_INTERNAL_ERROR)

static nbpf_nccl_result_t n_init(void **ctx, uint64_t comm_id, nbpf_net_comm_config_t *cfg,
				 nbpf_nccl_logger_t logger, nbpf_net_prof_cb_t prof)
{
	nbpf_nccl_result_t rc;

	rec_start();
	rc = NET_CALL(init, ctx, comm_id, cfg, logger, prof);
	rec("ninit", "ctx=%#" PRIxPTR " v=11 comm=0x%" PRIx64 " tc=%d rc=%d",
	    ctx ? (uintptr_t)*ctx : 0, comm_id, cfg ? cfg->trafficClass : -1, rc);
	return rc;
}

static nbpf_nccl_result_t n_devices(int *n)
{
	nbpf_nccl_result_t rc;

	rec_start();
	rc = NET_CALL(devices, n);
	rec("ndevices", "n=%d rc=%d", n ? *n : -1, rc);
	return rc;
}

static nbpf_nccl_result_t n_props(int dev, nbpf_net_props_v11_t *p)
{
	nbpf_nccl_result_t rc = NET_CALL(getProperties, dev, p);

	if (rc == NBPF_NCCL_SUCCESS && p)
		rec("nprops", "dev=%d name=%s ptr=%#x speed=%d port=%d lat=%g maxcomms=%d maxrecvs=%d "
		    "regglobal=%d forceflush=%d type=%d maxp2p=%zu maxcoll=%zu maxmulti=%d rc=%d", dev,
		    str(p->name), p->ptrSupport, p->speed, p->port, p->latency, p->maxComms,
		    p->maxRecvs, p->regIsGlobal, p->forceFlush, p->netDeviceType, p->maxP2pBytes,
		    p->maxCollBytes, p->maxMultiRequestSize, rc);
	else
		rec("nprops", "dev=%d rc=%d", dev, rc);
	return rc;
}

static nbpf_nccl_result_t n_listen(void *ctx, int dev, void *handle, void **lc)
{
	nbpf_nccl_result_t rc = NET_CALL(listen, ctx, dev, handle, lc);

	rec("nlisten", "ctx=%#" PRIxPTR " dev=%d hh=%016" PRIx64 " lc=%#" PRIxPTR " rc=%d",
	    (uintptr_t)ctx, dev, handle_hash(handle), lc ? (uintptr_t)*lc : 0, rc);
	return rc;
}

static nbpf_nccl_result_t n_connect(void *ctx, int dev, void *handle, void **sc,
				    nbpf_net_dev_handle_t **dc)
{
	nbpf_nccl_result_t rc = NET_CALL(connect, ctx, dev, handle, sc, dc);

	rec("nconnect", "ctx=%#" PRIxPTR " dev=%d hh=%016" PRIx64 " sc=%#" PRIxPTR " rc=%d",
	    (uintptr_t)ctx, dev, handle_hash(handle), sc ? (uintptr_t)*sc : 0, rc);
	return rc;
}

static nbpf_nccl_result_t n_accept(void *lc, void **rcomm, nbpf_net_dev_handle_t **dc)
{
	nbpf_nccl_result_t rc = NET_CALL(accept, lc, rcomm, dc);

	rec("naccept", "lc=%#" PRIxPTR " rcomm=%#" PRIxPTR " rc=%d", (uintptr_t)lc,
	    rcomm ? (uintptr_t)*rcomm : 0, rc);
	return rc;
}

static nbpf_nccl_result_t n_regmr(void *c, void *data, size_t size, int type, void **mh)
{
	nbpf_nccl_result_t rc = NET_CALL(regMr, c, data, size, type, mh);

	rec("nregmr", "comm=%#" PRIxPTR " size=%zu type=%d mh=%#" PRIxPTR " rc=%d", (uintptr_t)c,
	    size, type, mh ? (uintptr_t)*mh : 0, rc);
	return rc;
}

static nbpf_nccl_result_t n_regmr_dmabuf(void *c, void *data, size_t size, int type,
					 uint64_t off, int fd, void **mh)
{
	nbpf_nccl_result_t rc = NET_CALL(regMrDmaBuf, c, data, size, type, off, fd, mh);

	rec("nregmrdmabuf", "comm=%#" PRIxPTR " size=%zu type=%d rc=%d", (uintptr_t)c, size, type, rc);
	return rc;
}

static nbpf_nccl_result_t n_deregmr(void *c, void *mh)
{
	nbpf_nccl_result_t rc = NET_CALL(deregMr, c, mh);

	rec("nderegmr", "comm=%#" PRIxPTR " mh=%#" PRIxPTR " rc=%d", (uintptr_t)c, (uintptr_t)mh, rc);
	return rc;
}

static nbpf_nccl_result_t n_isend(void *sc, void *data, size_t size, int tag, void *mh,
				  void *ph, void **req)
{
	uintptr_t pre = req ? (uintptr_t)*req : 0;
	nbpf_nccl_result_t rc = NET_CALL(isend, sc, data, size, tag, mh, ph, req);

	rec("nisend", "sc=%#" PRIxPTR " size=%zu tag=%d pre=%#" PRIxPTR " req=%#" PRIxPTR " rc=%d",
	    (uintptr_t)sc, size, tag, pre, req ? (uintptr_t)*req : 0, rc);
	return rc;
}

static nbpf_nccl_result_t n_irecv(void *rcomm, int n, void **data, size_t *sizes, int *tags,
				  void **mh, void **ph, void **req)
{
	uintptr_t pre = req ? (uintptr_t)*req : 0;
	nbpf_nccl_result_t rc = NET_CALL(irecv, rcomm, n, data, sizes, tags, mh, ph, req);
	char sz[256] = "", tg[256] = "";
	size_t a = 0, b = 0;

	for (int i = 0; i < n && i < 8 && sizes && tags; i++) {
		a += (size_t)snprintf(sz + a, sizeof(sz) - a, "%s%zu", i ? "," : "", sizes[i]);
		b += (size_t)snprintf(tg + b, sizeof(tg) - b, "%s%d", i ? "," : "", tags[i]);
	}
	rec("nirecv", "rcomm=%#" PRIxPTR " n=%d sizes=%s tags=%s pre=%#" PRIxPTR " req=%#" PRIxPTR
	    " rc=%d", (uintptr_t)rcomm, n, str(sz), str(tg), pre, req ? (uintptr_t)*req : 0, rc);
	return rc;
}

static nbpf_nccl_result_t n_iflush(void *rcomm, int n, void **data, int *sizes, void **mh,
				   void **req)
{
	nbpf_nccl_result_t rc = NET_CALL(iflush, rcomm, n, data, sizes, mh, req);

	rec("niflush", "rcomm=%#" PRIxPTR " n=%d req=%#" PRIxPTR " rc=%d", (uintptr_t)rcomm, n,
	    req ? (uintptr_t)*req : 0, rc);
	return rc;
}

static nbpf_nccl_result_t n_test(void *req, int *done, int *sizes)
{
	nbpf_nccl_result_t rc = NET_CALL(test, req, done, sizes);
	bool pending = rc == NBPF_NCCL_SUCCESS && done && !*done;
	uint32_t k = 0;
	int i;

	pthread_mutex_lock(&rec_lock);
	i = poll_slot((uintptr_t)req, pending);
	if (i >= 0 && pending)
		rec_polls[i].polls++;
	if (i >= 0 && !pending) {
		k = rec_polls[i].polls;
		rec_polls[i].req = POLL_GONE;
	}
	pthread_mutex_unlock(&rec_lock);
	if (pending)
		return rc;
	rec("ntest", "req=%#" PRIxPTR " done=%d size=%d polls=%u rc=%d", (uintptr_t)req,
	    done ? *done : -1, sizes && done && *done ? sizes[0] : -1, k, rc);
	return rc;
}

#define NET_CLOSE(name, fn, kind)                                       \
	static nbpf_nccl_result_t name(void *c)                         \
	{                                                               \
		nbpf_nccl_result_t rc = NET_CALL(fn, c);                \
									\
		rec(kind, "c=%#" PRIxPTR " rc=%d", (uintptr_t)c, rc);   \
		return rc;                                              \
	}
NET_CLOSE(n_close_send, closeSend, "nclosesend")
NET_CLOSE(n_close_recv, closeRecv, "ncloserecv")
NET_CLOSE(n_close_listen, closeListen, "ncloselisten")

static nbpf_nccl_result_t n_get_device_mr(void *c, void *mh, void **dptr)
{
	nbpf_nccl_result_t rc = NET_CALL(getDeviceMr, c, mh, dptr);

	rec("ndevmr", "comm=%#" PRIxPTR " rc=%d", (uintptr_t)c, rc);
	return rc;
}

static nbpf_nccl_result_t n_consumed(void *rcomm, int n, void *req)
{
	nbpf_nccl_result_t rc = NET_CALL(irecvConsumed, rcomm, n, req);

	rec("nconsumed", "rcomm=%#" PRIxPTR " n=%d req=%#" PRIxPTR " rc=%d", (uintptr_t)rcomm, n,
	    (uintptr_t)req, rc);
	return rc;
}

static nbpf_nccl_result_t n_fini(void *ctx)
{
	nbpf_nccl_result_t rc = NET_CALL(finalize, ctx);

	rec("nfini", "ctx=%#" PRIxPTR " rc=%d", (uintptr_t)ctx, rc);
	rec_flush();
	return rc;
}

static nbpf_nccl_result_t n_set_attr(void *ctx, nbpf_net_attr_v11_t *attr)
{
	nbpf_nccl_result_t rc = NET_CALL(setNetAttr, ctx, attr);

	rec("nattr", "ctx=%#" PRIxPTR " rc=%d", (uintptr_t)ctx, rc);
	return rc;
}

/*
 * The table NCCL finds.  makeVDevice stays NULL as ours is (no NIC fusion);
 * an optional entry the target lacks fails if NCCL calls it anyway.
 */
__attribute__((visibility("default"))) const nbpf_net_v11_t ncclNetPlugin_v11 = {
	.name = "ncclbpf-rec", .init = n_init, .devices = n_devices, .getProperties = n_props,
	.listen = n_listen, .connect = n_connect, .accept = n_accept, .regMr = n_regmr,
	.regMrDmaBuf = n_regmr_dmabuf, .deregMr = n_deregmr, .isend = n_isend, .irecv = n_irecv,
	.iflush = n_iflush, .test = n_test, .closeSend = n_close_send, .closeRecv = n_close_recv,
	.closeListen = n_close_listen, .getDeviceMr = n_get_device_mr,
	.irecvConsumed = n_consumed, .makeVDevice = NULL, .finalize = n_fini,
	.setNetAttr = n_set_attr,
};
