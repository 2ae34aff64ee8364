// SPDX-License-Identifier: MIT
/*
 * test_verify_time.c - programs built to make verification slow get a
 * verdict decided by work (patho_gen.h: deep call chains with full frames,
 * rows of diamonds whose constants reach addresses, rows of forks), the
 * same whatever the clock says: with the guard's clock (the thread's CPU
 * time), a clock frozen still and one running ten times fast (a machine
 * ten times slower), every shape gets the same verdict, message,
 * instructions processed and work.  Only the time guard itself (1 ms here)
 * refuses for time.  No timing is asserted: ctest's timeout is the hang
 * detector, bench/verify has the times.  Smaller shapes run with every
 * shortcut of pruning checked against the full tests (nbpf_verify_selfcheck).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "host/hooks.h"
#include "patho_gen.h"
#include "verifier/verifier.h"

static struct nbpf_insn prog[4096];

#define TOO_LONG "verification took too long"
#define PATHS "program too complex: instruction budget exhausted"

struct verdict {
	int err;
	uint32_t processed;
	uint64_t work;
	char reason[256];
};

static struct verdict verify(uint32_t n, const struct ncclbpf_verify_opts *o)
{
	struct nbpf_verify_input in = { .insns = prog, .n_insns = n };
	struct ncclbpf_verify_result r;
	struct verdict v = { 0 };

	v.err = nbpf_verify_insns(&in, ncclbpf_hook_find("tuner"), o, &r);
	v.processed = r.insns_processed;
	v.work = r.work;
	snprintf(v.reason, sizeof(v.reason), "%s", v.err && r.n_findings ? r.findings[0].reason : "");
	free(r.findings);
	return v;
}

/* want NULL: accepted; otherwise rejected with that reason. */
static struct verdict expect(uint32_t n, const struct ncclbpf_verify_opts *o, const char *want,
			     const char *what)
{
	struct verdict v = verify(n, o);

	if (!want)
		CHECK_MSG(v.err == 0, "%s: expected acceptance, got \"%s\"", what, v.reason);
	else
		CHECK_MSG(v.err == -EACCES && !strcmp(v.reason, want),
			  "%s: expected \"%s\", got %d \"%s\"", what, want, v.err,
			  v.err ? v.reason : "(accepted)");
	return v;
}

/* The clock the guard reads by default: this thread's CPU time. */
static uint64_t real_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t frozen_ns(void)
{
	return 1000000000ull;
}

/* Ten times as much time passes per unit of work: a machine ten times slower. */
static uint64_t slow_ns(void)
{
	static uint64_t t0;
	uint64_t now = real_ns();

	if (!t0)
		t0 = now;
	return t0 + (now - t0) * 10;
}

/* The verdict of shape n is the same whichever clock the guard reads. */
static void same_whatever_clock(uint32_t n, const char *want, const char *what)
{
	static const struct ncclbpf_verify_opts def = { .sz = sizeof(def) };
	uint64_t (*clocks[3])(void) = { real_ns, frozen_ns, slow_ns };
	static const char *names[3] = { "the thread's CPU time", "frozen clock", "10x slow machine" };
	struct verdict first = { 0 };

	for (int c = 0; c < 3; c++) {
		struct verdict v;
		char label[128];

		nbpf_verify_clock = clocks[c];
		snprintf(label, sizeof(label), "%s, %s", what, names[c]);
		v = expect(n, &def, want, label);
		if (!c) {
			first = v;
			continue;
		}
		CHECK_MSG(v.processed == first.processed && v.work == first.work,
			  "%s: %u instructions, %llu work units; with the real clock %u, %llu", label,
			  v.processed, (unsigned long long)v.work, first.processed,
			  (unsigned long long)first.work);
	}
	nbpf_verify_clock = real_ns;
}

int main(void)
{
	const struct ncclbpf_verify_opts one_ms = { .sz = sizeof(one_ms), .max_time_ms = 1 };
	uint32_t n;

	/* small shapes with every shortcut of pruning checked against the full tests */
	nbpf_verify_selfcheck = 1;
	n = patho_gen(prog, 8, 8, PATHO_SMALL_USES);
	expect(n, NULL, NULL, "innermost diamonds, 8, self-checked");
	n = patho_gen2(prog, 8, 6, 1, true);
	expect(n, NULL, NULL, "outer diamonds, 6, self-checked");
	n = patho_forks(prog, 8, 10);
	expect(n, NULL, NULL, "forks, 10, self-checked");
	nbpf_verify_selfcheck = 0;

	/* the report's shapes: 8 frames, 13 diamonds in the innermost one */
	n = patho_gen(prog, 8, 13, PATHO_SMALL_USES);
	same_whatever_clock(n, NULL, "innermost diamonds");
	/* the guard refuses for time: 1 ms cannot cover 600k instructions */
	expect(n, &one_ms, TOO_LONG, "innermost diamonds, 1 ms");

	n = patho_gen(prog, 8, 13, PATHO_LARGE_USES);
	same_whatever_clock(n, PATHS, "innermost diamonds, longer tail");

	/* the paths differ only in the outermost frame while the callees run */
	n = patho_gen2(prog, 8, 9, 1, true);
	same_whatever_clock(n, NULL, "outer diamonds");
	n = patho_gen2(prog, 8, 13, 1, true);
	same_whatever_clock(n, "program too complex: work budget exhausted", "outer diamonds, 13");
	expect(n, &one_ms, TOO_LONG, "outer diamonds, 1 ms");

	/* 3,400 forks of a state of 8 full frames (once 37 KiB each, over 1 s) */
	n = patho_forks(prog, 8, 3400);
	same_whatever_clock(n, "program too complex: work budget exhausted", "forks, 3400");

	/* a shallow chain */
	n = patho_gen(prog, 2, 10, 1);
	expect(n, NULL, NULL, "two frames");

	/* the work budget decides where it is lower: the same message for every caller */
	{
		const struct ncclbpf_verify_opts small = { .sz = sizeof(small), .max_work = 100000 };
		struct verdict v;

		n = patho_gen(prog, 8, 13, PATHO_SMALL_USES);
		v = expect(n, &small, "program too complex: work budget exhausted", "work budget 100k");
		CHECK_MSG(v.work > 100000 && v.work < 101000, "work budget 100k: stopped at %llu units",
			  (unsigned long long)v.work);
	}

	/* options from before max_time_ms or max_work (a smaller sz) get the defaults */
	{
		struct ncclbpf_verify_opts o = { .sz = offsetof(struct ncclbpf_verify_opts, max_time_ms),
						 .max_time_ms = 1, .max_work = 1 };

		n = patho_gen(prog, 2, 10, 1);
		/* a few milliseconds of work: 1 ms or 1 unit would refuse it, the defaults do not */
		expect(n, &o, NULL, "options without max_time_ms");
		o.sz = offsetof(struct ncclbpf_verify_opts, max_work);
		o.max_time_ms = 0;
		expect(n, &o, NULL, "options without max_work");
	}
	return check_summary("verifier_time");
}
