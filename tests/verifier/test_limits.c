/*
 * test_limits.c - adversarial program shapes: the verifier answers every
 * one (no crash, no hang: ctest's timeout is the hang detector) with the
 * expected verdict and budget message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/hooks.h"
#include "verifier/verifier.h"

#define INS(c, d, s, o, i) ((struct nbpf_insn){ .code = (c), .dst = (d), .src = (s), .off = (o), .imm = (i) })

/* want_reason NULL: accepted; "" : answered either way (budgets may stop it). */
static int verify(struct nbpf_insn *p, uint32_t n, const char *want_reason)
{
	struct nbpf_verify_input in = { .insns = p, .n_insns = n };
	struct ncclbpf_verify_result r;
	/* the instruction and state budgets decide here, not the machine's load */
	struct ncclbpf_verify_opts o = { .sz = sizeof(o), .max_time_ms = 600000 };
	int err = nbpf_verify_insns(&in, ncclbpf_hook_find("tuner"), &o, &r);

	if (want_reason && !*want_reason) {
		CHECK_MSG(err == 0 || (err == -EACCES && r.n_findings &&
				       strstr(r.findings[0].reason, "budget")),
			  "unexpected answer %d \"%s\"", err, r.n_findings ? r.findings[0].reason : "");
	} else if (want_reason) {
		CHECK_MSG(err == -EACCES, "expected rejection \"%s\", got %d", want_reason, err);
		CHECK_MSG(r.n_findings && strstr(r.findings[0].reason, want_reason),
			  "expected \"%s\", got \"%s\"", want_reason,
			  r.n_findings ? r.findings[0].reason : "(none)");
	} else {
		CHECK_MSG(err == 0, "expected acceptance, got \"%s\"",
			  r.n_findings ? r.findings[0].reason : "?");
	}
	free(r.findings);
	return err;
}

int main(void)
{
	uint32_t big = 1000001, n;
	struct nbpf_insn *p = calloc(big + 16, sizeof(*p));

	if (!p)
		return 2;

	/* too many instructions */
	for (uint32_t i = 0; i < big; i++)
		p[i] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
	p[big - 1] = INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	verify(p, big, "program too large");

	/* long straight line: accepted */
	n = 200000;
	p[0] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
	for (uint32_t i = 1; i < n - 2; i++)
		p[i] = INS(NBPF_ALU64 | NBPF_ADD | NBPF_K, 0, 0, 0, 1);
	p[n - 2] = INS(NBPF_ALU64 | NBPF_AND | NBPF_K, 0, 0, 0, 1);
	p[n - 1] = INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	verify(p, n, NULL);

	/* many undecided branches to the next instruction: linear, accepted */
	n = 20000;
	p[0] = INS(NBPF_LDX | NBPF_MEM | NBPF_W, 2, 1, 24, 0);
	p[1] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
	for (uint32_t i = 2; i < n - 1; i++)
		p[i] = INS(NBPF_JMP | NBPF_JGT | NBPF_K, 2, 0, 0, (int32_t)i);
	p[n - 1] = INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	verify(p, n, "");

	/* independent branches that each change state: joins keep it bounded */
	n = 0;
	p[n++] = INS(NBPF_LDX | NBPF_MEM | NBPF_W, 2, 1, 24, 0);
	p[n++] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 3, 0, 0, 0);
	for (int i = 0; i < 2000; i++) {
		p[n++] = INS(NBPF_JMP | NBPF_JSET | NBPF_K, 2, 0, 1, 1 << (i % 31));
		p[n++] = INS(NBPF_ALU64 | NBPF_ADD | NBPF_K, 3, 0, 0, 1);
	}
	p[n++] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
	p[n++] = INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	verify(p, n, "");

	/* deeply nested loops for the static analyses; the innermost spins */
	n = 0;
	p[n++] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
	for (int i = 0; i < 10000; i++)
		p[n++] = INS(NBPF_ALU64 | NBPF_ADD | NBPF_K, 0, 0, 0, 1);
	for (int i = 0; i < 10000; i++)
		p[n++] = INS(NBPF_JMP | NBPF_JLT | NBPF_K, 0, 0, (int16_t)(-2 * i - 2), 1000000);
	p[n++] = INS(NBPF_ALU64 | NBPF_AND | NBPF_K, 0, 0, 0, 1);
	p[n++] = INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	verify(p, n, "loop not proven to terminate");

	/* a tight infinite loop */
	p[0] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
	p[1] = INS(NBPF_OP_JA, 0, 0, -1, 0);
	verify(p, 2, "infinite loop");

	/* jumps to the next instruction everywhere: state budget */
	n = 300000;
	for (uint32_t i = 0; i < n - 2; i++)
		p[i] = INS(NBPF_OP_JA, 0, 0, 0, 0);
	p[n - 2] = INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0);
	p[n - 1] = INS(NBPF_OP_EXIT, 0, 0, 0, 0);
	{
		struct nbpf_verify_input in = { .insns = p, .n_insns = n };
		struct ncclbpf_verify_result r;
		struct ncclbpf_verify_opts o = { .sz = sizeof(o), .max_states = 1000,
						 .max_time_ms = 600000 };
		int err = nbpf_verify_insns(&in, ncclbpf_hook_find("tuner"), &o, &r);

		CHECK(err == -EACCES && r.n_findings &&
		      strstr(r.findings[0].reason, "state budget exhausted"));
		free(r.findings);
	}
	/* a helper the hook does not list */
	{
		static const int32_t only_time[] = { 5 };
		struct ncclbpf_hook_desc h = *ncclbpf_hook_find("tuner");
		struct nbpf_insn q[3] = {
			INS(NBPF_OP_CALL, 0, 0, 0, 7),
			INS(NBPF_ALU64 | NBPF_MOV | NBPF_K, 0, 0, 0, 0),
			INS(NBPF_OP_EXIT, 0, 0, 0, 0),
		};
		struct nbpf_verify_input in = { .insns = q, .n_insns = 3 };
		struct ncclbpf_verify_result r;
		int err;

		h.helpers = only_time;
		h.n_helpers = 1;
		err = nbpf_verify_insns(&in, &h, NULL, &r);
		CHECK(err == -EACCES && r.n_findings &&
		      !strcmp(r.findings[0].reason, "helper not allowed for this hook"));
		free(r.findings);
		q[0].imm = 5;
		err = nbpf_verify_insns(&in, &h, NULL, &r);
		CHECK(err == 0);
		free(r.findings);
	}
	free(p);
	return check_summary("verifier_limits");
}
