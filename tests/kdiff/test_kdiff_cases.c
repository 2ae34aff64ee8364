// SPDX-License-Identifier: Apache-2.0
/*
 * test_kdiff_cases.c - a reproducer of the kernel-differential fuzzer
 * (tests/kdiff/cases) against our verifier.
 *
 *   test_kdiff_cases CASE.s
 *
 * The case's expectation is the kernel's verdict, recorded when the case
 * was found: ours must give the same one, unless the case names a
 * contract-difference row (docs/verifier.md), in which case the kernel
 * refused and ours accepts by design.  Every program ours accepts also
 * passes the checking interpreter and agrees with the JIT on its inputs.
 * Where the kernel's BPF is available the recorded verdict is checked
 * against the running kernel too: a row's case, if it refuses it, must be
 * refused for the row's reason (its message, or the kernel accepting the
 * exact twin; "# kernel-mode: strict": the kernel without CAP_PERFMON);
 * a kernel whose verdict changed is reported, not failed,
 * since the expectation is the recorded one.
 */
#include <string.h>

#include "check.h"
#include "kdiff.h"

static const struct kd_row *row_named(const char *id)
{
	for (uint32_t i = 0; i < kd_n_rows; i++)
		if (!strcmp(kd_rows[i].id, id))
			return &kd_rows[i];
	return NULL;
}

int main(int argc, char **argv)
{
	static struct kd_case c;
	struct kd_verdict v = { 0 };
	const struct kd_row *row = NULL;
	struct kd_env e;

	if (argc != 2) {
		fprintf(stderr, "usage: test_kdiff_cases CASE.s\n");
		return 2;
	}
	if (kd_case_read(argv[1], &c) || kd_env_open(&e, true))
		return 1;
	if (c.row[0]) {
		row = row_named(c.row);
		CHECK_MSG(row, "%s: no contract-difference row '%s'", argv[1], c.row);
		CHECK_MSG(!c.kernel_accepts, "%s: a row's case is one the kernel refuses", argv[1]);
	}
	kd_verify_ours(&e, &c.prog, &v);
	if (row)
		CHECK_MSG(v.ours, "%s: row %s: ours refuses (%s at insn %u), the row says we accept",
			  argv[1], c.row, v.ours_reason, v.ours_insn);
	else
		CHECK_MSG(v.ours == c.kernel_accepts,
			  "%s: the kernel %s it%s%s, ours %s%s (insn %u)", argv[1],
			  c.kernel_accepts ? "accepts" : "refuses", c.kernel_accepts ? "" : ": ",
			  c.kernel_accepts ? "" : c.kernel_msg, v.ours ? "accepts" : "refuses: ",
			  v.ours ? "" : v.ours_reason, v.ours_insn);
	if (v.ours) { /* the JIT only meets what the kernel accepts or a row explains */
		int cls = kd_run_checks(&e, &c.prog, c.seed, c.kernel_accepts || row, &v);

		CHECK_MSG(cls == 0, "%s: %s: %s", argv[1], cls ? kd_class_names[cls] : "", v.run_msg);
	}
	if (e.have_kernel) {
		char msg[256];
		enum kd_kmode mode = c.strict ? KD_K_STRICT : KD_K_PRIV;
		int k = kd_kernel_verdict(&e.kern, &c.prog, mode, msg, sizeof(msg));

		if (row && k == 0)
			CHECK_MSG(kd_row_for(&e, &c.prog, mode, msg) == row,
				  "%s: row %s does not explain the running kernel's refusal: %s", argv[1],
				  c.row, msg);
		else if (row && k == 1)
			printf("note: %s: the running kernel accepts it now: row %s is no difference here\n",
			       argv[1], c.row);
		else if (k >= 0 && k != c.kernel_accepts)
			printf("note: %s: the running kernel %s it now (%s); the recorded verdict stands\n",
			       argv[1], k ? "accepts" : "refuses", msg);
	} else {
		printf("note: no kernel BPF here: the recorded verdict alone is the expectation\n");
	}
	kd_env_close(&e);
	return check_summary(argv[1]);
}
