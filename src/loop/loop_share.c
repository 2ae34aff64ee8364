// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loop_share.c - the aggregators of several nodes agree through the node
 * exchange (xchg.h: a shared directory every node mounts, or etcd).
 *
 * No leader and no messages of our own: at each step every aggregator
 * writes its summary (its ranks' highest call, rate, keys and worst means)
 * and reads everybody's.  The plan is a pure function of the merged
 * summaries, so every node computes the same one; writing it is an agreed
 * change (agree.h), so it lands on every node at one call or nowhere.
 * Use a fresh directory (or etcd scope, --job) per job: old steps of
 * another run would be read as this run's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "xchg.h"

static char *format(const struct nbpf_loop_share *m)
{
	size_t cap = 64 + 48 * (size_t)m->n_keys;
	char *s = malloc(cap);
	size_t len;

	if (!s)
		return NULL;
	len = (size_t)snprintf(s, cap, "calls %llu\nrate %.3f\n", (unsigned long long)m->calls, m->rate);
	for (int i = 0; i < m->n_keys; i++)
		len += (size_t)snprintf(s + len, cap - len, "key %u %.3f\n", m->key[i], m->mean_ns[i]);
	snprintf(s + len, cap - len, "end\n");
	return s;
}

/* Merges one node's record into out: maxima, key union, worst means; -EAGAIN if cut short. */
static int merge(const char *text, struct nbpf_loop_share *out)
{
	char word[16];
	int pos = 0, k;

	while (sscanf(text + pos, "%15s%n", word, &k) == 1) {
		pos += k;
		if (!strcmp(word, "calls")) {
			unsigned long long v;

			if (sscanf(text + pos, "%llu%n", &v, &k) != 1)
				break;
			pos += k;
			if (v > out->calls)
				out->calls = v;
		} else if (!strcmp(word, "rate")) {
			double r;

			if (sscanf(text + pos, "%lf%n", &r, &k) != 1)
				break;
			pos += k;
			if (r > out->rate)
				out->rate = r;
		} else if (!strcmp(word, "key")) {
			unsigned key;
			double m;
			int i;

			if (sscanf(text + pos, "%u %lf%n", &key, &m, &k) != 2)
				break;
			pos += k;
			for (i = 0; i < out->n_keys && out->key[i] != key; i++)
				;
			if (i == out->n_keys) {
				if (i == NBPF_LOOP_MAX_KEYS)
					continue;
				out->key[out->n_keys++] = key;
				out->mean_ns[i] = 0;
			}
			if (m > out->mean_ns[i])
				out->mean_ns[i] = m;
		} else if (!strcmp(word, "end")) {
			return 0;
		}
	}
	return -EAGAIN;
}

static int cmp_key(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int nbpf_loop_share_step(struct nbpf_xchg *x, int step, const struct nbpf_loop_share *mine,
			 struct nbpf_loop_share *out)
{
	char name[32], **texts = NULL, *me = format(mine);
	int n = 0, err;

	if (!me)
		return -ENOMEM;
	snprintf(name, sizeof(name), "step%d", step);
	err = nbpf_xchg_put(x, name, me);
	free(me);
	if (!err)
		err = nbpf_xchg_gather(x, name, &texts, &n);
	memset(out, 0, sizeof(*out));
	for (int i = 0; !err && i < n; i++)
		err = merge(texts[i], out);
	nbpf_xchg_texts_free(texts, n);
	if (err)
		return err;
	/* Every node has read step - 1's records (it wrote this one after): drop this node's of step - 2. */
	if (step >= 2) {
		snprintf(name, sizeof(name), "step%d", step - 2);
		nbpf_xchg_drop(x, name);
	}
	/* Same order on every node whatever order the records came in. */
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
