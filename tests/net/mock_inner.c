// SPDX-License-Identifier: Apache-2.0
/*
 * mock_inner.c - a stand-in inner net plugin for the wrapper's conformance
 * suite (tests/net/test_net_conform.c), built as libnccl-net-mockvN.so
 * exporting only ncclNetPlugin_vN (MOCK_V = 6..12).
 *
 * It is an in-process loopback network with the request semantics NCCL's
 * IB transport and the common external plugins (AWS OFI, Google's gIB)
 * show NCCL:
 *   - connect/accept answer "no comm yet" for a while (IB's stages);
 *   - isend answers a NULL request until the receiver has posted a
 *     matching receive (IB's clear-to-send: the head of the posted
 *     receives, matched by tag), then copies the data at once;
 *   - irecv takes n > 1 grouped receives up to maxRecvs (IB: 8);
 *   - iflush leaves the request NULL when nothing needs flushing (IB),
 *     or posts one;
 *   - a v9+ receive pre-set to 0x1 may complete before its data (OFI's
 *     early completion) or be answered with 0x1 itself; v6-v8 plugins
 *     never see 0x1 (NCCL's adaptor clears it) and count it a violation;
 *   - receive requests may live until irecvConsumed (v7+);
 *   - any call can be made to fail once with a given result.
 * Every handle it is given is checked against the objects it created
 * (comms, listeners, requests, memory handles, contexts): a foreign,
 * stale or misused handle is counted in mock_ctl.violations, never
 * dereferenced.  Single-threaded, as the test drives it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_inner.h"
#include "nccl/abi_net.h"

#define EXPORT __attribute__((visibility("default")))
#define MOCK_MAGIC 0x6b636f6d74656e00ull /* handle magic */
#define MAX_OBJS 8192

enum obj_kind { O_CTX = 1, O_LISTEN, O_SEND, O_RECV, O_REQ, O_MH };
enum req_type { R_SEND = 1, R_RECV, R_FLUSH };

struct obj {
	int kind;
};

struct listener {
	int kind;
	int dev;
	uint64_t id;
	int accept_calls;
	struct comm *pending;        /* the connector's recv comm, until accepted */
};

struct handle {
	uint64_t magic;
	uint64_t id;                 /* the listener's */
	uint32_t connect_calls;
};

struct comm {
	int kind;
	int dev;
	struct comm *peer;           /* the other end; NULL once it closed */
	int nfifo;                   /* receives posted, not yet fully matched, in order */
	struct req *fifo[MOCK_MAX_INFLIGHT];
	int inflight;
};

struct slot {
	char *data;
	size_t cap, got;
	int tag;
	bool matched;
};

struct req {
	int kind;
	int type;
	struct comm *c;
	int polls;
	int n;
	size_t size;                 /* send: bytes moved */
	bool optional, reported, consumed;
	bool hold;                   /* lives until irecvConsumed (consume_release when posted) */
	int unmatched;
	struct slot s[MOCK_MAX_RECVS];
};

EXPORT struct mock_ctl mock_ctl = {
	.version = MOCK_V,
	.ndev = 2,
	.props = {
		.guid = 0x6d6f636b, .ptr_support = NBPF_NET_PTR_HOST, .speed = 200000,
		.max_comms = 4096, .max_recvs = 1, .ndevs = 1, .latency = 1.5f,
		.max_p2p = 1ull << 30, .max_coll = 512ull << 20, .max_multi = 1,
		.rail = -1, .plane = -1,
	},
	.test_polls = 1,
};

static void *objs[MAX_OBJS];
static int nobjs;
/*
 * Freed objects are kept (and never handed out again) until the library
 * goes, so a pointer NCCL may still name after its object is gone (a
 * receive freed at test, named again by irecvConsumed) never aliases a
 * newer object.
 */
static void **graves;
static size_t ngraves, cap_graves;
static uint64_t next_id = 1;
static int optional_tokens;  /* receives answered with 0x1 and not yet tested */
static char devname[] = "mock";

static void violate(const char *fmt, ...)
{
	va_list ap;

	if (!mock_ctl.violations++) {
		va_start(ap, fmt);
		vsnprintf(mock_ctl.violation, sizeof(mock_ctl.violation), fmt, ap);
		va_end(ap);
	}
}

static void *obj_new(int kind, size_t size)
{
	struct obj *o;

	if (nobjs == MAX_OBJS)
		return NULL;
	o = calloc(1, size);
	if (!o)
		return NULL;
	o->kind = kind;
	objs[nobjs++] = o;
	mock_ctl.live_objs = (uint64_t)nobjs;
	return o;
}

/* The object p if it is live and of kind, else NULL (never dereferenced otherwise). */
static void *obj_get(const void *p, int kind)
{
	for (int i = 0; p && i < nobjs; i++)
		if (objs[i] == p)
			return ((struct obj *)objs[i])->kind == kind ? objs[i] : NULL;
	return NULL;
}

