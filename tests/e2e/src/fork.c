// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload: a parent and its forked child spin in different functions.
 *   parent: main -> parent_work -> parent_spin
 *   child:  main -> child_work -> child_spin   (code mapped before the fork)
 * Prints "parent PID" and "child PID" on stdout so the test knows them.
 * Usage: fork [seconds]
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

SPINNER(parent_spin, 3)
SPINNER(child_spin, 5)

NOINLINE void parent_work(double end)
{
	while (now_s() < end)
		parent_spin(200000);
	sink++;
}

NOINLINE void child_work(double end)
{
	while (now_s() < end)
		child_spin(200000);
	sink++;
}

int main(int argc, char **argv)
{
	double end = now_s() + run_time(argc, argv, 1.2);
	int status;
	pid_t pid;

	printf("parent %d\n", (int)getpid());
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("child %d\n", (int)getpid());
		fflush(stdout);
		child_work(end);
		_exit(0);
	}
	parent_work(end);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
