// SPDX-License-Identifier: GPL-2.0
/*
 * e2e: one source built into two shared libraries (run-behind.sh), each
 * with its own TWIN_TAG string of the same length: the code is the same
 * bytes at the same offsets in both, the files (and their build ids)
 * differ. A key of a frame's offset alone would take one library's
 * addresses for the other's.
 *   twin_run -> twin_outer -> twin_mid -> twin_leaf
 */
#include "common.h"

#ifndef TWIN_TAG
#define TWIN_TAG "a"
#endif

const char twin_tag[] = TWIN_TAG;

static NOINLINE void twin_leaf(int n)
{
	SPIN_FRAME;
	for (int i = 0; i < n; i++)
		sink += (uint64_t)i * 29;
}

static NOINLINE void twin_mid(int n)
{
	SPIN_FRAME;
	for (int i = 0; i < 4; i++)
		twin_leaf(n);
	sink += (uint64_t)n * 3;
}

static NOINLINE void twin_outer(int n)
{
	SPIN_FRAME;
	for (int i = 0; i < 4; i++)
		twin_mid(n);
	sink += 1;
}

/* Spins for @secs seconds. */
NOINLINE void twin_run(double secs)
{
	double end = now_s() + secs;

	while (now_s() < end)
		twin_outer(2000);
}
