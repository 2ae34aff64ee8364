// SPDX-License-Identifier: Apache-2.0
/*
 * st_progs.c - the kernel's annotated verifier test programs
 * (tools/testing/selftests/bpf/progs/verifier_*.c of a kernel source tree,
 * compiled by bench/kdiff/selftests.sh) against our verifier.
 *
 *   st_progs OBJ...
 *
 * A test is a function whose BTF carries the test loader's declaration
 * tags: "comment:test_expect_success" or "comment:test_expect_failure"
 * (__success/__failure, the privileged verdict) and "comment:test_expect_msg="
 * (__msg, the expected message).  Each socket filter or tc test of an
 * object our loader opens is verified against the __sk_buff
 * mirror of tests/kdiff plus bpf_trace_printk (tc programs too: what they
 * may do beyond a socket filter, we refuse as not expressible) and
 * compared; the output has
 * st_tables.c's form.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

#include "kdiff.h"
#include "st_common.h"

#define MAX_TESTS 1024

struct expect {
	char func[128];
	int verdict;   /* 1 success, 0 failure, -1 none */
	char msg[256];
};

static struct expect ex[MAX_TESTS];
static int n_ex;

static struct expect *expect_of(const char *func)
{
	for (int i = 0; i < n_ex; i++)
		if (!strcmp(ex[i].func, func))
			return &ex[i];
	if (n_ex == MAX_TESTS)
		return NULL;
	snprintf(ex[n_ex].func, sizeof(ex[n_ex].func), "%s", func);
	ex[n_ex].verdict = -1;
	ex[n_ex].msg[0] = '\0';
	return &ex[n_ex++];
}

/* The test loader's tags on each function of obj. */
static void read_tags(const char *obj)
{
	struct btf *btf = btf__parse_elf(obj, NULL);

	n_ex = 0;
	if (!btf)
		return;
	for (uint32_t id = 1; id < btf__type_cnt(btf); id++) {
		const struct btf_type *t = btf__type_by_id(btf, id), *f;
		const char *tag, *m;
		struct expect *e;

		if (!btf_is_decl_tag(t) || btf_decl_tag(t)->component_idx != -1)
			continue;
		f = btf__type_by_id(btf, t->type);
		if (!f || !btf_is_func(f))
			continue;
		tag = btf__name_by_offset(btf, t->name_off);
		e = expect_of(btf__name_by_offset(btf, f->name_off));
		if (!e || !tag)
			continue;
		if (!strcmp(tag, "comment:test_expect_success"))
			e->verdict = 1;
		else if (!strcmp(tag, "comment:test_expect_failure"))
			e->verdict = 0;
		else if (!strncmp(tag, "comment:test_expect_msg=", 24) && (m = strchr(tag + 24, '=')))
			snprintf(e->msg + strlen(e->msg), sizeof(e->msg) - strlen(e->msg), "%s%s",
				 e->msg[0] ? " | " : "", m + 1);
	}
	btf__free(btf);
}

/* Sections of programs whose context is struct __sk_buff and whose return value is free. */
static bool skb_section(const char *sec)
{
	return !strcmp(sec, "socket") || !strcmp(sec, "tc") || !strncmp(sec, "tc/", 3) ||
	       !strcmp(sec, "classifier") || !strcmp(sec, "action");
}

int main(int argc, char **argv)
{
	struct ncclbpf_hook_desc hook = st_hook();
	unsigned total = 0, skipped = 0, unsupported = 0, objs_skipped = 0, n[2][2] = { { 0 } };

	for (int a = 1; a < argc; a++) {
		struct ncclbpf_object *obj = NULL;
		int tests = 0;

		read_tags(argv[a]);
		for (int i = 0; i < n_ex; i++)
			tests += ex[i].verdict >= 0;
		total += (unsigned)tests;
		if (ncclbpf_object__open_file(argv[a], NULL, &obj)) {
			const char *base = strrchr(argv[a], '/');

			printf("skip\t%s: the object (%s)\t\t\t%d tests\n", base ? base + 1 : argv[a],
			       ncclbpf_errmsg(), tests);
			skipped += (unsigned)tests;
			objs_skipped++;
			continue;
		}
		for (size_t i = 0; i < ncclbpf_object__prog_count(obj); i++) {
			struct ncclbpf_program *prog = ncclbpf_object__prog(obj, i);
			struct ncclbpf_verify_opts opts = { .sz = sizeof(opts), .max_time_ms = 600000 };
			struct ncclbpf_verify_result res = { 0 };
			const char *name = ncclbpf_program__name(prog), *sec = ncclbpf_program__section(prog);
			const char *reason = "";
			struct expect *e = expect_of(name);
			bool ours;

			if (!e || e->verdict < 0)
				continue;
			if (*sec == '?')
				sec++;
			if (!skb_section(sec)) {
				skipped++;
				printf("skip\t%s\t\t\t%s\n", name, sec);
				continue;
			}
			ours = ncclbpf_program__verify(prog, &hook, &opts, &res) == 0;
			reason = st_tally(&res, ours, e->verdict, n, &unsupported);
			printf("%s\t%s\t%s\tkernel: %s\n", name, e->verdict ? "" : e->msg, reason,
			       e->verdict ? "accept" : "refuse");
		}
		ncclbpf_object__close(obj);
	}
	printf("SUMMARY\ttests %u\tskipped %u (%u objects not opened)\tnot expressible %u\tcompared %u\t"
	       "kernel accepts %u\twe accept %u of them\tkernel refuses %u\twe accept %u of them\n",
	       total, skipped, objs_skipped, unsupported, n[0][0] + n[0][1] + n[1][0] + n[1][1],
	       n[1][0] + n[1][1], n[1][1], n[0][0] + n[0][1], n[0][1]);
	return 0;
}
