/*
 * ctl_handlers.c - builds the answer to each control request from the
 * host's communicator registry and published images, and performs
 * reload/rollback.  Runs on the control thread only.
 *
 * Record kinds (key=value fields; see ctl_proto.h for the syntax):
 *   proc   pid instance uid exe policy n_comms image_gen image_records
 *          loads loads_refused_verifier loads_refused_loader rollbacks
 *   image  gen spec at_call loaded_at load_ns progs objs warnings state
 *   prog   gen slot name obj tag obj_tag hook insns consistency runs ns
 *   comm   id comm_id rank ranks nodes kind abi calls applied skipped
 *          refused(csv by reason) image_gen colls_seen events_dropped
 *          colls_abandoned colls_unrun coll_calls(csv) chunk_calls
 *          chunk_applied events(csv: profiler events started, by NCCL's
 *          type bit)
 *   map    name type key_size value_size max_entries path
 *          lock_timeouts lock_recoveries lock_discarded
 *   tele   comm coll size count bytes sum_ns gpu_timed hist(csv) mix(csv)
 *   npeer  (from the registered telemetry source: src/nccl/net_ctl.c)
 */
#include "ctl_handlers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/host.h"
#include "runtime/maps/map.h"
#include "runtime/rundir.h"
#include "telemetry/prom.h"

_Static_assert(NBPF_TELE_REFUSE == NBPF_REFUSE_COUNT, "refusal reasons");

static _Atomic(nbpf_ctl_tele_source_t) tele_source;

void nbpf_ctl_set_tele_source(nbpf_ctl_tele_source_t fn)
{
	atomic_store(&tele_source, fn);
}

static const char *kind_name(enum nbpf_comm_kind k)
{
	return k == NBPF_COMM_TUNER ? "tuner" : k == NBPF_COMM_PROFILER ? "profiler"
	       : k == NBPF_COMM_NET ? "net" : "?";
}

