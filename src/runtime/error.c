#include "error.h"

#include <stdio.h>
#include <string.h>

#include "ncclbpf/runtime.h"

static _Thread_local char last_msg[1024];
static _Thread_local int last_err;

int nbpf_verr(int err, const char *fmt, va_list ap)
{
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	last_err = err;
	return err;
}

int nbpf_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nbpf_verr(err, fmt, ap);
	va_end(ap);
	return err;
}

void nbpf_err_clear(void)
{
	last_msg[0] = '\0';
	last_err = 0;
}

const char *ncclbpf_errmsg(void)
{
	return last_msg;
}

int ncclbpf_errno(void)
{
	return last_err;
}

static void default_logger(int level, const char *msg)
{
	fprintf(stderr, "ncclbpf %s: %s\n", level <= NCCLBPF_LOG_WARN ? "WARN" : "INFO", msg);
}

static ncclbpf_log_fn logger = default_logger;

void ncclbpf_set_logger(ncclbpf_log_fn fn)
{
	__atomic_store_n(&logger, fn ? fn : default_logger, __ATOMIC_RELEASE);
}

void nbpf_log(int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	__atomic_load_n(&logger, __ATOMIC_ACQUIRE)(level, buf);
}
