/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The serializers perfspy_folder__write() dispatches to (write.c). Each
 * reads the folder through fold.h's accessors and writes through
 * common/write.h's buffered sink; none of them modifies the folder.
 */
#ifndef PERFSPY_WRITERS_H
#define PERFSPY_WRITERS_H

#include <stdio.h>

#include "common/fold.h"
#include "common/frame.h"
#include "common/write.h"

int write_raw(const struct perfspy_folder *f, FILE *out);
/* @ms: the weights are milliseconds (--idle, docs/top.md §3), not samples. */
int write_svg(const struct perfspy_folder *f, FILE *out, const char *title, bool ms);
int write_speedscope(const struct perfspy_folder *f, FILE *out,
		     const char *title, bool ms);
int write_pprof(const struct perfspy_folder *f, FILE *out,
		const struct perfspy_write_opts *opts);

#endif
