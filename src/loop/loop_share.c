// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loop_share.c - the aggregators of several nodes agree through a shared
 * directory (NFS, Lustre, any file system every node mounts).
 *
 * No leader and no messages: at each step every aggregator writes its
 * summary as step<N>.<node> (temporary file + rename, so a reader sees a
 * whole file or none) and reads everybody's.  The plan is a pure function
 * of the merged summaries, so every node computes the same one, with the
 * same activation call.  Use a fresh directory per job (e.g. named after
 * the job id): old steps of another run would be read as this run's.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"

static bool name_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

static int write_mine(const char *dir, const char *node, int step, const struct nbpf_loop_share *m)
{
	char tmp[4096], path[4096];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "%s/step%d.%s", dir, step, node);
	snprintf(tmp, sizeof(tmp), "%s/.step%d.%s.tmp", dir, step, node);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "calls %llu\nrate %.3f\n", (unsigned long long)m->calls, m->rate);
	for (int i = 0; i < m->n_keys; i++)
		fprintf(f, "key %u %.3f\n", m->key[i], m->mean_ns[i]);
	fprintf(f, "end\n");
	if (fflush(f) || fsync(fileno(f)))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* Merges one node's file into out; -EAGAIN if it is not complete. */
static int merge_file(const char *path, struct nbpf_loop_share *out)
{
	char word[16];
	bool end = false;
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f)
		return -errno;
	while (fscanf(f, "%15s", word) == 1) {
		if (!strcmp(word, "calls")) {
			unsigned long long v;

			if (fscanf(f, "%llu", &v) != 1)
				break;
			if (v > out->calls)
				out->calls = v;
		} else if (!strcmp(word, "rate")) {
			double r;

			if (fscanf(f, "%lf", &r) != 1)
				break;
			if (r > out->rate)
				out->rate = r;
		} else if (!strcmp(word, "key")) {
			unsigned k;
			double m;
			int i;

			if (fscanf(f, "%u %lf", &k, &m) != 2)
				break;
			for (i = 0; i < out->n_keys && out->key[i] != k; i++)
				;
			if (i == out->n_keys) {
				if (i == NBPF_LOOP_MAX_KEYS)
					continue;
				out->key[out->n_keys++] = k;
				out->mean_ns[i] = 0;
			}
			if (m > out->mean_ns[i])
				out->mean_ns[i] = m;
		} else if (!strcmp(word, "end")) {
			end = true;
			break;
		}
	}
	if (!end)
		err = -EAGAIN;
	fclose(f);
	return err;
}

static int cmp_key(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int nbpf_loop_share_step(const char *dir, const char *node, int nodes, int step,
			 const struct nbpf_loop_share *mine, struct nbpf_loop_share *out,
			 int timeout_ms)
{
	struct timespec t0, now;
	char prefix[32];
	int err;

	if (!name_ok(node) || nodes < 1)
		return -EINVAL;
	err = write_mine(dir, node, step, mine);
	if (err)
		return err;
	snprintf(prefix, sizeof(prefix), "step%d.", step);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct dirent *de;
		DIR *d = opendir(dir);
		int seen = 0;

		if (!d)
			return -errno;
		memset(out, 0, sizeof(*out));
		while ((de = readdir(d))) {
			char path[4096];

			if (strncmp(de->d_name, prefix, strlen(prefix)) ||
			    !name_ok(de->d_name + strlen(prefix)))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (!merge_file(path, out))
				seen++;
		}
		closedir(d);
		if (seen >= nodes)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			return -ETIMEDOUT;
		usleep(10000);
	}
	/* Same order on every node whatever readdir returned. */
	{
		struct { uint32_t k; double m; } kv[NBPF_LOOP_MAX_KEYS];

		for (int i = 0; i < out->n_keys; i++)
			kv[i].k = out->key[i], kv[i].m = out->mean_ns[i];
		qsort(kv, (size_t)out->n_keys, sizeof(kv[0]), cmp_key);
		for (int i = 0; i < out->n_keys; i++)
			out->key[i] = kv[i].k, out->mean_ns[i] = kv[i].m;
	}
	return 0;
}
