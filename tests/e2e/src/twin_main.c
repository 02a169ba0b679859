// SPDX-License-Identifier: GPL-2.0
/*
 * e2e: runs twin_run() of two libraries built from src/twin_lib.c
 * (run-behind.sh), by turns, each loaded on its own (RTLD_LOCAL) so that
 * each library's calls stay in it.
 * Usage: twin_main LIB_A LIB_B [seconds]
 */
#include <dlfcn.h>
#include <stdio.h>

#include "common.h"

int main(int argc, char **argv)
{
	void (*run[2])(double);
	double secs = argc > 3 ? atof(argv[3]) : 2, end;
	int i;

	if (argc < 3)
		return 2;
	for (i = 0; i < 2; i++) {
		void *h = dlopen(argv[1 + i], RTLD_NOW | RTLD_LOCAL);

		if (!h || !(*(void **)&run[i] = dlsym(h, "twin_run"))) {
			fprintf(stderr, "twin_main: %s\n", dlerror());
			return 1;
		}
	}
	end = now_s() + secs;
	for (i = 0; now_s() < end; i ^= 1)
		run[i](0.05);
	return 0;
}
