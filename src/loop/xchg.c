// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xchg.c - the node exchange (xchg.h) over a shared directory or etcd.
 *
 * Directory: <dir>/<scope>.<step>.<node> per record (a temporary file,
 * then rename: a reader sees a whole record or none) and
 * <dir>/<scope>.<step>.decision (a temporary file, then link(): it fails
 * when the name exists, on NFS too, so the first one written stays).
 * etcd: /ncclbpf/<scope>/<step>/<node> and /ncclbpf/<scope>/<step>.decision
 * (create-if-absent), every key under a lease of ten minutes, so nothing
 * is left behind.
 */
#include "xchg.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "etcd.h"

#define ETCD_TTL_S 600

struct nbpf_xchg {
	struct nbpf_xchg_opts o;
	char dir[4096], scope[128], node[128], where[4200];
	struct nbpf_etcd *etcd;
	int64_t lease;
};

bool nbpf_xchg_name_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int nbpf_xchg_open(const struct nbpf_xchg_opts *o, struct nbpf_xchg **out)
{
	struct nbpf_xchg *x;
	int err;

	*out = NULL;
	if (!nbpf_xchg_name_ok(o->node) || !nbpf_xchg_name_ok(o->scope) || o->nodes < 1 || !o->dir == !o->etcd)
		return nbpf_err(-EINVAL, "exchange: a node name and scope of [A-Za-z0-9._-] (at most 64), "
					 "a node count, and a directory or etcd endpoints");
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->o = *o;
	snprintf(x->scope, sizeof(x->scope), "%s", o->scope);
	snprintf(x->node, sizeof(x->node), "%s", o->node);
	if (o->dir) {
		snprintf(x->dir, sizeof(x->dir), "%s", o->dir);
		snprintf(x->where, sizeof(x->where), "%s", o->dir);
		x->o.dir = x->dir;
	} else {
		snprintf(x->where, sizeof(x->where), "etcd %s", o->etcd);
		if ((err = nbpf_etcd_open(o->etcd, o->timeout_ms > 0 && o->timeout_ms < 2000 ? o->timeout_ms
											: 2000, &x->etcd)) ||
		    (err = nbpf_etcd_lease(x->etcd, ETCD_TTL_S, &x->lease))) {
			nbpf_xchg_close(x);
			return err;
		}
	}
	x->o.scope = x->scope;
	x->o.node = x->node;
	*out = x;
	return 0;
}

void nbpf_xchg_close(struct nbpf_xchg *x)
{
	if (!x)
		return;
	nbpf_etcd_close(x->etcd);
	free(x);
}

const char *nbpf_xchg_where(const struct nbpf_xchg *x)
{
	return x->where;
}

/*
 * Writes text to path through a temporary name; linked (never replacing)
 * when excl.  No fsync: the other nodes see the file once it is linked
 * (NFS flushes it on close), and an fsync on a loaded or network file
 * system held a decision for seconds after its call was chosen, long
 * enough for the ranks to pass that call.  The records matter only while
 * the job runs.
 */
static int write_file(const char *dir, const char *path, const char *text, bool excl)
{
	char tmp[4400];
	FILE *f;
	int err = 0;

	snprintf(tmp, sizeof(tmp), "%s/.tmp.%d.%lx", dir, (int)getpid(), (unsigned long)(now_ms() * 1000));
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (fputs(text, f) < 0 || fflush(f))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && (excl ? link(tmp, path) : rename(tmp, path)))
		err = -errno;
	unlink(tmp);
	return err;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int c;

	if (!f)
		return NULL;
	while ((c = fgetc(f)) != EOF) {
		if (len + 2 > cap) {
			char *b = realloc(buf, cap ? cap * 2 : 256);

			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
			cap = cap ? cap * 2 : 256;
		}
		buf[len++] = (char)c;
	}
	fclose(f);
	if (!buf)
		buf = calloc(1, 1);
	else
		buf[len] = 0;
	return buf;
}

int nbpf_xchg_put(struct nbpf_xchg *x, const char *step, const char *text)
{
	char path[4600];
	int err;

	if (x->etcd) {
		snprintf(path, sizeof(path), "/ncclbpf/%s/%s/%s", x->scope, step, x->node);
		return nbpf_etcd_put(x->etcd, path, text, x->lease);
	}
	snprintf(path, sizeof(path), "%s/%s.%s.%s", x->dir, x->scope, step, x->node);
	err = write_file(x->dir, path, text, false);
	return err ? nbpf_err(err, "%s: %s", path, strerror(-err)) : 0;
}

