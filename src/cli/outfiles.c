// SPDX-License-Identifier: MIT
/*
 * outfiles.c - where the verbs that write files (tune, report) put them:
 * a directory made on demand, a default name that a second run does not
 * overwrite, and the absolute path to say where it went.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

int cli_mkdirs(const char *dir)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);
	struct stat st;

	if (!n || n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	for (char *s = p + 1; ; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;

		*s = 0;
		if (mkdir(p, 0777) && errno != EEXIST)
			return -errno;
		*s = c;
		if (!c)
			break;
	}
	if (stat(dir, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

void cli_stamp_name(char *out, size_t n, const char *prefix, const char *suffix)
{
	time_t t = time(NULL);
	struct tm tm;
	char stamp[32] = "0";

	if (localtime_r(&t, &tm))
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(out, n, "%s%s%s", prefix, stamp, suffix);
}

const char *cli_abspath(const char *path, char *out, size_t n)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (realpath(path, out) && strlen(out) < n)
		return out;
	/* Not there yet: its directory's real path and the name. */
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	if (!dir[0])
		strcpy(dir, "/");
	if (!realpath(dir, out))
		return path;
	snprintf(out + strlen(out), n - strlen(out), "/%s", slash ? slash + 1 : path);
	return out;
}
