// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy info: what a perf.data file holds and what it lacks for a good
 * conversion, as text or as one JSON object.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void info_usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy info [--json] [-i] [FILE]\n"
		"\n"
		"Read every record of FILE (default perf.data; '-' reads a pipe) and\n"
		"print what perf recorded: version, host, command line, events with\n"
		"sample counts, lost samples, time span, processes and threads, and\n"
		"what the file lacks for a good conversion.\n"
		"\n"
		"  -i, --input FILE      the file (or give it as FILE)\n"
		"      --json            one JSON object (top-level \"samples\" and\n"
		"                        \"events\": [{\"name\", \"samples\"}, ...])\n"
		"      --threads         list every thread with its samples (text)\n"
		"      --symfs DIR       look for binaries under DIR first\n"
		"      --kallsyms FILE   kernel symbols of the recorded kernel and boot\n"
		"      --buildid-dir DIR build-id cache [default: ~/.debug]\n"
		"      --perf-map-dir DIR  where perf-PID.map / jit-PID.dump files are\n"
		"  -v, --verbose         more messages: each process that ran Python\n"
		"                        without a perf map (twice: debug)\n"
		"  -q, --quiet           only errors on stderr\n"
		"  -h, --help            this help\n");
}

static void json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* What the file lacks for a good conversion. */
static int lacks(const struct perfspy_info *i, const char **out, int max)
{
	int n = 0;

	if (!i->has_callchain && n < max)
		out[n++] = "no callchains: record with -g or --call-graph dwarf to get stacks";
	if (i->has_user_stack && i->stack_user_size < 16384 && n < max)
		out[n++] = "stack dump smaller than 16 KiB: deep (Python) stacks will be cut; use --call-graph dwarf,65528";
	if (!i->has_build_ids && n < max)
		out[n++] = "no build ids: binaries are matched by path only (rebuilt binaries give wrong symbols)";
	if (i->nr_lost && n < max)
		out[n++] = "samples were lost: the profile under-counts; lower -F or raise -m";
	if (i->truncated && n < max)
		out[n++] = "the data section is truncated";
	if (!i->nr_samples && n < max)
		out[n++] = "no samples";
	if (i->stacks_unwound && i->stacks_cut * 10 > i->stacks_unwound && n < max)
		out[n++] = i->stack_user_size < 65528 ?
			"over 10% of stacks were cut by the stack dump size: record with --call-graph dwarf,65528" :
			"over 10% of stacks were cut even by the largest stack dump (65528 bytes): deep recursion";
	if (i->stacks_unwound && i->stacks_lost * 10 > i->stacks_unwound && n < max)
		out[n++] = "over 10% of stacks ended without unwind information (missing binaries? see -v)";
	if (i->python_no_map_processes && n < max) {
		static char buf[400];

		snprintf(buf, sizeof(buf),
			 "%u process%s ran Python without a perf map (%.1f%% of samples), so no Python frames: "
			 "run Python 3.12+ with -X perf or PYTHONPERFSUPPORT=1 (python -I ignores the variable); -v names them",
			 i->python_no_map_processes, i->python_no_map_processes == 1 ? "" : "es",
			 100.0 * (double)i->python_no_map_samples /
				 (double)(i->nr_samples ? i->nr_samples : 1));
		out[n++] = buf;
	}
	if (i->fp_stacks && i->fp_stacks_bad * 5 > i->fp_stacks && n < max) {
		static char buf[300];

		snprintf(buf, sizeof(buf),
			 "%.1f%% of frame-pointer user stacks end at 0x0 or an unmapped address (code without "
			 "frame pointers): record with --call-graph dwarf",
			 100.0 * (double)i->fp_stacks_bad / (double)i->fp_stacks);
		out[n++] = buf;
	}
	return n;
}

/*
 * Where kernel frames get their names, and what to copy when nothing on
 * this machine matches the recording (kallsyms.c: only a kallsyms of the
 * recorded kernel and boot is used). @advice gets the `lacks` line, or
 * "" when the kernel symbols match or the file has no kernel identity.
 */
static void kernel_advice(const struct perfspy_kernel *k, char *advice, size_t size)
{
	advice[0] = '\0';
	if (k->kallsyms || !k->why || !k->nr_kernel_samples)
		return;
	if (k->build_id)
		snprintf(advice, size,
			 "kernel symbols of the recorded kernel (%s): kernel frames stay addresses; "
			 "copy /proc/kallsyms from the recording machine (same boot), or its "
			 "~/.debug/[kernel.kallsyms]/%s/kallsyms, and give it with --kallsyms FILE",
			 k->why, k->build_id);
	else
		snprintf(advice, size,
			 "kernel symbols of the recorded kernel (%s): kernel frames stay addresses; "
			 "copy /proc/kallsyms from the recording machine (same boot) and give it "
			 "with --kallsyms FILE", k->why);
}

