// SPDX-License-Identifier: GPL-2.0
/*
 * A shared library whose two busy functions are static, for
 * tests/e2e/run-unnamed.sh: stripped, they have no symbol (only
 * lib_work is exported) and must each come out as one stable
 * `LIB+0xOFF` frame; with a separate debug file they must come out with
 * file:line and the inlined mix() under spin_a.
 */
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define INLINE static inline __attribute__((always_inline))

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

INLINE unsigned long mix(unsigned long x)
{
	return x * 2654435761u ^ (x >> 7);
}

NOINLINE static void spin_a(double s)
{
	double end = now() + s;
	unsigned long x = 1;
	int i;

	while (now() < end) {
		for (i = 0; i < 10000; i++)
			x = mix(x);
		sink = x;
	}
}

NOINLINE static void spin_b(double s)
{
	double end = now() + s;
	unsigned long x = 3;
	int i;

	while (now() < end) {
		for (i = 0; i < 10000; i++)
			x = x * 3 + 1;
		sink = x;
	}
}

void lib_work(double s)
{
	spin_a(s / 2);
	spin_b(s / 2);
	sink++;
}
