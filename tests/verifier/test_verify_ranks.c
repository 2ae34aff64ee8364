// SPDX-License-Identifier: MIT
/*
 * test_verify_ranks.c - every rank decides alike, whatever its load.
 *
 * The ranks of one job verify the same policy at the same moment, on
 * machines as loaded as training makes them; a policy accepted by some and
 * refused by others splits the job.  Here 4 processes (the ranks) verify
 * at once, with the plugin's options, while spinning processes keep every
 * CPU busy: a heavy but valid program (patho_gen.h, 614,942 instructions
 * processed) must be accepted by all, a too heavy one (3,400 forks of a
 * state of 8 full frames) refused by all with the same message, and each
 * with the same instructions processed and work.  With the old wall-clock
 * budget (1 s) ranks disagreed here.  No timing is asserted.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "host/hooks.h"
#include "patho_gen.h"
#include "verifier/verifier.h"

#define RANKS 4

static struct nbpf_insn prog[4096];

/* Keeps a CPU busy until killed, or for 120 s at most (the parent died). */
static void spin(void)
{
	volatile uint64_t x = 0;
	time_t end = time(NULL) + 120;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (time(NULL) < end)
		for (int i = 0; i < 1000000; i++)
			x += (uint64_t)i * x + 1;
	_exit(0);
}

/* One rank: verifies prog as the plugin does, writes "err processed work reason". */
static void rank(int fd, uint32_t n)
{
	struct ncclbpf_verify_opts vo = { .sz = sizeof(vo) };
	struct nbpf_verify_input in = { .insns = prog, .n_insns = n };
	struct ncclbpf_verify_result r;
	char line[512];
	int err = nbpf_verify_insns(&in, ncclbpf_hook_find("tuner"), &vo, &r);
	int len = snprintf(line, sizeof(line), "%d %u %llu %s", err, r.insns_processed,
			   (unsigned long long)r.work, err && r.n_findings ? r.findings[0].reason : "-");

	if (write(fd, line, (size_t)len) != len)
		_exit(2);
	_exit(0);
}

/* RANKS processes verify the first n instructions of prog at once; want NULL: accept. */
static void ranks_agree(uint32_t n, const char *want, const char *what)
{
	char got[RANKS][512];
	int fds[RANKS][2];
	pid_t pids[RANKS];

	for (int i = 0; i < RANKS; i++) {
		if (pipe(fds[i]) || (pids[i] = fork()) < 0) {
			CHECK_MSG(0, "%s: pipe/fork: %s", what, strerror(errno));
			return;
		}
		if (!pids[i]) {
			close(fds[i][0]);
			rank(fds[i][1], n);
		}
		close(fds[i][1]);
	}
	for (int i = 0; i < RANKS; i++) {
		ssize_t k = read(fds[i][0], got[i], sizeof(got[i]) - 1);
		int st = 0;

		got[i][k > 0 ? k : 0] = '\0';
		close(fds[i][0]);
		waitpid(pids[i], &st, 0);
		printf("%s, rank %d: %s\n", what, i, got[i]);
		CHECK_MSG(WIFEXITED(st) && !WEXITSTATUS(st), "%s: rank %d died", what, i);
		if (!want)
			CHECK_MSG(!strncmp(got[i], "0 ", 2), "%s: rank %d refused: %s", what, i, got[i]);
		else
			CHECK_MSG(strstr(got[i], want) != NULL, "%s: rank %d: %s", what, i, got[i]);
		CHECK_MSG(!strcmp(got[i], got[0]), "%s: rank %d decided \"%s\", rank 0 \"%s\"", what, i,
			  got[i], got[0]);
	}
}

int main(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int nspin = (int)(cpus > 0 ? 2 * cpus : 4);
	pid_t *spinners = calloc((size_t)nspin, sizeof(*spinners));

	if (!spinners)
		return 1;
	for (int i = 0; i < nspin; i++)
		if ((spinners[i] = fork()) == 0)
			spin();
	printf("verifier_ranks: %d ranks, %d spinning processes on %ld CPUs\n", RANKS, nspin, cpus);
	ranks_agree(patho_gen(prog, 8, 13, PATHO_SMALL_USES), NULL, "heavy, valid");
	ranks_agree(patho_forks(prog, 8, 3400), "program too complex: work budget exhausted",
		    "too heavy");
	for (int i = 0; i < nspin; i++)
		if (spinners[i] > 0) {
			kill(spinners[i], SIGKILL);
			waitpid(spinners[i], NULL, 0);
		}
	free(spinners);
	return check_summary("verifier_ranks");
}
