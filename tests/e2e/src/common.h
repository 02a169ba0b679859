/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the e2e workloads.  The workloads are recorded with
 * `perf record -g` (frame-pointer callchains), so every function on a
 * expected stack must keep its frame: NOINLINE stops inlining and cloning
 * (a clone would be named "f.constprop.0"), and SPIN_FRAME gives leaf
 * functions a stack slot, because gcc 12 omits the frame pointer in a leaf
 * that needs no frame even under -mno-omit-leaf-frame-pointer.
 */
#ifndef E2E_COMMON_H
#define E2E_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
#define ALWAYS_INLINE inline __attribute__((always_inline))

#define SPIN_FRAME volatile uint64_t frame_slot_ = 0; (void)frame_slot_

static volatile uint64_t sink;

/* A leaf that spins @n rounds, kept apart from other spinners by @mul
 * (NOINLINE and SPIN_FRAME: its own frame in every stack). */
#define SPINNER(spin, mul)					\
	NOINLINE void spin(int n)				\
	{							\
		SPIN_FRAME;					\
		for (int i = 0; i < n; i++)			\
			sink += (uint64_t)i * (mul);		\
	}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* run time in seconds: argv[1] or the default */
static inline double run_time(int argc, char **argv, double dflt)
{
	return argc > 1 ? atof(argv[1]) : dflt;
}

#endif
