/*
 * test_conformance.c - runs the ISA conformance suite on one engine.
 *
 *   test_conformance [--engine interp|jit] [-v] [DIR | FILE.data ...]
 *
 * Every .data file's "-- raw" program runs with its "-- mem" block
 * (r1 = copy of the bytes, r2 = their count) and the conformance helper
 * set; r0 must equal "-- result", and a file with "-- error" must be
 * refused.  Prints each failure, then "conformance (ENGINE): P/T passed"
 * and "P passed, F failed"; exits 1 if anything failed.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "jit/jit.h"
#include "ncclbpf/runtime.h"
#include "text/rawprog.h"

#ifndef NCCLBPF_CONFORMANCE_DIR
#define NCCLBPF_CONFORMANCE_DIR "tests/conformance/bpf_conformance/tests"
#endif

/* Loops in the suite are short; this only stops a miscompiled runaway. */
#define MAX_STEPS (1u << 24)

enum engine { ENGINE_INTERP, ENGINE_JIT };

static const struct nbpf_env conf_env = { .helper = nbpf_helper_find_conformance };

/* Runs one program; 0 with *r0 set, or the engine's negative errno. */
static int run_one(enum engine eng, const struct nbpf_conf_test *t, uint8_t *mem, uint64_t *r0)
{
	if (eng == ENGINE_INTERP)
		return nbpf_interp_run(t->insns, t->n_insns, &conf_env, mem, t->mem_len, NULL,
				       MAX_STEPS, r0);
#ifdef NCCLBPF_HAVE_JIT
	struct nbpf_jit_image *img = NULL;
	int err = nbpf_jit_compile(t->insns, t->n_insns, &conf_env, &img);

	if (err)
		return err;
	*r0 = img->func(mem, t->mem_len);
	nbpf_jit_free(img);
	return 0;
#else
	(void)r0;
	fprintf(stderr, "test_conformance: this build has no JIT\n");
	return -ENOTSUP;
#endif
}

/* Returns 1 if the file passed, 0 if not. */
static int run_file(enum engine eng, const char *path, int verbose)
{
	struct nbpf_conf_test t;
	uint8_t *mem = NULL;
	uint64_t r0 = 0;
	int err, ok = 0;

	err = nbpf_conf_load(path, &t);
	if (err) {
		printf("FAIL %s: %s\n", path, ncclbpf_errmsg());
		return 0;
	}
	if (!t.has_raw || (!t.has_result && !t.has_error)) {
		printf("FAIL %s: needs a raw section and a result or error section\n", path);
		goto out;
	}
	if (t.mem_len) {
		mem = malloc(t.mem_len);
		if (!mem) {
			printf("FAIL %s: out of memory\n", path);
			goto out;
		}
		memcpy(mem, t.mem, t.mem_len);
	}
	err = run_one(eng, &t, mem, &r0);
	if (t.has_error) {
		ok = err != 0;
		if (!ok)
			printf("FAIL %s: expected an error (%s), ran and returned 0x%" PRIx64 "\n", path,
			       t.error, r0);
	} else if (err) {
		printf("FAIL %s: %s\n", path, ncclbpf_errmsg());
	} else if (r0 != t.result) {
		printf("FAIL %s: r0 = 0x%" PRIx64 ", expected 0x%" PRIx64 "\n", path, r0, t.result);
	} else {
		ok = 1;
	}
	if (ok && verbose)
		printf("ok   %s\n", path);
out:
	free(mem);
	nbpf_conf_free(&t);
	return ok;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted list of DIR's *.data paths (malloc'd); -errno on failure. */
static int list_dir(const char *dir, char ***out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t cnt = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char **nv;

		if (l < 6 || strcmp(de->d_name + l - 5, ".data"))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		if (asprintf(&v[cnt], "%s/%s", dir, de->d_name) < 0)
			break;
		cnt++;
	}
	closedir(d);
	qsort(v, cnt, sizeof(*v), cmp_str);
	*out = v;
	*n = cnt;
	return 0;
}

int main(int argc, char **argv)
{
	enum engine eng = ENGINE_INTERP;
	const char *ename = "interp";
	char **files = NULL;
	size_t n_files = 0, passed = 0;
	int verbose = 0, explicit_files = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--engine") && i + 1 < argc) {
			ename = argv[++i];
			if (!strcmp(ename, "interp"))
				eng = ENGINE_INTERP;
			else if (!strcmp(ename, "jit"))
				eng = ENGINE_JIT;
			else {
				fprintf(stderr, "test_conformance: unknown engine '%s'\n", ename);
				return 2;
			}
		} else if (!strcmp(argv[i], "-v")) {
			verbose = 1;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: %s [--engine interp|jit] [-v] [DIR | FILE.data ...]\n",
				argv[0]);
			return 2;
		} else {
			size_t l = strlen(argv[i]);

			if (l > 5 && !strcmp(argv[i] + l - 5, ".data")) {
				char **nv = realloc(files, (n_files + 1) * sizeof(*nv));

				if (!nv)
					return 2;
				files = nv;
				files[n_files++] = strdup(argv[i]);
				explicit_files = 1;
			} else if (!explicit_files && !n_files) {
				if (list_dir(argv[i], &files, &n_files)) {
					fprintf(stderr, "test_conformance: %s: %s\n", argv[i],
						strerror(errno));
					return 2;
				}
				explicit_files = 1;
			}
		}
	}
	if (!explicit_files && list_dir(NCCLBPF_CONFORMANCE_DIR, &files, &n_files)) {
		fprintf(stderr, "test_conformance: %s: cannot read\n", NCCLBPF_CONFORMANCE_DIR);
		return 2;
	}
	if (!n_files) {
		fprintf(stderr, "test_conformance: no .data files\n");
		return 2;
	}
	for (size_t i = 0; i < n_files; i++) {
		passed += (size_t)run_file(eng, files[i], verbose);
		free(files[i]);
	}
	free(files);
	printf("conformance (%s): %zu/%zu passed\n", ename, passed, n_files);
	printf("%zu passed, %zu failed\n", passed, n_files - passed);
	return passed == n_files ? 0 : 1;
}