static void obj_free(void *p)
{
	for (int i = 0; i < nobjs; i++) {
		if (objs[i] == p) {
			objs[i] = objs[--nobjs];
			mock_ctl.live_objs = (uint64_t)nobjs;
			if (ngraves == cap_graves) {
				void **g = realloc(graves, (cap_graves * 2 + 64) * sizeof(*g));

				if (!g) {
					free(p);
					return;
				}
				graves = g;
				cap_graves = cap_graves * 2 + 64;
			}
			((struct obj *)p)->kind = 0;
			graves[ngraves++] = p;
			return;
		}
	}
}

__attribute__((destructor)) static void mock_unload(void)
{
	for (size_t i = 0; i < ngraves; i++)
		free(graves[i]);
	free(graves);
	for (int i = 0; i < nobjs; i++)
		free(objs[i]);
}

static struct mock_rec *rec(int call)
{
	struct mock_rec *r = &mock_ctl.last[call];
	uint64_t count = r->count;

	memset(r, 0, sizeof(*r));
	r->count = count + 1;
	return r;
}

/* An injected failure for this call, taken once. */
static int take_fail(int call)
{
	int f = mock_ctl.fail[call];

	mock_ctl.fail[call] = 0;
	return f;
}

static int done_rec(struct mock_rec *r, int result)
{
	r->result = result;
	return result;
}

/* ---- comms ---------------------------------------------------------------- */

static struct comm *comm_get(const void *p, int kind)
{
	struct comm *c = obj_get(p, kind);

	if (!c)
		c = kind == O_SEND ? NULL : obj_get(p, O_SEND);
	if (!c)
		violate("not a live %s comm: %p", kind == O_SEND ? "send" : "recv", p);
	return c;
}

static struct comm *any_comm(const void *p)
{
	struct comm *c = obj_get(p, O_SEND);

	if (!c)
		c = obj_get(p, O_RECV);
	if (!c)
		violate("not a live comm: %p", p);
	return c;
}

static void req_free(struct req *q)
{
	if (q->c)
		q->c->inflight--;
	obj_free(q);
}

/* A receive is released when every party that may still name it is through. */
static void recv_maybe_free(struct req *q)
{
	bool consumed_ok = !q->hold || q->consumed;

	if (q->reported && !q->unmatched && consumed_ok)
		req_free(q);
}

static void comm_close(struct comm *c)
{
	for (int i = nobjs - 1; i >= 0; i--) {
		struct req *q = objs[i];

		if (q->kind == O_REQ && q->c == c)
			req_free(q);
	}
	if (c->peer)
		c->peer->peer = NULL;
	obj_free(c);
}

/* ---- the calls, version-free ---------------------------------------------- */

static int m_init(int v, void **ctx, uint64_t comm_id, int tc, void *logger, void *prof)
{
	struct mock_rec *r = rec(MC_INIT);
	int f = take_fail(MC_INIT);

	(void)v;
	(void)logger;
	r->comm_id = comm_id;
	r->traffic_class = tc;
	r->prof = prof;
	if (ctx) {
		*ctx = f ? NULL : obj_new(O_CTX, sizeof(struct obj));
		r->req_out = *ctx;
	}
	return done_rec(r, f);
}

static int m_devices(int *ndev)
{
	struct mock_rec *r = rec(MC_DEVICES);
	int f = take_fail(MC_DEVICES);

	if (!f)
		*ndev = mock_ctl.ndev;
	return done_rec(r, f);
}

/* Fills the fields every version has; the caller adds its version's. */
#define PROPS_BASE(p) do { \
	memset((p), 0, sizeof(*(p))); \
	(p)->name = devname; (p)->pciPath = NULL; (p)->guid = mock_ctl.props.guid + (uint64_t)dev; \
	(p)->ptrSupport = mock_ctl.props.ptr_support; (p)->speed = mock_ctl.props.speed; \
	(p)->port = mock_ctl.props.port; (p)->latency = mock_ctl.props.latency; \
	(p)->maxComms = mock_ctl.props.max_comms; (p)->maxRecvs = mock_ctl.props.max_recvs; } while (0)
#define PROPS_V9(p, cap) do { \
	(p)->regIsGlobal = mock_ctl.props.reg_is_global; (p)->forceFlush = mock_ctl.props.force_flush; \
	(p)->netDeviceType = mock_ctl.props.dev_type; (p)->netDeviceVersion = mock_ctl.props.dev_version; \
	(p)->vProps.ndevs = mock_ctl.props.ndevs < (cap) ? mock_ctl.props.ndevs : (cap); \
	for (int i_ = 0; i_ < (cap); i_++) (p)->vProps.devs[i_] = mock_ctl.props.devs[i_]; \
	(p)->maxP2pBytes = mock_ctl.props.max_p2p; (p)->maxCollBytes = mock_ctl.props.max_coll; } while (0)

