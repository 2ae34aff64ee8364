// SPDX-License-Identifier: Apache-2.0
/*
 * kdiff_fuzz.c - the kernel-differential fuzzer's driver.
 *
 *   kdiff_fuzz [-t SECONDS] [-n PROGRAMS] [-s SEED] [-o DIR] [-j] [-k KEEP] [-x]
 *   kdiff_fuzz -1 PROGRAM_SEED [-o DIR]
 *   kdiff_fuzz -c CASE.s...
 *
 * Generates programs until the time (-t, default 60) or the count (-n)
 * runs out, both scaled by NCCLBPF_TEST_SCALE; program i has the seed
 * kd_mix(SEED + i), and SEED (default: from the clock) is printed first so
 * any run can be repeated.  The first KEEP (default 1) programs of each
 * failure or gap key are shrunk (for at most 20 s each, a quarter of a
 * shorter run) and written to DIR (default ./kdiff-found)
 * as case files, and failures are printed with their reproducer.  The
 * summary gives the verdict matrix, every class, the gap and failure keys
 * and the contract rows used; -j prints it as JSON.  Exit status: 0 no
 * failure, 1 a failure (we accept what the kernel refuses unexplained, a
 * leak or uninitialised read the kernel refuses, a trap of the checking
 * interpreter, an interpreter/JIT difference), 2 usage, 77 no kernel BPF
 * (not root, bpf() disabled): nothing was compared.  -x: gaps do not get
 * reproducers (long runs keep only failures).  -c classifies case files
 * (with the kernel twin's verdict where the kernel refused).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kdiff.h"
#include "text/disasm.h"

#define MAX_KEYS 512

struct keystat {
	char key[512];
	enum kd_class cls;
	uint64_t count, first_seed;
	char file[300];
};

static struct keystat keys[MAX_KEYS];
static uint32_t n_keys;

static struct keystat *key_get(const char *key, enum kd_class cls, uint64_t seed, bool *fresh)
{
	*fresh = false;
	for (uint32_t i = 0; i < n_keys; i++)
		if (keys[i].cls == cls && !strcmp(keys[i].key, key))
			return &keys[i];
	if (n_keys == MAX_KEYS)
		return NULL;
	snprintf(keys[n_keys].key, sizeof(keys[n_keys].key), "%s", key);
	keys[n_keys].cls = cls;
	keys[n_keys].first_seed = seed;
	*fresh = true;
	return &keys[n_keys++];
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *file_prefix(enum kd_class c)
{
	return c == KD_C_GAP ? "gap" : c == KD_C_GAP_PRIV ? "gap_priv" : c == KD_C_FAIL_ACCEPT ? "unsafe"
	       : c == KD_C_FAIL_STRICT ? "leak" : c == KD_C_FAIL_RUN ? "trap" : "jit";
}

/* Shrinks, writes DIR/PREFIX-NNN.s, prints failures. */
/* Seconds one shrink may take (scaled with the run, so a short run stays short). */
static double shrink_seconds = 20;

static void keep(struct kd_env *e, const char *dir, struct keystat *ks, const struct kd_prog *p,
		 uint64_t seed, const struct kd_verdict *v, bool quiet)
{
	static struct kd_case c;
	struct kd_verdict after;
	uint32_t spent;
	FILE *f;

	memset(&c, 0, sizeof(c));
	c.prog = *p;
	c.seed = seed;
	spent = kd_shrink(e, &c.prog, seed, v, 1000, shrink_seconds);
	kd_classify(e, &c.prog, seed, &after);
	c.kernel_accepts = after.kern == 1;
	snprintf(c.kernel_msg, sizeof(c.kernel_msg), "%s", after.kern_msg);
	snprintf(c.title, sizeof(c.title), "%.400s (ours: %.150s)", ks->key,
		 after.ours ? "accept" : after.ours_reason);
	snprintf(ks->file, sizeof(ks->file), "%s/%s-%03u-%u.s", dir, file_prefix(v->cls),
		 (unsigned)(ks - keys), (unsigned)ks->count);
	f = fopen(ks->file, "w");
	if (f) {
		kd_case_write(f, &c);
		fclose(f);
	} else {
		fprintf(stderr, "kdiff: %s: %s\n", ks->file, strerror(errno));
		ks->file[0] = '\0';
	}
	if (quiet)
		return;
	printf("kdiff: %s\n  program seed 0x%016" PRIx64 ", %u -> %u instructions in %u checks\n",
	       ks->key, seed, p->n, c.prog.n, spent);
	if (v->run_msg[0])
		printf("  run: %s\n", v->run_msg);
	if (v->kern_msg[0])
		printf("  kernel: %s\n", v->kern_msg);
	if (v->strict_msg[0])
		printf("  kernel without CAP_PERFMON: %s\n", v->strict_msg);
	printf("  reproducer %s:\n", ks->file[0] ? ks->file : "(not written)");
	kd_case_write(stdout, &c);
	fflush(stdout);
}

