// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the pprof reader (read_pprof.c) on any bytes, gzipped
 * or not. Whatever it accepts, the pprof writer's output of the result
 * reads back to the same stacks and total (write_pprof.c and read_pprof.c
 * are inverses on what the reader produces). Every frame, file name and
 * build id the reader tells perfspy_read_opts.pprof_frame is read whole
 * (ASan: in bounds), and each frame is one the folder holds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfspy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *render(struct perfspy_folder *f, int format, size_t *len)
{
	PERFSPY_OPTS(perfspy_write_opts, o, .format = format);
	char *buf = NULL;
	size_t n = 0;
	FILE *mf = open_memstream(&buf, &n);

	if (!mf)
		return NULL;
	if (perfspy_folder__write(f, mf, &o)) {
		fclose(mf);
		free(buf);
		return NULL;
	}
	fclose(mf);
	*len = n;
	return buf;
}

/* perfspy_read_opts.pprof_frame: reads every byte it is given. */
static int told(void *ctx, const char *frame, size_t len, bool inlined, const char *file,
		const char *bid)
{
	size_t *sum = ctx, i;

	for (i = 0; frame && i < len; i++)
		*sum += (unsigned char)frame[i];
	*sum += strlen(file) + strlen(bid) + inlined;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t sum = 0;
	PERFSPY_OPTS(perfspy_read_opts, ro, .pprof_frame = told, .pprof_frame_ctx = &sum);
	struct perfspy_folder *a = NULL, *b = NULL;
	char *pb = NULL, *ra = NULL, *rb = NULL;
	size_t lpb = 0, la = 0, lb = 0;

	if (perfspy_folder__new(&a) || perfspy_folder__new(&b))
		goto out;
	if (perfspy_folder__read_pprof(a, NULL, data, size, &ro, NULL))
		goto out;
	pb = render(a, PERFSPY_FORMAT_PPROF, &lpb);
	if (!pb)
		goto out;
	if (perfspy_folder__read_pprof(b, NULL, pb, lpb, NULL, NULL))
		abort(); /* our own output must read */
	ra = render(a, PERFSPY_FORMAT_RAW, &la);
	rb = render(b, PERFSPY_FORMAT_RAW, &lb);
	if (ra && rb && (la != lb || memcmp(ra, rb, la)))
		abort();
	if (perfspy_folder__total(a) != perfspy_folder__total(b))
		abort();
out:
	free(pb);
	free(ra);
	free(rb);
	perfspy_folder__free(a);
	perfspy_folder__free(b);
	return 0;
}