static int props_check(int dev, const void *p)
{
	struct mock_rec *r = rec(MC_PROPS);
	int f = take_fail(MC_PROPS);

	r->dev = dev;
	if (!f && (dev < 0 || dev >= mock_ctl.ndev || !p))
		f = NBPF_NCCL_INVALID_ARGUMENT;
	return done_rec(r, f);
}

static int m_listen(int dev, void *handle, void **lc)
{
	struct mock_rec *r = rec(MC_LISTEN);
	int f = take_fail(MC_LISTEN);
	struct listener *l = NULL;

	r->dev = dev;
	*lc = NULL;
	if (!f && (l = obj_new(O_LISTEN, sizeof(*l)))) {
		struct handle *h = handle;

		l->dev = dev;
		l->id = next_id++;
		memset(handle, 0, NBPF_NET_HANDLE_MAXSIZE);
		h->magic = MOCK_MAGIC;
		h->id = l->id;
		*lc = l;
	}
	r->req_out = l;
	return done_rec(r, f ? f : l ? 0 : NBPF_NCCL_SYSTEM_ERROR);
}

static struct listener *listener_of(const struct handle *h)
{
	for (int i = 0; h->magic == MOCK_MAGIC && i < nobjs; i++) {
		struct listener *l = objs[i];

		if (l->kind == O_LISTEN && l->id == h->id)
			return l;
	}
	return NULL;
}

/* A device handle is filled only when NCCL asks for offload (*dc set) and we offload. */
static void dev_handle(struct mock_rec *r, void **dc)
{
	static int offload_handle;

	r->dev_handle = dc;
	if (!dc) {
		violate("a v7+ connect/accept given no device-handle pointer");
		return;
	}
	r->dev_handle_in = *dc;
	if (*dc && mock_ctl.dev_offload)
		*dc = &offload_handle;
}

static int m_connect(int dev, int tc, void *handle, void **sc, void **dc, bool has_dc)
{
	struct mock_rec *r = rec(MC_CONNECT);
	int f = take_fail(MC_CONNECT);
	struct handle *h = handle;
	struct listener *l;
	struct comm *s, *rc;

	r->dev = dev;
	r->traffic_class = tc;
	*sc = NULL;
	if (has_dc)
		dev_handle(r, dc);
	if (f)
		return done_rec(r, f);
	l = listener_of(h);
	if (!l || l->pending)
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	if (h->connect_calls++ < (uint32_t)mock_ctl.connect_polls)
		return done_rec(r, 0);
	s = obj_new(O_SEND, sizeof(*s));
	rc = obj_new(O_RECV, sizeof(*rc));
	if (!s || !rc)
		return done_rec(r, NBPF_NCCL_SYSTEM_ERROR);
	s->dev = rc->dev = dev;
	s->peer = rc;
	rc->peer = s;
	l->pending = rc;
	l->accept_calls = 0;
	*sc = s;
	r->req_out = s;
	return done_rec(r, 0);
}

static int m_accept(void *lcp, void **rc, void **dc, bool has_dc)
{
	struct mock_rec *r = rec(MC_ACCEPT);
	int f = take_fail(MC_ACCEPT);
	struct listener *l = obj_get(lcp, O_LISTEN);

	r->comm = lcp;
	*rc = NULL;
	if (has_dc)
		dev_handle(r, dc);
	if (!l)
		violate("accept on a foreign listen comm %p", lcp);
	if (f || !l)
		return done_rec(r, f ? f : NBPF_NCCL_INVALID_ARGUMENT);
	if (!l->pending || l->accept_calls++ < mock_ctl.accept_polls)
		return done_rec(r, 0);
	*rc = l->pending;
	l->pending = NULL;
	r->req_out = *rc;
	return done_rec(r, 0);
}

static int m_regmr(int call, void *comm, void *data, size_t size, int type, uint64_t offset,
		   int fd, void **mh)
{
	struct mock_rec *r = rec(call);
	int f = take_fail(call);
	void *m = NULL;

	r->comm = comm;
	r->data[0] = data;
	r->sizes[0] = size;
	r->type = type;
	r->offset = offset;
	r->fd = fd;
	*mh = NULL;
	if (!any_comm(comm))
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	if (!f && !(type & mock_ctl.props.ptr_support))
		f = NBPF_NCCL_INTERNAL_ERROR;
	if (!f && !(m = obj_new(O_MH, sizeof(struct obj))))
		f = NBPF_NCCL_SYSTEM_ERROR;
	*mh = m;
	r->req_out = m;
	return done_rec(r, f);
}