static uint64_t ld(const _Atomic uint64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

/* The current image and the ones still pending behind it (host lock held). */
static void put_images(struct nbpf_ctl_buf *b, const struct nbpf_image *img, bool progs)
{
	for (int depth = 0; img && depth < 8; img = img->prev, depth++) {
		nbpf_ctl_buf_rec(b, "image");
		nbpf_ctl_buf_u64(b, "gen", img->generation);
		nbpf_ctl_buf_str(b, "spec", img->spec);
		nbpf_ctl_buf_u64(b, "at_call", img->at_call);
		nbpf_ctl_buf_u64(b, "loaded_at", img->loaded_at);
		nbpf_ctl_buf_u64(b, "load_ns", img->load_ns);
		nbpf_ctl_buf_u64(b, "progs", img->n_progs);
		nbpf_ctl_buf_u64(b, "objs", img->n_objs);
		nbpf_ctl_buf_str(b, "warnings", img->warnings);
		nbpf_ctl_buf_str(b, "state", depth ? "previous" : "current");
		if (!progs || depth)
			continue;
		for (uint32_t i = 0; i < img->n_progs; i++) {
			const struct nbpf_host_prog *p = &img->progs[i];

			nbpf_ctl_buf_rec(b, "prog");
			nbpf_ctl_buf_u64(b, "gen", img->generation);
			nbpf_ctl_buf_u64(b, "slot", p->slot);
			nbpf_ctl_buf_str(b, "name", p->name);
			nbpf_ctl_buf_str(b, "obj", p->obj_name);
			nbpf_ctl_buf_str(b, "tag", p->tag);
			nbpf_ctl_buf_str(b, "obj_tag", p->obj_tag);
			nbpf_ctl_buf_str(b, "hook", (unsigned)p->hook < NCCLBPF_HOOK_COUNT
							    ? ncclbpf_hooks[p->hook].name
							    : "?");
			nbpf_ctl_buf_u64(b, "insns", p->insns);
			nbpf_ctl_buf_str(b, "engine", p->func ? "jit" : "interp");
			nbpf_ctl_buf_u64(b, "consistency", p->consistency_warning);
		}
	}
}

/* The o-th object path of a ':'-separated spec (objects load in spec order, empties skipped). */
static void spec_entry(const char *spec, uint32_t o, char *out, size_t n)
{
	out[0] = 0;
	for (const char *p = spec; p && *p;) {
		size_t len = strcspn(p, ":");

		if (len && !o--) {
			snprintf(out, n, "%.*s", (int)len, p);
			return;
		}
		p += len + (p[len] == ':');
	}
}

static void put_maps(struct nbpf_ctl_buf *b, const struct nbpf_image *img)
{
	const struct ncclbpf_map *seen[256];
	struct ncclbpf_map_lock_stats ls;
	size_t n_seen = 0;

	for (uint32_t o = 0; img && o < img->n_objs; o++) {
		for (size_t m = 0; m < ncclbpf_object__map_count(img->objs[o]); m++) {
			const struct ncclbpf_map *map = ncclbpf_object__map(img->objs[o], m);
			bool dup = false;

			for (size_t s = 0; s < n_seen && !dup; s++)
				dup = seen[s] == map;
			if (dup || !map)
				continue;
			if (n_seen < sizeof(seen) / sizeof(seen[0]))
				seen[n_seen++] = map;
			nbpf_ctl_buf_rec(b, "map");
			nbpf_ctl_buf_str(b, "name", ncclbpf_map__name(map));
			nbpf_ctl_buf_str(b, "obj", ncclbpf_object__name(img->objs[o]));
			{
				char path[4096];

				/* Where the CLI finds the map's BTF to format its values. */
				spec_entry(img->spec, o, path, sizeof(path));
				nbpf_ctl_buf_str(b, "obj_path", path);
			}
			nbpf_ctl_buf_u64(b, "type", ncclbpf_map__type(map));
			nbpf_ctl_buf_u64(b, "key_size", ncclbpf_map__key_size(map));
			nbpf_ctl_buf_u64(b, "value_size", ncclbpf_map__value_size(map));
			nbpf_ctl_buf_u64(b, "max_entries", ncclbpf_map__max_entries(map));
			nbpf_ctl_buf_str(b, "path", ncclbpf_map__path(map) ? ncclbpf_map__path(map) : "");
			/* A write must reach every rank at an agreed call (ncclbpf map update). */
			nbpf_ctl_buf_u64(b, "decides", nbpf_host_map_decides(img, map));
			if (!ncclbpf_map__lock_stats(map, &ls)) {
				nbpf_ctl_buf_u64(b, "lock_timeouts", ls.timeouts);
				nbpf_ctl_buf_u64(b, "lock_recoveries", ls.recoveries);
				nbpf_ctl_buf_u64(b, "lock_discarded", ls.discarded);
			}
		}
	}
}

/* Every load attempt the host kept, newest first: what loaded, or what was refused and why. */
static void put_loads(struct nbpf_ctl_buf *b)
{
	struct ncclbpf_load_status st; /* ~11 KB: the control thread has a default-sized stack */

	for (unsigned i = 0; !nbpf_host_load_status(i, &st, sizeof(st)); i++) {
		nbpf_ctl_buf_rec(b, "load");
		nbpf_ctl_buf_u64(b, "seq", st.seq);
		nbpf_ctl_buf_str(b, "result", st.err ? "refused" : "loaded");
		nbpf_ctl_buf_i64(b, "err", st.err);
		nbpf_ctl_buf_u64(b, "at", st.at);
		nbpf_ctl_buf_u64(b, "load_ns", st.load_ns);
		nbpf_ctl_buf_str(b, "spec", st.spec);
		nbpf_ctl_buf_u64(b, "objs", st.n_objs);
		nbpf_ctl_buf_u64(b, "progs", st.n_progs);
		nbpf_ctl_buf_u64(b, "maps", st.n_maps);
		nbpf_ctl_buf_u64(b, "env", st.n_env);
		nbpf_ctl_buf_str(b, "obj", st.refused_obj);
		nbpf_ctl_buf_str(b, "prog", st.refused_prog);
		nbpf_ctl_buf_str(b, "message", st.message);
	}
}

struct comm_walk {
	struct nbpf_ctl_buf *b;
	bool tele;
	uint64_t at_call; /* reload: count comms already at or past it */
	uint64_t late;
	uint64_t n;
};

static int put_comm(void *user, const struct nbpf_comm *c)
{
	struct comm_walk *w = user;
	struct nbpf_ctl_buf *b = w->b;
	uint64_t v[NCCLBPF_NUM_COLLS + 1 > NBPF_REFUSE_COUNT ? NCCLBPF_NUM_COLLS + 1
							     : NBPF_REFUSE_COUNT];

	w->n++;
	if (!b) {
		if (c->kind == NBPF_COMM_TUNER && ld(&c->calls) >= w->at_call)
			w->late++;
		return 0;
	}
	nbpf_ctl_buf_rec(b, "comm");
	nbpf_ctl_buf_u64(b, "id", c->id);
	nbpf_ctl_buf_x64(b, "comm_id", c->comm_id);
	nbpf_ctl_buf_i64(b, "rank", c->rank);
	nbpf_ctl_buf_u64(b, "ranks", c->n_ranks);
	nbpf_ctl_buf_u64(b, "nodes", c->n_nodes);
	nbpf_ctl_buf_str(b, "kind", kind_name(c->kind));
	nbpf_ctl_buf_i64(b, "abi", c->abi_version);
	nbpf_ctl_buf_u64(b, "calls", ld(&c->calls));
	nbpf_ctl_buf_u64(b, "applied", ld(&c->applied));
	nbpf_ctl_buf_u64(b, "skipped", ld(&c->skipped));
	for (int i = 0; i < NBPF_REFUSE_COUNT; i++)
		v[i] = ld(&c->refused[i]);
	nbpf_ctl_buf_u64s(b, "refused", v, NBPF_REFUSE_COUNT);
	for (int i = 0; i <= NCCLBPF_NUM_COLLS; i++)
		v[i] = ld(&c->coll_calls[i]);
	nbpf_ctl_buf_u64s(b, "coll_calls", v, NCCLBPF_NUM_COLLS + 1);
	nbpf_ctl_buf_u64(b, "image_gen", ld(&c->image_gen));
	nbpf_ctl_buf_u64(b, "chunk_calls", ld(&c->chunk_calls));
	nbpf_ctl_buf_u64(b, "chunk_applied", ld(&c->chunk_applied));
	nbpf_ctl_buf_u64(b, "colls_seen", ld(&c->colls_seen));
	nbpf_ctl_buf_u64(b, "events_dropped", ld(&c->events_dropped));
	nbpf_ctl_buf_u64(b, "colls_abandoned", ld(&c->colls_abandoned));
	nbpf_ctl_buf_u64(b, "colls_unrun", ld(&c->colls_unrun));
	if (c->kind == NBPF_COMM_PROFILER) {
		uint64_t ev[NBPF_PROF_EVENT_TYPES];

		for (int i = 0; i < NBPF_PROF_EVENT_TYPES; i++)
			ev[i] = ld(&c->prof_events[0].n[i]) + ld(&c->prof_events[1].n[i]);
		nbpf_ctl_buf_u64s(b, "events", ev, NBPF_PROF_EVENT_TYPES);
	}
	if (!w->tele)
		return 0;
	for (int coll = 0; coll <= NCCLBPF_NUM_COLLS; coll++) {
		for (int sc = 0; sc < NBPF_SIZE_CLASSES; sc++) {
			const struct nbpf_telemetry *t = &c->tele[coll][sc];
			uint64_t hist[NBPF_LAT_BUCKETS], mix[(NCCLBPF_NUM_ALGOS + 1) * (NCCLBPF_NUM_PROTOS + 1)];
			uint64_t count = ld(&t->count);

			if (!count)
				continue;
			for (int i = 0; i < NBPF_LAT_BUCKETS; i++)
				hist[i] = ld(&t->hist[i]);
			for (int a = 0; a <= NCCLBPF_NUM_ALGOS; a++)
				for (int p = 0; p <= NCCLBPF_NUM_PROTOS; p++)
					mix[a * (NCCLBPF_NUM_PROTOS + 1) + p] = ld(&t->mix[a][p]);
			nbpf_ctl_buf_rec(b, "tele");
			nbpf_ctl_buf_u64(b, "comm", c->id);
			nbpf_ctl_buf_u64(b, "coll", (uint64_t)coll);
			nbpf_ctl_buf_u64(b, "size", (uint64_t)sc);
			nbpf_ctl_buf_u64(b, "count", count);
			nbpf_ctl_buf_u64(b, "bytes", ld(&t->bytes));
			nbpf_ctl_buf_u64(b, "sum_ns", ld(&t->sum_ns));
			nbpf_ctl_buf_u64(b, "gpu_timed", ld(&t->gpu_timed));
			nbpf_ctl_buf_u64s(b, "hist", hist, NBPF_LAT_BUCKETS);
			nbpf_ctl_buf_u64s(b, "mix", mix, sizeof(mix) / sizeof(mix[0]));
		}
	}
	return 0;
}

static void put_proc(struct nbpf_ctl_buf *b)
{
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const struct nbpf_settings *s = nbpf_host_settings();
	struct comm_walk w = { 0 };
	struct nbpf_load_counts lc;

	exe[n > 0 ? n : 0] = 0;
	nbpf_host_comm_foreach(put_comm, &w);
	nbpf_ctl_buf_rec(b, "proc");
	nbpf_ctl_buf_u64(b, "pid", (uint64_t)getpid());
	nbpf_ctl_buf_str(b, "instance", nbpf_instance_id());
	nbpf_ctl_buf_u64(b, "uid", (uint64_t)geteuid());
	nbpf_ctl_buf_str(b, "exe", exe);
	nbpf_ctl_buf_str(b, "policy", s ? s->policy : "");
	nbpf_ctl_buf_u64(b, "n_comms", w.n);
	nbpf_host_lock();
	nbpf_ctl_buf_u64(b, "image_gen", nbpf_host_current() ? nbpf_host_current()->generation : 0);
	nbpf_ctl_buf_u64(b, "image_records", nbpf_host_image_records_locked());
	nbpf_host_unlock();
	nbpf_host_load_counts(&lc);
	nbpf_ctl_buf_u64(b, "loads", lc.attempts);
	nbpf_ctl_buf_u64(b, "loads_refused_verifier", lc.refused_verifier);
	nbpf_ctl_buf_u64(b, "loads_refused_loader", lc.refused_loader);
	nbpf_ctl_buf_u64(b, "rollbacks", lc.rollbacks);
}

/* Per-program run totals, outside the host lock (the totals take it themselves). */
static void put_prog_stats(struct nbpf_ctl_buf *b)
{
	uint32_t n = 0;
	uint64_t gen = 0;

	nbpf_host_lock();
	if (nbpf_host_current()) {
		n = nbpf_host_current()->n_progs;
		gen = nbpf_host_current()->generation;
	}
	nbpf_host_unlock();
	for (uint32_t i = 0; i < n; i++) {
		uint64_t runs = 0, ns = 0;

		nbpf_host_prog_totals(i, &runs, &ns);
		nbpf_ctl_buf_rec(b, "progstat");
		nbpf_ctl_buf_u64(b, "gen", gen);
		nbpf_ctl_buf_u64(b, "slot", i);
		nbpf_ctl_buf_u64(b, "runs", runs);
		nbpf_ctl_buf_u64(b, "ns", ns);
	}
}

/* -ETIMEDOUT once a requester's deadline (CLOCK_REALTIME ns, 0: none) has passed. */
static int deadline_passed(uint64_t deadline, const char *what, char *errmsg, size_t errlen)
{
	if (!deadline || nbpf_realtime_ns() < deadline)
		return 0;
	snprintf(errmsg, errlen,
		 "%s: the request's deadline passed before this process could apply it (stopped or slow): nothing changed",
		 what);
	return -ETIMEDOUT;
}

static uint64_t get_deadline(const struct nbpf_ctl_msg *req)
{
	uint64_t d = 0;

	return req->n_recs && !nbpf_ctl_rec_u64(&req->recs[0], "deadline", &d) ? d : 0;
}

static int get_at_call(const struct nbpf_ctl_msg *req, uint64_t *at_call, char *errmsg,
		       size_t errlen)
{
	int err;

	*at_call = 0;
	if (!req->n_recs)
		return 0;
	err = nbpf_ctl_rec_u64(&req->recs[0], "at_call", at_call);
	if (err == -EINVAL) {
		snprintf(errmsg, errlen, "at_call is not a number");
		return -EINVAL;
	}
	return 0;
}

/*
 * Load, verify and compile on this thread, then one publish.  Nothing is
 * changed when loading fails: the requester gets the loader's or the
 * verifier's message verbatim.  b may be NULL (watch-triggered reloads).
 */
int nbpf_ctl_reload(const char *spec, uint64_t at_call, uint64_t deadline,
		    struct nbpf_ctl_buf *b, char *errmsg, size_t errlen)
{
	struct nbpf_image *img = NULL;
	struct comm_walk w = { 0 };
	uint64_t t0, t1, t2;
	int err;

	if (!spec || !*spec) {
		snprintf(errmsg, errlen, "reload: no object path given");
		return -EINVAL;
	}
	if ((err = deadline_passed(deadline, "reload", errmsg, errlen)))
		return err;
	t0 = nbpf_now_ns();
	err = nbpf_host_load_image(spec, &img, errmsg, errlen);
	if (err)
		return err;
	t1 = nbpf_now_ns();
	/* The requester stopped waiting at the deadline: a later publish would be news to it. */
	if ((err = deadline_passed(deadline, "reload", errmsg, errlen))) {
		nbpf_host_image_free(img);
		return err;
	}
	if (at_call) {
		w.at_call = at_call;
		nbpf_host_comm_foreach(put_comm, &w);
	}
	err = nbpf_host_publish(img, at_call);
	if (err) {
		nbpf_host_image_free(img);
		snprintf(errmsg, errlen, "reload: publish failed: %s", strerror(-err));
		return err;
	}
	t2 = nbpf_now_ns();
	nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT,
		      "reloaded %s (%u programs), active from call %" PRIu64, spec,
		      img->n_progs, at_call);
	if (w.late)
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
			      "%" PRIu64 " communicators were already past call %" PRIu64
			      " when %s was published: their ranks may switch on different calls",
			      w.late, at_call, spec);
	if (!b)
		return 0;
	nbpf_ctl_buf_rec(b, "reload");
	nbpf_ctl_buf_str(b, "spec", spec);
	nbpf_ctl_buf_u64(b, "load_ns", t1 - t0);
	nbpf_ctl_buf_u64(b, "publish_ns", t2 - t1);
	nbpf_ctl_buf_u64(b, "at_call", at_call);
	nbpf_ctl_buf_u64(b, "late", w.late);
	nbpf_host_lock();
	put_images(b, nbpf_host_current(), true);
	nbpf_host_unlock();
	return 0;
}

