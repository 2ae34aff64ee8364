/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file.h - reading a whole object file without ever blocking on what the
 * path names.
 */
#ifndef NCCLBPF_FILE_H
#define NCCLBPF_FILE_H

#include <stddef.h>

/*
 * Reads the regular file at path into a malloc'ed buffer (*buf, *len; at
 * least one byte allocated, so an empty file is a valid, non-NULL buffer).
 * The open never waits for a writer (O_NONBLOCK: a FIFO or a device is
 * refused after fstat, not waited on) and never takes a terminal; a file
 * larger than max is refused before reading.  Returns 0 or a negative
 * errno with the message through nbpf_err ("PATH: not a regular file",
 * "PATH: cannot open: ...").  A path on a hung network mount can still
 * block in the kernel: callers read without holding locks others need.
 */
int nbpf_read_regular_file(const char *path, size_t max, void **buf, size_t *len);

#endif
