// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: py-spy capture reading (raw in every variant and
 * speedscope JSON), the merge, and the writers. The input is split at
 * its first 0x01 byte: the part before is the py-spy capture, the part
 * after the perf side (folded text). The merge must conserve the perf
 * total, and every writer must accept what the readers produced.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfspy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_all(struct perfspy_folder *f, FILE *null)
{
	PERFSPY_OPTS(perfspy_write_opts, svg, .format = PERFSPY_FORMAT_FLAMEGRAPH);
	PERFSPY_OPTS(perfspy_write_opts, ss, .format = PERFSPY_FORMAT_SPEEDSCOPE);

	perfspy_folder__write(f, null, NULL);
	perfspy_folder__write(f, null, &svg);
	perfspy_folder__write(f, null, &ss);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PERFSPY_OPTS(perfspy_read_opts, ro);
	PERFSPY_OPTS(perfspy_read_opts, raw, .format = PERFSPY_CAPTURE_RAW);
	const uint8_t *cut = memchr(data, 1, size);
	size_t a = cut ? (size_t)(cut - data) : size;
	struct perfspy_folder *py = NULL, *perf = NULL, *out = NULL;
	struct perfspy_merge_stats ms = { .sz = sizeof(ms) };
	FILE *null = fopen("/dev/null", "w");

	if (!null)
		return 0;
	if (perfspy_folder__new(&py) || perfspy_folder__new(&perf) ||
	    perfspy_folder__new(&out))
		goto out;
	perfspy_folder__read_pyspy(py, NULL, data, a, &ro, NULL);
	if (cut)
		perfspy_folder__read_pyspy(perf, NULL, cut + 1, size - a - 1, &raw, NULL);
	if (perfspy_merge(perf, py, NULL, out, &ms) == 0 &&
	    perfspy_folder__total(out) != perfspy_folder__total(perf))
		abort(); /* perf samples are the clock: totals are conserved */
	write_all(py, null);
	write_all(out, null);
out:
	perfspy_folder__free(py);
	perfspy_folder__free(perf);
	perfspy_folder__free(out);
	fclose(null);
	return 0;
}
