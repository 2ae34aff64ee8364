/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xchg.h - how the aggregators (or change coordinators) of several nodes
 * agree, without a protocol of our own: a directory every node mounts
 * (NFS, Lustre), or an etcd cluster (etcd.h) where no file system or
 * launcher reaches every node.
 *
 * Each node writes its record of a step once; every node reads every
 * node's record of the step, so a pure function of them gives every node
 * the same plan.  Where nodes may see different things (one times out
 * waiting while another saw everything), a decision settles it: the first
 * proposal written wins and every node reads that one (an exclusive
 * link() in the directory, a create-if-absent transaction in etcd).
 */
#ifndef NCCLBPF_LOOP_XCHG_H
#define NCCLBPF_LOOP_XCHG_H

#include <stdbool.h>

struct nbpf_xchg;

struct nbpf_xchg_opts {
	const char *dir;      /* a shared directory, or */
	const char *etcd;     /* etcd endpoints ("http://h1:2379,h2:2379") */
	const char *scope;    /* this exchange's name: a job, a change id ([A-Za-z0-9._-]) */
	const char *node;     /* this node's name, unique in the job ([A-Za-z0-9._-]) */
	int nodes;            /* how many nodes take part, this one included */
	int timeout_ms;       /* waiting for the others' records */
};

/* A name the exchange takes (node, scope, a change id): [A-Za-z0-9._-], 1 to 64 bytes. */
bool nbpf_xchg_name_ok(const char *s);

/* 0, or a negative errno with the reason in ncclbpf_errmsg(). */
int nbpf_xchg_open(const struct nbpf_xchg_opts *o, struct nbpf_xchg **out);
void nbpf_xchg_close(struct nbpf_xchg *x);
/* This node's record of step (text). */
int nbpf_xchg_put(struct nbpf_xchg *x, const char *step, const char *text);
/*
 * Waits until every node's record of step is there (timeout: -ETIMEDOUT,
 * with what arrived still returned); *texts: n malloc'ed strings in node
 * name order, free with nbpf_xchg_texts_free.
 */
int nbpf_xchg_gather(struct nbpf_xchg *x, const char *step, char ***texts, int *n);
void nbpf_xchg_texts_free(char **texts, int n);
/* The decision of step: proposal if this node's is the first written, else the one that was. */
int nbpf_xchg_decide(struct nbpf_xchg *x, const char *step, const char *proposal, char **decision);
/* Forgets this node's record of step (a directory file nobody reads any more). */
void nbpf_xchg_drop(struct nbpf_xchg *x, const char *step);
const char *nbpf_xchg_where(const struct nbpf_xchg *x);

#endif
