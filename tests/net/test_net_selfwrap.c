// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_selfwrap.c - NCCLBPF_NET=inner:<this library> is refused at
 * init with an error naming the cause, never followed into a recursion
 * (each call calling itself until the stack overflows): by its short name
 * (libnccl-net-ncclbpf.so found on the library path), by its own path,
 * through a symbolic link, and as a copy of the file under another name.
 * Each case runs in a child, through a v11 and a v8 table; a plain inner
 * plugin still loads afterwards.
 *
 *   test_net_selfwrap <a plain inner plugin>
 */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "net_drv.h"

static char logged[4096];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	size_t n = strlen(logged);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(logged + n, sizeof(logged) - n, fmt, ap);
	va_end(ap);
	n = strlen(logged);
	if (n + 1 < sizeof(logged))
		strcat(logged, "\n");
}

/* 0: refused with the message (or, want_ok, loaded); else what went wrong. */
static int try_spec(const char *spec, int v, bool want_ok)
{
	nbpf_net_comm_config_t cfg = { .trafficClass = -1 };
	void *lib, *ctx = NULL;
	struct drv d;
	int r;

	setenv("NCCLBPF_NET", spec, 1);
	lib = drv_open(NET_PLUGIN);
	if (!lib || drv_bind(&d, lib, v))
		return 10;
	logged[0] = 0;
	r = v >= 11 ? DRV_T(&d, 11)->init(&ctx, 1, &cfg, logger, NULL) : DRV_T(&d, 8)->init(logger);
	if (want_ok) {
		if (r)
			return 11;
		if (v >= 11)
			DRV_T(&d, 11)->finalize(ctx);
		return 0;
	}
	if (!r) {
		fprintf(stderr, "%s: init succeeded through v%d\n", spec, v);
		return 12;
	}
	if (!strstr(logged, "cannot wrap itself") || !strstr(logged, "NCCLBPF_NET=")) {
		fprintf(stderr, "%s: no clear error through v%d; logged: %s\n", spec, v, logged);
		return 13;
	}
	return 0;
}

static int run_case(const char *spec, bool want_ok)
{
	int st = 0;
	pid_t pid = fork();

	if (pid == 0) {
		alarm(60);
		_exit(try_spec(spec, 11, want_ok) ?: try_spec(spec, 8, want_ok));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st))
		fprintf(stderr, "%s: killed by signal %d\n", spec, WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755), rc = 0;
	ssize_t n;

	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (in < 0 || out < 0)
		rc = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/ncclbpf-selfwrap-XXXXXX", link_path[300], copy_path[300], spec[700];

	if (argc != 2 || !mkdtemp(dir))
		return 2;
	snprintf(link_path, sizeof(link_path), "%s/libnccl-net-alias.so", dir);
	snprintf(copy_path, sizeof(copy_path), "%s/libnccl-net-copy.so", dir);
	CHECK(symlink(NET_PLUGIN, link_path) == 0);
	CHECK(copy_file(NET_PLUGIN, copy_path) == 0);

	/* The short name resolves through LD_LIBRARY_PATH to libnccl-net-ncclbpf.so, ourselves. */
	CHECK_EQ_U64(run_case("inner:ncclbpf", false), 0);
	snprintf(spec, sizeof(spec), "inner:%s", NET_PLUGIN);
	CHECK_EQ_U64(run_case(spec, false), 0);
	snprintf(spec, sizeof(spec), "inner:%s", link_path);
	CHECK_EQ_U64(run_case(spec, false), 0);
	snprintf(spec, sizeof(spec), "inner:%s", copy_path);
	CHECK_EQ_U64(run_case(spec, false), 0);
	snprintf(spec, sizeof(spec), "inner:%s", argv[1]);
	CHECK_EQ_U64(run_case(spec, true), 0);

	unlink(link_path);
	unlink(copy_path);
	rmdir(dir);
	return check_summary("net_selfwrap");
}
