/*
 * emu_cli.c - loading the plugin for the CLI's sim and bench verbs.
 */
#include "emu_cli.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *g_warn;
static size_t g_warnlen;

static void cli_logger(int level, unsigned long flags, const char *file, int line,
		       const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	(void)flags; (void)file; (void)line;
	if (level != 2)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_warn && strlen(g_warn) + strlen(msg) + 2 < g_warnlen) {
		strcat(g_warn, msg);
		strcat(g_warn, "\n");
	}
}

#ifndef NCCLBPF_REL_LIBDIR
#define NCCLBPF_REL_LIBDIR "../lib"
#endif
#ifndef NCCLBPF_FULL_LIBDIR
#define NCCLBPF_FULL_LIBDIR "/usr/local/lib"
#endif

/*
 * NCCLBPF_PLUGIN, else the plugin next to the binary (a build tree), else
 * the library directory of the install tree the binary sits in (found from
 * the binary, so a relocated or staged install finds its own plugin), else
 * the library directory the build was configured to install into.
 */
int emu_cli_plugin_path(char *out, size_t n)
{
	const char *env = getenv("NCCLBPF_PLUGIN");
	char exe[4096];
	const char *dir;
	ssize_t len;

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return access(out, R_OK) ? -ENOENT : 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0) {
		exe[len] = 0;
		dir = dirname(exe);
		snprintf(out, n, "%s/libnccl-ncclbpf.so", dir);
		if (!access(out, R_OK))
			return 0;
		snprintf(out, n, "%s/" NCCLBPF_REL_LIBDIR "/libnccl-ncclbpf.so", dir);
		if (!access(out, R_OK))
			return 0;
	}
	snprintf(out, n, NCCLBPF_FULL_LIBDIR "/libnccl-ncclbpf.so");
	return access(out, R_OK) ? -ENOENT : 0;
}

/* 0 when policy loaded; else -EINVAL with why in warn. */
static int policy_loaded(const struct emu_plugin *pl, const char *policy, char *warn,
			 size_t warnlen)
{
	struct ncclbpf_load_status st;
	int err = emu_load_status(pl, 0, &st);

	if (!err && !st.err)
		return 0;
	if (warn && !err)
		snprintf(warn, warnlen, "%s", st.message);
	else if (warn && err == -ENOSYS)
		snprintf(warn, warnlen, "the plugin library reports no load status (an older build?)");
	else if (warn)
		snprintf(warn, warnlen, "%s: not loaded", policy);
	return -EINVAL;
}

int emu_cli_tuner_open(struct emu_plugin *pl, struct emu_tuner *t, const char *policy,
		       int max_version, const struct emu_topo *topo, char *warn, size_t warnlen)
{
	char path[4096], err[512];

	if (emu_cli_plugin_path(path, sizeof(path))) {
		if (warn)
			snprintf(warn, warnlen, "cannot find libnccl-ncclbpf.so (set NCCLBPF_PLUGIN)");
		return -ENOENT;
	}
	if (policy)
		setenv("NCCLBPF_POLICY", policy, 1);
	else
		unsetenv("NCCLBPF_POLICY");
	if (!getenv("NCCLBPF_LOG"))
		setenv("NCCLBPF_LOG", "warn", 1);
	if (warn && warnlen)
		warn[0] = 0;
	g_warn = warn;
	g_warnlen = warnlen;
	if (emu_open(pl, EMU_TUNER, path, max_version, err, sizeof(err))) {
		if (warn)
			snprintf(warn, warnlen, "%s", err);
		return -ENOENT;
	}
	if (emu_tuner_init(t, pl, 0x5eed5eedull, topo, cli_logger) || !t->ctx) {
		if (warn)
			snprintf(warn, warnlen, "tuner init failed");
		emu_close(pl);
		return -EINVAL;
	}
	if (policy && policy_loaded(pl, policy, warn, warnlen)) {
		emu_cli_tuner_close(pl, t);
		return -EINVAL;
	}
	return 0;
}

void emu_cli_tuner_close(struct emu_plugin *pl, struct emu_tuner *t)
{
	if (t->ctx)
		emu_tuner_fini(t);
	emu_close(pl);
	g_warn = NULL;
}
