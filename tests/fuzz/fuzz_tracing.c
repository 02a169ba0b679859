// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: perf tracing data (HEADER_TRACING_DATA) through our
 * container walk and the checked formats handed to libtraceevent.
 */
#include <stdint.h>

#include "perfdata/tracing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_info *ti = NULL;
	size_t used = 0;
	u64 id;

	if (trace_info_parse(data, size, NULL, &ti, &used) == 0) {
		for (id = 0; id < 64; id++)
			trace_info_event_name(ti, id);
		trace_info_free(ti);
	}
	return 0;
}
