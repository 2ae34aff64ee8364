/*
 * test_conf_range.c - every ISA conformance program the verifier accepts
 * (against a hook whose context is the program's memory block, readable
 * and writable, with the conformance helper set) runs in the interpreter,
 * and its r0 must lie in the range the verifier proved for it.  Programs
 * the verifier refuses (uninitialised r2, unbounded loops, ...) are
 * counted and listed, never silently dropped.
 *
 * usage: test_conf_range DIR
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "interp.h"
#include "text/rawprog.h"
#include "verifier/verifier.h"

static const int32_t conf_helpers[] = { 5 };

int main(int argc, char **argv)
{
	unsigned accepted = 0, rejected = 0, in_range = 0, skipped_error = 0;
	struct dirent **names = NULL;
	int n;

	if (argc != 2) {
		fprintf(stderr, "usage: test_conf_range DIR\n");
		return 2;
	}
	n = scandir(argv[1], &names, NULL, alphasort);
	CHECK_MSG(n > 0, "cannot read %s", argv[1]);
	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		size_t len = strlen(nm);
		char path[4096];
		struct nbpf_conf_test t;
		struct ncclbpf_hook_desc hook = {
			.name = "conformance", .section = "conformance", .ctx_type = "memory block",
			.helpers = conf_helpers, .n_helpers = 1,
			.ret_min = INT64_MIN, .ret_max = INT64_MAX, .ret_doc = "", .doc = "",
		};
		struct nbpf_verify_input in;
		struct ncclbpf_verify_result res;
		struct nbpf_env env = { .helper = nbpf_helper_find_conformance };
		uint64_t r0 = 0;
		uint8_t *mem;
		int err;

		if (len < 6 || strcmp(nm + len - 5, ".data"))
			goto next;
		snprintf(path, sizeof(path), "%s/%s", argv[1], nm);
		if (nbpf_conf_load(path, &t)) {
			CHECK_MSG(0, "%s: %s", path, ncclbpf_errmsg());
			goto next;
		}
		if (t.has_error || !t.has_raw) {
			skipped_error++;
			nbpf_conf_free(&t);
			goto next;
		}
		hook.ctx_size = (uint32_t)t.mem_len;
		memset(&in, 0, sizeof(in));
		in.insns = t.insns;
		in.n_insns = t.n_insns;
		in.helper_find = nbpf_helper_find_conformance;
		err = nbpf_verify_insns(&in, &hook, NULL, &res);
		if (err) {
			rejected++;
			printf("refused %-40s %s\n", nm, res.n_findings ? res.findings[0].reason : "?");
			free(res.findings);
			nbpf_conf_free(&t);
			goto next;
		}
		accepted++;
		mem = malloc(t.mem_len ? t.mem_len : 1);
		if (t.mem_len)
			memcpy(mem, t.mem, t.mem_len);
		err = nbpf_interp_run(t.insns, t.n_insns, &env, t.mem_len ? mem : NULL, t.mem_len, NULL,
				      1u << 24, &r0);
		CHECK_MSG(!err, "%s: accepted program failed to run: %s", nm, ncclbpf_errmsg());
		if (!err) {
			bool ok = (int64_t)r0 >= res.ret_min && (int64_t)r0 <= res.ret_max;

			CHECK_MSG(ok, "%s: r0 = %lld outside the proven [%lld, %lld]", nm, (long long)r0,
				  (long long)res.ret_min, (long long)res.ret_max);
			in_range += ok;
			if (t.has_result)
				CHECK_MSG(r0 == t.result, "%s: r0 %llx, expected %llx", nm,
					  (unsigned long long)r0, (unsigned long long)t.result);
		}
		free(mem);
		free(res.findings);
		nbpf_conf_free(&t);
next:
		free(names[i]);
	}
	free(names);
	printf("conformance: %u accepted (r0 in the proven range: %u), %u refused by the verifier, "
	       "%u expected-error programs skipped\n", accepted, in_range, rejected, skipped_error);
	CHECK(accepted > 100);
	return check_summary("verifier_conformance_range");
}
