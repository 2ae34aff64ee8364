// SPDX-License-Identifier: Apache-2.0
/*
 * snapshot.c - reading the in-kernel aggregates into one snapshot, and the
 * difference of two snapshots (what happened during an interval).
 */
#include "observe_int.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/error.h"

/* Adds up ncpu per-CPU copies (all u64 fields) of a value of vsize bytes into out. */
static void sum_cpus(void *out, const uint64_t *pcpu, size_t ncpu, size_t vsize)
{
	uint64_t *sum = out;

	for (size_t c = 0; c < ncpu; c++)
		for (size_t w = 0; w < vsize / 8; w++)
			sum[w] += pcpu[c * (vsize / 8) + w];
}

/*
 * Copies every entry of map name into *arr as (key, value) records of
 * rec_size bytes with the key first and the value at val_off.  Per-CPU
 * values (all u64 fields) are summed over the CPUs.  With an index (a
 * hash of key -> u32 slot), the values are name's (an array) at the
 * slots, one record per key of the index.
 */
static int dump_map(struct bpf_object *obj, const char *name, const char *index, void **arr,
		    size_t *n, size_t rec_size, size_t key_size, size_t val_off)
{
	struct bpf_map *m = obj ? bpf_object__find_map_by_name(obj, name) : NULL;
	struct bpf_map *ix = obj && index ? bpf_object__find_map_by_name(obj, index) : NULL;
	unsigned char key[64], next[64];
	size_t cap = 0, vsize = rec_size - val_off, ncpu = 1;
	uint64_t *pcpu = NULL;
	void *prev = NULL;
	int fd, kfd;

	*arr = NULL;
	*n = 0;
	if (!m || (index && !ix))
		return 0;
	fd = bpf_map__fd(m);
	kfd = ix ? bpf_map__fd(ix) : fd;
	if (bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_HASH || bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_ARRAY) {
		int nc = libbpf_num_possible_cpus();

		if (nc <= 0 || vsize % 8)
			return nbpf_err(-EINVAL, "%s: cannot read per-CPU values", name);
		ncpu = (size_t)nc;
		pcpu = malloc(ncpu * vsize);
		if (!pcpu)
			return nbpf_err(-ENOMEM, "out of memory");
	}
	while (!bpf_map_get_next_key(kfd, prev, next)) {
		const void *at = next;
		unsigned char *rec;
		uint32_t slot;

		if (*n == cap) {
			void *p = realloc(*arr, (cap = cap ? cap * 2 : 32) * rec_size);

			if (!p) {
				free(pcpu);
				return nbpf_err(-ENOMEM, "out of memory");
			}
			*arr = p;
		}
		rec = (unsigned char *)*arr + *n * rec_size;
		memset(rec, 0, rec_size);
		memcpy(rec, next, key_size);
		if (ix) {
			if (bpf_map_lookup_elem(kfd, next, &slot))
				goto next;
			at = &slot;
		}
		/* An entry deleted between the two calls is simply skipped. */
		if (!pcpu) {
			if (!bpf_map_lookup_elem(fd, at, rec + val_off))
				(*n)++;
		} else if (!bpf_map_lookup_elem(fd, at, pcpu)) {
			sum_cpus(rec + val_off, pcpu, ncpu, vsize);
			(*n)++;
		}
next:
		memcpy(key, next, key_size);
		prev = key;
	}
	free(pcpu);
	return 0;
}

/*
 * The io set's figures: name is a per-CPU array whose slot i belongs to
 * the packed key (OBS_KEY_*) in entry i of index, 0 where unused.  One
 * record of rec_size bytes per used slot, its key written by unpack and
 * its value, summed over the CPUs, at val_off.
 */
