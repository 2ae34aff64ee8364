/*
 * taint.c - decision consistency.  Values carry a rank-local bit; a path
 * carries the branches on rank-local conditions it is still inside (until
 * the branch's immediate post-dominator).  A store to a decision field of
 * a rank-local value, or under such a branch, is a warning (an error with
 * strict consistency): ranks could pick different algorithms and hang.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../maps/map.h"
#include "vstate.h"

#define PDOM_EXIT 0xffffffu
#define IPDOM_MAX_INSNS 16384u

bool map_is_rank_local(const struct venv *e, uint32_t map_idx)
{
	const struct ncclbpf_map *m = venv_map(e, map_idx);

	if (!m)
		return true;
	if (m->type == NCCLBPF_MAP_RINGBUF)
		return true;
	if (m->readonly_prog)
		return false;
	return m->writable_by_prog || (e->map_written && e->map_written[map_idx]);
}

bool vstate_ctrl_tainted(const struct venv *e, const struct vstate *s)
{
	(void)e;
	return s->nctrl != 0;
}

/* A branch on a rank-local condition at pc: its successors depend on it. */
void ctrl_enter(struct venv *e, uint32_t pc)
{
	struct vstate *s = e->cur;
	uint32_t pd = e->ipdom[pc] == UINT32_MAX ? PDOM_EXIT : (e->ipdom[pc] & PDOM_EXIT);
	uint32_t ent = ((s->nframes - 1) << 24) | pd;

	if (!e->track_ctrl || e->collect)
		return;
	for (uint32_t i = 0; i < s->nctrl; i++)
		if (s->ctrl[i] == ent)
			return;
	if (s->nctrl == MAX_CTRL) {
		/* Full: fall back to "until the function returns" (never unsound). */
		ent = ((s->nframes - 1) << 24) | PDOM_EXIT;
		for (uint32_t i = 0; i < s->nctrl; i++)
			if (s->ctrl[i] == ent)
				return;
		s->ctrl[MAX_CTRL - 1] = ent;
		return;
	}
	s->ctrl[s->nctrl++] = ent;
}

/* Reaching a post-dominator ends the dependence on the branches it closes. */
void ctrl_leave(struct venv *e, uint32_t pc)
{
	struct vstate *s = e->cur;
	uint32_t ent = ((s->nframes - 1) << 24) | (pc & PDOM_EXIT), k = 0;

	for (uint32_t i = 0; i < s->nctrl; i++)
		if (s->ctrl[i] != ent)
			s->ctrl[k++] = s->ctrl[i];
	s->nctrl = k;
}

int check_decision_store(struct venv *e, uint32_t pc, const struct ncclbpf_ctx_field *f,
			 uint8_t value_taint)
{
	bool data = value_taint & TAINT_LOCAL, ctrl = e->cur->nctrl != 0;

	if (e->collect || (!data && !ctrl))
		return 0;
	if (e->strict)
		return verr(e, pc, VM_CONSISTENCY, NULL, "%s %s (strict consistency)", f->name,
			    data ? "is written from a rank-local value"
				 : "is written under a branch on a rank-local value");
	vwarn(e, pc, VM_CONSISTENCY, "%s %s", f->name,
	      data ? "is written from a rank-local value"
		   : "is written under a branch on a rank-local value");
	return 0;
}

/*
 * Immediate post-dominators, per function, by the Cooper-Harvey-Kennedy
 * iteration on the reversed control-flow graph rooted at a virtual exit.
 * Instructions that cannot reach an exit keep UINT32_MAX (the dependence
 * then lasts until the function returns).
 */
