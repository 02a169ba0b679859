// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: perf-map and jitdump readers. The first byte picks
 * the reader; every entry found is then looked up by its first and last
 * address, which must find an entry (the last-written one).
 */
#include <stdint.h>
#include <stdlib.h>

#include "frames/jit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jit_map *m;
	size_t i, n;

	if (!size || jit_map_new(&m))
		return 0;
	if (data[0] & 1)
		jit_map_add_jitdump(m, data + 1, size - 1, NULL);
	else
		jit_map_add_perf_map(m, (const char *)data + 1, size - 1, NULL);
	n = jit_map_size(m);
	for (i = 0; i < n; i++) {
		const struct jit_entry *e = jit_map_entry(m, i);

		/* An entry's own start must resolve, unless the range is
		 * empty once clipped at the top of the address space. */
		if (e->size && e->start + e->size > e->start &&
		    !jit_map_find(m, e->start))
			abort();
		jit_map_find(m, e->start + e->size - 1);
	}
	jit_map_free(m);
	return 0;
}
