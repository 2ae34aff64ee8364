/*
 * fuzz_loader.c - fuzz target for the object loader: any byte string must
 * open cleanly or fail with a message, never crash, hang or leak.
 *
 * Maps of objects that open are created in a private directory, so a long
 * run leaves nothing in the user's map directory.  A mutated max_entries
 * can legitimately ask for gigabytes of map; the file size limit (with
 * SIGXFSZ ignored) turns that into a clean map-creation failure, which
 * keeps every iteration fast and exercises that error path too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncclbpf/runtime.h"

static char map_dir[64];

static void remove_dir(void)
{
	rmdir(map_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ncclbpf_open_opts opts = NCCLBPF_OPTS_INIT(ncclbpf_open_opts, .map_dir = map_dir,
							  .object_name = "fuzz");
	struct ncclbpf_object *obj = NULL;

	if (!map_dir[0]) {
		struct rlimit rl = { 64u << 20, 64u << 20 };

		snprintf(map_dir, sizeof(map_dir), "/tmp/ncclbpf-fuzz-loader-%d", (int)getpid());
		atexit(remove_dir);
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	if (ncclbpf_object__open_mem(data, size, &opts, &obj) == 0) {
		/* Touch what a host would read. */
		for (size_t i = 0; i < ncclbpf_object__prog_count(obj); i++) {
			struct ncclbpf_program *p = ncclbpf_object__prog(obj, i);
			const char *file, *text;
			uint32_t line;

			(void)ncclbpf_program__line(p, ncclbpf_program__insn_count(p) / 2, &file, &line,
						    &text);
		}
		ncclbpf_object__close(obj);
	} else if (!ncclbpf_errmsg()[0]) {
		fprintf(stderr, "open failed without a message\n");
		abort();
	}
	return 0;
}
