// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the Python source scanner behind first-line numbers
 * (any bytes: it reads whatever file a perf map names).
 */
#include <stdint.h>

#include "frames/python.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_def(void *arg, const char *qualname, int line)
{
	(void)arg;
	return qualname && line > 0 ? 0 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	py_scan_source((const char *)data, size, on_def, NULL);
	return 0;
}
