// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy: command-line front end. Subcommands live one per file
 * (cmd_*.c), what they share in cli.c; this file only dispatches.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy <command> [options]\n"
		"\n"
		"Turn Linux perf samples into py-spy-format folded stacks.\n"
		"\n"
		"commands:\n"
		"  convert   perf.data (file or pipe) -> py-spy raw folded stacks\n"
		"  info      what a perf.data file holds, and what it lacks\n"
		"  report    where the CPU goes: shares by category, thread, Python frame\n"
		"  merge     py-spy captures + perf samples: py-spy's Python lines over\n"
		"            perf's counts and native frames\n"
		"  combine   many nodes' or runs' profiles (pprof, folded) summed into one\n"
		"  record    sample a running process or a command (live, through\n"
		"            perf_event) -> py-spy flame graph, raw or speedscope\n"
		"  top       a live table of where a process spends CPU (or, with\n"
		"            --idle, waits), refreshed every second\n"
		"\n"
		"  perfspy <command> --help   options of a command\n"
		"  perfspy --version          the version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("perfspy %s\n", perfspy_version_string());
		return 0;
	}
	/* The commands print getopt's errors themselves, in one line
	 * (cli_usage_error()); a library error no command printed is
	 * printed at exit (cli_log_flush()). */
	opterr = 0;
	atexit(cli_log_flush);
	/* The commands that read whole files; record and top run for
	 * long and give memory back. */
	if (!strcmp(argv[1], "convert") || !strcmp(argv[1], "info") ||
	    !strcmp(argv[1], "report") || !strcmp(argv[1], "merge"))
		cli_heapwarm_start();
	if (!strcmp(argv[1], "convert"))
		return cmd_convert(argc - 1, argv + 1);
	if (!strcmp(argv[1], "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "merge"))
		return cmd_merge(argc - 1, argv + 1);
	if (!strcmp(argv[1], "combine"))
		return cmd_combine(argc - 1, argv + 1);
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	cli_err("unknown command '%s' (see 'perfspy --help')", argv[1]);
	return 2;
}