int vcompute_ipdom(struct venv *e)
{
	uint32_t n = e->n, root = n;
	uint32_t *po = NULL, *order = NULL, *idom = NULL, *npred = NULL, *predoff = NULL,
		 *preds = NULL, *stk = NULL, *it = NULL;
	uint8_t *vis = NULL;
	int err = 0;

	e->ipdom = malloc(n * sizeof(*e->ipdom));
	po = malloc((n + 1) * sizeof(*po));
	order = malloc((n + 1) * sizeof(*order));
	idom = malloc((n + 1) * sizeof(*idom));
	npred = calloc(n + 2, sizeof(*npred));
	predoff = calloc(n + 2, sizeof(*predoff));
	preds = malloc((2 * n + 1) * sizeof(*preds));
	stk = malloc((n + 1) * sizeof(*stk));
	it = calloc(n + 1, sizeof(*it));
	vis = calloc(n + 1, 1);
	if (!e->ipdom || !po || !order || !idom || !npred || !predoff || !preds || !stk || !it ||
	    !vis) {
		err = venv_oom(e);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		e->ipdom[i] = UINT32_MAX;
	/*
	 * The iteration is quadratic in the worst case: very large programs
	 * keep "until the function returns" for every branch (conservative).
	 */
	if (n > IPDOM_MAX_INSNS)
		goto out;

	/*
	 * Reverse graph: children of node v are v's forward predecessors; the
	 * root's children are the exits.  Build "forward successors" lists as
	 * the reverse graph's predecessor lists, and forward predecessors as
	 * its children (CSR).
	 */
	for (uint32_t i = 0; i < n; i++) {
		int64_t s[2];
		int ns;

		if (e->flags[i] & IF_LDDW2)
			continue;
		ns = vsuccessors(e, i, s);
		if (e->insns[i].code == NBPF_OP_EXIT)
			npred[root]++;
		for (int j = 0; j < ns; j++)
			npred[s[j]]++;
	}
	for (uint32_t i = 1; i <= n + 1; i++)
		predoff[i] = predoff[i - 1] + npred[i - 1];
	memset(npred, 0, (n + 2) * sizeof(*npred));
	for (uint32_t i = 0; i < n; i++) {
		int64_t s[2];
		int ns;

		if (e->flags[i] & IF_LDDW2)
			continue;
		ns = vsuccessors(e, i, s);
		if (e->insns[i].code == NBPF_OP_EXIT)
			preds[predoff[root] + npred[root]++] = i;
		for (int j = 0; j < ns; j++)
			preds[predoff[s[j]] + npred[s[j]]++] = i;
	}

	/* Post-order DFS of the reverse graph from the root (iterative). */
	{
		uint32_t sp = 0, cnt = 0;

		stk[sp++] = root;
		vis[root] = 1;
		while (sp) {
			uint32_t v = stk[sp - 1];

			if (it[v] < npred[v]) {
				uint32_t c = preds[predoff[v] + it[v]++];

				if (!vis[c]) {
					vis[c] = 1;
					stk[sp++] = c;
				}
			} else {
				po[v] = cnt;
				order[cnt++] = v;
				sp--;
			}
		}
		for (uint32_t i = 0; i <= n; i++)
			idom[i] = UINT32_MAX;
		idom[root] = root;
		for (bool changed = true; changed;) {
			changed = false;
			for (uint32_t k = cnt - 1; k-- > 0;) {
				uint32_t v = order[k], nd = UINT32_MAX;
				int64_t s[2];
				int ns = vsuccessors(e, v, s);
				uint32_t cand[3];
				int nc = 0;

				/* reverse-graph predecessors of v: forward successors, or root */
				for (int j = 0; j < ns; j++)
					cand[nc++] = (uint32_t)s[j];
				if (e->insns[v].code == NBPF_OP_EXIT)
					cand[nc++] = root;
				for (int j = 0; j < nc; j++) {
					uint32_t p = cand[j];

					if (idom[p] == UINT32_MAX)
						continue;
					if (nd == UINT32_MAX) {
						nd = p;
						continue;
					}
					{
						uint32_t a = p, b = nd;

						while (a != b) {
							while (po[a] < po[b])
								a = idom[a];
							while (po[b] < po[a])
								b = idom[b];
						}
						nd = a;
					}
				}
				if (nd != UINT32_MAX && idom[v] != nd) {
					idom[v] = nd;
					changed = true;
				}
			}
		}
		for (uint32_t i = 0; i < n; i++)
			if (vis[i] && idom[i] != UINT32_MAX && idom[i] != root)
				e->ipdom[i] = idom[i];
	}
out:
	free(po);
	free(order);
	free(idom);
	free(npred);
	free(predoff);
	free(preds);
	free(stk);
	free(it);
	free(vis);
	return err;
}
