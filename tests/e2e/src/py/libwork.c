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