void nbpf_xchg_drop(struct nbpf_xchg *x, const char *step)
{
	char path[4600];

	if (x->etcd)
		return; /* the lease takes it */
	snprintf(path, sizeof(path), "%s/%s.%s.%s", x->dir, x->scope, step, x->node);
	unlink(path);
}

void nbpf_xchg_texts_free(char **texts, int n)
{
	for (int i = 0; texts && i < n; i++)
		free(texts[i]);
	free(texts);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One look at every record of step: *names and *texts parallel, sorted by node. */
static int look(struct nbpf_xchg *x, const char *step, char ***texts, int *n)
{
	char prefix[4600];
	char **v = NULL;
	int k = 0;

	*texts = NULL;
	*n = 0;
	if (x->etcd) {
		struct nbpf_etcd_kv *kvs;
		int m, err;

		snprintf(prefix, sizeof(prefix), "/ncclbpf/%s/%s/", x->scope, step);
		if ((err = nbpf_etcd_range_prefix(x->etcd, prefix, &kvs, &m)))
			return err;
		v = calloc((size_t)(m ? m : 1), sizeof(*v));
		for (int i = 0; v && i < m; i++) {
			/* "node\ntext": sorted by node name below, whatever order etcd gave */
			char *s = malloc(strlen(kvs[i].key) + strlen(kvs[i].value) + 2);

			if (s) {
				sprintf(s, "%s\n%s", kvs[i].key + strlen(prefix), kvs[i].value);
				v[k++] = s;
			}
		}
		nbpf_etcd_kvs_free(kvs, m);
	} else {
		DIR *d = opendir(x->dir);
		struct dirent *de;
		size_t pl;

		if (!d)
			return nbpf_err(-errno, "%s: %s", x->dir, strerror(errno));
		snprintf(prefix, sizeof(prefix), "%s.%s.", x->scope, step);
		pl = strlen(prefix);
		while ((de = readdir(d))) {
			char path[4600], *t, *s, **nv;

			if (strncmp(de->d_name, prefix, pl) || !nbpf_xchg_name_ok(de->d_name + pl) ||
			    !strcmp(de->d_name + pl, "decision"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", x->dir, de->d_name);
			t = read_file(path);
			nv = realloc(v, (size_t)(k + 1) * sizeof(*v));
			s = t ? malloc(strlen(de->d_name + pl) + strlen(t) + 2) : NULL;
			if (!nv || !s) {
				free(t);
				free(s);
				if (nv)
					v = nv;
				continue;
			}
			v = nv;
			sprintf(s, "%s\n%s", de->d_name + pl, t);
			free(t);
			v[k++] = s;
		}
		closedir(d);
	}
	if (k)
		qsort(v, (size_t)k, sizeof(*v), cmp_str);
	/* Strip the node names: callers get the texts in node order. */
	for (int i = 0; i < k; i++)
		memmove(v[i], strchr(v[i], '\n') + 1, strlen(strchr(v[i], '\n') + 1) + 1);
	*texts = v;
	*n = k;
	return 0;
}

int nbpf_xchg_gather(struct nbpf_xchg *x, const char *step, char ***texts, int *n)
{
	double t_end = now_ms() + x->o.timeout_ms;
	int err;

	for (;;) {
		err = look(x, step, texts, n);
		if (!err && *n >= x->o.nodes)
			return 0;
		if (now_ms() > t_end)
			return err ? err : -ETIMEDOUT;
		nbpf_xchg_texts_free(*texts, *n);
		*texts = NULL;
		*n = 0;
		usleep(10000);
	}
}

int nbpf_xchg_decide(struct nbpf_xchg *x, const char *step, const char *proposal, char **decision)
{
	char path[4600];
	int err;

	*decision = NULL;
	if (x->etcd) {
		snprintf(path, sizeof(path), "/ncclbpf/%s/%s.decision", x->scope, step);
		err = nbpf_etcd_create(x->etcd, path, proposal, x->lease, decision);
		if (err == 0)
			*decision = strdup(proposal);
		return err < 0 ? err : *decision ? 0 : -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/%s.%s.decision", x->dir, x->scope, step);
	err = write_file(x->dir, path, proposal, true);
	if (err && err != -EEXIST)
		return nbpf_err(err, "%s: %s", path, strerror(-err));
	*decision = read_file(path);
	return *decision ? 0 : nbpf_err(-EIO, "%s: cannot read the decision", path);
}
