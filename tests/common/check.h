/*
 * check.h - the few assertion macros the C tests use.
 *
 * A test binary calls CHECK*() as often as it likes and ends with
 * `return check_summary("name");`, which prints "N passed, N failed" and
 * returns nonzero if anything failed, so ctest reports it.
 */
#ifndef NCCLBPF_TEST_CHECK_H
#define NCCLBPF_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond) do { \
	if (cond) check_passed++; \
	else { check_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define CHECK_MSG(cond, ...) do { \
	if (cond) check_passed++; \
	else { check_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
	       fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
} while (0)

#define CHECK_EQ_U64(a, b) do { \
	uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b); \
	if (_a == _b) check_passed++; \
	else { check_failed++; fprintf(stderr, "%s:%d: CHECK failed: %s == %s (0x%" PRIx64 " != 0x%" PRIx64 ")\n", \
				       __FILE__, __LINE__, #a, #b, _a, _b); } \
} while (0)

#define CHECK_STR_CONTAINS(hay, needle) do { \
	const char *_h = (hay), *_n = (needle); \
	if (_h && strstr(_h, _n)) check_passed++; \
	else { check_failed++; fprintf(stderr, "%s:%d: CHECK failed: \"%s\" does not contain \"%s\"\n", \
				       __FILE__, __LINE__, _h ? _h : "(null)", _n); } \
} while (0)

static inline int check_summary(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
