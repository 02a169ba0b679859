// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload: named threads with distinct stacks (for --threads, --tid,
 * --comm).  Each thread renames itself first thing (pthread_setname_np on
 * itself), then spins; the main thread spins a little before starting them.
 *   main thread: main -> main_work -> main_spin
 *   "ps-alpha":  worker -> alpha_work -> spin_a
 *   "ps-beta":   worker -> beta_work -> spin_b
 *   "ps-gamma":  worker -> gamma_work -> spin_c
 * Prints "main TID" and "NAME TID" lines on stdout.
 * Usage: threads [seconds]
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "common.h"

struct job {
	const char *name;
	void (*work)(double end);
	double end;
};

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

SPINNER(main_spin, 7)
SPINNER(spin_a, 11)
SPINNER(spin_b, 13)
SPINNER(spin_c, 17)

#define WORKER(work, spin)					\
	NOINLINE void work(double end)				\
	{							\
		while (now_s() < end)				\
			spin(100000);				\
		sink++;						\
	}

WORKER(main_work, main_spin)
WORKER(alpha_work, spin_a)
WORKER(beta_work, spin_b)
WORKER(gamma_work, spin_c)

static NOINLINE void *worker(void *arg)
{
	struct job *job = arg;

	pthread_setname_np(pthread_self(), job->name);
	pthread_mutex_lock(&print_lock);
	printf("%s %d\n", job->name, (int)gettid());
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
	job->work(job->end);
	sink++;
	return NULL;
}

int main(int argc, char **argv)
{
	double len = run_time(argc, argv, 1.5);
	struct job jobs[] = {
		{ "ps-alpha", alpha_work, 0 },
		{ "ps-beta", beta_work, 0 },
		{ "ps-gamma", gamma_work, 0 },
	};
	pthread_t t[3];
	double end;

	printf("main %d\n", (int)getpid());
	fflush(stdout);
	main_work(now_s() + len / 5);
	end = now_s() + len;
	for (int i = 0; i < 3; i++) {
		jobs[i].end = end;
		if (pthread_create(&t[i], NULL, worker, &jobs[i]))
			return 1;
	}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
