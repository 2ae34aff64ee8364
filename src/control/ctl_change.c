/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_change.c - the control requests of agreed changes (ctl_proto.h):
 * stage, commit, abort, changes, lease.  Runs on the control thread.
 *
 * Records answered:
 *   staged  id gen_base what            then one `comm comm_id calls` per tuner comm
 *   change  id owner what state staged_at hold decided_at at_call gen late
 *   lease   name owner until
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_handlers.h"
#include "host/host.h"

#define MAX_OPS   64
#define MAX_KNOWN 8192

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Hex text (no separators, optional 0x) to bytes: the count, or -EINVAL. */
static int unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (strlen(s) % 2)
		return -EINVAL;
	for (; *s; s += 2) {
		int hi = hexval(s[0]), lo = hexval(s[1]);

		if (hi < 0 || lo < 0 || n >= max)
			return -EINVAL;
		out[n++] = (uint8_t)(hi << 4 | lo);
	}
	return (int)n;
}

static void put_info(struct nbpf_ctl_buf *b, const struct nbpf_change_info *i)
{
	nbpf_ctl_buf_rec(b, "change");
	nbpf_ctl_buf_str(b, "id", i->id);
	nbpf_ctl_buf_str(b, "owner", i->owner);
	nbpf_ctl_buf_str(b, "what", i->what);
	nbpf_ctl_buf_str(b, "state", nbpf_change_state_name(i->state));
	nbpf_ctl_buf_u64(b, "staged_at", i->staged_at);
	nbpf_ctl_buf_u64(b, "hold", i->hold);
	nbpf_ctl_buf_u64(b, "decided_at", i->decided_at);
	nbpf_ctl_buf_u64(b, "at_call", i->at_call);
	nbpf_ctl_buf_u64(b, "gen", i->gen);
	nbpf_ctl_buf_u64(b, "late", i->late);
	if (i->state == NBPF_CHANGE_COMMITTED && i->n_known <= NBPF_CHANGE_KNOWN_MAX)
		nbpf_ctl_buf_u64s(b, "known", i->known, i->n_known);
}

static int need_u64(const struct nbpf_ctl_rec *r, const char *key, uint64_t *v, char *errmsg,
		    size_t errlen)
{
	if (!nbpf_ctl_rec_u64(r, key, v))
		return 0;
	snprintf(errmsg, errlen, "%s: %s=N is required", r->kind, key);
	return -EINVAL;
}

struct ops {
	struct nbpf_host_map_op op[MAX_OPS];
	uint8_t *bytes;
	uint32_t n;
};

/* The `op` records of a stage: map writes, their bytes in o->bytes. */
static int parse_ops(const struct nbpf_ctl_msg *req, struct ops *o, char *errmsg, size_t errlen)
{
	size_t total = 0, used = 0;

	for (uint32_t i = 1; i < req->n_recs; i++)
		if (!strcmp(req->recs[i].kind, "op"))
			total += strlen(nbpf_ctl_rec_get(&req->recs[i], "key") ?: "") +
				 strlen(nbpf_ctl_rec_get(&req->recs[i], "value") ?: "");
	o->bytes = malloc(total / 2 + 1);
	if (!o->bytes)
		return -ENOMEM;
	for (uint32_t i = 1; i < req->n_recs; i++) {
		const struct nbpf_ctl_rec *r = &req->recs[i];
		const char *map = nbpf_ctl_rec_get(r, "map"), *key = nbpf_ctl_rec_get(r, "key");
		const char *val = nbpf_ctl_rec_get(r, "value");
		struct nbpf_host_map_op *op = &o->op[o->n];
		int k, v = 0;

		if (strcmp(r->kind, "op"))
			continue;
		if (o->n == MAX_OPS || !map || !key) {
			snprintf(errmsg, errlen, "stage: at most %d op records, each with map= and key=",
				 MAX_OPS);
			return -EINVAL;
		}
		k = unhex(key, o->bytes + used, total / 2 + 1 - used);
		if (k >= 0 && val)
			v = unhex(val, o->bytes + used + k, total / 2 + 1 - used - (size_t)k);
		if (k < 0 || v < 0) {
			snprintf(errmsg, errlen, "stage: op on %s: key and value are hex bytes", map);
			return -EINVAL;
		}
		op->map = map;
		op->key = o->bytes + used;
		op->key_len = (size_t)k;
		op->value = val ? o->bytes + used + k : NULL;
		op->value_len = (size_t)v;
		used += (size_t)(k + v);
		o->n++;
	}
	return 0;
}

