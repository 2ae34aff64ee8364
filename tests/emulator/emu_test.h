/*
 * emu_test.h - helpers shared by the emulator tests: a logger that records
 * what the plugin says through NCCL's logger, and policy paths.
 */
#ifndef NCCLBPF_EMU_TEST_H
#define NCCLBPF_EMU_TEST_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emulator/emu.h"

static pthread_mutex_t emu_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char emu_log_buf[1 << 16];
static int emu_log_warns;

__attribute__((unused)) static void emu_logger(int level, unsigned long flags, const char *file, int line,
		       const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	(void)flags; (void)file; (void)line;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&emu_log_lock);
	if (level == 2)
		emu_log_warns++;
	size_t len = strlen(emu_log_buf);
	if (len + strlen(msg) + 16 < sizeof(emu_log_buf))
		snprintf(emu_log_buf + len, sizeof(emu_log_buf) - len, "%s %s\n",
			 level == 2 ? "WARN" : "INFO", msg);
	pthread_mutex_unlock(&emu_log_lock);
	if (getenv("EMU_VERBOSE"))
		fprintf(stderr, "[%d] %s\n", level, msg);
}

__attribute__((unused)) static void emu_log_reset(void)
{
	pthread_mutex_lock(&emu_log_lock);
	emu_log_buf[0] = 0;
	emu_log_warns = 0;
	pthread_mutex_unlock(&emu_log_lock);
}

__attribute__((unused)) static double emu_scale(void)
{
	const char *s = getenv("NCCLBPF_TEST_SCALE");
	double v = s ? atof(s) : 1.0;

	return v > 0 ? v : 1.0;
}

/* Path of a test policy object built next to the test. */
__attribute__((unused)) static const char *emu_policy(const char *name)
{
	static char buf[8][1024];
	static int i;
	char *b = buf[i++ % 8];

	snprintf(b, 1024, "%s/%s.bpf.o", EMU_BPF_DIR, name);
	return b;
}

__attribute__((unused)) static void emu_set_policy(const char *spec)
{
	if (spec)
		setenv("NCCLBPF_POLICY", spec, 1);
	else
		unsetenv("NCCLBPF_POLICY");
}

#endif
