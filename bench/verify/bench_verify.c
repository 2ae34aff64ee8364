/*
 * bench_verify.c - verification time of BPF objects' programs.
 *
 * usage: bench_verify [-n REPEAT] [-p] OBJ...
 *
 * For each program of each object: the verdict, instructions, instructions
 * processed, states, and two medians over REPEAT verifications (default
 * 50) of the full ncclbpf_program__verify path:
 *   first  - the object-wide write-set pass cache emptied before each run,
 *            i.e. what loading a new object costs (the pass covers every
 *            program of the object);
 *   repeat - the write set cached, as for an object's second program.
 * Output: one line per program, then the worst medians.
 *
 * -p adds the generated shapes built to be slow to verify
 * (tests/verifier/patho_gen.h), verified through nbpf_verify_insns with the
 * default budgets: median over min(REPEAT, 5) runs of the wall and the
 * thread's CPU time, the work units and the CPU time per unit (what the
 * work budget's default is calibrated on), and the verdict.  They are not
 * part of the worst medians of the objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/hooks.h"
#include "ncclbpf/runtime.h"
#include "verifier/verifier.h"

#include "../bench_util.h"
#include "patho_gen.h"

/* The verifying thread's CPU time: what the verifier costs, whatever the machine's load. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void bench_shapes(int repeat)
{
	static const struct {
		const char *name;
		int depth, diamonds, uses;
		bool outer;
	} shapes[] = {
		{ "innermost-13", 8, 13, PATHO_SMALL_USES, false },
		{ "innermost-13-long", 8, 13, PATHO_LARGE_USES, false },
		{ "outer-9", 8, 9, 1, true },
		{ "outer-13", 8, 13, 1, true },
		{ "forks-3400", 8, 3400, 0, false },
	};
	static struct nbpf_insn p[4096];

	if (repeat > 5)
		repeat = 5;
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t n = shapes[s].uses ? patho_gen2(p, shapes[s].depth, shapes[s].diamonds,
							 shapes[s].uses, shapes[s].outer)
					    : patho_forks(p, shapes[s].depth, shapes[s].diamonds);
		struct nbpf_verify_input in = { .insns = p, .n_insns = n };
		struct ncclbpf_verify_result res;
		uint64_t t[5], c[5];
		int err = 0;

		for (int r = 0; r < repeat; r++) {
			uint64_t t0 = now_ns(), c0 = cpu_ns();

			err = nbpf_verify_insns(&in, ncclbpf_hook_find("tuner"), NULL, &res);
			t[r] = now_ns() - t0;
			c[r] = cpu_ns() - c0;
			if (r + 1 < repeat)
				free(res.findings);
		}
		qsort(t, (size_t)repeat, sizeof(*t), cmp_u64);
		qsort(c, (size_t)repeat, sizeof(*c), cmp_u64);
		printf("%-26s %-27s %-8s %4u insns %7u processed %5u states %8llu work %9.1f ms (cpu %7.1f ms, %5.1f ns/unit)  %s\n",
		       "(generated)", shapes[s].name, err ? "rejected" : "accepted", n,
		       res.insns_processed, res.states, (unsigned long long)res.work,
		       (double)t[repeat / 2] / 1e6, (double)c[repeat / 2] / 1e6,
		       res.work ? (double)c[repeat / 2] / (double)res.work : 0.0,
		       err && res.n_findings ? res.findings[0].reason : "");
		free(res.findings);
	}
}

int main(int argc, char **argv)
{
	int repeat = 50, rc = 0;
	bool shapes = false;
	uint64_t worst = 0, worst_first = 0;

	for (int i = 1; i < argc; i++) {
		struct ncclbpf_object *obj;

		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			repeat = atoi(argv[++i]);
			if (repeat < 1)
				repeat = 1;
			continue;
		}
		if (!strcmp(argv[i], "-p")) {
			shapes = true;
			continue;
		}
		if (ncclbpf_object__open_file(argv[i], NULL, &obj)) {
			fprintf(stderr, "bench_verify: %s: %s\n", argv[i], ncclbpf_errmsg());
			rc = 2;
			continue;
		}
		for (size_t p = 0; p < ncclbpf_object__prog_count(obj); p++) {
			struct ncclbpf_program *prog = ncclbpf_object__prog(obj, p);
			const struct ncclbpf_hook_desc *h =
				ncclbpf_hook_find_section(ncclbpf_program__section(prog));
			struct ncclbpf_verify_result res;
			uint64_t *t = calloc((size_t)repeat, sizeof(*t));
			uint64_t *t1 = calloc((size_t)repeat, sizeof(*t1));
			const char *base = strrchr(argv[i], '/');
			int err = 0;

			if (!h || !t || !t1) {
				free(t);
				free(t1);
				continue;
			}
			for (int r = 0; r < repeat; r++) {
				uint64_t t0;

				nbpf_verify_cache_flush();
				t0 = now_ns();
				err = ncclbpf_program__verify(prog, h, NULL, &res);
				t1[r] = now_ns() - t0;
				t0 = now_ns();
				err = ncclbpf_program__verify(prog, h, NULL, &res);
				t[r] = now_ns() - t0;
			}
			qsort(t, (size_t)repeat, sizeof(*t), cmp_u64);
			qsort(t1, (size_t)repeat, sizeof(*t1), cmp_u64);
			printf("%-26s %-27s %-8s %4zu insns %6u processed %5u states first %7.1f us repeat %7.1f us\n",
			       base ? base + 1 : argv[i], ncclbpf_program__name(prog),
			       err ? "rejected" : "accepted", ncclbpf_program__insn_count(prog),
			       res.insns_processed, res.states, (double)t1[repeat / 2] / 1000.0,
			       (double)t[repeat / 2] / 1000.0);
			if (t[repeat / 2] > worst)
				worst = t[repeat / 2];
			if (t1[repeat / 2] > worst_first)
				worst_first = t1[repeat / 2];
			free(t);
			free(t1);
		}
		ncclbpf_object__close(obj);
	}
	printf("worst median: first %.1f us, repeat %.1f us\n", (double)worst_first / 1000.0,
	       (double)worst / 1000.0);
	if (shapes)
		bench_shapes(repeat);
	return rc;
}
