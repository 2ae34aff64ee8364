// SPDX-License-Identifier: MIT
/*
 * output.c - what the command writes: the one error path (cli_err) and,
 * under -j, the one JSON document on stdout.
 *
 * bpftool's rule: under -j, stdout carries exactly one JSON document, also
 * when the verb fails.  Verbs write their document to stdout as usual; the
 * writer holds it until the verb returns (stdout is a memory stream, and
 * fd 1 points at stderr meanwhile, so a child process or a stray write
 * cannot break the document) and cli_err records messages instead of
 * printing them.  cli_doc_end then writes:
 *
 *   no error                 the verb's document as it is
 *   an error, no results     {"error":"MSG"}, with "errors":[...] when several
 *   errors beside results    the results, with {"error":"MSG"} elements added
 *                            to a list, or an "error" member to an object
 *
 * A verb that reports as it goes (top, observe, export to stdout) calls
 * cli_json_stream first: stdout is then a stream of documents, one per
 * line, and an error is a {"error":"MSG"} line of its own.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static struct {
	bool json;      /* -j or -p */
	bool held;      /* stdout is the memory stream */
	FILE *real;     /* the process's stdout while held */
	int saved_fd;   /* fd 1 while it points at stderr */
	char *buf;
	size_t len;
	char **errs;
	size_t n_errs;
} doc = { .saved_fd = -1 };

void cli_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void cli_json_str_or_null(FILE *f, const char *s)
{
	if (s)
		cli_json_str(f, s);
	else
		fputs("null", f);
}

static void error_line(FILE *f, const char *msg)
{
	fputs("{\"error\":", f);
	cli_json_str(f, msg);
	fputs("}\n", f);
	fflush(f);
}

int cli_err(int rc, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!doc.json) {
		fprintf(stderr, "ncclbpf: %s\n", msg);
	} else if (doc.held) {
		char **e = realloc(doc.errs, (doc.n_errs + 1) * sizeof(*e));

		if (e && (e[doc.n_errs] = strdup(msg))) {
			doc.errs = e;
			doc.n_errs++;
		} else if (e) {
			doc.errs = e;
		}
	} else {
		error_line(stdout, msg);
	}
	return rc;
}

int cli_usage_error(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return cli_err(CLI_USAGE, "%s", buf);
}

void cli_doc_begin(bool json)
{
	FILE *mem;

	doc.json = json;
	if (!json)
		return;
	fflush(stdout);
	mem = open_memstream(&doc.buf, &doc.len);
	if (!mem)
		return; /* unheld: errors become lines of their own */
	doc.saved_fd = dup(STDOUT_FILENO);
	if (doc.saved_fd >= 0 && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		close(doc.saved_fd);
		doc.saved_fd = -1;
	}
	/* glibc's stdout is a variable its manual lets programs assign. */
	doc.real = stdout;
	stdout = mem;
	doc.held = true;
}

/* Gives stdout and fd 1 back; what the verb wrote is in doc.buf. */
static void release(void)
{
	if (!doc.held)
		return;
	fclose(stdout);
	stdout = doc.real;
	if (doc.saved_fd >= 0) {
		dup2(doc.saved_fd, STDOUT_FILENO);
		close(doc.saved_fd);
		doc.saved_fd = -1;
	}
	doc.held = false;
}

static void write_errors(FILE *f, bool as_elements)
{
	if (as_elements) {
		for (size_t i = 0; i < doc.n_errs; i++) {
			fputs(",{\"error\":", f);
			cli_json_str(f, doc.errs[i]);
			fputc('}', f);
		}
		return;
	}
	fputs("\"error\":", f);
	cli_json_str(f, doc.errs[0]);
	if (doc.n_errs < 2)
		return;
	fputs(",\"errors\":[", f);
	for (size_t i = 0; i < doc.n_errs; i++) {
		if (i)
			fputc(',', f);
		cli_json_str(f, doc.errs[i]);
	}
	fputc(']', f);
}

/* True when s (n bytes, trimmed) is [] or {} with only blanks inside. */
static bool no_results(const char *s, size_t n)
{
	if (!n)
		return true;
	if (n < 2 || !((s[0] == '[' && s[n - 1] == ']') || (s[0] == '{' && s[n - 1] == '}')))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (s[i] != ' ' && s[i] != '\n' && s[i] != '\t')
			return false;
	return true;
}

void cli_json_stream(const struct cli *c)
{
	if (!c->json || !doc.held)
		return;
	release();
	fwrite(doc.buf, 1, doc.len, stdout);
	fflush(stdout);
	doc.len = 0;
	/* Errors recorded before the stream began come first, as lines. */
	for (size_t i = 0; i < doc.n_errs; i++) {
		error_line(stdout, doc.errs[i]);
		free(doc.errs[i]);
	}
	doc.n_errs = 0;
}

void cli_doc_end(void)
{
	const char *s;
	size_t n;
	FILE *f;

	if (!doc.held)
		goto out;
	release();
	f = stdout;
	s = doc.buf ? doc.buf : "";
	n = doc.len;
	while (n && strchr(" \t\r\n", s[n - 1]))
		n--;
	while (n && strchr(" \t\r\n", *s))
		s++, n--;
	if (!doc.n_errs) {
		/* Every verb writes a document; an empty one would be no JSON at all. */
		fputs(n ? "" : "null", f);
		fwrite(s, 1, n, f);
	} else if (no_results(s, n)) {
		fputc('{', f);
		write_errors(f, false);
		fputc('}', f);
	} else if (s[0] == '[') {
		fwrite(s, 1, n - 1, f);
		write_errors(f, true);
		fputc(']', f);
	} else if (s[0] == '{') {
		fwrite(s, 1, n - 1, f);
		fputc(',', f);
		write_errors(f, false);
		fputc('}', f);
	} else {
		fputs("{\"result\":", f);
		fwrite(s, 1, n, f);
		fputc(',', f);
		write_errors(f, false);
		fputc('}', f);
	}
	fputc('\n', f);
	fflush(f);
out:
	for (size_t i = 0; i < doc.n_errs; i++)
		free(doc.errs[i]);
	free(doc.errs);
	free(doc.buf);
	doc.errs = NULL;
	doc.buf = NULL;
	doc.n_errs = doc.len = 0;
}
