/*
 * test_corpus.c - the verifier's corpus checks, one invocation per file:
 *
 *   test_corpus safe OBJ [MAX]       every program of OBJ is accepted (with at most
 *                                    MAX instructions processed, when given)
 *   test_corpus unsafe SRC OBJ       some program of OBJ is rejected and the first
 *                                    error's reason or detail contains the text
 *                                    of SRC's "// EXPECT: <text>" line
 *   test_corpus asm FILE             FILE is assembler text; "# HOOK: <hook>"
 *                                    (default tuner) and "# EXPECT: <text>" as
 *                                    above, or "# EXPECT: accept"
 *   test_corpus consistency SRC OBJ  "// EXPECT: warn": every tuner (and chunk) program is
 *                                    accepted with a consistency warning and
 *                                    rejected under strict consistency;
 *                                    "// EXPECT: clean": accepted without warning,
 *                                    also under strict consistency
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/hooks.h"
#include "ncclbpf/runtime.h"
#include "text/asm.h"
#include "text/rawprog.h"
#include "verifier/verifier.h"

/*
 * The corpus checks verdicts and messages; the wall-clock budget would
 * make a budget-exhausting program's message depend on the machine's load.
 */
#define VERDICT_TIME_MS 600000
static const struct ncclbpf_verify_opts untimed = { .sz = sizeof(untimed),
						    .max_time_ms = VERDICT_TIME_MS };

/* Text after "EXPECT:" / "HOOK:" on a comment line of the file, trimmed. */
static int read_tag(const char *path, const char *tag, char *out, size_t len)
{
	char *buf = NULL, *p;
	size_t n;

	if (nbpf_read_file(path, &buf, &n))
		return -ENOENT;
	p = strstr(buf, tag);
	if (!p) {
		free(buf);
		return -ENOENT;
	}
	p += strlen(tag);
	while (*p == ' ')
		p++;
	n = strcspn(p, "\r\n");
	while (n && p[n - 1] == ' ')
		n--;
	snprintf(out, len, "%.*s", (int)n, p);
	free(buf);
	return 0;
}

static const struct ncclbpf_finding *first_error(const struct ncclbpf_verify_result *r)
{
	for (uint32_t i = 0; i < r->n_findings; i++)
		if (r->findings[i].kind == NCCLBPF_FINDING_ERROR)
			return &r->findings[i];
	return NULL;
}

static bool finding_matches(const struct ncclbpf_finding *f, const char *want)
{
	return f && (strstr(f->reason, want) || strstr(f->detail, want));
}

static int count_warnings(const struct ncclbpf_verify_result *r)
{
	int n = 0;

	for (uint32_t i = 0; i < r->n_findings; i++)
		n += r->findings[i].kind == NCCLBPF_FINDING_WARNING;
	return n;
}

static void print_findings(const char *what, const struct ncclbpf_verify_result *r)
{
	for (uint32_t i = 0; i < r->n_findings; i++)
		fprintf(stderr, "  %s: %s insn %u: %s | %s\n", what,
			r->findings[i].kind ? "warning" : "error", r->findings[i].insn,
			r->findings[i].reason, r->findings[i].detail);
}

/* max_processed: when nonzero, every accepted program must need at most this many. */
static uint32_t max_processed;

