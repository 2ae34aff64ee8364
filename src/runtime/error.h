/*
 * error.h - the thread-local "last error" behind ncclbpf_errmsg().
 *
 * Every failing runtime function records one message and returns the
 * negative errno it was given, so a failure path is one line:
 *     return nbpf_err(-EINVAL, "%s: section %u: bad offset", name, idx);
 */
#ifndef NCCLBPF_ERROR_H
#define NCCLBPF_ERROR_H

#include <stdarg.h>

__attribute__((format(printf, 2, 3)))
int nbpf_err(int err, const char *fmt, ...);
int nbpf_verr(int err, const char *fmt, va_list ap);
void nbpf_err_clear(void);

/* Runtime diagnostics and bpf_trace_printk output go through the host logger. */
__attribute__((format(printf, 2, 3)))
void nbpf_log(int level, const char *fmt, ...);

#endif
