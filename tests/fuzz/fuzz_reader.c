// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the perf.data reader end to end. Opens the input as
 * an in-memory perf.data image (file or pipe layout), converts it with
 * stacks folded, writes the folded text, and reads the statistics, so
 * header, feature, record, ordering and machine code all see the bytes.
 * Kernel symbols are off (kallsyms ""), so runs do not depend on the
 * machine's /proc.
 */
#include <stdint.h>
#include <stdio.h>

#include "perfspy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "",
		     .perf_map_dir = "/nonexistent-perfspy-fuzz");
	PERFSPY_OPTS(perfspy_convert_opts, co, .threads = true);
	PERFSPY_OPTS(perfspy_info, info);
	PERFSPY_OPTS(perfspy_stats, st);
	struct perfspy_session *s;
	struct perfspy_folder *f;
	FILE *null;

	if (perfspy_session__open_mem(data, size, &oo, &s))
		return 0;
	if (!perfspy_folder__new(&f)) {
		if (!perfspy_session__convert(s, &co, f)) {
			null = fopen("/dev/null", "w");
			if (null) {
				perfspy_folder__write(f, null, NULL);
				fclose(null);
			}
		}
		perfspy_folder__free(f);
	}
	perfspy_session__info(s, &info);
	perfspy_session__stats(s, &st);
	/* A second pass over the same image must be possible. */
	perfspy_session__convert(s, NULL, NULL);
	perfspy_session__close(s);
	return 0;
}
