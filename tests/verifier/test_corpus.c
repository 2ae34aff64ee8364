/*
 * test_corpus.c - the verifier's corpus checks, one invocation per file:
 *
 *   test_corpus safe OBJ [MAX]       every program of OBJ is accepted (with at most
 *                                    MAX instructions processed, when given)
 *   test_corpus unsafe SRC OBJ       some program of OBJ is rejected and the first
 *                                    error's reason or detail contains the text
 *                                    of SRC's "// EXPECT: <text>" line (and is at
 *                                    source line N, given "// LINE: N")
 *   test_corpus asm FILE             FILE is assembler text; "# HOOK: <hook>"
 *                                    (default tuner; "raw": kernel_oracle.h's hook
 *                                    and maps) and "# EXPECT: <text>" as
 *                                    above, or "# EXPECT: accept"
 *   test_corpus kernel FILE          FILE (assembler, "# HOOK: raw") loaded into the
 *                                    running kernel: its verdict is FILE's
 *                                    "# KERNEL: accept|refuse" line, and ours agrees
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
#include "kernel_oracle.h"
#include "ncclbpf/runtime.h"
#include "text/asm.h"
#include "text/rawprog.h"
#include "verifier/verifier.h"

/*
 * The defaults a host passes: work decides, so verdicts and budget
 * messages do not depend on the machine's load (the time guard is
 * far above).
 */
static const struct ncclbpf_verify_opts defaults = { .sz = sizeof(defaults) };

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
	char want[256] = "", tag[32];
	bool any_rejected = false, matched = false;
	uint32_t want_line = 0, line = 0;
	int err;

	if (src && read_tag(src, "EXPECT:", want, sizeof(want))) {
		fprintf(stderr, "%s: no EXPECT line\n", src);
		return 1;
	}
	if (src && !read_tag(src, "LINE:", tag, sizeof(tag)))
		want_line = (uint32_t)strtoul(tag, NULL, 10);
	err = ncclbpf_object__open_file(path, NULL, &obj);
	CHECK_MSG(!err, "open %s: %s", path, ncclbpf_errmsg());
	if (err)
		return check_summary(path);
	for (size_t i = 0; i < ncclbpf_object__prog_count(obj); i++) {
		struct ncclbpf_program *p = ncclbpf_object__prog(obj, i);
		const struct ncclbpf_hook_desc *h = ncclbpf_hook_find_section(ncclbpf_program__section(p));
		struct ncclbpf_verify_opts strict = { .sz = sizeof(strict), .strict_consistency = true };
		struct ncclbpf_verify_result r;

		CHECK_MSG(h, "%s: program %s: section %s has no hook", path, ncclbpf_program__name(p),
			  ncclbpf_program__section(p));
		if (!h)
			continue;
		err = ncclbpf_program__verify(p, h, &defaults, &r);
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
				if (finding_matches(first_error(&r), want)) {
					matched = true;
					line = first_error(&r)->line;
				} else {
					print_findings(ncclbpf_program__name(p), &r);
				}
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
		CHECK_MSG(!want_line || line == want_line, "%s: the rejection is at line %u, expected %u",
			  path, line, want_line);
	}
	ncclbpf_object__close(obj);
	return check_summary(path);
}

/*
 * Assembles FILE and verifies it against its "# HOOK:" (default tuner;
 * "raw": the kernel oracle's hook, with its maps).  0 with *r filled, or
 * a failed check.
 */
static int verify_asm(const char *path, struct nbpf_insn **insns, uint32_t *n,
		      struct ncclbpf_verify_result *r)
{
	static struct ncclbpf_map *kmaps[KOR_NMAPS];
	char hook_name[64] = "tuner";
	const struct ncclbpf_hook_desc *h;
	struct nbpf_verify_input in;
	char *text = NULL;
	size_t len;
	int err;