static int max_calls_fn(void *user, const struct nbpf_comm *c)
{
	uint64_t *max = user, v = ld(&c->calls);

	if (c->kind == NBPF_COMM_TUNER && v > *max)
		*max = v;
	return 0;
}

uint64_t nbpf_ctl_max_calls(void)
{
	uint64_t max = 0;

	nbpf_host_comm_foreach(max_calls_fn, &max);
	return max;
}

static int do_reload(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *b, char *errmsg,
		     size_t errlen)
{
	uint64_t at_call;
	int err;

	if ((err = get_at_call(req, &at_call, errmsg, errlen)))
		return err;
	return nbpf_ctl_reload(req->n_recs ? nbpf_ctl_rec_get(&req->recs[0], "path") : NULL, at_call,
			       get_deadline(req), b, errmsg, errlen);
}

int nbpf_ctl_handle(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *b, char *errmsg,
		    size_t errlen)
{
	struct comm_walk w = { .b = b };
	uint64_t at_call;
	int err;

	switch (req->type) {
	case NBPF_CTL_HELLO:
		put_proc(b);
		return 0;
	case NBPF_CTL_PS:
		put_proc(b);
		nbpf_host_comm_foreach(put_comm, &w);
		nbpf_host_lock();
		put_images(b, nbpf_host_current(), true);
		nbpf_host_unlock();
		put_loads(b);
		return 0;
	case NBPF_CTL_PROGS:
		nbpf_host_lock();
		put_images(b, nbpf_host_current(), true);
		nbpf_host_unlock();
		put_prog_stats(b);
		nbpf_host_comm_foreach(put_comm, &w);
		return 0;
	case NBPF_CTL_MAPS:
		nbpf_host_lock();
		put_maps(b, nbpf_host_current());
		nbpf_host_unlock();
		return 0;
	case NBPF_CTL_TELEMETRY:
		w.tele = true;
		put_proc(b);
		nbpf_host_lock();
		put_images(b, nbpf_host_current(), true);
		put_maps(b, nbpf_host_current());
		nbpf_host_unlock();
		put_prog_stats(b);
		nbpf_host_comm_foreach(put_comm, &w);
		if (atomic_load(&tele_source))
			atomic_load(&tele_source)(b);
		return 0;
	case NBPF_CTL_CALLS:
		nbpf_host_comm_foreach(put_comm, &w);
		return 0;
	case NBPF_CTL_RELOAD:
		return do_reload(req, b, errmsg, errlen);
	case NBPF_CTL_STAGE:
	case NBPF_CTL_COMMIT:
	case NBPF_CTL_ABORT:
	case NBPF_CTL_CHANGES:
	case NBPF_CTL_LEASE:
		return nbpf_ctl_handle_change(req, b, errmsg, errlen);
	case NBPF_CTL_ROLLBACK:
		if ((err = get_at_call(req, &at_call, errmsg, errlen)) ||
		    (err = deadline_passed(get_deadline(req), "rollback", errmsg, errlen)))
			return err;
		err = nbpf_host_rollback(at_call);
		if (err) {
			snprintf(errmsg, errlen, "%s",
				 err == -ENOENT ? "rollback: no previous image" : strerror(-err));
			return err;
		}
		nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT,
			      "rolled back at call %" PRIu64 " via control socket", at_call);
		nbpf_host_lock();
		put_images(b, nbpf_host_current(), true);
		nbpf_host_unlock();
		return 0;
	default:
		snprintf(errmsg, errlen, "unknown request type %u", req->type);
		return -EOPNOTSUPP;
	}
}