static int m_deregmr(void *comm, void *mh)
{
	struct mock_rec *r = rec(MC_DEREGMR);
	int f = take_fail(MC_DEREGMR);

	r->comm = comm;
	r->mh[0] = mh;
	if (!any_comm(comm))
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	if (!obj_get(mh, O_MH)) {
		violate("deregMr of a foreign memory handle %p", mh);
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	}
	obj_free(mh);
	return done_rec(r, f);
}

static void mh_check(void *mh)
{
	if (mh && !obj_get(mh, O_MH))
		violate("a post with a foreign memory handle %p", mh);
}

static struct req *req_new(struct comm *c, int type)
{
	struct req *q;

	if (c->inflight >= MOCK_MAX_INFLIGHT) {
		violate("more than %d requests in flight on one comm", MOCK_MAX_INFLIGHT);
		return NULL;
	}
	q = obj_new(O_REQ, sizeof(*q));
	if (q) {
		q->type = type;
		q->c = c;
		c->inflight++;
	}
	return q;
}

static void fifo_pop(struct comm *c)
{
	memmove(c->fifo, c->fifo + 1, (size_t)(--c->nfifo) * sizeof(c->fifo[0]));
}

static int m_isend(void *scp, void *data, size_t size, int tag, void *mh, void *ph, bool has_ph,
		   void **req)
{
	struct mock_rec *r = rec(MC_ISEND);
	int f = take_fail(MC_ISEND);
	struct comm *sc = comm_get(scp, O_SEND);
	struct req *head, *q;

	r->comm = scp;
	r->req_in = *req;
	r->n = 1;
	r->data[0] = data;
	r->sizes[0] = size;
	r->tags[0] = tag;
	r->mh[0] = mh;
	if (has_ph)
		r->ph[0] = ph;
	*req = NULL;
	if (r->req_in)
		violate("isend given a pre-set request %p", r->req_in);
	mh_check(mh);
	if (f || !sc)
		return done_rec(r, f ? f : NBPF_NCCL_INVALID_ARGUMENT);
	if (!sc->peer)
		return done_rec(r, NBPF_NCCL_REMOTE_ERROR);
	head = sc->peer->nfifo ? sc->peer->fifo[0] : NULL;
	for (int i = 0; head && i < head->n; i++) {
		struct slot *s = &head->s[i];

		if (s->matched || s->tag != tag)
			continue;
		if (!(q = req_new(sc, R_SEND)))
			return done_rec(r, NBPF_NCCL_INTERNAL_ERROR);
		s->got = size < s->cap ? size : s->cap; /* IB: the receive's size bounds it */
		if (s->got)
			memcpy(s->data, data, s->got);
		s->matched = true;
		q->size = s->got;
		if (--head->unmatched == 0) {
			fifo_pop(sc->peer);
			if (head->reported)
				recv_maybe_free(head);
		}
		*req = q;
		r->req_out = q;
		return done_rec(r, 0);
	}
	return done_rec(r, 0); /* no clear-to-send yet: NCCL calls again */
}

static int m_irecv(void *rcp, int n, void **data, const size_t *sizes, int *tags, void **mh,
		   void **ph, bool has_ph, void **req)
{
	struct mock_rec *r = rec(MC_IRECV);
	int f = take_fail(MC_IRECV);
	struct comm *rc = comm_get(rcp, O_RECV);
	bool optional = *req == MOCK_OPTIONAL;
	struct req *q;

	r->comm = rcp;
	r->req_in = *req;
	r->n = n;
	for (int i = 0; i < n && i < MOCK_MAX_RECVS; i++) {
		r->data[i] = data[i];
		r->sizes[i] = sizes[i];
		r->tags[i] = tags ? tags[i] : -1;
		r->mh[i] = mh ? mh[i] : NULL;
		mh_check(r->mh[i]);
		if (has_ph)
			r->ph[i] = ph ? ph[i] : NULL;
	}
	if (has_ph && !ph)
		violate("a v10+ irecv given no phandles array");
	if (*req && !optional)
		violate("irecv given a pre-set request %p", *req);
	if (optional && MOCK_V < 9)
		violate("a v%d plugin was given the optional-completion marker 0x1", MOCK_V);
	*req = NULL;
	if (f || !rc)
		return done_rec(r, f ? f : NBPF_NCCL_INVALID_ARGUMENT);
	if (n < 1 || n > mock_ctl.props.max_recvs || n > MOCK_MAX_RECVS) {
		violate("irecv of %d grouped receives (maxRecvs %d)", n, mock_ctl.props.max_recvs);
		return done_rec(r, NBPF_NCCL_INTERNAL_ERROR);
	}
	if (!(q = req_new(rc, R_RECV)))
		return done_rec(r, NBPF_NCCL_INTERNAL_ERROR);
	q->n = q->unmatched = n;
	q->optional = optional && MOCK_V >= 9;
	q->hold = mock_ctl.consume_release && MOCK_V >= 7;
	for (int i = 0; i < n; i++)
		q->s[i] = (struct slot){ .data = data[i], .cap = sizes[i], .tag = r->tags[i] };
	rc->fifo[rc->nfifo++] = q;
	if (q->optional && mock_ctl.keep_optional) {
		/* Answered with the marker itself: NCCL tests 0x1; the receive still lands. */
		q->reported = q->consumed = true; /* NCCL only ever names it 0x1 */
		optional_tokens++;
		*req = MOCK_OPTIONAL;
	} else {
		*req = q;
	}
	r->req_out = *req;
	return done_rec(r, 0);
}

