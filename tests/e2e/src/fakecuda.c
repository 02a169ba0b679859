// SPDX-License-Identifier: GPL-2.0
/*
 * e2e: a stand-in for the CUDA runtime, built at test time as
 * libfakecuda.so, so that `perfspy report`'s CUDA rules can be checked
 * without a GPU: cudaLaunchKernel and cudaStreamSynchronize spin for a
 * fixed number of iterations (the real ones spend their CPU time in the
 * driver below them; here the named function itself is the leaf).
 * SPIN_FRAME keeps a frame pointer in these leaves (see common.h).
 */
#include "common.h"

NOINLINE int cudaLaunchKernel(int iters)
{
	SPIN_FRAME;
	for (int i = 0; i < iters; i++)
		sink += (uint64_t)i * 31;
	return 0;
}

NOINLINE int cudaStreamSynchronize(int iters)
{
	SPIN_FRAME;
	for (int i = 0; i < iters; i++)
		sink += (uint64_t)i * 37;
	return 0;
}
