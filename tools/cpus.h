/* SPDX-License-Identifier: GPL-2.0 */
/* The CPUs the CLI's helper threads count on (a file of its own: the CLI
 * and the heap warmer both ask, and neither may import the other). */
#ifndef PERFSPY_CPUS_H
#define PERFSPY_CPUS_H

/* The online CPUs this process may run on (at least 1). */
long cli_cpus(void);

#endif
