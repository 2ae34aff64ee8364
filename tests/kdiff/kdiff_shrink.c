// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_shrink.c - removing instructions from a program with its jumps
 * re-aimed, and shrinking a program while its classification holds:
 * chunks of halving size are removed (delta debugging's complement
 * step), then immediates are simplified, until nothing more can go.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "insn_build.h"
#include "kdiff.h"

/* Where old slot x lands after removing [idx, idx + cnt): the range itself lands on its end. */
static int64_t new_pos(int64_t x, uint32_t idx, uint32_t cnt)
{
	if (x < idx)
		return x;
	if (x < (int64_t)idx + cnt)
		return idx;
	return x - cnt;
}

static bool is_local_call(const struct nbpf_insn *in)
{
	return in->code == NBPF_OP_CALL && in->src == NBPF_PSEUDO_CALL;
}

int kd_prog_delete(struct kd_prog *p, uint32_t idx, uint32_t cnt)
{
	struct kd_prog q;

	if (!cnt || idx + cnt > p->n)
		return -EINVAL;
	/* neither end may split an lddw (its second slot's code is 0, never an lddw's) */
	if ((idx > 0 && nbpf_insn_is_lddw(&p->insns[idx - 1])) ||
	    nbpf_insn_is_lddw(&p->insns[idx + cnt - 1]))
		return -EINVAL;
	q.n = 0;
	for (uint32_t i = 0; i < p->n; i++) {
		struct nbpf_insn in = p->insns[i];

		if (i >= idx && i < idx + cnt)
			continue;
		if (ib_is_jump(&in) || is_local_call(&in)) {
			int64_t off = is_local_call(&in) ? in.imm : ib_jump_off(&in);
			int64_t t = (int64_t)i + 1 + off, nt, ni = new_pos(i, idx, cnt);

			if (t < 0 || t > p->n)
				return -EINVAL;
			nt = new_pos(t, idx, cnt);
			if (is_local_call(&in))
				in.imm = (int32_t)(nt - ni - 1);
			else
				ib_set_jump_off(&in, nt - ni - 1);
		}
		q.insns[q.n++] = in;
	}
	memcpy(p->insns, q.insns, q.n * sizeof(q.insns[0]));
	p->n = q.n;
	return 0;
}

int kd_prog_replace(struct kd_prog *p, uint32_t idx, const struct nbpf_insn *seq, uint32_t cnt)
{
	static struct kd_prog q;

	if (idx >= p->n || !cnt || p->n - 1 + cnt > KD_MAX_INSNS || nbpf_insn_is_lddw(&p->insns[idx]))
		return -EINVAL;
	q.n = 0;
	for (uint32_t i = 0; i < p->n; i++) {
		struct nbpf_insn in = p->insns[i];

		if (i == idx) {
			memcpy(&q.insns[q.n], seq, cnt * sizeof(*seq));
			q.n += cnt;
			continue;
		}
		if (ib_is_jump(&in) || is_local_call(&in)) {
			int64_t off = is_local_call(&in) ? in.imm : ib_jump_off(&in);
			int64_t t = (int64_t)i + 1 + off;
			int64_t nt = t <= idx ? t : t + cnt - 1, ni = i <= idx ? i : i + cnt - 1;

			if (is_local_call(&in))
				in.imm = (int32_t)(nt - ni - 1);
			else if (in.code != NBPF_OP_GOTOL && (nt - ni - 1 < INT16_MIN || nt - ni - 1 > INT16_MAX))
				return -ERANGE;
			else
				ib_set_jump_off(&in, nt - ni - 1);
		}
		q.insns[q.n++] = in;
	}
	*p = q;
	return 0;
}

struct shrink {
	struct kd_env *e;
	uint64_t seed;
	enum kd_class cls;
	char key[512];
	uint32_t spent, budget;
	double deadline; /* CLOCK_MONOTONIC seconds */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool still_fails(struct shrink *s, const struct kd_prog *p)
{
	struct kd_verdict v;
	char key[512];

	if (s->spent >= s->budget || now_s() > s->deadline)
		return false;
	s->spent++;
	kd_classify(s->e, p, s->seed, &v);
	if (v.cls != s->cls)
		return false;
	kd_verdict_key(&v, key, sizeof(key));
	return !strcmp(key, s->key);
}

static bool remove_chunks(struct shrink *s, struct kd_prog *p)
{
	static struct kd_prog t;
	bool any = false;

	for (uint32_t chunk = p->n / 2 ? p->n / 2 : 1; chunk >= 1; chunk /= 2) {
		for (uint32_t at = 0; at + chunk <= p->n;) {
			t = *p;
			if (kd_prog_delete(&t, at, chunk) == 0 && still_fails(s, &t)) {
				*p = t;
				any = true;
				continue; /* the same position holds new instructions now */
			}
			at++;
		}
		if (chunk == 1)
			break;
	}
	return any;
}

/* Immediates toward 0 and 1; register operands are left alone. */
static bool simplify_imms(struct shrink *s, struct kd_prog *p)
{
	static struct kd_prog t;
	static const int32_t tries[] = { 0, 1 };
	bool any = false;

	for (uint32_t i = 0; i < p->n; i++) {
		const struct nbpf_insn *in = &p->insns[i];
		uint8_t cls = NBPF_CLASS(in->code);
		bool imm_ok = (cls == NBPF_ALU || cls == NBPF_ALU64) ? NBPF_SRC(in->code) == NBPF_K &&
								       NBPF_OP(in->code) != NBPF_END
			      : cls == NBPF_ST || ((cls == NBPF_JMP || cls == NBPF_JMP32) &&
						    ib_is_jump(in) && NBPF_OP(in->code) != NBPF_JA &&
						    NBPF_SRC(in->code) == NBPF_K);

		if (nbpf_insn_is_lddw(in)) {
			i++;
			continue;
		}
		if (!imm_ok)
			continue;
		for (size_t k = 0; k < sizeof(tries) / sizeof(tries[0]); k++) {
			if (in->imm == tries[k] || (in->imm >= 0 && in->imm < tries[k]))
				break;
			t = *p;
			t.insns[i].imm = tries[k];
			if (still_fails(s, &t)) {
				*p = t;
				any = true;
				break;
			}
		}
	}
	return any;
}

uint32_t kd_shrink(struct kd_env *e, struct kd_prog *p, uint64_t seed, const struct kd_verdict *v,
		   uint32_t budget, double seconds)
{
	struct shrink s = { .e = e, .seed = seed, .cls = v->cls, .budget = budget,
			    .deadline = now_s() + seconds };

	kd_verdict_key(v, s.key, sizeof(s.key));
	while (s.spent < s.budget && now_s() <= s.deadline) {
		bool a = remove_chunks(&s, p);
		bool b = simplify_imms(&s, p);

		if (!a && !b)
			break;
	}
	return s.spent;
}
