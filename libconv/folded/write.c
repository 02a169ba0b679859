// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy_folder__write(): the format dispatch. The folder (common/fold.c)
 * knows no serializer; each format is a file of its own here.
 */
#include "writers.h"
#include "common/opts.h"

#include <errno.h>

PERFSPY_API int perfspy_folder__write(const struct perfspy_folder *f,
				      FILE *out,
				      const struct perfspy_write_opts *opts)
{
	if (!OPTS_VALID(opts, perfspy_write_opts))
		return -PERFSPY_E_OPTS;
	switch (OPTS_GET(opts, format, PERFSPY_FORMAT_RAW)) {
	case PERFSPY_FORMAT_RAW:
		return write_raw(f, out);
	case PERFSPY_FORMAT_FLAMEGRAPH:
		return write_svg(f, out, OPTS_GET(opts, title, NULL),
				 OPTS_GET(opts, milliseconds, false));
	case PERFSPY_FORMAT_SPEEDSCOPE:
		return write_speedscope(f, out, OPTS_GET(opts, title, NULL),
					OPTS_GET(opts, milliseconds, false));
	case PERFSPY_FORMAT_PPROF:
		return write_pprof(f, out, opts);
	default:
		return -EINVAL;
	}
}