static void print_json(struct perfspy_session *s, const struct perfspy_info *i)
{
	PERFSPY_OPTS(perfspy_event, ev);
	PERFSPY_OPTS(perfspy_thread, t);
	PERFSPY_OPTS(perfspy_kernel, kern);
	const char *l[11];
	char advice[512];
	uint32_t k;
	int n = lacks(i, l, 10), j;

	if (!perfspy_session__kernel(s, &kern)) {
		kernel_advice(&kern, advice, sizeof(advice));
		if (advice[0])
			l[n++] = advice;
	}
	printf("{\"path\": ");
	json_str(stdout, i->path);
	printf(", \"pipe_mode\": %s, \"samples\": %llu, \"records\": %llu",
	       i->pipe_mode ? "true" : "false", (unsigned long long)i->nr_samples,
	       (unsigned long long)i->nr_records);
	printf(", \"lost_samples\": %llu, \"lost_records\": %llu, \"throttled\": %llu",
	       (unsigned long long)i->nr_lost, (unsigned long long)i->nr_lost_records,
	       (unsigned long long)i->nr_throttle);
	printf(", \"perf_version\": ");
	json_str(stdout, i->perf_version);
	printf(", \"hostname\": ");
	json_str(stdout, i->hostname);
	printf(", \"os_release\": ");
	json_str(stdout, i->os_release);
	printf(", \"arch\": ");
	json_str(stdout, i->arch);
	printf(", \"cpu\": ");
	json_str(stdout, i->cpu_desc);
	printf(", \"cmdline\": ");
	json_str(stdout, i->cmdline);
	printf(", \"nr_cpus_online\": %u, \"time_first_ns\": %llu, \"time_last_ns\": %llu",
	       i->nr_cpus_online, (unsigned long long)i->time_first,
	       (unsigned long long)i->time_last);
	printf(", \"duration_s\": %.6f",
	       i->time_last > i->time_first ? (i->time_last - i->time_first) / 1e9 : 0.0);
	printf(", \"callchains\": %s, \"user_stacks\": %s, \"stack_dump_size\": %u"
	       ", \"build_ids\": %s, \"compressed\": %s, \"truncated\": %s",
	       i->has_callchain ? "true" : "false", i->has_user_stack ? "true" : "false",
	       i->stack_user_size, i->has_build_ids ? "true" : "false",
	       i->compressed ? "true" : "false", i->truncated ? "true" : "false");
	printf(", \"dsos_hit\": %u", i->nr_dsos_hit);
	printf(", \"processes\": %u, \"threads\": %u", i->nr_processes, i->nr_threads);
	printf(", \"unwound\": %llu, \"unwound_to_root\": %llu, \"unwound_cut\": %llu"
	       ", \"unwound_lost\": %llu, \"stack_dump_used_max\": %u",
	       (unsigned long long)i->stacks_unwound, (unsigned long long)i->stacks_root,
	       (unsigned long long)i->stacks_cut, (unsigned long long)i->stacks_lost,
	       i->max_stack_used);
	printf(", \"python_no_map_processes\": %u, \"python_no_map_samples\": %llu"
	       ", \"fp_stacks\": %llu, \"fp_stacks_bad\": %llu",
	       i->python_no_map_processes, (unsigned long long)i->python_no_map_samples,
	       (unsigned long long)i->fp_stacks, (unsigned long long)i->fp_stacks_bad);
	printf(", \"kernel_build_id\": ");
	json_str(stdout, kern.build_id);
	printf(", \"kernel_symbols\": ");
	json_str(stdout, kern.kallsyms);
	printf(", \"kernel_samples\": %llu", (unsigned long long)kern.nr_kernel_samples);
	printf(", \"events\": [");
	for (k = 0; k < i->nr_events; k++) {
		if (perfspy_session__event(s, k, &ev))
			continue;
		printf("%s{\"name\": ", k ? ", " : "");
		json_str(stdout, ev.name);
		printf(", \"type\": %u, \"config\": %llu, \"samples\": %llu}", ev.type,
		       (unsigned long long)ev.config, (unsigned long long)ev.nr_samples);
	}
	printf("], \"thread_list\": [");
	for (k = 0; !perfspy_session__thread(s, k, &t); k++) {
		printf("%s{\"pid\": %d, \"tid\": %d, \"comm\": ", k ? ", " : "", t.pid, t.tid);
		json_str(stdout, t.comm);
		printf(", \"samples\": %llu}", (unsigned long long)t.nr_samples);
	}
	printf("], \"lacks\": [");
	for (j = 0; j < n; j++) {
		printf("%s", j ? ", " : "");
		json_str(stdout, l[j]);
	}
	printf("]}\n");
}

