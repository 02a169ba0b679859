/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny assert harness for unit tests (in the spirit of libperf's
 * include/internal/tests.h). Each test binary runs its cases, prints one
 * line per failed check and a summary, and exits 0 (all passed), 1 (a
 * failure) or 77 (skipped).
 */
#ifndef PERFSPY_TEST_H
#define PERFSPY_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failed_checks;
static int test_checks;

#define T(cond)                                                              \
	do {                                                                 \
		test_checks++;                                               \
		if (!(cond)) {                                               \
			test_failed_checks++;                                \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__,       \
				__LINE__, #cond);                            \
		}                                                            \
	} while (0)

#define T_EQ_INT(a, b)                                                       \
	do {                                                                 \
		long long _a = (long long)(a), _b = (long long)(b);          \
		test_checks++;                                               \
		if (_a != _b) {                                              \
			test_failed_checks++;                                \
			fprintf(stderr, "FAIL %s:%d: %s == %s (%lld != %lld)\n", \
				__FILE__, __LINE__, #a, #b, _a, _b);         \
		}                                                            \
	} while (0)

#define T_EQ_STR(a, b)                                                       \
	do {                                                                 \
		const char *_a = (a), *_b = (b);                             \
		test_checks++;                                               \
		if (!_a || !_b || strcmp(_a, _b)) {                          \
			test_failed_checks++;                                \
			fprintf(stderr, "FAIL %s:%d: %s == %s (\"%s\" != \"%s\")\n", \
				__FILE__, __LINE__, #a, #b, _a ? _a : "(null)", \
				_b ? _b : "(null)");                         \
		}                                                            \
	} while (0)

#define TEST_MAIN_END()                                                      \
	do {                                                                 \
		fprintf(stderr, "%s: %d checks, %d failed\n", __FILE__,     \
			test_checks, test_failed_checks);                    \
		return test_failed_checks ? 1 : 0;                          \
	} while (0)

#endif
