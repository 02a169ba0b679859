// SPDX-License-Identifier: GPL-2.0
/*
 * Truncation and corruption of real perf.data files (issue 6): every file
 * of the shared corpus (../shared/corpus/perf_data_converter, or
 * $PERFSPY_CORPUS) is cut at many offsets and has bytes flipped. Each
 * variant must open and convert or fail with a logged error that names
 * an offset, never crash (the suite also runs under ASan/UBSan), and
 * finish in bounded time. A file cut inside its data section keeps the
 * samples before the cut: never more than the whole file has, and the
 * cut is reported.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corpus.h"
#include "perfspy.h"
#include "test.h"

#define CUTS 48
#define FLIPS 24
#define MAX_SECONDS 5.0

struct logcap {
	int errors;
	int with_offset;
};

static void cap_log(void *ctx, int level, const char *msg)
{
	struct logcap *c = ctx;

	if (level == PERFSPY_LOG_ERROR) {
		c->errors++;
		if (strstr(msg, "offset"))
			c->with_offset++;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Convert one image; returns the samples seen or -1 on a file error. */
static long run(const unsigned char *buf, size_t len, bool *truncated,
		struct logcap *lc)
{
	PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "", .log_fn = cap_log,
		     .log_ctx = lc, .log_level = PERFSPY_LOG_ERROR,
		     .perf_map_dir = "/nonexistent");
	PERFSPY_OPTS(perfspy_info, info);
	struct perfspy_session *s;
	struct perfspy_folder *f;
	long n = -1;
	double t0 = now();

	if (perfspy_session__open_mem(buf, len, &oo, &s))
		return -1;
	if (perfspy_folder__new(&f) == 0) {
		if (perfspy_session__convert(s, NULL, f) == 0 &&
		    perfspy_session__info(s, &info) == 0) {
			n = (long)info.nr_samples;
			*truncated = info.truncated;
		}
		perfspy_folder__free(f);
	}
	perfspy_session__close(s);
	T(now() - t0 < MAX_SECONDS);
	return n;
}

static void one_file(const char *path, void *ctx)
{
	unsigned char *buf, *copy;
	size_t len, i, cut;
	struct logcap lc = { 0 };
	int *variants = ctx;
	bool trunc = false;
	long whole, n;
	FILE *fp = fopen(path, "rb");

	if (!fp)
		return;
	fseek(fp, 0, SEEK_END);
	len = (size_t)ftell(fp);
	rewind(fp);
	buf = malloc(len ? len : 1);
	copy = malloc(len ? len : 1);
	if (!buf || !copy || fread(buf, 1, len, fp) != len)
		abort();
	fclose(fp);
	whole = run(buf, len, &trunc, &lc);
	for (i = 1; i <= CUTS && len; i++) {
		cut = len * i / (CUTS + 1);
		memset(&lc, 0, sizeof(lc));
		trunc = false;
		n = run(buf, cut, &trunc, &lc);
		(*variants)++;
		if (n < 0) {
			/* A file-level failure says where. */
			T(lc.errors == 0 || lc.with_offset > 0);
			continue;
		}
		if (whole >= 0)
			T(n <= whole);
	}
	srand((unsigned)len);
	for (i = 0; i < FLIPS && len; i++) {
		size_t k, at = (size_t)rand() % len;

		memcpy(copy, buf, len);
		for (k = 0; k < 8 && at + k < len; k++)
			copy[at + k] ^= (unsigned char)(rand() | 1);
		memset(&lc, 0, sizeof(lc));
		n = run(copy, len, &trunc, &lc);
		(*variants)++;
		if (n < 0)
			T(lc.errors == 0 || lc.with_offset > 0);
	}
	free(buf);
	free(copy);
}

int main(void)
{
	int files, variants = 0;

	files = corpus_each(one_file, &variants);
	if (files < 0)
		return corpus_missing();
	fprintf(stderr, "corrupt: %d files, %d truncated or corrupted variants converted\n",
		files, variants);
	T(files > 0);
	TEST_MAIN_END();
}
