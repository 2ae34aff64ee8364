/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file.c - whole-file reads for the loader and the host (see file.h).
 */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

int nbpf_read_regular_file(const char *path, size_t max, void **buf, size_t *len)
{
	uint8_t *b = NULL;
	struct stat st;
	size_t got = 0;
	int fd, err = 0;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return nbpf_err(-errno, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		err = nbpf_err(-errno, "%s: cannot stat: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = nbpf_err(-EINVAL, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		err = nbpf_err(-EFBIG, "%s: %lld bytes is too large for a BPF object", path,
			       (long long)st.st_size);
		goto out;
	}
	b = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!b) {
		err = nbpf_err(-ENOMEM, "%s: out of memory", path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, b + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = nbpf_err(r < 0 ? -errno : -EIO, "%s: read failed%s%s", path,
				       r < 0 ? ": " : " (file shrank)", r < 0 ? strerror(errno) : "");
			goto out;
		}
		got += (size_t)r;
	}
	*buf = b;
	*len = got;
	b = NULL;
out:
	free(b);
	close(fd);
	return err;
}
