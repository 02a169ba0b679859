// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload: three call chains whose stacks must come out exactly.
 *   main -> level1 -> level2 (static) -> level3 (always_inline) : spin
 *   main -> alpha -> beta (static) -> gamma_leaf               : spin
 *   main -> sys_path -> read(2) from /dev/zero                 : kernel time
 * Usage: chain [seconds]
 */
#include <fcntl.h>
#include <unistd.h>
#include "common.h"

static volatile int n_level = 300000, n_alpha = 200000, n_reads = 60;

static ALWAYS_INLINE void level3(int n)
{
	for (int i = 0; i < n; i++)
		sink += (uint64_t)i * i;
}

static NOINLINE void level2(int n)
{
	SPIN_FRAME;
	level3(n);
	sink++;
}

NOINLINE void level1(int n)
{
	level2(n);
	sink++;
}

NOINLINE void gamma_leaf(int n)
{
	SPIN_FRAME;
	for (int i = 0; i < n; i++)
		sink ^= (uint64_t)i * 2654435761u;
}

static NOINLINE void beta(int n)
{
	gamma_leaf(n);
	sink++;
}

NOINLINE void alpha(int n)
{
	beta(n);
	sink++;
}

NOINLINE void sys_path(int fd, int n)
{
	static char buf[1 << 16];

	for (int i = 0; i < n; i++)
		if (read(fd, buf, sizeof(buf)) < 0)
			sink++;
	sink++;
}

int main(int argc, char **argv)
{
	double end = now_s() + run_time(argc, argv, 1.5);
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	while (now_s() < end) {
		level1(n_level);
		alpha(n_alpha);
		sys_path(fd, n_reads);
	}
	close(fd);
	return 0;
}
