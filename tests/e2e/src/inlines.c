// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload: a recursion whose call sits five inlined functions deep.
 *   main -> descend(6) -> in1 -> in2 -> in3 -> in4 -> in5 -> descend(5)
 *        -> ... -> descend(0) -> spin_leaf
 * Each return address into descend() is named as six frames (in5 inlined
 * into in4, ..., in1 into descend), and the same address comes back at
 * every level of every sample: the frame cache's memo hands out entries
 * of more frames than it copies as one block (MEMO_COPY in
 * libconv/frames/stacks.c), which the exact stacks below check.
 * Usage: inlines [seconds]
 */
#include "common.h"

SPINNER(spin_leaf, 2654435761u)

NOINLINE void descend(int depth, int n);

/* Each level does work after its call, so none is a tail call. */
static ALWAYS_INLINE void in5(int depth, int n)
{
	descend(depth - 1, n);
	sink++;
}

static ALWAYS_INLINE void in4(int depth, int n)
{
	in5(depth, n);
	sink += 2;
}

static ALWAYS_INLINE void in3(int depth, int n)
{
	in4(depth, n);
	sink += 3;
}

static ALWAYS_INLINE void in2(int depth, int n)
{
	in3(depth, n);
	sink += 4;
}

static ALWAYS_INLINE void in1(int depth, int n)
{
	in2(depth, n);
	sink += 5;
}

NOINLINE void descend(int depth, int n)
{
	SPIN_FRAME;
	if (depth > 0)
		in1(depth, n);
	else
		spin_leaf(n);
	sink++;
}

int main(int argc, char **argv)
{
	double end = now_s() + run_time(argc, argv, 1.0);

	while (now_s() < end)
		descend(6, 200000);
	return 0;
}
