// SPDX-License-Identifier: GPL-2.0
/*
 * bench/run-record.sh's native work: one call is one work unit, a fixed
 * number of mixing rounds (about 1 ms on a 3 GHz core). Called through
 * ctypes, which releases the GIL, so every Python thread keeps a core busy.
 */
#include <stdint.h>

uint64_t work_unit(uint64_t seed, uint64_t rounds)
{
	uint64_t h = seed ^ 0xcbf29ce484222325ull;

	for (uint64_t i = 0; i < rounds; i++) {
		h ^= i;
		h *= 0x100000001b3ull;
		h = (h << 13) | (h >> 51);
	}
	return h;
}
