// SPDX-License-Identifier: GPL-2.0
/* Runs lib_work (unnamed_lib.c) for argv[1] seconds (default 0.6). */
#include <stdlib.h>

void lib_work(double s);

int main(int argc, char **argv)
{
	lib_work(argc > 1 ? atof(argv[1]) : 0.6);
	return 0;
}
