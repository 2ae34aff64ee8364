// SPDX-License-Identifier: MIT
/*
 * test_verify_time.c - programs built to make verification slow get a
 * verdict (patho_gen.h: deep call chains with full frames and rows of
 * diamonds whose constants reach addresses), and the wall-clock budget
 * refuses with its own message.  No timing is asserted: ctest's timeout is
 * the hang detector, bench/verify has the times.  Smaller shapes run with
 * every shortcut of pruning checked against the full tests
 * (nbpf_verify_selfcheck).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/hooks.h"
#include "patho_gen.h"
#include "verifier/verifier.h"

static struct nbpf_insn prog[4096];

/*
 * want NULL: accepted; otherwise rejected with that reason.  max_time_ms 0:
 * the default budget, under which a loaded machine may answer "too long"
 * instead (allowed when either_time is set).
 */
static void expect(uint32_t n, uint32_t max_time_ms, const char *want, bool either_time,
		   const char *what)
{
	struct nbpf_verify_input in = { .insns = prog, .n_insns = n };
	struct ncclbpf_verify_opts o = { .sz = sizeof(o), .max_time_ms = max_time_ms };
	struct ncclbpf_verify_result r;
	int err = nbpf_verify_insns(&in, ncclbpf_hook_find("tuner"), &o, &r);
	const char *got = err ? (r.n_findings ? r.findings[0].reason : "?") : NULL;

	if (either_time && got && !strcmp(got, "verification took too long")) {
		check_passed++;
	} else if (!want) {
		CHECK_MSG(err == 0, "%s: expected acceptance, got \"%s\"", what, got);
	} else {
		CHECK_MSG(err == -EACCES && got && !strcmp(got, want), "%s: expected \"%s\", got %d \"%s\"",
			  what, want, err, got ? got : "(accepted)");
	}
	free(r.findings);
}

int main(void)
{
	const uint32_t generous = 600000; /* only the instruction budget decides */
	uint32_t n;

	/* small shapes with every shortcut of pruning checked against the full tests */
	nbpf_verify_selfcheck = 1;
	n = patho_gen(prog, 8, 8, PATHO_SMALL_USES);
	expect(n, generous, NULL, false, "innermost diamonds, 8, self-checked");
	n = patho_gen2(prog, 8, 6, 1, true);
	expect(n, generous, NULL, false, "outer diamonds, 6, self-checked");
	nbpf_verify_selfcheck = 0;

	/* the report's shapes: 8 frames, 13 diamonds in the innermost one */
	n = patho_gen(prog, 8, 13, PATHO_SMALL_USES);
	expect(n, generous, NULL, false, "innermost diamonds");
	expect(n, 0, NULL, true, "innermost diamonds, default budget");
	/* a wall-clock budget of 1 ms cannot cover 600k instructions */
	expect(n, 1, "verification took too long", false, "innermost diamonds, 1 ms");

	n = patho_gen(prog, 8, 13, PATHO_LARGE_USES);
	expect(n, generous, "loop not proven to terminate within the instruction budget", false,
	       "innermost diamonds, longer tail");
	expect(n, 0, "loop not proven to terminate within the instruction budget", true,
	       "innermost diamonds, longer tail, default budget");

	/* the paths differ only in the outermost frame while the callees run */
	n = patho_gen2(prog, 8, 9, 1, true);
	expect(n, generous, NULL, false, "outer diamonds");
	n = patho_gen2(prog, 8, 13, 1, true);
	expect(n, generous, "loop not proven to terminate within the instruction budget", false,
	       "outer diamonds, 13");
	expect(n, 1, "verification took too long", false, "outer diamonds, 1 ms");

	/* a shallow chain: the same verdicts */
	n = patho_gen(prog, 2, 10, 1);
	expect(n, generous, NULL, false, "two frames");

	/* a budget given by an older caller (sz without max_time_ms) is the default */
	{
		struct nbpf_verify_input in = { .insns = prog, .n_insns = n };
		struct ncclbpf_verify_opts o = { .sz = offsetof(struct ncclbpf_verify_opts, max_time_ms),
						 .max_time_ms = 1 };
		struct ncclbpf_verify_result r;
		int err = nbpf_verify_insns(&in, ncclbpf_hook_find("tuner"), &o, &r);

		/* a few milliseconds of work: 1 ms would refuse it, the default does not */
		CHECK_MSG(err == 0, "old-size opts: \"%s\"", r.n_findings ? r.findings[0].reason : "?");
		free(r.findings);
	}
	return check_summary("verifier_time");
}