static void print_text(struct perfspy_session *s, const struct perfspy_info *i,
		       bool all_threads)
{
	PERFSPY_OPTS(perfspy_event, ev);
	PERFSPY_OPTS(perfspy_thread, t);
	PERFSPY_OPTS(perfspy_kernel, kern);
	const char *l[11];
	char advice[512];
	uint32_t k;
	int n = lacks(i, l, 10), j;
	bool have_kern = !perfspy_session__kernel(s, &kern);

	if (have_kern) {
		kernel_advice(&kern, advice, sizeof(advice));
		if (advice[0])
			l[n++] = advice;
	}
#define STR(x) ((x) ? (x) : "?")
	printf("file:        %s (%s mode)\n", i->path, i->pipe_mode ? "pipe" : "file");
	printf("perf:        %s\n", STR(i->perf_version));
	printf("host:        %s, %s, %s, %u CPUs online\n", STR(i->hostname),
	       STR(i->os_release), STR(i->arch), i->nr_cpus_online);
	if (i->cpu_desc)
		printf("cpu:         %s\n", i->cpu_desc);
	printf("command:     %s\n", STR(i->cmdline));
	printf("samples:     %llu in %llu records", (unsigned long long)i->nr_samples,
	       (unsigned long long)i->nr_records);
	if (i->time_last > i->time_first)
		printf(", over %.3f s", (i->time_last - i->time_first) / 1e9);
	printf("\nlost:        %llu samples in %llu records; %llu throttle events\n",
	       (unsigned long long)i->nr_lost, (unsigned long long)i->nr_lost_records,
	       (unsigned long long)i->nr_throttle);
	printf("stacks:      %s%s", i->has_callchain ? "callchains" : "no callchains",
	       i->has_user_stack ? ", user stack dumps" : "");
	if (i->has_user_stack)
		printf(" of %u bytes", i->stack_user_size);
	printf("\nbuild ids:   %s", i->has_build_ids ? "yes" : "no");
	if (i->nr_dsos_hit)
		printf(" (%u user-space DSOs hit, as the header lists them)", i->nr_dsos_hit);
	printf("\n");
	if (have_kern && (kern.build_id || kern.os_release)) {
		printf("kernel:      %s", STR(kern.os_release));
		if (kern.build_id)
			printf(", build id %s", kern.build_id);
		if (kern.kallsyms)
			printf("; symbols from %s\n", kern.kallsyms);
		else
			printf("; no matching kernel symbols%s%s%s\n", kern.why ? " (" : "",
			       kern.why ? kern.why : "", kern.why ? ")" : "");
	}
	if (i->stacks_unwound)
		printf("unwinding:   %llu stacks: %llu reached the thread root (%.1f%%), %llu cut by the %u-byte dump, %llu ended early\n",
		       (unsigned long long)i->stacks_unwound, (unsigned long long)i->stacks_root,
		       100.0 * i->stacks_root / i->stacks_unwound,
		       (unsigned long long)i->stacks_cut, i->stack_user_size,
		       (unsigned long long)i->stacks_lost);
	printf("events:\n");
	for (k = 0; k < i->nr_events; k++)
		if (!perfspy_session__event(s, k, &ev))
			printf("  %-30s %llu samples\n", ev.name,
			       (unsigned long long)ev.nr_samples);
	printf("processes:   %u, threads: %u\n", i->nr_processes, i->nr_threads);
	for (k = 0; !perfspy_session__thread(s, k, &t); k++) {
		if (!all_threads && k >= 20) {
			printf("  ... (%u more; --threads lists all)\n", i->nr_threads - k);
			break;
		}
		printf("  %7d/%-7d %-16s %llu samples\n", t.pid, t.tid, STR(t.comm),
		       (unsigned long long)t.nr_samples);
	}
	if (n) {
		printf("lacks:\n");
		for (j = 0; j < n; j++)
			printf("  - %s\n", l[j]);
	}
#undef STR
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "threads", no_argument, NULL, 't' },
		{ "symfs", required_argument, NULL, 's' },
		{ "perf-map-dir", required_argument, NULL, 'm' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "buildid-dir", required_argument, NULL, 'b' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	PERFSPY_OPTS(perfspy_info, info);
	struct cli_common common = { 0 };
	struct perfspy_session *s;
	bool json = false, threads = false, in_set = false;
	const char *path = "perf.data";
	int c, err;

	while ((c = getopt_long(argc, argv, ":i:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 'i': path = optarg; in_set = true; break;
		case 'j': json = true; break;
		case 't': threads = true; break;
		case 's': common.symfs = optarg; break;
		case 'm': common.perf_map_dir = optarg; break;
		case 'k': common.kallsyms = optarg; break;
		case 'b': common.buildid_dir = optarg; break;
		case 'q': common.quiet = true; break;
		case 'v': common.verbose++; break;
		case 'h': info_usage(stdout); return 0;
		default: return cli_usage_error("info", c, argv);
		}
	}
	if (cli_input_arg("info", argc, argv, &path, in_set))
		return 2;
	s = cli_open(path, &common);
	if (!s)
		return 1;
	err = perfspy_session__convert(s, NULL, NULL);
	if (err) {
		cli_fail(strcmp(path, "-") ? path : "<stdin>", err, NULL);
		perfspy_session__close(s);
		return 1;
	}
	perfspy_session__info(s, &info);
	if (json)
		print_json(s, &info);
	else
		print_text(s, &info, threads);
	perfspy_session__close(s);
	return fflush(stdout) ? 1 : 0;
}
