// SPDX-License-Identifier: GPL-2.0
/* The shared corpus's files, for tests (corpus.h). */
#include "corpus.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int corpus_each(void (*fn)(const char *path, void *ctx), void *ctx)
{
	const char *dir = getenv("PERFSPY_CORPUS");
	struct dirent **ents;
	char path[4096];
	int n, i, files = 0;

	if (!dir)
		dir = "../shared/corpus/perf_data_converter";
	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (!strncmp(ents[i]->d_name, "perf.data", 9)) {
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			fn(path, ctx);
			files++;
		}
		free(ents[i]);
	}
	free(ents);
	return files;
}

int corpus_missing(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true") ? 1 : 77;
}
