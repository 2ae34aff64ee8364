// SPDX-License-Identifier: MIT
/*
 * json_pretty.c - `-p`: the verbs write compact JSON to stdout as usual; a
 * pipe put in place of fd 1 carries it to a thread that indents it onto the
 * real stdout.  A filter rather than a buffer, so `top -p` still streams one
 * sample at a time, and no verb needs a second writer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"

struct pretty {
	FILE *out;
	int in_fd, saved_fd;
	int depth;
	bool in_str, esc, open; /* open: after { or [, the newline is pending */
	pthread_t thr;
};

static struct pretty pp = { .in_fd = -1, .saved_fd = -1 };

static void indent(struct pretty *p)
{
	fputc('\n', p->out);
	for (int i = 0; i < p->depth; i++)
		fputs("    ", p->out);
}

static void feed(struct pretty *p, char ch)
{
	if (p->in_str) {
		fputc(ch, p->out);
		if (p->esc)
			p->esc = false;
		else if (ch == '\\')
			p->esc = true;
		else if (ch == '"')
			p->in_str = false;
		return;
	}
	if (ch == ' ' || ch == '\t' || ch == '\r' || (ch == '\n' && p->depth))
		return;
	if (p->open) {
		p->open = false;
		if (ch == '}' || ch == ']') {
			p->depth--;
			fputc(ch, p->out);
			return;
		}
		indent(p);
	}
	switch (ch) {
	case '{':
	case '[':
		fputc(ch, p->out);
		p->depth++;
		p->open = true;
		break;
	case '}':
	case ']':
		p->depth--;
		indent(p);
		fputc(ch, p->out);
		break;
	case ',':
		fputc(ch, p->out);
		indent(p);
		break;
	case ':':
		fputs(": ", p->out);
		break;
	case '"':
		p->in_str = true;
		fputc(ch, p->out);
		break;
	case '\n': /* between documents (top's samples) */
		fputc('\n', p->out);
		fflush(p->out);
		break;
	default:
		fputc(ch, p->out);
	}
}

static void *pump(void *arg)
{
	struct pretty *p = arg;
	char buf[4096];
	ssize_t n;

	while ((n = read(p->in_fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t i = 0; i < n; i++)
			feed(p, buf[i]);
	}
	fflush(p->out);
	return NULL;
}

int cli_pretty_begin(void)
{
	int fds[2];

	fflush(stdout);
	if (pipe(fds))
		return -errno;
	pp.saved_fd = dup(STDOUT_FILENO);
	if (pp.saved_fd < 0 || !(pp.out = fdopen(pp.saved_fd, "w")))
		goto fail;
	pp.in_fd = fds[0];
	if (dup2(fds[1], STDOUT_FILENO) < 0)
		goto fail;
	close(fds[1]);
	if (pthread_create(&pp.thr, NULL, pump, &pp)) {
		dup2(pp.saved_fd, STDOUT_FILENO);
		errno = EAGAIN;
		goto fail_restored;
	}
	return 0;
fail:
	close(fds[1]);
fail_restored:
	{
		int err = -errno;

		close(fds[0]);
		if (pp.out)
			fclose(pp.out);
		else if (pp.saved_fd >= 0)
			close(pp.saved_fd);
		pp.out = NULL;
		return err;
	}
}

void cli_pretty_end(void)
{
	if (!pp.out)
		return;
	fflush(stdout);
	/* Closing our end of the pipe ends the pump's read loop. */
	dup2(pp.saved_fd, STDOUT_FILENO);
	pthread_join(pp.thr, NULL);
	close(pp.in_fd);
	fclose(pp.out);
	pp.out = NULL;
}