/* Builds what the stage asks for: a reload, a rollback (staged itself) or map writes. */
static int stage_build(const struct nbpf_ctl_msg *req, const char *id, const char *owner,
		       uint64_t hold, struct nbpf_image **img, uint64_t *target, char *what,
		       size_t wlen, char *errmsg, size_t errlen)
{
	const struct nbpf_ctl_rec *r = &req->recs[0];
	const char *path = nbpf_ctl_rec_get(r, "path");
	uint64_t rb = 0;
	struct ops o = { 0 };
	int err;

	*img = NULL;
	nbpf_ctl_rec_u64(r, "rollback", &rb);
	if (rb) {
		snprintf(what, wlen, "rollback");
		return nbpf_host_stage_rollback(id, owner, hold, target, errmsg, errlen);
	}
	if (path && *path) {
		snprintf(what, wlen, "reload %s", path);
		return nbpf_host_load_image(path, img, errmsg, errlen);
	}
	err = parse_ops(req, &o, errmsg, errlen);
	if (!err && !o.n) {
		snprintf(errmsg, errlen, "stage: what? (path=, rollback=1 or op records)");
		err = -EINVAL;
	}
	if (!err) {
		snprintf(what, wlen, "map %s: %u write%s", o.op[0].map, o.n, o.n > 1 ? "s" : "");
		err = nbpf_host_load_derived(o.op, o.n, owner, img, errmsg, errlen);
	}
	free(o.bytes);
	return err;
}

static int do_stage(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *b, char *errmsg,
		    size_t errlen)
{
	const struct nbpf_ctl_rec *r = req->n_recs ? &req->recs[0] : NULL;
	const char *id = r ? nbpf_ctl_rec_get(r, "id") : NULL;
	const char *owner = r ? nbpf_ctl_rec_get(r, "owner") : NULL;
	uint64_t deadline, hold, target = 0;
	struct nbpf_comm_calls *cc = NULL;
	struct nbpf_image *img = NULL;
	char what[256] = "";
	int err, n;

	if (!r || !id) {
		snprintf(errmsg, errlen, "stage: id= is required");
		return -EINVAL;
	}
	if ((err = need_u64(r, "deadline", &deadline, errmsg, errlen)) ||
	    (err = need_u64(r, "hold", &hold, errmsg, errlen)))
		return err;
	if (nbpf_realtime_ns() >= deadline) {
		snprintf(errmsg, errlen,
			 "change %s: its deadline passed before this process read it (stopped or slow): nothing staged",
			 id);
		return -ETIMEDOUT;
	}
	err = stage_build(req, id, owner, hold, &img, &target, what, sizeof(what), errmsg, errlen);
	if (err)
		return err;
	/* The coordinator gave up at the deadline: staging later would be a change nobody decides. */
	if (nbpf_realtime_ns() >= deadline) {
		if (img)
			nbpf_host_image_free(img);
		else
			nbpf_host_abort(id, NULL);
		snprintf(errmsg, errlen,
			 "change %s: its deadline passed while this process loaded it: nothing staged", id);
		return -ETIMEDOUT;
	}
	if (img && (err = nbpf_host_stage(id, owner, what, img, hold, errmsg, errlen)))
		return err;
	nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT, "change %s staged (%s, by %s)", id, what,
		      owner ? owner : "-");
	nbpf_ctl_buf_rec(b, "staged");
	nbpf_ctl_buf_str(b, "id", id);
	nbpf_ctl_buf_str(b, "what", what);
	if (target)
		nbpf_ctl_buf_u64(b, "target", target);
	/* Comms after the stage: one created later waits for the decision (change.c). */
	n = nbpf_host_comm_calls(NULL, 0);
	cc = calloc((size_t)(n ? n : 1), sizeof(*cc));
	if (!cc)
		return 0; /* the coordinator then merges this process's comms from nothing */
	n = nbpf_host_comm_calls(cc, n);
	for (int i = 0; i < n; i++) {
		nbpf_ctl_buf_rec(b, "comm");
		nbpf_ctl_buf_u64(b, "comm_id", cc[i].comm_id);
		nbpf_ctl_buf_u64(b, "calls", cc[i].calls);
	}
	free(cc);
	return 0;
}

