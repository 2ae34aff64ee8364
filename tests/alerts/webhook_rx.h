/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * webhook_rx.h - the receiving end of an alert webhook for tests: a
 * loopback listener the test made accepts one POST.
 */
#ifndef NCCLBPF_TEST_WEBHOOK_RX_H
#define NCCLBPF_TEST_WEBHOOK_RX_H

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Accepts one POST within 10 s, answers 200, returns the body (malloc'ed) or NULL. */
static char *webhook_receive(int lfd)
{
	struct pollfd pf = { .fd = lfd, .events = POLLIN };
	char *buf = calloc(1, 65536), *body;
	size_t len = 0;
	long want = -1;
	int fd;

	if (!buf || poll(&pf, 1, 10000) != 1 || (fd = accept(lfd, NULL, NULL)) < 0) {
		free(buf);
		return NULL;
	}
	while (len < 65535) {
		ssize_t n = recv(fd, buf + len, 65535 - len, 0);
		char *hdr_end;

		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = 0;
		hdr_end = strstr(buf, "\r\n\r\n");
		if (hdr_end && want < 0) {
			char *cl = strcasestr(buf, "Content-Length:");

			want = cl ? atol(cl + 15) : 0;
		}
		if (hdr_end && (long)(len - (size_t)(hdr_end + 4 - buf)) >= want)
			break;
	}
	send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 38, MSG_NOSIGNAL);
	close(fd);
	body = strstr(buf, "\r\n\r\n");
	body = body ? strdup(body + 4) : NULL;
	free(buf);
	return body;
}

#endif
