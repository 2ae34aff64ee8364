/*
 * maps_test.h - shared bits of the map tests: iteration scaling and a
 * private map directory per test binary.
 */
#ifndef NCCLBPF_MAPS_TEST_H
#define NCCLBPF_MAPS_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclbpf/runtime.h"

static inline double test_scale(void)
{
	const char *s = getenv("NCCLBPF_TEST_SCALE");
	double v = s ? atof(s) : 1.0;

	return v > 0 ? v : 1.0;
}

static inline long scaled(long n)
{
	long v = (long)(n * test_scale());

	return v > 1 ? v : 1;
}

static char test_dir[64];

/* A fresh 0700 directory under /tmp for this binary's map files. */
static inline const char *test_map_dir(void)
{
	if (!test_dir[0]) {
		strcpy(test_dir, "/tmp/ncclbpf-maptest-XXXXXX");
		if (!mkdtemp(test_dir)) {
			perror("mkdtemp");
			exit(2);
		}
	}
	return test_dir;
}

static inline void test_map_dir_cleanup(void)
{
	if (test_dir[0])
		rmdir(test_dir); /* fails (and says so via the test) if files leaked */
}

static inline struct ncclbpf_map *mk(const char *name, enum ncclbpf_map_type type, uint32_t ks,
				     uint32_t vs, uint32_t max)
{
	struct ncclbpf_map_create_opts o = { .sz = sizeof(o), .dir = test_map_dir() };
	struct ncclbpf_map *m = NULL;
	int err = ncclbpf_map__create(name, type, ks, vs, max, &o, &m);

	if (err)
		fprintf(stderr, "create %s: %d %s\n", name, err, ncclbpf_errmsg());
	return m;
}

#endif
