/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The shared corpus of real perf.data files (../shared/corpus/
 * perf_data_converter, or $PERFSPY_CORPUS), for tests that run over every
 * file of it.
 */
#ifndef PERFSPY_CORPUS_H
#define PERFSPY_CORPUS_H

/*
 * Call @fn on the path of every perf.data* file of the corpus, in name
 * order. Returns how many, or -1 when the corpus is missing (said on
 * stderr): a test then skips, except under CI=true, where the corpus is
 * always beside the clone and its absence is a failure (corpus_missing).
 */
int corpus_each(void (*fn)(const char *path, void *ctx), void *ctx);

/* Exit status for a missing corpus: 1 under CI=true, else 77 (skipped). */
int corpus_missing(void);

#endif