static int dump_slots(struct bpf_object *obj, const char *name, const char *index, void **arr,
		      size_t *n, size_t rec_size, size_t val_off, void (*unpack)(uint64_t key, void *rec))
{
	struct bpf_map *m = obj ? bpf_object__find_map_by_name(obj, name) : NULL;
	struct bpf_map *ix = obj ? bpf_object__find_map_by_name(obj, index) : NULL;
	size_t vsize = rec_size - val_off, ncpu;
	uint32_t keys[OBS_IO_SLOTS], count = OBS_IO_SLOTS, batch;
	uint64_t packed[OBS_IO_SLOTS], *pcpu = NULL;
	int nc, err = 0;

	*arr = NULL;
	*n = 0;
	if (!m || !ix)
		return 0;
	nc = libbpf_num_possible_cpus();
	if (nc <= 0 || vsize % 8 || bpf_map__max_entries(ix) != OBS_IO_SLOTS ||
	    bpf_map__value_size(m) != vsize)
		return nbpf_err(-EINVAL, "%s: not the layout this build reads", name);
	ncpu = (size_t)nc;
	if (bpf_map_lookup_batch(bpf_map__fd(ix), NULL, &batch, keys, packed, &count, NULL) &&
	    errno != ENOENT)
		return nbpf_err(-errno, "%s: %s", index, strerror(errno));
	pcpu = malloc(ncpu * vsize);
	*arr = calloc(count ? count : 1, rec_size);
	if (!pcpu || !*arr) {
		err = nbpf_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < count; i++) {
		unsigned char *rec = (unsigned char *)*arr + *n * rec_size;

		if (!packed[i] || bpf_map_lookup_elem(bpf_map__fd(m), &keys[i], pcpu))
			continue;
		unpack(packed[i], rec);
		sum_cpus(rec + val_off, pcpu, ncpu, vsize);
		(*n)++;
	}
out:
	free(pcpu);
	return err;
}

static void unpack_blk(uint64_t k, void *rec)
{
	struct nbpf_obs_blk *r = rec;

	r->k.tgid = OBS_KEY_TGID(k);
	r->k.dev = OBS_KEY_BLK_DEV(k);
	r->k.op = OBS_KEY_BLK_OP(k);
}

static void unpack_uring(uint64_t k, void *rec)
{
	struct nbpf_obs_uring *r = rec;

	r->k.tgid = OBS_KEY_TGID(k);
	r->k.opcode = OBS_KEY_URING_OP(k);
}

static void unpack_tgid(uint64_t k, void *rec)
{
	((struct nbpf_obs_pcache *)rec)->tgid = OBS_KEY_TGID(k);
}

#define DUMP_SLOTS(obj, name, field, type, vfield, unpack)                                      \
	dump_slots(obj, name, name "_ix", (void **)&s->field, &s->n_##field, sizeof(type),      \
		   offsetof(type, vfield), unpack)

#define DUMP_AT(obj, name, index, field, type, kfield, vfield)                                \
	dump_map(obj, name, index, (void **)&s->field, &s->n_##field, sizeof(type),             \
		 sizeof(((type *)0)->kfield), offsetof(type, vfield))
#define DUMP(obj, name, field, type, kfield, vfield) DUMP_AT(obj, name, NULL, field, type, kfield, vfield)

/* The retired sum of c's process and peer, created zeroed; NULL on allocation failure. */
static struct nbpf_obs_conn *retired_of(struct nbpf_obs *obs, const struct obs_conn *c)
{
	struct nbpf_obs_conn *r;

	for (size_t i = 0; i < obs->n_retired; i++) {
		r = &obs->retired[i];
		if (r->v.tgid == c->tgid && r->v.family == c->family && !memcmp(r->v.daddr, c->daddr, 16))
			return r;
	}
	r = realloc(obs->retired, (obs->n_retired + 1) * sizeof(*r));
	if (!r)
		return NULL;
	obs->retired = r;
	r = &r[obs->n_retired++];
	memset(r, 0, sizeof(*r));
	r->v.tgid = c->tgid;
	r->v.family = c->family;
	memcpy(r->v.daddr, c->daddr, 16);
	r->v.closed = r->v.retired = 1;
	return r;
}