struct totals {
	uint64_t programs, insns, cls[KD_NCLASSES], matrix[2][2], rows[64];
	uint64_t frags[KD_NFRAGS];
	double seconds;
};

static void summary_text(const struct totals *t, uint64_t seed)
{
	printf("kdiff: seed 0x%016" PRIx64 ": %" PRIu64 " programs (%.1f insns average) in %.1f s "
	       "(%.0f/s)\n", seed, t->programs, t->programs ? (double)t->insns / t->programs : 0.0,
	       t->seconds, t->seconds > 0 ? t->programs / t->seconds : 0.0);
	printf("  verdicts (ours x kernel): accept/accept %" PRIu64 ", accept/refuse %" PRIu64
	       ", refuse/accept %" PRIu64 ", refuse/refuse %" PRIu64 "\n",
	       t->matrix[1][1], t->matrix[1][0], t->matrix[0][1], t->matrix[0][0]);
	for (int c = 0; c < KD_NCLASSES; c++)
		printf("  %-32s %" PRIu64 "\n", kd_class_names[c], t->cls[c]);
	for (uint32_t r = 0; r < kd_n_rows; r++)
		if (t->rows[r])
			printf("  row %-28s %" PRIu64 "\n", kd_rows[r].id, t->rows[r]);
	printf("  keys (class: what, count, first program seed, reproducer):\n");
	for (uint32_t i = 0; i < n_keys; i++)
			printf("    %s  x%" PRIu64 "  0x%016" PRIx64 "  %s\n", keys[i].key, keys[i].count,
			       keys[i].first_seed, keys[i].file);
	printf("  fragments:");
	for (int f = 0; f < KD_NFRAGS; f++)
		printf(" %s %" PRIu64, kd_frag_names[f], t->frags[f]);
	printf("\n");
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void summary_json(const struct totals *t, uint64_t seed)
{
	printf("{\"seed\":\"0x%016" PRIx64 "\",\"programs\":%" PRIu64 ",\"insns\":%" PRIu64
	       ",\"seconds\":%.3f,", seed, t->programs, t->insns, t->seconds);
	printf("\"matrix\":{\"accept_accept\":%" PRIu64 ",\"accept_refuse\":%" PRIu64
	       ",\"refuse_accept\":%" PRIu64 ",\"refuse_refuse\":%" PRIu64 "},",
	       t->matrix[1][1], t->matrix[1][0], t->matrix[0][1], t->matrix[0][0]);
	printf("\"classes\":{");
	for (int c = 0; c < KD_NCLASSES; c++)
		printf("%s\"%s\":%" PRIu64, c ? "," : "", kd_class_names[c], t->cls[c]);
	printf("},\"rows\":{");
	for (uint32_t r = 0, first = 1; r < kd_n_rows; r++) {
		printf("%s\"%s\":%" PRIu64, first ? "" : ",", kd_rows[r].id, t->rows[r]);
		first = 0;
	}
	printf("},\"keys\":[");
	for (uint32_t i = 0; i < n_keys; i++) {
		printf("%s{\"class\":\"%s\",\"key\":", i ? "," : "", kd_class_names[keys[i].cls]);
		json_str(keys[i].key);
		printf(",\"count\":%" PRIu64 ",\"first_seed\":\"0x%016" PRIx64 "\",\"file\":",
		       keys[i].count, keys[i].first_seed);
		json_str(keys[i].file);
		printf("}");
	}
	printf("],\"fragments\":{");
	for (int f = 0; f < KD_NFRAGS; f++)
		printf("%s\"%s\":%" PRIu64, f ? "," : "", kd_frag_names[f], t->frags[f]);
	printf("}}\n");
}

/* -c: the classification of case files, as the fuzzer would make it. */
static int classify_files(struct kd_env *e, int n, char **paths)
{
	static struct kd_case c;
	static struct kd_prog twin;
	int failures = 0;

	for (int i = 0; i < n; i++) {
		struct kd_verdict v;
		char key[512];

		if (kd_case_read(paths[i], &c))
			return 2;
		kd_classify(e, &c.prog, c.seed, &v);
		kd_verdict_key(&v, key, sizeof(key));
		printf("%s: %s\n", paths[i], key);
		if (v.kern_msg[0])
			printf("  kernel: %s\n", v.kern_msg);
		if (v.run_msg[0])
			printf("  run: %s\n", v.run_msg);
		if (!v.ours)
			printf("  ours: %s (insn %u)\n", v.ours_reason, v.ours_insn);
		if (v.kern == 0 && v.ours && kd_twin(&c.prog, KD_RW_KERNEL, 0, &twin)) {
			char m[256];
			int k = kd_kernel_verdict(&e->kern, &twin, KD_K_PRIV, m, sizeof(m));

			printf("  kernel twin (%u insns): %s %s\n", twin.n, k == 1 ? "accepted" : "refused",
			       k == 1 ? "" : m);
		}
		failures += kd_class_is_failure(v.cls);
	}
	return failures ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: kdiff_fuzz [-t SECONDS] [-n PROGRAMS] [-s SEED] [-o DIR] [-k KEEP] "
			"[-j] [-x]\n       kdiff_fuzz -1 PROGRAM_SEED [-o DIR]\n       kdiff_fuzz -c CASE.s...\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct kd_prog prog;
	struct totals t = { 0 };
	struct kd_env e;
	const char *dir = "kdiff-found", *scale = getenv("NCCLBPF_TEST_SCALE");
	double limit = 60, start;
	uint64_t max_programs = UINT64_MAX, seed = 0, one = 0;
	unsigned keep_per_key = 1;
	bool json = false, have_seed = false, have_one = false, gaps = true;
	int failures = 0, files = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-j")) {
			json = true;
		} else if (!strcmp(a, "-x")) {
			gaps = false;
		} else if (v && !strcmp(a, "-t")) {
			limit = atof(v), i++;
		} else if (v && !strcmp(a, "-n")) {
			max_programs = strtoull(v, NULL, 0), i++;
		} else if (v && !strcmp(a, "-s")) {
			seed = strtoull(v, NULL, 0), have_seed = true, i++;
		} else if (v && !strcmp(a, "-1")) {
			one = strtoull(v, NULL, 0), have_one = true, i++;
		} else if (v && !strcmp(a, "-o")) {
			dir = v, i++;
		} else if (v && !strcmp(a, "-k")) {
			keep_per_key = (unsigned)atoi(v), i++;
		} else if (v && !strcmp(a, "-c")) {
			files = i + 1;
			break;
		} else {
			return usage();
		}
	}
	if (scale && atof(scale) > 0) {
		limit *= atof(scale);
		if (max_programs != UINT64_MAX)
			max_programs = (uint64_t)(max_programs * atof(scale)) + 1;
	}
	if (limit / 4 < shrink_seconds)
		shrink_seconds = limit / 4 > 1 ? limit / 4 : 1;
	if (!have_seed)
		seed = kd_mix((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
	if (kd_env_open(&e, true))
		return 1;
	if (!e.have_kernel) {
		printf("SKIP: kdiff: no kernel BPF here (needs root and bpf()); nothing compared\n");
		kd_env_close(&e);
		return 77;
	}
	if (files) {
		int err = classify_files(&e, argc - files, argv + files);

		kd_env_close(&e);
		return err;
	}
	mkdir(dir, 0755);
	if (!json)
		printf("kdiff: seed 0x%016" PRIx64 " (program i: kd_mix(seed + i)), %.0f s, findings in %s\n",
		       seed, limit, dir);
	fflush(stdout);
	start = now_s();
	for (uint64_t i = 0; i < max_programs; i++) {
		uint64_t ps = have_one ? one : kd_mix(seed + i);
		struct kd_verdict v;
		struct keystat *ks;
		char key[512];
		bool fresh;

		if (!have_one && (i & 15) == 0 && now_s() - start >= limit)
			break;
		kd_generate(ps, &prog, t.frags);
		kd_classify(&e, &prog, ps, &v);
		t.programs++;
		t.insns += prog.n;
		t.cls[v.cls]++;
		if (v.kern >= 0)
			t.matrix[v.ours][v.kern]++;
		if (v.row)
			t.rows[v.row - kd_rows]++;
		kd_verdict_key(&v, key, sizeof(key));
		ks = key_get(key, v.cls, ps, &fresh);
		if (ks)
			ks->count++;
		if (have_one) {
			printf("program 0x%016" PRIx64 ": %s\n", ps, key);
			nbpf_disasm_prog(stdout, prog.insns, prog.n, 1, NULL);
		}
		if (kd_class_is_failure(v.cls))
			failures++;
		if (ks && ks->count <= keep_per_key &&
		    (kd_class_is_failure(v.cls) || (gaps && (v.cls == KD_C_GAP || v.cls == KD_C_GAP_PRIV))))
			keep(&e, dir, ks, &prog, ps, &v, json || !kd_class_is_failure(v.cls));
		if (have_one)
			break;
	}
	t.seconds = now_s() - start;
	if (json)
		summary_json(&t, seed);
	else
		summary_text(&t, seed);
	kd_env_close(&e);
	return failures ? 1 : 0;
}
