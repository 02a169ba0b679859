// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the report's rules parser and categorizer. The input
 * is split at its first 0x01 byte: rules text before it, folded stacks
 * (py-spy raw) after it. Whatever the rules, every sample lands in
 * exactly one category, so the category totals equal the report total.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfspy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_all(const struct perfspy_report *r, FILE *null)
{
	PERFSPY_OPTS(perfspy_report_write_opts, txt, .by = PERFSPY_REPORT_BY_THREAD);
	PERFSPY_OPTS(perfspy_report_write_opts, json, .json = true);

	perfspy_report__write(r, null, &txt);
	perfspy_report__write(r, null, &json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PERFSPY_OPTS(perfspy_read_opts, raw, .format = PERFSPY_CAPTURE_RAW);
	const uint8_t *cut = memchr(data, 1, size);
	size_t a = cut ? (size_t)(cut - data) : size;
	struct perfspy_folder *f = NULL;
	struct perfspy_report *r = NULL;
	char *rules = malloc(a + 1);
	FILE *null = fopen("/dev/null", "w");

	if (!rules || !null || perfspy_folder__new(&f))
		goto out;
	memcpy(rules, data, a);
	rules[a] = '\0';
	if (cut)
		perfspy_folder__read_pyspy(f, NULL, cut + 1, size - a - 1, &raw, NULL);
	{
		PERFSPY_OPTS(perfspy_report_opts, ro, .rules = rules);
		struct perfspy_report_row row = { .sz = sizeof(row) };
		uint64_t sum = 0;
		uint32_t i;

		if (perfspy_report__new(f, &ro, &r) == 0) {
			for (i = 0; perfspy_report__category(r, i, &row) == 0; i++)
				sum += row.samples;
			if (sum != perfspy_report__total(r))
				abort();
			write_all(r, null);
		}
	}
out:
	perfspy_report__free(r);
	perfspy_folder__free(f);
	free(rules);
	if (null)
		fclose(null);
	return 0;
}