	read_tag(path, "HOOK:", hook_name, sizeof(hook_name));
	h = strcmp(hook_name, "raw") ? ncclbpf_hook_find(hook_name) : &kor_hook;
	CHECK_MSG(h, "%s: unknown hook %s", path, hook_name);
	if (!h || nbpf_read_file(path, &text, &len))
		return -ENOENT;
	err = nbpf_asm(text, len, insns, n);
	CHECK_MSG(!err, "%s: %s", path, ncclbpf_errmsg());
	free(text);
	if (err)
		return err;
	memset(&in, 0, sizeof(in));
	in.insns = *insns;
	in.n_insns = *n;
	if (h == &kor_hook) {
		if (!kmaps[0] && (err = kor_our_maps(kmaps))) {
			CHECK_MSG(!err, "%s: maps: %s", path, ncclbpf_errmsg());
			return err;
		}
		in.maps = kmaps;
		in.n_maps = KOR_NMAPS;
	}
	nbpf_verify_insns(&in, h, &defaults, r);
	return 0;
}

static int run_asm(const char *path)
{
	char want[256] = "";
	struct nbpf_insn *insns = NULL;
	struct ncclbpf_verify_result r;
	uint32_t n = 0;

	CHECK_MSG(!read_tag(path, "EXPECT:", want, sizeof(want)), "%s: no EXPECT line", path);
	if (verify_asm(path, &insns, &n, &r)) {
		free(insns);
		return check_summary(path);
	}
	if (!strcmp(want, "accept")) {
		CHECK_MSG(r.accepted, "%s: rejected", path);
	} else {
		CHECK_MSG(!r.accepted, "%s: accepted", path);
		CHECK_MSG(finding_matches(first_error(&r), want), "%s: expected \"%s\"", path, want);
	}
	if (check_failed)
		print_findings(path, &r);
	free(r.findings);
	free(insns);
	return check_summary(path);
}

/*
 * The running kernel's verdict on FILE ("# HOOK: raw") is its "# KERNEL:"
 * line (accept or refuse), and ours is the same unless a "# CONTRACT:"
 * line names the documented difference that makes ours differ.  Exits 77 (a ctest skip)
 * when the kernel cannot be asked.
 */
static int run_kernel(const char *path)
{
	char want[32] = "", why[256];
	struct nbpf_insn *insns = NULL;
	struct ncclbpf_verify_result r;
	uint32_t n = 0;
	int k;

	CHECK_MSG(!read_tag(path, "KERNEL:", want, sizeof(want)), "%s: no KERNEL line", path);
	if (!kor_probe()) {
		printf("%s: SKIP: the kernel's verifier cannot be asked (root and bpf() needed)\n", path);
		return 77;
	}
	if (verify_asm(path, &insns, &n, &r)) {
		free(insns);
		return check_summary(path);
	}
	k = kor_load(insns, n);
	CHECK_MSG(k >= 0, "%s: kernel load failed: %s", path, strerror(-k));
	printf("%s: kernel %s (%s); ours %s (%s)\n", path, k == 1 ? "accepts" : "refuses",
	       k == 1 ? "-" : kor_reason(), r.accepted ? "accepts" : "refuses",
	       r.accepted ? "-" : first_error(&r) ? first_error(&r)->reason : "?");
	CHECK_MSG((k == 1) == !strcmp(want, "accept"), "%s: the kernel %s, expected %s", path,
		  k == 1 ? "accepts" : "refuses", want);
	/* a "# CONTRACT:" line names a documented difference: there we decide the other way */
	CHECK_MSG(r.accepted == (k == 1) || !read_tag(path, "CONTRACT:", why, sizeof(why)),
		  "%s: the kernel %s, we %s", path, k == 1 ? "accepts" : "refuses",
		  r.accepted ? "accept" : "refuse");
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
	if (argc == 3 && !strcmp(argv[1], "kernel"))
		return run_kernel(argv[2]);
	fprintf(stderr, "usage: test_corpus safe OBJ [MAX] | unsafe SRC OBJ | asm FILE | kernel FILE | consistency SRC OBJ\n");
	return 2;
}
