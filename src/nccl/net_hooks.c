// SPDX-License-Identifier: Apache-2.0
/*
 * net_hooks.c - runs SEC("net") programs around the net plugin's calls
 * and applies what the contract lets them change (src/nccl/hooks.c):
 * the number of data sockets of a new send connection and each socket's
 * share of its bytes (the receiver learns both from the connector), and
 * the IP TOS / IPv6 traffic class and SO_PRIORITY of a connection.
 *
 * Fail open: no image, no net program, a program that fails to run or an
 * output outside its range changes nothing (the refusal is counted on
 * the context's registry entry, as for the tuner).  Every program of the
 * image runs, in object order, on the same context, so a later program
 * sees the outputs of an earlier one; any NCCLBPF_NET_SKIP keeps the
 * connection as configured.
 *
 * Cost when no net program is loaded: one relaxed load of the published
 * image, plus a scan of its program list when there is one.  With one, a
 * message event copies its comm's prebuilt context (filled once per comm)
 * and sets four fields, then one epoch section runs the programs.  The
 * clock is read once per event in all cases, by the caller (post time,
 * then latency: per-peer telemetry and the DONE context share it).
 */
#include <arpa/inet.h>
#include <string.h>

#include "epoch.h"
#include "host/host.h"
#include "net_core.h"

#define NET_MAX_SOCKS_OUT 64
#define NET_MAX_PRIORITY  6  /* above needs CAP_NET_ADMIN: refused, never half-applied */

static void count_refusal(struct net_ctx *ctx, enum nbpf_refuse why)
{
	if (ctx->cm)
		atomic_fetch_add_explicit(&ctx->cm->refused[why], 1, memory_order_relaxed);
}

void net_hook_refuse(struct net_ctx *ctx)
{
	count_refusal(ctx, NBPF_REFUSE_RANGE);
}

static inline void bump(_Atomic uint64_t *v, uint64_t by)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + by,
			      memory_order_relaxed);
}

/*
 * Per-program counters restart when the context first runs a new image,
 * as the tuner's do (`prog list` sums those of the current generation).
 * v6-v10 share one context between NCCL's threads: one wins the reset.
 */
static __attribute__((noinline, cold)) void stats_reset(struct nbpf_comm *cm, uint64_t gen)
{
	uint64_t old = atomic_load_explicit(&cm->stats_gen, memory_order_relaxed);

	if (!atomic_compare_exchange_strong(&cm->stats_gen, &old, gen))
		return;
	for (uint32_t i = 0; i < NBPF_HOST_MAX_PROGS; i++) {
		atomic_store_explicit(&cm->prog[i].runs, 0, memory_order_relaxed);
		atomic_store_explicit(&cm->prog[i].ns, 0, memory_order_relaxed);
	}
	atomic_store_explicit(&cm->image_gen, gen, memory_order_relaxed);
}

/*
 * Runs every net program; returns false when none ran. *skip: one said SKIP.
 * Inlined: for the message events its call was a fifth of the plumbing.
 */
static inline __attribute__((always_inline)) bool run_programs(struct net_ctx *ctx,
							       struct ncclbpf_net_ctx *x,
							       bool *skip)
{
	struct nbpf_comm *cm = ctx->cm;
	struct nbpf_image *img;
	uint64_t t0 = 0;
	bool ran = false;

	*skip = false;
	if (!atomic_load_explicit(&nbpf_host_published, memory_order_relaxed))
		return false;
	nbpf_epoch_enter();
	img = atomic_load_explicit(&nbpf_host_published, memory_order_acquire);
	if (img && cm && __builtin_expect(atomic_load_explicit(&cm->stats_gen, memory_order_relaxed) !=
					  img->generation, 0))
		stats_reset(cm, img->generation);
	/* NCCLBPF_STATS=1: one clock read per program boundary (a run ends where the next starts). */
	if (__builtin_expect(ctx->stats, 0))
		t0 = nbpf_now_ns();
	for (uint32_t i = 0; img && i < img->n_progs; i++) {
		const struct nbpf_host_prog *hp = &img->progs[i];
		uint64_t ret = 0;

		if (hp->hook != NCCLBPF_HOOK_NET)
			continue;
		if (hp->func) {
			ret = hp->func(x, sizeof(*x));
		} else if (ncclbpf_program__run(hp->prog, x, sizeof(*x), &ret)) {
			count_refusal(ctx, NBPF_REFUSE_ERROR);
			*skip = true;
		}
		*skip |= ret == NCCLBPF_NET_SKIP;
		ran = true;
		/*
		 * One thread drives a context's data path (NCCL's proxy progress
		 * thread; v6..v10 share one context between communicators, where
		 * a count may be lost): no locked add.
		 */
		if (cm) {
			bump(&cm->prog[hp->slot].runs, 1);
			if (__builtin_expect(ctx->stats, 0)) {
				uint64_t t1 = nbpf_now_ns();

				bump(&cm->prog[hp->slot].ns, t1 - t0);
				t0 = t1;
			}
		}
	}
	nbpf_epoch_exit();
	return ran;
}

uint64_t net_peer_key(const union nnet_addr *a)
{
	const uint32_t *w;

	if (!a)
		return 0;
	if (a->sa.sa_family == AF_INET)
		return a->in.sin_addr.s_addr;
	if (a->sa.sa_family != AF_INET6)
		return 0;
	w = (const uint32_t *)(const void *)&a->in6.sin6_addr;
	return ((uint64_t)(w[0] ^ w[2]) << 32 | (w[1] ^ w[3])) | (1ull << 63);
}