static int run_objects(const char *mode, const char *src, const char *path)
{
	struct ncclbpf_object *obj = NULL;
	char want[256] = "";
	bool any_rejected = false, matched = false;
	int err;

	if (src && read_tag(src, "EXPECT:", want, sizeof(want))) {
		fprintf(stderr, "%s: no EXPECT line\n", src);
		return 1;
	}
	err = ncclbpf_object__open_file(path, NULL, &obj);
	CHECK_MSG(!err, "open %s: %s", path, ncclbpf_errmsg());
	if (err)
		return check_summary(path);
	for (size_t i = 0; i < ncclbpf_object__prog_count(obj); i++) {
		struct ncclbpf_program *p = ncclbpf_object__prog(obj, i);
		const struct ncclbpf_hook_desc *h = ncclbpf_hook_find_section(ncclbpf_program__section(p));
		struct ncclbpf_verify_opts strict = { .sz = sizeof(strict), .strict_consistency = true,
						      .max_time_ms = VERDICT_TIME_MS };
		struct ncclbpf_verify_result r;

		CHECK_MSG(h, "%s: program %s: section %s has no hook", path, ncclbpf_program__name(p),
			  ncclbpf_program__section(p));
		if (!h)
			continue;
		err = ncclbpf_program__verify(p, h, &untimed, &r);
		if (!strcmp(mode, "safe")) {
			CHECK_MSG(!err && r.accepted, "%s: %s rejected", path, ncclbpf_program__name(p));
			if (err)
				print_findings(ncclbpf_program__name(p), &r);
			else if (max_processed)
				CHECK_MSG(r.insns_processed <= max_processed,
					  "%s: %s: %u instructions processed, expected at most %u", path,
					  ncclbpf_program__name(p), r.insns_processed, max_processed);
		} else if (!strcmp(mode, "unsafe")) {
			if (err) {
				any_rejected = true;
				if (finding_matches(first_error(&r), want))
					matched = true;
				else
					print_findings(ncclbpf_program__name(p), &r);
			}
		} else if (!strcmp(h->name, "tuner") || !strcmp(h->name, "chunk")) {
			bool warn = !strcmp(want, "warn");

			CHECK_MSG(!err, "%s: %s rejected without strict consistency", path,
				  ncclbpf_program__name(p));
			if (warn) {
				CHECK_MSG(count_warnings(&r) > 0, "%s: %s: no consistency warning", path,
					  ncclbpf_program__name(p));
				CHECK_STR_CONTAINS(r.n_findings ? r.findings[0].reason : "",
						   "rank-local");
			} else {
				CHECK_MSG(r.n_findings == 0, "%s: %s: unexpected findings", path,
					  ncclbpf_program__name(p));
			}
			print_findings(ncclbpf_program__name(p), &r);
			err = ncclbpf_program__verify(p, h, &strict, &r);
			if (warn) {
				CHECK_MSG(err == -EACCES, "%s: %s accepted under strict consistency", path,
					  ncclbpf_program__name(p));
				CHECK(finding_matches(first_error(&r), "rank-local"));
			} else {
				CHECK_MSG(!err, "%s: %s rejected under strict consistency", path,
					  ncclbpf_program__name(p));
			}
		}
	}
	if (!strcmp(mode, "unsafe")) {
		CHECK_MSG(any_rejected, "%s: every program was accepted", path);
		CHECK_MSG(matched, "%s: no rejection mentions \"%s\"", path, want);
	}
	ncclbpf_object__close(obj);
	return check_summary(path);
}

static int run_asm(const char *path)
{
	char want[256] = "", hook_name[64] = "tuner";
	struct nbpf_insn *insns = NULL;
	struct ncclbpf_verify_result r;
	const struct ncclbpf_hook_desc *h;
	struct nbpf_verify_input in;
	char *text = NULL;
	size_t len;
	uint32_t n = 0;
	int err;

	CHECK_MSG(!read_tag(path, "EXPECT:", want, sizeof(want)), "%s: no EXPECT line", path);
	read_tag(path, "HOOK:", hook_name, sizeof(hook_name));
	h = ncclbpf_hook_find(hook_name);
	CHECK_MSG(h, "%s: unknown hook %s", path, hook_name);
	if (!h || nbpf_read_file(path, &text, &len))
		return check_summary(path);
	err = nbpf_asm(text, len, &insns, &n);
	CHECK_MSG(!err, "%s: %s", path, ncclbpf_errmsg());
	free(text);
	if (err)
		return check_summary(path);
	memset(&in, 0, sizeof(in));
	in.insns = insns;
	in.n_insns = n;
	err = nbpf_verify_insns(&in, h, &untimed, &r);
	if (!strcmp(want, "accept")) {
		CHECK_MSG(!err && r.accepted, "%s: rejected", path);
	} else {
		CHECK_MSG(err == -EACCES && !r.accepted, "%s: accepted (err %d)", path, err);
		CHECK_MSG(finding_matches(first_error(&r), want), "%s: expected \"%s\"", path, want);
	}
	if (check_failed)
		print_findings(path, &r);
	free(r.findings);
	free(insns);
	return check_summary(path);
}

int main(int argc, char **argv)
{
	nbpf_verify_selfcheck = 1; /* pruning's shortcuts agree with the full tests */
	if (argc == 3 && !strcmp(argv[1], "safe"))
		return run_objects("safe", NULL, argv[2]);
	if (argc == 4 && !strcmp(argv[1], "safe")) {
		max_processed = (uint32_t)strtoul(argv[3], NULL, 10);
		return run_objects("safe", NULL, argv[2]);
	}
	if (argc == 4 && (!strcmp(argv[1], "unsafe") || !strcmp(argv[1], "consistency")))
		return run_objects(argv[1], argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "asm"))
		return run_asm(argv[2]);
	fprintf(stderr, "usage: test_corpus safe OBJ [MAX] | unsafe SRC OBJ | asm FILE | consistency SRC OBJ\n");
	return 2;
}