static int m_iflush(void *rcp, int n, void **data, int *sizes, void **mh, void **req)
{
	struct mock_rec *r = rec(MC_IFLUSH);
	int f = take_fail(MC_IFLUSH);
	struct comm *rc = comm_get(rcp, O_RECV);
	bool any = false;
	struct req *q;

	r->comm = rcp;
	r->req_in = *req;
	r->n = n;
	for (int i = 0; i < n && i < MOCK_MAX_RECVS; i++) {
		r->data[i] = data[i];
		r->sizes[i] = (size_t)sizes[i];
		r->mh[i] = mh[i];
		any |= sizes[i] != 0;
	}
	if (*req)
		violate("iflush given a pre-set request %p", *req);
	if (f || !rc)
		return done_rec(r, f ? f : NBPF_NCCL_INVALID_ARGUMENT);
	/* IB: nothing to flush leaves *request untouched (NCCL's slot is NULL). */
	if (!mock_ctl.flush || !any)
		return done_rec(r, 0);
	if (!(q = req_new(rc, R_FLUSH)))
		return done_rec(r, NBPF_NCCL_INTERNAL_ERROR);
	*req = q;
	r->req_out = q;
	return done_rec(r, 0);
}

static int m_test(void *reqp, int *done, int *sizes)
{
	struct mock_rec *r = rec(MC_TEST);
	int f = take_fail(MC_TEST);
	struct req *q = obj_get(reqp, O_REQ);

	r->comm = reqp;
	r->sizes_given = sizes != NULL;
	*done = 0;
	if (reqp == MOCK_OPTIONAL && optional_tokens > 0) {
		if (f)
			return done_rec(r, f);
		optional_tokens--;
		mock_ctl.done_msgs[1]++;
		*done = r->done = 1;
		return done_rec(r, 0);
	}
	if (!q || (q->reported && !(q->optional && mock_ctl.keep_optional))) {
		violate("test on a request not in flight: %p", reqp);
		return done_rec(r, NBPF_NCCL_INTERNAL_ERROR);
	}
	if (f)
		return done_rec(r, f);
	if (++q->polls < mock_ctl.test_polls)
		return done_rec(r, 0);
	if (q->type == R_RECV && q->unmatched && !(q->optional && mock_ctl.optional_early))
		return done_rec(r, 0);
	*done = r->done = 1;
	r->n = q->type == R_RECV ? q->n : 1;
	for (int i = 0; i < r->n; i++)
		r->out_sizes[i] = q->type == R_SEND ? (int)q->size
				  : q->type == R_RECV ? (int)q->s[i].got : 0;
	if (sizes)
		memcpy(sizes, r->out_sizes, (size_t)r->n * sizeof(int));
	if (q->type == R_FLUSH) {
		mock_ctl.flushes_done++;
		req_free(q);
		return done_rec(r, 0);
	}
	mock_ctl.done_msgs[q->type == R_RECV]++;
	for (int i = 0; i < r->n; i++)
		mock_ctl.done_bytes[q->type == R_RECV] += (uint64_t)r->out_sizes[i];
	q->reported = true;
	if (q->type == R_SEND)
		req_free(q);
	else
		recv_maybe_free(q);
	return done_rec(r, 0);
}

static int m_close(int call, void *p, int kind)
{
	struct mock_rec *r = rec(call);
	int f = take_fail(call);
	struct comm *c = obj_get(p, kind);

	r->comm = p;
	if (!c) {
		violate("close of a foreign comm %p", p);
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	}
	comm_close(c);
	return done_rec(r, f);
}

static int m_close_listen(void *p)
{
	struct mock_rec *r = rec(MC_CLOSE_LISTEN);
	int f = take_fail(MC_CLOSE_LISTEN);
	struct listener *l = obj_get(p, O_LISTEN);

	r->comm = p;
	if (!l) {
		violate("closeListen of a foreign listen comm %p", p);
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	}
	if (l->pending)
		comm_close(l->pending);
	obj_free(l);
	return done_rec(r, f);
}