static int do_commit(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *b, char *errmsg,
		     size_t errlen)
{
	const struct nbpf_ctl_rec *r = req->n_recs ? &req->recs[0] : NULL;
	const char *id = r ? nbpf_ctl_rec_get(r, "id") : NULL, *known = NULL;
	struct nbpf_host_publish_opts o = { .sz = sizeof(o) };
	struct nbpf_change_info info;
	uint64_t *ids = NULL;
	char t[64];
	int err, n = 0;

	if (!r || !id) {
		snprintf(errmsg, errlen, "commit: id= is required");
		return -EINVAL;
	}
	if ((err = need_u64(r, "at_call", &o.at_call, errmsg, errlen)))
		return err;
	known = nbpf_ctl_rec_get(r, "known");
	if (known && *known) {
		ids = malloc(MAX_KNOWN * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		n = nbpf_ctl_parse_u64s(known, ids, MAX_KNOWN);
		if (n < 0) {
			free(ids);
			snprintf(errmsg, errlen, "commit: known= is a list of decimal comm ids (at most %d)",
				 MAX_KNOWN);
			return -EINVAL;
		}
	}
	o.known = ids;
	o.n_known = (uint32_t)n;
	err = nbpf_host_commit(id, &o, &info);
	free(ids);
	if (err == -EALREADY)
		err = 0; /* a retry of a commit that happened: answer as then */
	if (err == -ESTALE) {
		snprintf(t, sizeof(t), "%" PRIu64, info.decided_at);
		snprintf(errmsg, errlen,
			 "change %s was %s here (at %s ns) before the commit came: this process did NOT apply it",
			 id, nbpf_change_state_name(info.state), t);
		return err;
	}
	if (err == -ENOENT) {
		snprintf(errmsg, errlen, "change %s was never staged here: this process did NOT apply it", id);
		return err;
	}
	if (err) {
		snprintf(errmsg, errlen, "change %s: publish failed: %s", id, strerror(-err));
		return err;
	}
	nbpf_host_log(info.late ? NBPF_NCCL_LOG_WARN : NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT,
		      "change %s committed: image %" PRIu64 " from call %" PRIu64 "%s", id, info.gen,
		      info.at_call, info.late ? " (LATE: a communicator was past it)" : "");
	put_info(b, &info);
	return 0;
}

static int do_abort(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *b, char *errmsg,
		    size_t errlen)
{
	const struct nbpf_ctl_rec *r = req->n_recs ? &req->recs[0] : NULL;
	const char *id = r ? nbpf_ctl_rec_get(r, "id") : NULL;
	struct nbpf_change_info info;
	int err;

	if (!r || !id) {
		snprintf(errmsg, errlen, "abort: id= is required");
		return -EINVAL;
	}
	err = nbpf_host_abort(id, &info);
	if (err == -ESTALE)
		err = 0; /* aborted or expired already */
	if (err == -EALREADY) {
		snprintf(errmsg, errlen,
			 "change %s was committed here (image %" PRIu64 " from call %" PRIu64
			 "): an abort cannot undo it (roll back instead)",
			 id, info.gen, info.at_call);
		return err;
	}
	if (err)
		return err;
	put_info(b, &info);
	return 0;
}

static int do_changes(struct nbpf_ctl_buf *b)
{
	struct nbpf_change_info *info = calloc(40, sizeof(*info));
	int n = info ? nbpf_host_changes(info, 40) : 0;

	for (int i = 0; i < n; i++)
		put_info(b, &info[i]);
	free(info);
	return info ? 0 : -ENOMEM;
}

static int do_lease(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *b, char *errmsg,
		    size_t errlen)
{
	const struct nbpf_ctl_rec *r = req->n_recs ? &req->recs[0] : NULL;
	uint64_t until = 0, take = 0;
	int err;

	if (!r || need_u64(r, "until", &until, errmsg, errlen))
		return -EINVAL;
	nbpf_ctl_rec_u64(r, "take", &take);
	err = nbpf_host_lease(nbpf_ctl_rec_get(r, "name"), nbpf_ctl_rec_get(r, "owner"), until,
			      take != 0, errmsg, errlen);
	if (err)
		return err;
	nbpf_ctl_buf_rec(b, "lease");
	nbpf_ctl_buf_str(b, "name", nbpf_ctl_rec_get(r, "name"));
	nbpf_ctl_buf_str(b, "owner", nbpf_ctl_rec_get(r, "owner"));
	nbpf_ctl_buf_u64(b, "until", until);
	return 0;
}

int nbpf_ctl_handle_change(const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *b, char *errmsg,
			   size_t errlen)
{
	switch (req->type) {
	case NBPF_CTL_STAGE: return do_stage(req, b, errmsg, errlen);
	case NBPF_CTL_COMMIT: return do_commit(req, b, errmsg, errlen);
	case NBPF_CTL_ABORT: return do_abort(req, b, errmsg, errlen);
	case NBPF_CTL_CHANGES: return do_changes(b);
	case NBPF_CTL_LEASE: return do_lease(req, b, errmsg, errlen);
	}
	snprintf(errmsg, errlen, "unknown request type %u", req->type);
	return -EOPNOTSUPP;
}