/*
 * Closed connections are shown once with their final counters, then
 * retired: removed from the kernel's table (which would otherwise fill
 * with the dead) and added to their peer's retired sum, which every later
 * snapshot carries.  So a cumulative counter summed per peer never goes
 * back when a connection ends, and the gauges (RTT) leave with it.  The
 * sums of this snapshot are those retired before it: the connections
 * retired now are still in it by themselves.
 */
static int conns_retire(struct nbpf_obs *obs, struct nbpf_obs_snap *s)
{
	struct bpf_object *net = nbpf_obs__obj(obs, NBPF_OBS_NET);
	struct bpf_map *m = net ? bpf_object__find_map_by_name(net, "conns") : NULL;
	size_t live = s->n_conn;
	struct nbpf_obs_conn *p;

	if (!m)
		return 0;
	if (obs->n_retired) {
		p = realloc(s->conn, (live + obs->n_retired) * sizeof(*p));
		if (!p)
			return nbpf_err(-ENOMEM, "out of memory");
		s->conn = p;
		memcpy(&s->conn[live], obs->retired, obs->n_retired * sizeof(*p));
		s->n_conn += obs->n_retired;
	}
	for (size_t i = 0; i < live; i++) {
		const struct obs_conn *c = &s->conn[i].v;
		struct nbpf_obs_conn *r;

		if (!c->closed)
			continue;
		if (!(r = retired_of(obs, c)))
			return nbpf_err(-ENOMEM, "out of memory");
		r->v.bytes_sent += c->bytes_sent;
		r->v.bytes_recv += c->bytes_recv;
		r->v.retrans += c->retrans;
		bpf_map_delete_elem(bpf_map__fd(m), &s->conn[i].sk);
	}
	return 0;
}

/*
 * The gpu set's per-process launch stamps (gpu_proc) of processes that
 * have exited: removed, or the table (1,024 processes) fills over a long
 * export and later processes get no gaps, and a new process given a dead
 * one's pid would measure its first gap from the dead one's last launch.
 */
static void gpu_prune(struct nbpf_obs *obs)
{
	struct bpf_object *gpu = nbpf_obs__obj(obs, NBPF_OBS_GPU);
	struct bpf_map *m = gpu ? bpf_object__find_map_by_name(gpu, "gpu_proc") : NULL;
	uint32_t key, next, *prev = NULL;
	int fd = m ? bpf_map__fd(m) : -1;

	while (fd >= 0 && !bpf_map_get_next_key(fd, prev, &next)) {
		/* Deleting the current key would restart the walk: delete it after stepping on. */
		if (prev && kill((pid_t)key, 0) && errno == ESRCH)
			bpf_map_delete_elem(fd, &key);
		key = next;
		prev = &key;
	}
	if (prev && kill((pid_t)key, 0) && errno == ESRCH)
		bpf_map_delete_elem(fd, &key);
}