static __attribute__((unused)) int m_get_device_mr(void *comm, void *mh, void **dptr)
{
	static int dev_mr;
	struct mock_rec *r = rec(MC_GET_DEVICE_MR);
	int f = take_fail(MC_GET_DEVICE_MR);

	r->comm = comm;
	r->mh[0] = mh;
	*dptr = NULL;
	if (!any_comm(comm))
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	mh_check(mh);
	if (!f)
		*dptr = &dev_mr;
	r->req_out = *dptr;
	return done_rec(r, f);
}

static __attribute__((unused)) int m_irecv_consumed(void *rcp, int n, void *reqp)
{
	struct mock_rec *r = rec(MC_IRECV_CONSUMED);
	int f = take_fail(MC_IRECV_CONSUMED);
	struct req *q;

	r->comm = rcp;
	r->n = n;
	r->req_in = reqp;
	if (!comm_get(rcp, O_RECV))
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	q = obj_get(reqp, O_REQ);
	if (!q)
		return done_rec(r, f); /* freed at its test: the pointer is only a name now */
	if (q->c != obj_get(rcp, O_RECV) || q->type != R_RECV || !q->reported || q->n != n ||
	    (q->hold && q->consumed)) {
		violate("irecvConsumed(%d, %p) names no completed, unconsumed receive", n, reqp);
		return done_rec(r, NBPF_NCCL_INTERNAL_ERROR);
	}
	if (q->hold) {
		q->consumed = true;
		recv_maybe_free(q);
	}
	return done_rec(r, f);
}

static __attribute__((unused)) int m_set_attr(void *ctx, nbpf_net_attr_v11_t *a)
{
	struct mock_rec *r = rec(MC_SET_ATTR);
	int f = take_fail(MC_SET_ATTR);

	r->comm = ctx;
	if (!obj_get(ctx, O_CTX))
		violate("setNetAttr on a foreign context %p", ctx);
	if (a) {
		r->attr[0] = (int32_t)a->op;
		r->attr[1] = (int32_t)a->algo;
		r->attr[2] = (int32_t)a->proto;
	}
	return done_rec(r, f);
}

static __attribute__((unused)) int m_finalize(void *ctx)
{
	struct mock_rec *r = rec(MC_FINALIZE);
	int f = take_fail(MC_FINALIZE);

	r->comm = ctx;
	if (!obj_get(ctx, O_CTX)) {
		violate("finalize of a foreign context %p", ctx);
		return done_rec(r, NBPF_NCCL_INVALID_ARGUMENT);
	}
	obj_free(ctx);
	return done_rec(r, f);
}

/* ---- per-version marshalling ----------------------------------------------- */

static nbpf_nccl_result_t t_devices(int *n) { return m_devices(n); }
static nbpf_nccl_result_t t_deregmr(void *c, void *mh) { return m_deregmr(c, mh); }
static nbpf_nccl_result_t t_dmabuf(void *c, void *d, size_t s, int t, uint64_t o, int fd,
				   void **mh)
{
	return m_regmr(MC_REGMR_DMABUF, c, d, s, t, o, fd, mh);
}
static nbpf_nccl_result_t t_iflush(void *rc, int n, void **d, int *s, void **mh, void **req)
{
	return m_iflush(rc, n, d, s, mh, req);
}
static nbpf_nccl_result_t t_test(void *req, int *done, int *sizes) { return m_test(req, done, sizes); }
static nbpf_nccl_result_t t_close_send(void *c) { return m_close(MC_CLOSE_SEND, c, O_SEND); }
static nbpf_nccl_result_t t_close_recv(void *c) { return m_close(MC_CLOSE_RECV, c, O_RECV); }
static nbpf_nccl_result_t t_close_listen(void *l) { return m_close_listen(l); }

#if MOCK_V <= 8
static nbpf_nccl_result_t t_init(nbpf_nccl_logger_t log) { return m_init(MOCK_V, NULL, 0, -1, log, NULL); }
static nbpf_nccl_result_t t_listen(int dev, void *h, void **l) { return m_listen(dev, h, l); }
static nbpf_nccl_result_t t_isend(void *s, void *d, int n, int tag, void *mh, void **req)
{
	if (n < 0)
		violate("isend of %d bytes", n);
	return m_isend(s, d, (size_t)n, tag, mh, NULL, false, req);
}
static nbpf_nccl_result_t t_irecv(void *rc, int n, void **d, int *sz, int *tags, void **mh, void **req)
{
	size_t s[MOCK_MAX_RECVS] = { 0 };

	for (int i = 0; i < n && i < MOCK_MAX_RECVS; i++)
		s[i] = (size_t)sz[i];
	return m_irecv(rc, n, d, s, tags, mh, NULL, false, req);
}
#endif

