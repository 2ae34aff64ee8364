/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * loop_test.h - what the closed-loop tests share.
 */
#ifndef NCCLBPF_LOOP_TEST_H
#define NCCLBPF_LOOP_TEST_H

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"

/*
 * Removes the exchange's records from a shared directory (each step's
 * summaries, the plan writes' votes and decisions) and checks there were
 * some, so the directory can go.
 */
static inline void loop_share_clean(const char *share)
{
	DIR *d = opendir(share);
	struct dirent *de;
	int files = 0;

	while (d && (de = readdir(d))) {
		char path[512];

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", share, de->d_name);
		files += !unlink(path);
	}
	if (d)
		closedir(d);
	CHECK(files > 0);
}

#endif
