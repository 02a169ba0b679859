// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload: two threads that run one after the other, for -j N's
 * memory (run-jobs.sh). "ps-first" spins for half the run time and ends;
 * only then does "ps-second" start and spin for the other half. A split
 * by thread gives each to its own session, and each session's samples
 * are all in its own half of the file: the session of the second thread
 * skips the first half quickly and, unpaced, runs ahead of the other by
 * up to half the file (session.c, split_pace()).
 * Usage: phases [seconds]
 */
#include <pthread.h>
#include <stdio.h>
#include "common.h"

SPINNER(spin_first, 19)
SPINNER(spin_second, 23)

struct phase {
	const char *name;
	void (*spin)(int n);
	double len;
};

static NOINLINE void *phase_main(void *arg)
{
	struct phase *p = arg;
	double end;

	pthread_setname_np(pthread_self(), p->name);
	end = now_s() + p->len;
	while (now_s() < end)
		p->spin(100000);
	return NULL;
}

int main(int argc, char **argv)
{
	double len = run_time(argc, argv, 3.0);
	struct phase ph[] = {
		{ "ps-first", spin_first, len / 2 },
		{ "ps-second", spin_second, len / 2 },
	};
	pthread_t t;

	for (int i = 0; i < 2; i++) {
		if (pthread_create(&t, NULL, phase_main, &ph[i]))
			return 1;
		pthread_join(t, NULL);
	}
	return 0;
}