#if MOCK_V >= 7
static nbpf_nccl_result_t t_get_device_mr(void *c, void *mh, void **p) { return m_get_device_mr(c, mh, p); }
static nbpf_nccl_result_t t_consumed(void *rc, int n, void *req) { return m_irecv_consumed(rc, n, req); }
static nbpf_nccl_result_t t_accept(void *l, void **rc, nbpf_net_dev_handle_t **dc)
{
	return m_accept(l, rc, (void **)dc, true);
}
#endif

#if MOCK_V <= 7
static nbpf_nccl_result_t t_regmr(void *c, void *d, int s, int t, void **mh)
{
	return m_regmr(MC_REGMR, c, d, (size_t)s, t, 0, -1, mh);
}
#else
static nbpf_nccl_result_t t_regmr(void *c, void *d, size_t s, int t, void **mh)
{
	return m_regmr(MC_REGMR, c, d, s, t, 0, -1, mh);
}
#endif

#if MOCK_V == 9 || MOCK_V == 10
static nbpf_nccl_result_t t_listen(int dev, void *h, void **l) { return m_listen(dev, h, l); }
#endif

#if MOCK_V == 9
static nbpf_nccl_result_t t_init(nbpf_nccl_logger_t log) { return m_init(9, NULL, 0, -1, log, NULL); }
static nbpf_nccl_result_t t_isend(void *s, void *d, size_t n, int tag, void *mh, void **req)
{
	return m_isend(s, d, n, tag, mh, NULL, false, req);
}
static nbpf_nccl_result_t t_irecv(void *rc, int n, void **d, size_t *sz, int *tags, void **mh,
				  void **req)
{
	return m_irecv(rc, n, d, sz, tags, mh, NULL, false, req);
}
#endif

#if MOCK_V >= 10
static nbpf_nccl_result_t t_isend(void *s, void *d, size_t n, int tag, void *mh, void *ph, void **req)
{
	return m_isend(s, d, n, tag, mh, ph, true, req);
}
static nbpf_nccl_result_t t_irecv(void *rc, int n, void **d, size_t *sz, int *tags, void **mh,
				  void **ph, void **req)
{
	return m_irecv(rc, n, d, sz, tags, mh, ph, true, req);
}
#endif

#if MOCK_V >= 11
static nbpf_nccl_result_t t_init(void **ctx, uint64_t id, nbpf_net_comm_config_t *cfg,
				 nbpf_nccl_logger_t log, nbpf_net_prof_cb_t prof)
{
	return m_init(MOCK_V, ctx, id, cfg ? cfg->trafficClass : -2, (void *)log, (void *)prof);
}
static nbpf_nccl_result_t t_listen(void *ctx, int dev, void *h, void **l)
{
	if (!obj_get(ctx, O_CTX))
		violate("listen on a foreign context %p", ctx);
	return m_listen(dev, h, l);
}
static nbpf_nccl_result_t t_connect(void *ctx, int dev, void *h, void **s, nbpf_net_dev_handle_t **dc)
{
	if (!obj_get(ctx, O_CTX))
		violate("connect on a foreign context %p", ctx);
	return m_connect(dev, -2, h, s, (void **)dc, true);
}
static nbpf_nccl_result_t t_finalize(void *ctx) { return m_finalize(ctx); }
static nbpf_nccl_result_t t_set_attr(void *ctx, nbpf_net_attr_v11_t *a) { return m_set_attr(ctx, a); }
#endif

/* The entries every version's table has, under the same names. */
#define MOCK_TABLE_COMMON \
	.listen = t_listen, .connect = t_connect, .accept = t_accept, .regMr = t_regmr, \
	.regMrDmaBuf = t_dmabuf, .deregMr = t_deregmr, .isend = t_isend, .irecv = t_irecv, \
	.iflush = t_iflush, .test = t_test, .closeSend = t_close_send, .closeRecv = t_close_recv, \
	.closeListen = t_close_listen,

#if MOCK_V == 6
static nbpf_nccl_result_t t_props(int dev, nbpf_net_props_v6_t *p)
{
	int r = props_check(dev, p);

	if (!r)
		PROPS_BASE(p);
	return r;
}
static nbpf_nccl_result_t t_connect(int dev, void *h, void **s) { return m_connect(dev, -2, h, s, NULL, false); }
static nbpf_nccl_result_t t_accept(void *l, void **rc) { return m_accept(l, rc, NULL, false); }
EXPORT nbpf_net_v6_t ncclNetPlugin_v6 = {
	.name = "mock", .init = t_init, .devices = t_devices, .getProperties = t_props,
	MOCK_TABLE_COMMON
};
#endif

