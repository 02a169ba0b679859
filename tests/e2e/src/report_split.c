// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload for `perfspy report`: CPU time split across categories by
 * construction, measured on each thread's own CPU clock (so the split
 * holds however the threads are scheduled):
 *   "launcher" thread: 0.6 s in cudaLaunchKernel, then 0.2 s in
 *                      cudaStreamSynchronize (libfakecuda.so)
 *   "allocator" thread: 0.8 s in malloc/free (glibc)
 *   main thread:       0.4 s in compute() (plain native code)
 * Of 2.0 s of CPU: CUDA launch 30%, CUDA sync 10%, allocator 40%, other
 * native 20%. Time outside the named functions (loop control, clock
 * reads) is kept small: a clock read per ~1 ms of work, and the
 * allocator loop only indexes precomputed sizes.
 * Usage: report_split [scale]   (scales every budget; default 1)
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include "common.h"

int cudaLaunchKernel(int iters);
int cudaStreamSynchronize(int iters);

static double scale = 1.0;

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE static void launch_loop(double until)
{
	do {
		for (int i = 0; i < 20; i++)
			cudaLaunchKernel(20000);
	} while (cpu_s() < until);
}

NOINLINE static void sync_loop(double until)
{
	do {
		for (int i = 0; i < 20; i++)
			cudaStreamSynchronize(20000);
	} while (cpu_s() < until);
}

static void *launcher(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "launcher");
	launch_loop(0.6 * scale);
	sync_loop(0.8 * scale);
	return NULL;
}

#define NALLOC 256

/* Sizes from 1 to 16 KiB: past the tcache (1032 bytes), so malloc and
 * free walk bins and coalesce, and the time is theirs, not the loop's. */
NOINLINE static void alloc_loop(double until)
{
	static size_t sizes[NALLOC], order[NALLOC];
	void *p[NALLOC];
	uint64_t x = 88172645463325252ULL;
	int i;

	for (i = 0; i < NALLOC; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		sizes[i] = 1024 + x % (15 * 1024);
		order[i] = (size_t)i * 97 % NALLOC; /* 97 is prime to 256 */
	}
	do {
		for (int round = 0; round < 16; round++) {
			for (i = 0; i < NALLOC; i++)
				p[i] = malloc(sizes[i]);
			for (i = 0; i < NALLOC; i++)
				free(p[order[i]]);
		}
	} while (cpu_s() < until);
}

static void *allocator(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "allocator");
	alloc_loop(0.8 * scale);
	return NULL;
}

NOINLINE static void compute(double until)
{
	SPIN_FRAME;
	do {
		for (int i = 0; i < 200000; i++)
			sink += (uint64_t)i * 7;
	} while (cpu_s() < until);
}

int main(int argc, char **argv)
{
	pthread_t t1, t2;

	if (argc > 1)
		scale = atof(argv[1]);
	/* Keep the heap from shrinking and growing between rounds (no
	 * brk/mmap syscalls inside the allocator's time). */
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
	pthread_create(&t1, NULL, launcher, NULL);
	pthread_create(&t2, NULL, allocator, NULL);
	compute(0.4 * scale);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	printf("done %g\n", scale);
	return 0;
}
