// SPDX-License-Identifier: GPL-2.0
/*
 * libwork.so for tests/e2e/run-python.sh: CPU-bound leaves that workload.py
 * calls through ctypes (which releases the GIL around the call).  One
 * function per Python call chain, so the leaf of a sample tells which chain
 * must sit above it.  Built with -O2 -fomit-frame-pointer: the frames below
 * the Python ones have no frame pointer, as in real extension modules.  The
 * constants differ so that gcc's identical-code folding keeps five functions.
 */
#include <stdint.h>

#define MIX(name, mul, rot)                                                    \
	uint64_t name(uint64_t seed, uint64_t iters)                           \
	{                                                                      \
		uint64_t h = seed ^ 0xcbf29ce484222325ull;                     \
		for (uint64_t i = 0; i < iters; i++) {                         \
			h ^= i;                                                \
			h *= mul;                                              \
			h = (h << rot) | (h >> (64 - rot));                    \
		}                                                              \
		return h;                                                      \
	}

MIX(hash_rec, 0x100000001b3ull, 13)
MIX(hash_nested, 0x9e3779b97f4a7c15ull, 17)
MIX(hash_gen, 0xff51afd7ed558ccdull, 23)
MIX(hash_main, 0xc4ceb9fe1a85ec53ull, 29)
MIX(hash_child, 0x2545f4914f6cdd1dull, 31)

/*
 * burn_cpu (tests/e2e/run-idle.sh, src/py/idle.py): hash until the calling
 * thread has run @ns of CPU time, in one call, so that the thread's CPU
 * share is exact on a busy machine (preemption does not count) and it
 * takes the GIL back once per burst, not once per short hash call.
 */
#include <time.h>

uint64_t burn_cpu(uint64_t ns)
{
	struct timespec ts;
	uint64_t h = 0, start, now;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	start = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	do {
		h = hash_main(h, 20000);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	} while (now - start < ns);
	return h;
}
