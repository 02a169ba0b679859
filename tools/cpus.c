// SPDX-License-Identifier: GPL-2.0
#include "cpus.h"

#include <sched.h>
#include <unistd.h>

long cli_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	/* Fewer if this process may run on fewer (taskset, a container's
	 * cpuset): a helper thread on the converting thread's only CPU
	 * just takes turns with it. The library counts the same way
	 * (online_cpus()). */
	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0 &&
	    CPU_COUNT(&set) < n)
		n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}
