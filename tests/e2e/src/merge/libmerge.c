// SPDX-License-Identifier: GPL-2.0
/*
 * libmerge.so for tests/e2e/run-merge.sh: CPU-bound leaves that
 * workload.py calls through ctypes (the GIL is released around the call).
 * Each C function is called from exactly one Python line per thread, so
 * the test knows which `name (workload.py:LINE)` frame must sit above each
 * of them after `perfspy merge`. The constants differ so that gcc's
 * identical-code folding keeps five functions.
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

MIX(alpha, 0x100000001b3ull, 13)
MIX(beta, 0x9e3779b97f4a7c15ull, 17)
MIX(delta, 0xff51afd7ed558ccdull, 23)
MIX(lin_k, 0xc4ceb9fe1a85ec53ull, 29)
MIX(attn_k, 0x2545f4914f6cdd1dull, 31)
