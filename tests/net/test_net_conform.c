// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_conform.c - the inner-plugin wrapper (NCCLBPF_NET=inner:...)
 * against a stand-in inner plugin of one ABI version (tests/net/
 * mock_inner.c), driven through each of our tables v6..v12 as NCCL drives
 * them, each in its own child process.
 *
 * The oracle is the inner plugin itself: it records what it was given and
 * what it answered on every call, and after every call through the wrapper
 * the test checks that the wrapper made exactly one inner call with the
 * arguments NCCL's own adaptor would have passed (its comm, its memory
 * handle, NULL where NCCL's v6-v8 adaptor clears the optional-completion
 * marker, the pre-set 0x1 to v9+, NCCL's device-handle pointer and
 * phandles), and reported exactly the inner plugin's answer (result,
 * NULL or a request, done, sizes), and that the inner plugin never saw a
 * handle it did not create.  Then:
 *   - properties: what NCCL reads through our table equals what it would
 *     read from the inner plugin through its own adaptor, field by field;
 *   - scripted: connect/accept "not yet", isend NULL until the receive is
 *     posted (more than the wrapper's 256 request slots in a row), errors
 *     from every call, NULL flushes, optional receives (IB, early
 *     completion, answered with 0x1), grouped receives up to maxRecvs,
 *     irecvConsumed naming the inner request, device offload handles;
 *   - random call sequences (seeded, NCCLBPF_TEST_SCALE scales the steps),
 *     model-checked call by call, then the totals the wrapper reports
 *     (per-peer telemetry, what a counting net program saw, program runs)
 *     against what the inner plugin completed;
 *   - nothing of the inner plugin's is left once everything is closed.
 *
 *   test_net_conform <mock library> <its version> [seed]
 */
#include <errno.h>
#include <dirent.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "control/ctl_client.h"
#include "mock_inner.h"
#include "ncclbpf/runtime.h"
#include "net_drv.h"

#define NPAIRS 2
#define STEPS 3000
#define WINDOW 8          /* posts in flight per comm (NCCL_STEPS) */
#define MAXSZ (64u << 10)

static struct mock_ctl *M;
static struct drv d;
static int IV, OV;        /* the inner plugin's version, our table's */
static uint64_t seed;
static const char *step_what = "setup";
static long step_no = -1;
static int model_fails;

static void model_fail(int line, const char *cond, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void model_fail(int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	check_failed++;
	if (++model_fails > 25)
		return;
	fprintf(stderr, "inner v%d as v%d, seed %llu, step %ld (%s), line %d: %s: ", IV, OV,
		(unsigned long long)seed, step_no, step_what, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A model check: cond, or one failure naming the step that broke it. */
#define MC(cond, ...) do { if (cond) check_passed++; \
	else model_fail(__LINE__, #cond, __VA_ARGS__); } while (0)

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static unsigned rndn(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static nbpf_nccl_result_t fake_prof(void **eh, int type, void *ph, int64_t id, void *ext)
{
	return 0;
}

/* The inner plugin made exactly one call of this kind since snapshot. */
#define ONE_CALL(call, before) \
	MC(M->last[call].count == (before) + 1, "the wrapper made %llu inner calls, not 1", \
	   (unsigned long long)(M->last[call].count - (before)))

static void no_violation(void)
{
	MC(M->violations == 0, "the inner plugin saw a call NCCL never makes: %s", M->violation);
}

/* ---- properties ---------------------------------------------------------- */

static void set_props(void)
{
	M->props = (struct mock_props){
		.guid = 0x6d6f636b, .ptr_support = NBPF_NET_PTR_HOST | NBPF_NET_PTR_CUDA | NBPF_NET_PTR_DMABUF,
		.reg_is_global = 1, .force_flush = 1, .speed = 400000, .port = 1,
		.max_comms = 65536, .max_recvs = 8, .dev_type = 1 /* UNPACK: gIB's device offload */,
		.dev_version = 7, .ndevs = 2, .devs = { 3, 5 }, .latency = 2.5f,
		.max_p2p = 1ull << 33, .max_coll = 1ull << 31, .max_multi = 4, .rail = 2, .plane = 1,
	};
}

/*
 * What NCCL reads about the inner plugin's device through its own adaptor
 * for the inner version (NCCL 2.28's defaults where the version is silent).
 */
static void expected_props(int dev, nbpf_net_props_v12_t *e)
{
	const struct mock_props *p = &M->props;
	int cap = IV == 12 ? 8 : 4;

	memset(e, 0, sizeof(*e));
	e->guid = p->guid + (uint64_t)dev;
	e->ptrSupport = p->ptr_support;
	e->speed = p->speed;
	e->port = p->port;
	e->latency = p->latency;
	e->maxComms = p->max_comms;
	e->maxRecvs = p->max_recvs;
	e->regIsGlobal = IV >= 8 ? p->reg_is_global : 0;
	e->forceFlush = IV >= 9 ? p->force_flush : 0;
	e->netDeviceType = IV >= 7 ? p->dev_type : 0;
	e->netDeviceVersion = IV >= 7 ? p->dev_version : 0;
	e->vProps.ndevs = IV >= 9 ? (p->ndevs < cap ? p->ndevs : cap) : 1;
	if (IV >= 9)
		memcpy(e->vProps.devs, p->devs, sizeof(int) * (size_t)e->vProps.ndevs);
	else
		e->vProps.devs[0] = dev;
	e->maxP2pBytes = IV >= 9 ? p->max_p2p : 1ull << 30;
	e->maxCollBytes = IV >= 9 ? p->max_coll : 512ull << 20;
	e->maxMultiRequestSize = IV >= 11 ? p->max_multi : 1;
	e->railId = (int16_t)(IV >= 12 ? p->rail : -1);
	e->planeId = (int16_t)(IV >= 12 ? p->plane : -1);
}

#define PROP_EQ(f, fmt) MC(g.f == e.f, "property " #f ": " fmt " through our v%d, " fmt " from the inner plugin", \
			   g.f, OV, e.f)

static void check_props(int dev)
{
	nbpf_net_props_v12_t g, e;
	uint64_t before = M->last[MC_PROPS].count;

	step_what = "getProperties";
	expected_props(dev, &e);
	MC(drv_props_all(&d, dev, &g) == 0, "getProperties(%d) failed", dev);
	ONE_CALL(MC_PROPS, before);
	MC(g.name && !strcmp(g.name, "mock"), "name %s", g.name ? g.name : "(null)");
	MC(g.pciPath == NULL, "pciPath %p", (void *)g.pciPath);
	PROP_EQ(guid, "%" PRIx64);
	PROP_EQ(ptrSupport, "%d");
	PROP_EQ(speed, "%d");
	PROP_EQ(port, "%d");
	PROP_EQ(maxComms, "%d");
	PROP_EQ(maxRecvs, "%d");
	MC(g.latency == e.latency, "latency %f", (double)g.latency);
	if (OV >= 7) {
		PROP_EQ(netDeviceType, "%d");
		PROP_EQ(netDeviceVersion, "%d");
	}
	if (OV >= 8)
		PROP_EQ(regIsGlobal, "%d");
	if (OV >= 9) {
		int cap = OV == 12 ? 8 : 4;

		PROP_EQ(forceFlush, "%d");
		MC(g.vProps.ndevs == (e.vProps.ndevs < cap ? e.vProps.ndevs : cap), "vProps.ndevs %d",
		   g.vProps.ndevs);
		for (int i = 0; i < g.vProps.ndevs && i < cap; i++)
			MC(g.vProps.devs[i] == e.vProps.devs[i], "vProps.devs[%d] %d", i, g.vProps.devs[i]);
		PROP_EQ(maxP2pBytes, "%zu");
		PROP_EQ(maxCollBytes, "%zu");
	}
	if (OV >= 11)
		PROP_EQ(maxMultiRequestSize, "%d");
	if (OV >= 12) {
		PROP_EQ(railId, "%d");
		PROP_EQ(planeId, "%d");
	}
	/* An error from the inner plugin is NCCL's answer too. */
	M->fail[MC_PROPS] = NBPF_NCCL_SYSTEM_ERROR;
	MC(drv_props_all(&d, dev, &g) == NBPF_NCCL_SYSTEM_ERROR, "a failing getProperties");
}

/* ---- connection setup ------------------------------------------------------ */

struct pair {
	void *lc, *sc, *rc;       /* ours */
	void *isc, *irc, *ilc;    /* the inner plugin's */
	void *smh, *rmh;          /* memory handles (the inner plugin's, passed through) */
	unsigned errs;            /* comms that saw an error (1 send, 2 receive): counted once each */
};

static struct pair pairs[NPAIRS];

static void check_dc(int call, void **given)
{
	const struct mock_rec *r = &M->last[call];

	if (IV < 7)
		return;
	if (OV >= 7)
		MC(r->dev_handle == given, "device-handle pointer %p, NCCL gave %p",
		   (void *)r->dev_handle, (void *)given);
	else
		MC(r->dev_handle && r->dev_handle_in == NULL,
		   "a v%d plugin behind our v6 table needs a pointer to a NULL handle", IV);
}

static void setup_pair(struct pair *p, bool offload)
{
	char handle[NBPF_NET_HANDLE_MAXSIZE];
	static int ask_offload;
	void *sdh = offload ? &ask_offload : NULL, *rdh = sdh;
	uint64_t before;
	int r, polls = 0;

	M->dev_offload = offload;
	step_what = "listen";
	M->fail[MC_LISTEN] = NBPF_NCCL_INTERNAL_ERROR;
	MC(drv_listen(&d, 0, handle, &p->lc) == NBPF_NCCL_INTERNAL_ERROR && !p->lc,
	   "a failing listen");
	before = M->last[MC_LISTEN].count;
	MC(drv_listen(&d, 0, handle, &p->lc) == 0 && p->lc, "listen");
	ONE_CALL(MC_LISTEN, before);
	p->ilc = M->last[MC_LISTEN].req_out;

	step_what = "connect";
	M->connect_polls = 2;
	M->accept_polls = 1;
	M->fail[MC_CONNECT] = NBPF_NCCL_REMOTE_ERROR;
	MC(drv_connect_dc(&d, 0, handle, &p->sc, &sdh) == NBPF_NCCL_REMOTE_ERROR && !p->sc,
	   "a failing connect");
	while (!p->sc && polls++ < 10) {
		before = M->last[MC_CONNECT].count;
		r = drv_connect_dc(&d, 0, handle, &p->sc, &sdh);
		ONE_CALL(MC_CONNECT, before);
		MC(r == M->last[MC_CONNECT].result, "connect returned %d, the inner plugin %d", r,
		   M->last[MC_CONNECT].result);
		MC(!p->sc == !M->last[MC_CONNECT].req_out, "connect: comm %p, the inner plugin's %p",
		   p->sc, M->last[MC_CONNECT].req_out);
		check_dc(MC_CONNECT, &sdh);
		if (IV == 10)
			MC(M->last[MC_CONNECT].traffic_class == (OV >= 11 ? 7 : -1),
			   "v10 connect config trafficClass %d", M->last[MC_CONNECT].traffic_class);
	}
	MC(polls == 3 && p->sc, "connect ready at call %d", polls);
	p->isc = M->last[MC_CONNECT].req_out;

	step_what = "accept";
	M->fail[MC_ACCEPT] = NBPF_NCCL_SYSTEM_ERROR;
	MC(drv_accept_dc(&d, p->lc, &p->rc, &rdh) == NBPF_NCCL_SYSTEM_ERROR && !p->rc,
	   "a failing accept");
	polls = 0;
	while (!p->rc && polls++ < 10) {
		before = M->last[MC_ACCEPT].count;
		r = drv_accept_dc(&d, p->lc, &p->rc, &rdh);
		ONE_CALL(MC_ACCEPT, before);
		MC(r == 0 && !p->rc == !M->last[MC_ACCEPT].req_out, "accept %d", r);
		MC(M->last[MC_ACCEPT].comm == p->ilc, "accept on %p, not the inner listen comm %p",
		   M->last[MC_ACCEPT].comm, p->ilc);
		check_dc(MC_ACCEPT, &rdh);
	}
	MC(polls == 2 && p->rc, "accept ready at call %d", polls);
	p->irc = M->last[MC_ACCEPT].req_out;
	/* Device offload (gIB's unpack queues): the inner plugin's handle reaches NCCL. */
	if (offload && OV >= 7 && IV >= 7)
		MC(sdh != &ask_offload && rdh != &ask_offload, "the offload handles did not reach NCCL");

	step_what = "regMr";
	{
		static char sbuf[1], rbuf[1];
		uint64_t b2 = M->last[MC_REGMR].count;

		M->fail[MC_REGMR] = NBPF_NCCL_INTERNAL_ERROR;
		MC(drv_regmr(&d, p->sc, sbuf, 1, NBPF_NET_PTR_HOST, &p->smh) == NBPF_NCCL_INTERNAL_ERROR,
		   "a failing regMr");
		MC(drv_regmr(&d, p->sc, sbuf, 1, NBPF_NET_PTR_CUDA, &p->smh) == 0 && p->smh, "regMr");
		MC(M->last[MC_REGMR].count == b2 + 2, "regMr calls");
		MC(M->last[MC_REGMR].comm == p->isc && p->smh == M->last[MC_REGMR].req_out &&
		   M->last[MC_REGMR].type == NBPF_NET_PTR_CUDA && M->last[MC_REGMR].data[0] == sbuf,
		   "regMr passed through");
		M->fail[MC_REGMR_DMABUF] = NBPF_NCCL_SYSTEM_ERROR;
		MC(drv_regmr_dmabuf(&d, p->rc, rbuf, 4096, NBPF_NET_PTR_DMABUF, 64, 9, &p->rmh) ==
		   NBPF_NCCL_SYSTEM_ERROR, "a failing regMrDmaBuf");
		MC(drv_regmr_dmabuf(&d, p->rc, rbuf, 4096, NBPF_NET_PTR_DMABUF, 64, 9, &p->rmh) == 0 &&
		   p->rmh == M->last[MC_REGMR_DMABUF].req_out &&
		   M->last[MC_REGMR_DMABUF].comm == p->irc && M->last[MC_REGMR_DMABUF].offset == 64 &&
		   M->last[MC_REGMR_DMABUF].fd == 9, "regMrDmaBuf passed through");
	}
	if (OV >= 7) {
		void *dptr = NULL;
		int want = IV >= 7 ? 0 : NBPF_NCCL_INTERNAL_ERROR;

		step_what = "getDeviceMr";
		M->fail[MC_GET_DEVICE_MR] = IV >= 7 ? NBPF_NCCL_INTERNAL_ERROR : 0;
		MC(drv_get_device_mr(&d, p->rc, p->rmh, &dptr) == NBPF_NCCL_INTERNAL_ERROR,
		   "a failing getDeviceMr");
		MC(drv_get_device_mr(&d, p->rc, p->rmh, &dptr) == want, "getDeviceMr");
		if (IV >= 7)
			MC(dptr == M->last[MC_GET_DEVICE_MR].req_out && dptr &&
			   M->last[MC_GET_DEVICE_MR].comm == p->irc &&
			   M->last[MC_GET_DEVICE_MR].mh[0] == p->rmh, "getDeviceMr passed through");
	}
	no_violation();
}

/* ---- requests: the wrapper's and the inner plugin's --------------------------- */

enum { K_SEND, K_RECV, K_FLUSH };

struct ereq {
	void *w;                  /* the wrapper's request (what NCCL holds) */
	void *in;                 /* the inner plugin's */
	int kind, n, pair;
	bool done;
	void **bufs;
};

static struct ereq live[256];
static int nlive;
/* Completed receives NCCL has yet to consume, oldest first per pair (NCCL consumes in order). */
static struct ereq consumable[NPAIRS][64];
static int nconsumable[NPAIRS];

static uint64_t posts[2], dones[2], bytes[2], flushes;
static char *sendbuf, *recvbuf;
static void *ph_vals[MOCK_MAX_RECVS];

static void check_ph(const struct mock_rec *r, int n, void **given)
{
	if (IV < 10)
		return;
	for (int i = 0; i < n; i++)
		MC(r->ph[i] == (OV >= 10 ? given[i] : NULL), "phandle %d: %p", i, r->ph[i]);
}

/* isend through the wrapper, checked against the inner plugin's record. */
static int post_send(int pi, size_t size, int tag, struct ereq *out)
{
	struct pair *p = &pairs[pi];
	const struct mock_rec *r = &M->last[MC_ISEND];
	uint64_t before = r->count;
	void *req = NULL;
	int res;

	step_what = "isend";
	drv_phandle = ph_vals[0];
	res = drv_isend(&d, p->sc, sendbuf, size, tag, p->smh, &req);
	drv_phandle = NULL;
	ONE_CALL(MC_ISEND, before);
	MC(res == r->result, "isend returned %d, the inner plugin %d", res, r->result);
	MC(r->comm == p->isc && r->data[0] == sendbuf && r->sizes[0] == size && r->tags[0] == tag &&
	   r->mh[0] == p->smh, "isend arguments: comm %p size %zu tag %d mh %p", r->comm,
	   r->sizes[0], r->tags[0], r->mh[0]);
	MC(r->req_in == NULL, "isend: the inner plugin was given request %p", r->req_in);
	check_ph(r, 1, ph_vals);
	MC(!req == !r->req_out || res, "isend: request %p, the inner plugin's %p", req, r->req_out);
	if (res) {
		MC(req == NULL, "a failed isend left request %p", req);
		p->errs |= 1;
	}
	if (req && !res) {
		*out = (struct ereq){ .w = req, .in = r->req_out, .kind = K_SEND, .n = 1, .pair = pi };
		posts[0]++;
		return 1;
	}
	return 0;
}

static int post_recv(int pi, int n, const size_t *sizes, const int *tags, bool optional,
		     struct ereq *out)
{
	struct pair *p = &pairs[pi];
	const struct mock_rec *r = &M->last[MC_IRECV];
	uint64_t before = r->count;
	void *data[MOCK_MAX_RECVS], *mh[MOCK_MAX_RECVS];
	void *req = optional ? (void *)0x1 : NULL;
	size_t sz[MOCK_MAX_RECVS];
	int tg[MOCK_MAX_RECVS], res;

	step_what = "irecv";
	for (int i = 0; i < n; i++) {
		data[i] = recvbuf + (size_t)i * MAXSZ;
		mh[i] = p->rmh;
		sz[i] = sizes[i];
		tg[i] = tags[i];
	}
	res = drv_irecvn(&d, p->rc, n, data, sz, tg, mh, ph_vals, &req);
	ONE_CALL(MC_IRECV, before);
	MC(res == r->result, "irecv returned %d, the inner plugin %d", res, r->result);
	MC(r->comm == p->irc && r->n == n, "irecv comm %p n %d", r->comm, r->n);
	for (int i = 0; i < n; i++)
		MC(r->data[i] == data[i] && r->sizes[i] == sizes[i] && r->tags[i] == tags[i] &&
		   r->mh[i] == p->rmh, "irecv argument %d", i);
	/* NCCL's v6-v8 adaptor clears 0x1; a v9+ plugin gets it as NCCL set it. */
	MC(r->req_in == (optional && OV >= 9 && IV >= 9 ? (void *)0x1 : NULL),
	   "irecv: the inner plugin was given request %p (NCCL pre-set %p)", r->req_in,
	   optional ? (void *)0x1 : NULL);
	check_ph(r, n, ph_vals);
	if (res) {
		MC(req == NULL, "a failed irecv left request %p", req);
		p->errs |= 2;
		return 0;
	}
	MC(!req == !r->req_out, "irecv: request %p, the inner plugin's %p", req, r->req_out);
	MC(req != (void *)0x1, "irecv answered NCCL's own marker 0x1 as a request");
	if (!req)
		return 0;
	*out = (struct ereq){ .w = req, .in = r->req_out, .kind = K_RECV, .n = n, .pair = pi };
	posts[1]++;
	return 1;
}

static int post_flush(int pi, int n, const int *sizes, struct ereq *out)
{
	struct pair *p = &pairs[pi];
	const struct mock_rec *r = &M->last[MC_IFLUSH];
	uint64_t before = r->count;
	void *data[MOCK_MAX_RECVS], *mh[MOCK_MAX_RECVS], *req = NULL;
	int sz[MOCK_MAX_RECVS], res;

	step_what = "iflush";
	for (int i = 0; i < n; i++) {
		data[i] = recvbuf + (size_t)i * MAXSZ;
		mh[i] = p->rmh;
		sz[i] = sizes[i];
	}
	res = drv_iflush(&d, p->rc, n, data, sz, mh, &req);
	ONE_CALL(MC_IFLUSH, before);
	MC(res == r->result, "iflush returned %d, the inner plugin %d", res, r->result);
	MC(r->comm == p->irc && r->n == n && r->req_in == NULL, "iflush arguments");
	MC(!req == !r->req_out || res, "iflush: request %p, the inner plugin's %p", req, r->req_out);
	if (res)
		p->errs |= 2;
	if (res || !req)
		return 0;
	*out = (struct ereq){ .w = req, .in = r->req_out, .kind = K_FLUSH, .n = n, .pair = pi };
	return 1;
}

/*
 * test through the wrapper; returns 1 when done.  Behind our v6 table
 * (no irecvConsumed for NCCL to call) the wrapper consumes a completed
 * receive itself, in the same call.
 */
static int test_req(struct ereq *e)
{
	const struct mock_rec *r = &M->last[MC_TEST], *c = &M->last[MC_IRECV_CONSUMED];
	uint64_t before = r->count, cbefore = c->count;
	int done = -1, sizes[MOCK_MAX_RECVS], res, want;
	bool pass_sizes = e->kind != K_SEND || rndn(2);
	bool self_consume = e->kind == K_RECV && OV < 7 && IV >= 7;

	step_what = "test";
	memset(sizes, 0xff, sizeof(sizes));
	res = drv_test(&d, e->w, &done, pass_sizes ? sizes : NULL);
	ONE_CALL(MC_TEST, before);
	MC(r->comm == e->in, "test of %p reached the inner plugin as %p, not its request %p", e->w,
	   r->comm, e->in);
	want = r->result;
	if (self_consume && !r->result && r->done) {
		ONE_CALL(MC_IRECV_CONSUMED, cbefore);
		MC(c->comm == pairs[e->pair].irc && c->n == e->n && c->req_in == e->in,
		   "our v6 table consumed (%d, %p), not (%d, %p)", c->n, c->req_in, e->n, e->in);
		want = c->result;
	} else {
		MC(c->count == cbefore, "test consumed a receive");
	}
	MC(res == want, "test returned %d, the inner plugin %d", res, want);
	if (res)
		pairs[e->pair].errs |= e->kind == K_SEND ? 1 : 2;
	if (r->result)
		return 0;
	MC(done == r->done, "test: done %d, the inner plugin %d", done, r->done);
	if (!r->done)
		return 0;
	if (pass_sizes)
		for (int i = 0; i < e->n; i++)
			MC(sizes[i] == r->out_sizes[i], "test: size[%d] %d, the inner plugin %d", i,
			   sizes[i], r->out_sizes[i]);
	if (e->kind == K_FLUSH) {
		flushes++;
		return 1;
	}
	dones[e->kind]++;
	for (int i = 0; i < e->n; i++)
		bytes[e->kind] += (uint64_t)r->out_sizes[i];
	return 1;
}

static void consume(struct ereq *e)
{
	const struct mock_rec *r = &M->last[MC_IRECV_CONSUMED];
	uint64_t before = r->count;
	int res;

	step_what = "irecvConsumed";
	res = drv_irecv_consumed(&d, pairs[e->pair].rc, e->n, e->w);
	if (OV < 7 || IV < 7) {
		MC(r->count == before && res == 0, "irecvConsumed with no inner irecvConsumed");
		return;
	}
	ONE_CALL(MC_IRECV_CONSUMED, before);
	MC(res == r->result, "irecvConsumed returned %d, the inner plugin %d", res, r->result);
	if (res)
		pairs[e->pair].errs |= 2;
	MC(r->comm == pairs[e->pair].irc && r->n == e->n && r->req_in == e->in,
	   "irecvConsumed(%d, %p) reached the inner plugin as (%d, %p)", e->n, e->in, r->n, r->req_in);
}

/* ---- scripted cases ------------------------------------------------------------ */

static void fill(char *b, size_t n, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(i * 31 + salt);
}

static void wait_done(struct ereq *e)
{
	for (int i = 0; i < 20 && !e->done; i++)
		e->done = test_req(e);
	MC(e->done, "request %p never completed", e->w);
}

static void scripted(void)
{
	struct ereq s, r, f;
	size_t sizes[8];
	int tags[8], fs[8];

	/* isend before the receive is posted: "not yet", far past the wrapper's request pool. */
	for (int i = 0; i < 300; i++)
		MC(!post_send(0, 100, 1, &s), "isend without a posted receive");
	/* Errors on posts, as many. */
	for (int i = 0; i < 300; i++) {
		M->fail[MC_ISEND] = NBPF_NCCL_REMOTE_ERROR;
		MC(!post_send(0, 100, 1, &s), "a failing isend");
		M->fail[MC_IRECV] = NBPF_NCCL_INTERNAL_ERROR;
		sizes[0] = 100;
		tags[0] = 1;
		MC(!post_recv(0, 1, sizes, tags, false, &r), "a failing irecv");
	}
	no_violation();

	/* One message, data intact; the optional marker as NCCL sets it for LL/LL128. */
	for (int opt = 0; opt < 2; opt++) {
		fill(sendbuf, 5000, 3u + (unsigned)opt);
		memset(recvbuf, 0, 5000);
		sizes[0] = 8000;
		tags[0] = 4;
		MC(post_recv(0, 1, sizes, tags, opt, &r), "irecv");
		MC(post_send(0, 5000, 4, &s), "isend after the receive");
		wait_done(&s);
		wait_done(&r);
		MC(!memcmp(sendbuf, recvbuf, 5000), "data");
		consume(&r);
	}

	/* Flushes: none needed (NULL), then one. */
	for (int i = 0; i < 8; i++)
		fs[i] = 100;
	MC(!post_flush(0, 1, fs, &f), "iflush with nothing to flush");
	M->flush = true;
	MC(post_flush(0, 2, fs, &f), "iflush");
	wait_done(&f);
	M->flush = false;

	/* Grouped receives up to maxRecvs, each matched by its tag. */
	for (int i = 0; i < 8; i++) {
		sizes[i] = 1000 + (size_t)i;
		tags[i] = 10 + i;
	}
	MC(post_recv(1, 8, sizes, tags, false, &r), "grouped irecv");
	for (int i = 7; i >= 0; i--) {
		MC(post_send(1, 900 + (size_t)i, 10 + i, &s), "isend %d of a group", i);
		wait_done(&s);
	}
	wait_done(&r);
	consume(&r);

	/* Receives that live until irecvConsumed: it must name the inner request. */
	M->consume_release = true;
	sizes[0] = 64;
	tags[0] = 2;
	MC(post_recv(1, 1, sizes, tags, false, &r), "irecv");
	MC(post_send(1, 64, 2, &s), "isend");
	wait_done(&s);
	wait_done(&r);
	consume(&r);

	/* OFI-style early completion and a plugin answering with 0x1 itself (v9+ only). */
	if (IV >= 9 && OV >= 9) {
		M->optional_early = true;
		MC(post_recv(1, 1, sizes, tags, true, &r), "optional irecv");
		wait_done(&r);
		consume(&r);
		MC(post_send(1, 64, 2, &s), "isend after an early completion");
		wait_done(&s);
		M->optional_early = false;
		M->keep_optional = true;
		MC(post_recv(1, 1, sizes, tags, true, &r) && r.in == (void *)0x1, "0x1 answered");
		MC(post_send(1, 64, 2, &s), "isend");
		wait_done(&s);
		wait_done(&r);
		M->keep_optional = false;
	}
	M->consume_release = false;

	/* Errors from test and irecvConsumed come back as they are; the request lives on. */
	sizes[0] = 64;
	MC(post_recv(0, 1, sizes, tags, false, &r), "irecv");
	MC(post_send(0, 64, 2, &s), "isend");
	M->fail[MC_TEST] = NBPF_NCCL_REMOTE_ERROR;
	MC(!test_req(&s), "a failing test");
	wait_done(&s);
	wait_done(&r);
	if (OV >= 7 && IV >= 7)
		M->fail[MC_IRECV_CONSUMED] = NBPF_NCCL_INTERNAL_ERROR;
	consume(&r);

	if (OV >= 11) {
		nbpf_net_attr_v11_t a = { .op = 3, .algo = 1, .proto = 2 };
		uint64_t before = M->last[MC_SET_ATTR].count;

		step_what = "setNetAttr";
		MC(drv_set_attr(&d, &a) == 0, "setNetAttr");
		if (IV >= 11)
			MC(M->last[MC_SET_ATTR].count == before + 1 && M->last[MC_SET_ATTR].attr[0] == 3 &&
			   M->last[MC_SET_ATTR].attr[2] == 2, "setNetAttr passed through");
		M->fail[MC_SET_ATTR] = NBPF_NCCL_INTERNAL_ERROR;
		MC(drv_set_attr(&d, &a) == (IV >= 11 ? NBPF_NCCL_INTERNAL_ERROR : 0),
		   "a failing setNetAttr");
		M->fail[MC_SET_ATTR] = 0;
	}
	no_violation();
}

/* ---- random sequences, model-checked --------------------------------------------- */

static int inflight(int pi, int kind)
{
	int n = 0;

	for (int i = 0; i < nlive; i++)
		n += live[i].pair == pi && live[i].kind == kind;
	return n;
}

static void consume_oldest(int pi)
{
	consume(&consumable[pi][0]);
	memmove(consumable[pi], consumable[pi] + 1, (size_t)--nconsumable[pi] * sizeof(struct ereq));
}

/* NCCL consumes every receive it posted, a few steps after its completion. */
static void completed_recv(const struct ereq *e)
{
	if (e->in == (void *)0x1)
		return; /* NCCL names it 0x1 too; nothing of the inner plugin's to free */
	if (nconsumable[e->pair] >= WINDOW)
		consume_oldest(e->pair);
	consumable[e->pair][nconsumable[e->pair]++] = *e;
}

static void drop_live(int i)
{
	live[i] = live[--nlive];
}

static void random_steps(long steps)
{
	static const int codes[] = { NBPF_NCCL_SYSTEM_ERROR, NBPF_NCCL_INTERNAL_ERROR,
				     NBPF_NCCL_INVALID_ARGUMENT, NBPF_NCCL_INVALID_USAGE,
				     NBPF_NCCL_REMOTE_ERROR };
	static const int failable[] = { MC_ISEND, MC_IRECV, MC_TEST, MC_IFLUSH, MC_IRECV_CONSUMED };

	for (step_no = 0; step_no < steps && model_fails == 0; step_no++) {
		int pi = (int)rndn(NPAIRS), op = (int)rndn(100);

		M->test_polls = 1 + (int)rndn(3);
		M->consume_release = rndn(4) == 0;
		if (rndn(12) == 0)
			M->fail[failable[rndn(5)]] = codes[rndn(5)];
		if (op < 25 && inflight(pi, K_RECV) < WINDOW) {
			int n = rndn(3) ? 1 : 1 + (int)rndn((unsigned)M->props.max_recvs), tags[8];
			size_t sizes[8];
			bool opt = n == 1 && OV >= 9 && rndn(3) == 0;

			for (int i = 0; i < n; i++) {
				sizes[i] = rndn(MAXSZ);
				tags[i] = (int)rndn(4);
			}
			M->optional_early = opt && rndn(2);
			M->keep_optional = opt && !M->optional_early && rndn(2);
			nlive += post_recv(pi, n, sizes, tags, opt, &live[nlive]);
		} else if (op < 50 && inflight(pi, K_SEND) < WINDOW) {
			nlive += post_send(pi, rndn(MAXSZ), (int)rndn(4), &live[nlive]);
		} else if (op < 55 && !inflight(pi, K_FLUSH)) {
			int sizes[4];

			M->flush = rndn(2);
			for (int i = 0; i < 4; i++)
				sizes[i] = rndn(3) ? 0 : (int)rndn(MAXSZ);
			nlive += post_flush(pi, 1 + (int)rndn(4), sizes, &live[nlive]);
		} else if (op < 60 && nconsumable[pi]) {
			consume_oldest(pi);
		} else if (nlive) {
			int k = (int)rndn((unsigned)nlive);

			if (test_req(&live[k])) {
				if (live[k].kind == K_RECV)
					completed_recv(&live[k]);
				drop_live(k);
			}
		}
		no_violation();
		/* The next post must not inherit an injected failure meant for this step. */
		memset(M->fail, 0, sizeof(M->fail));
	}
	step_no = -1;
}

/* ---- what the wrapper reports, against what the inner plugin did ------------------- */

static uint64_t rec_u64(const struct nbpf_ctl_rec *r, const char *key, int idx)
{
	uint64_t v[64] = { 0 };

	return nbpf_ctl_parse_u64s(nbpf_ctl_rec_get(r, key), v, 64) > idx ? v[idx] : UINT64_MAX;
}

static void check_totals(uint64_t connects)
{
	struct nbpf_ctl_msg m;
	const char *em = NULL;
	uint64_t stats[8] = { 0 }, runs = UINT64_MAX, errors = 0;
	bool peer = false;

	step_what = "totals";
	for (int i = 0; i < NPAIRS; i++)
		errors += __builtin_popcount(pairs[i].errs);
	memset(&m, 0, sizeof(m));
	MC(nbpf_ctl_call_pid(getpid(), NBPF_CTL_TELEMETRY, NULL, &m, &em) == 0, "telemetry: %s",
	   em ? em : "?");
	for (uint32_t i = 0; i < m.n_recs; i++) {
		const struct nbpf_ctl_rec *r = &m.recs[i];
		const char *name = nbpf_ctl_rec_get(r, "name"), *label = nbpf_ctl_rec_get(r, "peer");

		if (!strcmp(r->kind, "npeer") && label && !strcmp(label, "inner")) {
			peer = true;
			MC(rec_u64(r, "msgs", 0) == dones[0] && rec_u64(r, "msgs", 1) == dones[1],
			   "telemetry messages %llu/%llu, the inner plugin completed %llu/%llu",
			   (unsigned long long)rec_u64(r, "msgs", 0), (unsigned long long)rec_u64(r, "msgs", 1),
			   (unsigned long long)dones[0], (unsigned long long)dones[1]);
			MC(rec_u64(r, "bytes", 0) == bytes[0] && rec_u64(r, "bytes", 1) == bytes[1],
			   "telemetry bytes %llu/%llu, the inner plugin %llu/%llu",
			   (unsigned long long)rec_u64(r, "bytes", 0), (unsigned long long)rec_u64(r, "bytes", 1),
			   (unsigned long long)bytes[0], (unsigned long long)bytes[1]);
			MC(rec_u64(r, "errors", 0) == errors, "telemetry errors %llu, want %llu",
			   (unsigned long long)rec_u64(r, "errors", 0), (unsigned long long)errors);
		} else if (!strcmp(r->kind, "map") && name && !strcmp(name, "net_stats")) {
			struct ncclbpf_map *map = NULL;
			const char *path = nbpf_ctl_rec_get(r, "path");

			if (path && ncclbpf_map__open_path(path, false, &map) == 0) {
				for (uint32_t k = 0; k < 8; k++)
					ncclbpf_map__lookup(map, &k, &stats[k]);
				ncclbpf_map__put(map);
			}
		} else if (!strcmp(r->kind, "progstat")) {
			runs = rec_u64(r, "runs", 0);
		}
	}
	nbpf_ctl_msg_free(&m);
	MC(peer, "no per-peer telemetry for the inner backend");
	MC(stats[0] == connects && stats[1] == connects, "the program saw %llu connects, %llu accepts",
	   (unsigned long long)stats[0], (unsigned long long)stats[1]);
	MC(stats[2] == posts[0] && stats[3] == posts[1],
	   "the program saw %llu/%llu posts, the inner plugin took %llu/%llu",
	   (unsigned long long)stats[2], (unsigned long long)stats[3],
	   (unsigned long long)posts[0], (unsigned long long)posts[1]);
	MC(stats[4] == dones[0] && stats[5] == dones[1],
	   "the program saw %llu/%llu completions, the inner plugin %llu/%llu",
	   (unsigned long long)stats[4], (unsigned long long)stats[5],
	   (unsigned long long)dones[0], (unsigned long long)dones[1]);
	MC(stats[6] == bytes[1], "the program saw %llu bytes received, the inner plugin %llu",
	   (unsigned long long)stats[6], (unsigned long long)bytes[1]);
	MC(runs == stats[0] + stats[1] + stats[2] + stats[3] + stats[4] + stats[5],
	   "prog runs %llu", (unsigned long long)runs);
	MC(M->done_msgs[0] == dones[0] && M->done_msgs[1] == dones[1] && M->flushes_done == flushes,
	   "the inner plugin reported %llu/%llu/%llu completions, NCCL saw %llu/%llu/%llu",
	   (unsigned long long)M->done_msgs[0], (unsigned long long)M->done_msgs[1],
	   (unsigned long long)M->flushes_done, (unsigned long long)dones[0],
	   (unsigned long long)dones[1], (unsigned long long)flushes);
}

static void close_all(void)
{
	step_what = "close";
	for (int i = 0; i < NPAIRS; i++) {
		struct pair *p = &pairs[i];
		uint64_t before = M->last[MC_DEREGMR].count;

		int want = i ? NBPF_NCCL_INTERNAL_ERROR : 0;

		/* On the second pair every call fails: the error reaches NCCL, the object goes anyway. */
		M->fail[MC_DEREGMR] = want;
		MC(drv_deregmr(&d, p->sc, p->smh) == want && drv_deregmr(&d, p->rc, p->rmh) == 0 &&
		   M->last[MC_DEREGMR].count == before + 2 && M->last[MC_DEREGMR].comm == p->irc &&
		   M->last[MC_DEREGMR].mh[0] == p->rmh, "deregMr passed through");
		M->fail[MC_CLOSE_SEND] = M->fail[MC_CLOSE_RECV] = M->fail[MC_CLOSE_LISTEN] = want;
		MC(drv_close_send(&d, p->sc) == want && M->last[MC_CLOSE_SEND].comm == p->isc,
		   "closeSend");
		MC(drv_close_recv(&d, p->rc) == want && M->last[MC_CLOSE_RECV].comm == p->irc,
		   "closeRecv");
		MC(drv_close_listen(&d, p->lc) == want && M->last[MC_CLOSE_LISTEN].comm == p->ilc,
		   "closeListen");
	}
	nlive = 0;
	memset(nconsumable, 0, sizeof(nconsumable));
}

static void rm_dir(const char *dir)
{
	DIR *dd = opendir(dir);
	struct dirent *e;
	char path[600];

	while (dd && (e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (dd)
		closedir(dd);
	rmdir(dir);
}

static int child(const char *mock_path, long steps)
{
	char spec[600], dir[] = "/tmp/ncclbpf-conform-XXXXXX";
	void *mock, *lib;
	int n = 0;

	rng_state = seed * 0x9e3779b97f4a7c15ull + (uint64_t)OV * 7919 + 1;
	if (!mkdtemp(dir))
		return 3;
	setenv("NCCLBPF_CTL_DIR", dir, 1);
	snprintf(spec, sizeof(spec), "inner:%s", mock_path);
	setenv("NCCLBPF_NET", spec, 1);
	setenv("NCCLBPF_POLICY", EMU_BPF_DIR "/t_net_count.bpf.o", 1);
	mock = dlopen(mock_path, RTLD_NOW | RTLD_LOCAL);
	M = mock ? dlsym(mock, "mock_ctl") : NULL;
	if (!M || M->version != IV) {
		fprintf(stderr, "cannot load %s (v%d)\n", mock_path, IV);
		return 3;
	}
	set_props();
	sendbuf = malloc(MAXSZ);
	recvbuf = malloc((size_t)MOCK_MAX_RECVS * MAXSZ);
	for (int i = 0; i < MOCK_MAX_RECVS; i++)
		ph_vals[i] = (void *)(uintptr_t)(0x5000 + 16 * i);
	lib = drv_open(NET_PLUGIN);
	if (!lib || drv_bind(&d, lib, OV) || !sendbuf || !recvbuf)
		return 3;

	step_what = "init";
	/* A failing inner init is NCCL's answer: this plugin is skipped. */
	M->fail[MC_INIT] = NBPF_NCCL_SYSTEM_ERROR;
	MC(drv_init(&d, 0x1234, 7, fake_prof) == NBPF_NCCL_SYSTEM_ERROR, "a failing init");
	MC(drv_init(&d, 0x1234, 7, fake_prof) == 0, "init");
	if (IV >= 11) {
		MC(M->last[MC_INIT].comm_id == (OV >= 11 ? 0x1234u : 0) &&
		   M->last[MC_INIT].traffic_class == (OV >= 11 ? 7 : -1), "init arguments %" PRIx64 " %d",
		   M->last[MC_INIT].comm_id, M->last[MC_INIT].traffic_class);
	}
	if (IV >= 10)
		MC(M->last[MC_INIT].prof == (OV >= 10 ? (void *)fake_prof : NULL),
		   "profiler callback %p", M->last[MC_INIT].prof);
	M->fail[MC_DEVICES] = NBPF_NCCL_INTERNAL_ERROR;
	MC(drv_devices(&d, &n) == NBPF_NCCL_INTERNAL_ERROR, "a failing devices");
	MC(drv_devices(&d, &n) == 0 && n == M->ndev, "devices %d", n);
	check_props(0);
	check_props(1);

	for (int i = 0; i < NPAIRS; i++)
		setup_pair(&pairs[i], i == 1);
	M->connect_polls = M->accept_polls = 0;
	scripted();
	random_steps(steps);
	/* Drain: every receive still posted gets its sends, then everything completes. */
	step_what = "drain";
	M->test_polls = 1;
	for (int round = 0; round < 50 && nlive; round++) {
		for (int pi = 0; pi < NPAIRS; pi++) {
			for (int t = 0; inflight(pi, K_RECV) && t < 4; t++) {
				struct ereq e;

				if (post_send(pi, 1, t, &e))
					live[nlive++] = e;
			}
		}
		for (int i = 0; i < nlive;) {
			if (test_req(&live[i])) {
				if (live[i].kind == K_RECV)
					completed_recv(&live[i]);
				drop_live(i);
			} else {
				i++;
			}
		}
	}
	MC(nlive == 0, "%d requests never completed", nlive);
	for (int pi = 0; pi < NPAIRS; pi++)
		while (nconsumable[pi])
			consume_oldest(pi);
	check_totals(NPAIRS);
	close_all();
	M->fail[MC_FINALIZE] = NBPF_NCCL_INTERNAL_ERROR;
	MC(drv_finalize(&d) == (OV >= 11 && IV >= 11 ? NBPF_NCCL_INTERNAL_ERROR : 0), "finalize");
	if (OV >= 11 && IV >= 11)
		MC(M->last[MC_FINALIZE].count == 1, "inner finalize calls %llu",
		   (unsigned long long)M->last[MC_FINALIZE].count);
	/* Our v6-v10 context (and so an inner v11+ context) lives until the library goes. */
	MC(M->live_objs == (IV >= 11 && OV <= 10),
	   "%llu objects of the inner plugin are still open", (unsigned long long)M->live_objs);
	no_violation();
	dlclose(lib);
	rm_dir(dir);
	free(sendbuf);
	free(recvbuf);
	dlclose(mock);
	{
		char name[64];

		snprintf(name, sizeof(name), "net_conform inner v%d as v%d", IV, OV);
		return check_summary(name);
	}
}

int main(int argc, char **argv)
{
	const char *sc = getenv("NCCLBPF_TEST_SCALE");
	long steps = (long)(STEPS * (sc && atof(sc) > 0 ? atof(sc) : 1.0));
	int bad = 0;

	if (argc < 3)
		return 2;
	IV = atoi(argv[2]);
	seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL);
	printf("net_conform: inner v%d, seed %llu, %ld random steps per table version\n", IV,
	       (unsigned long long)seed, steps);
	fflush(stdout);
	for (OV = 6; OV <= 12; OV++) {
		int st = 0;
		pid_t pid = fork();

		if (pid == 0)
			_exit(child(argv[1], steps));
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "net_conform: inner v%d as our v%d failed (%s %d); rerun with seed %llu\n",
				IV, OV, WIFSIGNALED(st) ? "signal" : "exit",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), (unsigned long long)seed);
			bad++;
		}
	}
	printf("net_conform inner v%d: %d of 7 table versions failed\n", IV, bad);
	return bad ? 1 : 0;
}