int nbpf_obs_blk_pending(struct nbpf_obs *obs, uint32_t tgid, uint32_t dev, uint64_t *n, uint64_t *bytes)
{
	struct bpf_object *io = nbpf_obs__obj(obs, NBPF_OBS_IO);
	struct bpf_map *m = io ? bpf_object__find_map_by_name(io, "rq_infl") : NULL;
	int fd = m ? bpf_map__fd(m) : -1, err = 0;
	uint32_t count, batch, *keys = NULL;
	struct obs_inflight *e = NULL;

	*n = *bytes = 0;
	if (fd < 0)
		return nbpf_err(-ENOENT, "the io set is not loaded");
	if (bpf_map__value_size(m) != sizeof(*e))
		return nbpf_err(-EPROTO, "rq_infl: value size %u, want %zu", bpf_map__value_size(m), sizeof(*e));
	/* The whole table in one call, as dump_slots reads an index: one lookup per slot took 16,384. */
	count = bpf_map__max_entries(m);
	keys = malloc(count * sizeof(*keys));
	e = malloc(count * sizeof(*e));
	if (!keys || !e) {
		err = nbpf_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (bpf_map_lookup_batch(fd, NULL, &batch, keys, e, &count, NULL) && errno != ENOENT) {
		err = nbpf_err(-errno, "rq_infl: %s", strerror(errno));
		goto out;
	}
	for (uint32_t i = 0; i < count; i++)
		if (e[i].key && e[i].tgid == tgid && e[i].dev == dev) {
			*n += 1;
			*bytes += e[i].len - e[i].done;
		}
out:
	free(keys);
	free(e);
	return err;
}

int nbpf_obs_snapshot(struct nbpf_obs *obs, struct nbpf_obs_snap *s)
{
	struct bpf_object *io = nbpf_obs__obj(obs, NBPF_OBS_IO);
	int err;

	memset(s, 0, sizeof(*s));
	if ((err = nbpf_obs_net_scan(obs)))
		return err;
	if ((err = DUMP_SLOTS(io, "blk", blk, struct nbpf_obs_blk, v, unpack_blk)) ||
	    (err = DUMP_SLOTS(io, "uring", uring, struct nbpf_obs_uring, v, unpack_uring)) ||
	    (err = DUMP_SLOTS(io, "pcache", pcache, struct nbpf_obs_pcache, v, unpack_tgid)) ||
	    (err = DUMP(nbpf_obs__obj(obs, NBPF_OBS_NET), "conns", conn, struct nbpf_obs_conn, sk, v)) ||
	    (err = DUMP_AT(nbpf_obs__obj(obs, NBPF_OBS_SCHED), "sched", "sched_slot", sched, struct nbpf_obs_sched, tgid, v)) ||
	    (err = DUMP(nbpf_obs__obj(obs, NBPF_OBS_GPU), "gpu", gpu, struct nbpf_obs_gpu, tgid, v)) ||
	    (err = conns_retire(obs, s))) {
		nbpf_obs_snap_free(s);
		return err;
	}
	gpu_prune(obs);
	obs_cuda_follow(obs);
	s->events_lost = nbpf_obs__lost(obs);
	s->untracked = nbpf_obs__untracked(obs);
	return 0;
}

void nbpf_obs_snap_free(struct nbpf_obs_snap *s)
{
	free(s->blk);
	free(s->uring);
	free(s->pcache);
	free(s->conn);
	free(s->sched);
	free(s->gpu);
	memset(s, 0, sizeof(*s));
}

static uint64_t sub(uint64_t a, uint64_t b)
{
	return a >= b ? a - b : a;
}

static void hist_sub(struct obs_hist *o, const struct obs_hist *b)
{
	if (o->count < b->count) /* entry recreated: keep it whole */
		return;
	for (int i = 0; i < OBS_HIST_SLOTS; i++)
		o->slot[i] = sub(o->slot[i], b->slot[i]);
	o->count -= b->count;
	o->sum = sub(o->sum, b->sum);
}

static void node_sub(uint64_t *o, const uint64_t *b)
{
	for (int i = 0; i < OBS_NUMA_NODES; i++)
		o[i] = sub(o[i], b[i]);
}

/* Copies now's array into out and subtracts the matching entries of before with fn. */
#define DELTA(field, type, keyeq, fn)                                                           \
	do {                                                                                    \
		out->n_##field = now->n_##field;                                                \
		if (now->n_##field) {                                                           \
			out->field = malloc(now->n_##field * sizeof(type));                      \
			if (!out->field)                                                        \
				goto nomem;                                                     \
			memcpy(out->field, now->field, now->n_##field * sizeof(type));          \
		}                                                                               \
		for (size_t i = 0; before && i < out->n_##field; i++) {                         \
			type *o = &out->field[i];                                               \
			for (size_t j = 0; j < before->n_##field; j++) {                        \
				const type *b = &before->field[j];                              \
				if (keyeq) {                                                    \
					fn;                                                     \
					break;                                                  \
				}                                                               \
			}                                                                       \
		}                                                                               \
	} while (0)

int nbpf_obs_snap_delta(struct nbpf_obs_snap *out, const struct nbpf_obs_snap *now,
			const struct nbpf_obs_snap *before)
{
	memset(out, 0, sizeof(*out));
	DELTA(blk, struct nbpf_obs_blk, !memcmp(&o->k, &b->k, sizeof(o->k)),
	      (hist_sub(&o->v.lat, &b->v.lat), hist_sub(&o->v.size, &b->v.size),
	       hist_sub(&o->v.align, &b->v.align),
	       o->v.small = sub(o->v.small, b->v.small),
	       o->v.unaligned = sub(o->v.unaligned, b->v.unaligned),
	       o->v.errors = sub(o->v.errors, b->v.errors),
	       o->v.unseen = sub(o->v.unseen, b->v.unseen)));
	DELTA(uring, struct nbpf_obs_uring, !memcmp(&o->k, &b->k, sizeof(o->k)), hist_sub(&o->v, &b->v));
	DELTA(pcache, struct nbpf_obs_pcache, o->tgid == b->tgid,
	      (o->v.accessed = sub(o->v.accessed, b->v.accessed),
	       o->v.added = sub(o->v.added, b->v.added)));
	DELTA(conn, struct nbpf_obs_conn, o->sk == b->sk && o->v.id == b->v.id,
	      (o->v.bytes_sent = sub(o->v.bytes_sent, b->v.bytes_sent),
	       o->v.bytes_recv = sub(o->v.bytes_recv, b->v.bytes_recv),
	       o->v.retrans = sub(o->v.retrans, b->v.retrans)));
	/* Retired sums are for cumulative readers: their connections were shown while they lived. */
	for (size_t i = 0; i < out->n_conn;)
		if (out->conn[i].v.retired)
			out->conn[i] = out->conn[--out->n_conn];
		else
			i++;
	DELTA(sched, struct nbpf_obs_sched, o->tgid == b->tgid,
	      (hist_sub(&o->v.runq, &b->v.runq), hist_sub(&o->v.offcpu, &b->v.offcpu),
	       o->v.migrations = sub(o->v.migrations, b->v.migrations),
	       o->v.cross_node = sub(o->v.cross_node, b->v.cross_node),
	       node_sub(o->v.node_ns, b->v.node_ns)));
	DELTA(gpu, struct nbpf_obs_gpu, o->tgid == b->tgid,
	      (o->v.launches = sub(o->v.launches, b->v.launches), hist_sub(&o->v.sync, &b->v.sync),
	       hist_sub(&o->v.copy, &b->v.copy), hist_sub(&o->v.ioctl, &b->v.ioctl),
	       hist_sub(&o->v.launch_gap, &b->v.launch_gap),
	       hist_sub(&o->v.sync_gap, &b->v.sync_gap)));
	out->events_lost = now->events_lost - (before ? before->events_lost : 0);
	out->untracked = now->untracked - (before ? before->untracked : 0);
	return 0;
nomem:
	nbpf_obs_snap_free(out);
	return nbpf_err(-ENOMEM, "out of memory");
}

/* Slot i spans [2^i, 2^(i+1)); slot 0 also holds 0.  Same rule as the collective histograms. */
double nbpf_obs_hist_quantile(const struct obs_hist *h, double q)
{
	uint64_t total = 0, seen = 0;
	double rank;

	for (int i = 0; i < OBS_HIST_SLOTS; i++)
		total += h->slot[i];
	if (!total)
		return 0;
	rank = q * (double)total;
	for (int i = 0; i < OBS_HIST_SLOTS; i++) {
		if (!h->slot[i])
			continue;
		if ((double)(seen + h->slot[i]) >= rank) {
			double lo = i ? ldexp(1, i) : 0, hi = ldexp(1, i + 1);
			double frac = (rank - (double)seen) / (double)h->slot[i];

			return lo + (hi - lo) * (frac < 0 ? 0 : frac > 1 ? 1 : frac);
		}
		seen += h->slot[i];
	}
	return ldexp(1, OBS_HIST_SLOTS);
}