static void ctx_init(struct ncclbpf_net_ctx *x, const struct net_ctx *ctx, uint32_t event,
		     int dev, const union nnet_addr *peer)
{
	_Static_assert(NCCLBPF_NET_MAX_SOCKS == NNET_MAX_SOCKS, "one weight per data socket");
	memset(x, 0, sizeof(*x));
	x->comm_id = ctx->comm_id;
	x->event = event;
	x->dev = (uint32_t)dev;
	x->tag = -1;
	x->tos = NCCLBPF_KEEP;
	x->priority = NCCLBPF_KEEP;
	x->abi_version = (uint32_t)ctx->abi;
	x->peer_key = net_peer_key(peer);
	if (peer && peer->sa.sa_family == AF_INET) {
		x->peer_family = AF_INET;
		x->peer_port = ntohs(peer->in.sin_port);
		memcpy(&x->peer_addr[0], &peer->in.sin_addr, 4);
	} else if (peer && peer->sa.sa_family == AF_INET6) {
		x->peer_family = AF_INET6;
		x->peer_port = ntohs(peer->in6.sin6_port);
		memcpy(x->peer_addr, &peer->in6.sin6_addr, 16);
	}
}

/* Takes tos/priority outputs that are in range; counts the others. */
static void take_marking(struct net_ctx *ctx, const struct ncclbpf_net_ctx *x, int *tos, int *prio)
{
	if (x->tos != NCCLBPF_KEEP) {
		if (x->tos >= 0 && x->tos <= 255)
			*tos = x->tos;
		else
			count_refusal(ctx, NBPF_REFUSE_RANGE);
	}
	if (x->priority != NCCLBPF_KEEP) {
		if (x->priority >= 0 && x->priority <= NET_MAX_PRIORITY)
			*prio = x->priority;
		else
			count_refusal(ctx, NBPF_REFUSE_RANGE);
	}
}

void net_hook_connect(struct net_ctx *ctx, int dev, const union nnet_addr *peer,
		      struct nnet_conn_opts *opts)
{
	struct ncclbpf_net_ctx x;
	uint32_t def = (uint32_t)(nnet_settings()->nthreads * nnet_settings()->nsocks_per_thread);
	bool skip;

	uint8_t equal[NCCLBPF_NET_MAX_SOCKS] = { 0 };

	ctx_init(&x, ctx, NCCLBPF_NET_CONNECT, dev, peer);
	x.n_socks = def;
	memset(equal, 1, def < NCCLBPF_NET_MAX_SOCKS ? def : NCCLBPF_NET_MAX_SOCKS);
	memcpy(x.sock_weight, equal, sizeof(equal));
	if (!run_programs(ctx, &x, &skip) || skip)
		return;
	if (x.n_socks != def) {
		if (x.n_socks >= 1 && x.n_socks <= NET_MAX_SOCKS_OUT)
			opts->nsocks = (int)x.n_socks;
		else
			count_refusal(ctx, NBPF_REFUSE_RANGE);
	}
	take_marking(ctx, &x, &opts->tos, &opts->priority);
	/*
	 * Untouched weights mean equal shares over whatever count applies.
	 * Changed ones must fit the final count and not all be zero; else
	 * equal shares (both ends agree: only the connector decides).
	 */
	if (memcmp(x.sock_weight, equal, sizeof(equal))) {
		if (nnet_weights_check(x.sock_weight, opts->nsocks ? opts->nsocks : (int)def) > 0)
			memcpy(opts->weights, x.sock_weight, sizeof(opts->weights));
		else
			count_refusal(ctx, NBPF_REFUSE_RANGE);
	}
}

void net_hook_comm_init(struct net_comm *c)
{
	ctx_init(&c->hook, c->ctx, 0, c->dev, c->tc ? nnet_comm_peer(c->tc) : NULL);
	c->hook.n_socks = (uint32_t)nnet_comm_weights(c->tc, c->hook.sock_weight);
}

void net_hook_accept(struct net_comm *c)
{
	struct ncclbpf_net_ctx x = c->hook;
	int tos = -1, prio = -1;
	bool skip;

	x.event = NCCLBPF_NET_ACCEPT;
	if (!run_programs(c->ctx, &x, &skip) || skip)
		return;
	take_marking(c->ctx, &x, &tos, &prio);
	if (!c->tc) {
		if (tos >= 0 || prio >= 0)
			count_refusal(c->ctx, NBPF_REFUSE_RANGE); /* an inner plugin's sockets are its own */
		return;
	}
	if ((tos >= 0 || prio >= 0) && nnet_comm_set_tos(c->tc, tos, prio))
		count_refusal(c->ctx, NBPF_REFUSE_ERROR);
}

bool net_hook_msg(struct net_comm *c, uint32_t event, size_t bytes, int tag, uint64_t latency_ns)
{
	struct ncclbpf_net_ctx x;
	bool skip;

	/* The context's registry entry counts messages done (`ps`: calls). */
	if (c->ctx->cm && (event == NCCLBPF_NET_SEND_DONE || event == NCCLBPF_NET_RECV_DONE))
		bump(&c->ctx->cm->calls, 1);
	if (!atomic_load_explicit(&nbpf_host_published, memory_order_relaxed))
		return false;
	x = c->hook; /* the comm's fields, filled once */
	x.event = event;
	x.bytes = bytes;
	x.tag = tag;
	x.latency_ns = latency_ns;
	return run_programs(c->ctx, &x, &skip);
}