#if MOCK_V == 7
static nbpf_nccl_result_t t_props7(int dev, nbpf_net_props_v7_t *p)
{
	int r = props_check(dev, p);

	if (!r) {
		PROPS_BASE(p);
		p->netDeviceType = mock_ctl.props.dev_type;
		p->netDeviceVersion = mock_ctl.props.dev_version;
	}
	return r;
}
#endif
#if MOCK_V == 8
static nbpf_nccl_result_t t_props8(int dev, nbpf_net_props_v8_t *p)
{
	int r = props_check(dev, p);

	if (!r) {
		PROPS_BASE(p);
		p->regIsGlobal = mock_ctl.props.reg_is_global;
		p->netDeviceType = mock_ctl.props.dev_type;
		p->netDeviceVersion = mock_ctl.props.dev_version;
	}
	return r;
}
#endif
#if MOCK_V == 7 || MOCK_V == 8 || MOCK_V == 9
static nbpf_nccl_result_t t_connect(int dev, void *h, void **s, nbpf_net_dev_handle_t **dc)
{
	return m_connect(dev, -2, h, s, (void **)dc, true);
}
#endif
#if MOCK_V == 7
EXPORT nbpf_net_v7_t ncclNetPlugin_v7 = {
	.name = "mock", .init = t_init, .devices = t_devices, .getProperties = t_props7,
	MOCK_TABLE_COMMON .getDeviceMr = t_get_device_mr, .irecvConsumed = t_consumed,
};
#endif
#if MOCK_V == 8
EXPORT nbpf_net_v8_t ncclNetPlugin_v8 = {
	.name = "mock", .init = t_init, .devices = t_devices, .getProperties = t_props8,
	MOCK_TABLE_COMMON .getDeviceMr = t_get_device_mr, .irecvConsumed = t_consumed,
};
#endif
#if MOCK_V == 9 || MOCK_V == 10
static nbpf_nccl_result_t t_props9(int dev, nbpf_net_props_v9_t *p)
{
	int r = props_check(dev, p);

	if (!r) {
		PROPS_BASE(p);
		PROPS_V9(p, NBPF_NET_MAX_DEVS_PER_NIC);
	}
	return r;
}
#endif
#if MOCK_V == 9
EXPORT nbpf_net_v9_t ncclNetPlugin_v9 = {
	.name = "mock", .init = t_init, .devices = t_devices, .getProperties = t_props9,
	MOCK_TABLE_COMMON .getDeviceMr = t_get_device_mr, .irecvConsumed = t_consumed,
};
#endif
#if MOCK_V == 10
static nbpf_nccl_result_t t_init(nbpf_nccl_logger_t log, nbpf_net_prof_cb_t prof)
{
	return m_init(10, NULL, 0, -1, (void *)log, (void *)prof);
}
static nbpf_nccl_result_t t_connect(int dev, nbpf_net_comm_config_t *cfg, void *h, void **s,
				    nbpf_net_dev_handle_t **dc)
{
	return m_connect(dev, cfg ? cfg->trafficClass : -3, h, s, (void **)dc, true);
}
EXPORT nbpf_net_v10_t ncclNetPlugin_v10 = {
	.name = "mock", .init = t_init, .devices = t_devices, .getProperties = t_props9,
	MOCK_TABLE_COMMON .getDeviceMr = t_get_device_mr, .irecvConsumed = t_consumed,
};
#endif
#if MOCK_V == 11
static nbpf_nccl_result_t t_props11(int dev, nbpf_net_props_v11_t *p)
{
	int r = props_check(dev, p);

	if (!r) {
		PROPS_BASE(p);
		PROPS_V9(p, NBPF_NET_MAX_DEVS_PER_NIC);
		p->maxMultiRequestSize = mock_ctl.props.max_multi;
	}
	return r;
}
EXPORT nbpf_net_v11_t ncclNetPlugin_v11 = {
	.name = "mock", .init = t_init, .devices = t_devices, .getProperties = t_props11,
	MOCK_TABLE_COMMON .getDeviceMr = t_get_device_mr, .irecvConsumed = t_consumed,
	.finalize = t_finalize, .setNetAttr = t_set_attr,
};
#endif
#if MOCK_V == 12
static nbpf_nccl_result_t t_props12(int dev, nbpf_net_props_v12_t *p)
{
	int r = props_check(dev, p);

	if (!r) {
		PROPS_BASE(p);
		PROPS_V9(p, NBPF_NET_MAX_DEVS_PER_NIC_V12);
		p->maxMultiRequestSize = mock_ctl.props.max_multi;
		p->railId = (int16_t)mock_ctl.props.rail;
		p->planeId = (int16_t)mock_ctl.props.plane;
	}
	return r;
}
EXPORT nbpf_net_v12_t ncclNetPlugin_v12 = {
	.name = "mock", .init = t_init, .devices = t_devices, .getProperties = t_props12,
	MOCK_TABLE_COMMON .getDeviceMr = t_get_device_mr, .irecvConsumed = t_consumed,
	.finalize = t_finalize, .setNetAttr = t_set_attr,
};
#endif
