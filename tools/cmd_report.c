// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy report: where the CPU goes, by category, thread and innermost
 * Python frame, from a perf.data file or stream or from folded stacks
 * (py-spy raw, `perfspy convert` output), loaded by cli_load_input().
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void report_usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy report [options] [-i] [FILE]\n"
		"\n"
		"Where the CPU goes: shares of samples by category (CUDA launch, CUDA sync,\n"
		"CUDA allocator, host allocator, OpenMP/thread-pool wait, math kernels,\n"
		"PyTorch dispatch/autograd, communication, GIL, GC, import, Python code,\n"
		"Python interpreter, kernel, other native), each with its innermost Python\n"
		"frames, native leaves, threads and kernel entries.\n"
		"A stack's category is the first rule matching a frame below its innermost\n"
		"Python frame (--print-rules shows the built-in rules and their format).\n"
		"\n"
		"  -i, --input FILE      perf.data (file or '-' pipe) or folded stacks (py-spy\n"
		"                        raw, perfspy convert output), told apart by content\n"
		"                        [default: perf.data]\n"
		"  -o, --output FILE     where to write [default: standard output]\n"
		"      --by WHAT         rows of the table: category, thread (thread names,\n"
		"                        from `thread (TID): NAME` roots), tid (one row per\n"
		"                        thread id), process (`process PID:\"NAME\"` roots) or\n"
		"                        python (innermost Python frame) [default: category]\n"
		"      --top N           entries per list [default: 5]\n"
		"      --json            one JSON object: {\"samples\", \"categories\": [{\"name\",\n"
		"                        \"samples\", \"share\", \"python\", \"native\", \"threads\",\n"
		"                        \"syscalls\"}], \"threads\": [...], \"python\": [...],\n"
		"                        \"processes\": [...], \"tids\": [...]}\n"
		"      --rules FILE      categories from FILE instead of the built-in rules\n"
		"      --print-rules     print the built-in rules and exit\n"
		"perf.data input only (stacks are read with --threads and interpreter frames\n"
		"kept, so thread names and GIL/interpreter frames can be seen):\n"
		"      --event NAME, --pid PID, --tid TID, --comm NAME, --weight samples|period,\n"
		"      --perf-map-dir DIR, --symfs DIR, --buildid-dir DIR, --kallsyms FILE\n"
		"                        as for convert\n"
		"  -j, --jobs N          threads converting perf.data (as convert -j)\n"
		"                        [default: as convert's]\n"
		"  -q, --quiet           only errors on stderr\n"
		"  -v, --verbose         more messages (twice: debug)\n"
		"  -h, --help            this help\n");
}

enum { O_BY = 256, O_TOP, O_JSON, O_RULES, O_PRINT_RULES, O_EVENT, O_PID, O_TID,
       O_COMM, O_WEIGHT, O_PERF_MAP_DIR, O_SYMFS, O_BUILDID_DIR,
       O_KALLSYMS };

static const struct option report_opts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "by", required_argument, NULL, O_BY },
	{ "top", required_argument, NULL, O_TOP },
	{ "json", no_argument, NULL, O_JSON },
	{ "rules", required_argument, NULL, O_RULES },
	{ "print-rules", no_argument, NULL, O_PRINT_RULES },
	{ "event", required_argument, NULL, O_EVENT },
	{ "pid", required_argument, NULL, O_PID },
	{ "tid", required_argument, NULL, O_TID },
	{ "comm", required_argument, NULL, O_COMM },
	{ "weight", required_argument, NULL, O_WEIGHT },
	{ "perf-map-dir", required_argument, NULL, O_PERF_MAP_DIR },
	{ "symfs", required_argument, NULL, O_SYMFS },
	{ "buildid-dir", required_argument, NULL, O_BUILDID_DIR },
	{ "kallsyms", required_argument, NULL, O_KALLSYMS },
	{ "jobs", required_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The whole of @path as a NUL-terminated string, or NULL (printed). */
static char *read_text(const char *path)
{
	FILE *in = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int c;

	if (!in) {
		cli_err("--rules: %s: %s", path, strerror(errno));
		return NULL;
	}
	mem = open_memstream(&buf, &len);
	while (mem && (c = getc(in)) != EOF)
		putc(c, mem);
	if (!mem || ferror(in) || fclose(mem)) {
		cli_err("--rules: %s: %s", path, strerror(errno ? errno : EIO));
		fclose(in);
		free(buf);
		return NULL;
	}
	fclose(in);
	return buf;
}

static int parse_by(const char *s, int *by)
{
	static const char *const names[] = { "category", "thread", "python", "process",
					     "tid" };
	int i;

	for (i = 0; i < 5; i++) {
		if (!strcmp(s, names[i])) {
			*by = i;
			return 0;
		}
	}
	cli_err("--by: expected category, thread, python, process or tid, got '%s'", s);
	return -1;
}

struct report_args {
	const char *in, *out, *rules_path;
	bool in_set;
	struct cli_common common;
	struct perfspy_convert_opts co;
	struct perfspy_report_write_opts wo;
};

/* 0 to run, 1 to exit 0 (help, rules printed), 2 on a usage error. */
static int report_parse(int argc, char **argv, struct report_args *a)
{
	long v;
	int c;

	while ((c = getopt_long(argc, argv, ":i:o:j:qvh", report_opts, NULL)) != -1) {
		switch (c) {
		case 'i': a->in = optarg; a->in_set = true; break;
		case 'o': a->out = optarg; break;
		case O_BY: if (parse_by(optarg, &a->wo.by)) return 2; break;
		case O_TOP:
			if (cli_parse_num(optarg, "top", 1, 1000000, &v))
				return 2;
			a->wo.top = (unsigned)v;
			break;
		case O_JSON: a->wo.json = true; break;
		case O_RULES: a->rules_path = optarg; break;
		case O_PRINT_RULES: fputs(perfspy_report_default_rules(), stdout); return 1;
		case O_EVENT: a->co.event = optarg; break;
		case O_PID:
			if (cli_parse_num(optarg, "pid", 1, 0x7fffffff, &v))
				return 2;
			a->co.pid = (int)v;
			break;
		case O_TID:
			if (cli_parse_num(optarg, "tid", 1, 0x7fffffff, &v))
				return 2;
			a->co.tid = (int)v;
			break;
		case O_COMM: a->co.comm = optarg; break;
		case O_WEIGHT:
			if (strcmp(optarg, "samples") && strcmp(optarg, "period")) {
				cli_err("--weight: expected 'samples' or 'period', got '%s'", optarg);
				return 2;
			}
			a->co.weight = strcmp(optarg, "period") ? PERFSPY_WEIGHT_SAMPLES :
				       PERFSPY_WEIGHT_PERIOD;
			break;
		case O_PERF_MAP_DIR: a->common.perf_map_dir = optarg; break;
		case O_SYMFS: a->common.symfs = optarg; break;
		case O_BUILDID_DIR: a->common.buildid_dir = optarg; break;
		case O_KALLSYMS: a->common.kallsyms = optarg; break;
		case 'j':
			if (cli_parse_num(optarg, "jobs", 1, 256, &v))
				return 2;
			a->co.jobs = (int)v;
			break;
		case 'q': a->common.quiet = true; break;
		case 'v': a->common.verbose++; break;
		case 'h': report_usage(stdout); return 1;
		default: return cli_usage_error("report", c, argv);
		}
	}
	if (cli_input_arg("report", argc, argv, &a->in, a->in_set))
		return 2;
	return 0;
}

struct report_write {
	struct perfspy_report **r;
	const struct perfspy_report_write_opts *wo;
};

static int write_report(void *ctx, FILE *f)
{
	struct report_write *w = ctx;

	return perfspy_report__write(*w->r, f, w->wo);
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = { .in = "perf.data", .out = "-" };
	PERFSPY_OPTS(perfspy_report_opts, ro, .log_fn = cli_log);
	struct perfspy_session *s = NULL;
	struct perfspy_folder *f = NULL;
	struct perfspy_report *r = NULL;
	struct report_write rw = { .r = &r, .wo = &a.wo };
	const char *name;
	char *rules = NULL;
	int err, ret = 1;

	a.co.sz = sizeof(a.co);
	a.wo.sz = sizeof(a.wo);
	/* Thread roots name the threads; interpreter frames are what the
	 * GIL and interpreter rules look for (convert drops them). */
	a.co.threads = true;
	a.co.keep_interpreter = true;
	err = report_parse(argc, argv, &a);
	if (err)
		return err == 1 ? 0 : 2;
	/* Process rows need process roots; only then, so that other reports
	 * of a perf.data equal those of its folded `convert --threads` text. */
	a.co.processes = a.wo.by == PERFSPY_REPORT_BY_PROCESS;
	if (a.rules_path) {
		rules = read_text(a.rules_path);
		if (!rules)
			return 2;
		ro.rules = rules;
		ro.rules_name = a.rules_path;
	}
	cli_install_signals();
	name = strcmp(a.in, "-") ? a.in : "<stdin>";
	if (!a.common.quiet && isatty(STDERR_FILENO))
		a.co.progress_fn = cli_progress;
	err = perfspy_folder__new(&f);
	if (err)
		goto fail;
	if (cli_load_input(a.in, &a.common, &a.co, f, &s))
		goto out;
	if (!s && (a.co.pid || a.co.tid || a.co.comm || a.co.event) && !a.common.quiet)
		fprintf(stderr, "%s: warning: %s is folded stacks: ignoring --pid, --tid, --comm and --event (options for perf.data input)\n",
			cli_prog, name);
	/* As convert: a filter that matched nothing is an error. */
	if (s && (a.co.pid || a.co.tid || a.co.comm) && !perfspy_folder__nr_stacks(f)) {
		cli_filter_empty(s, name, &a.co);
		goto out;
	}
	err = perfspy_report__new(f, &ro, &r);
	if (err)
		goto fail;
	if (cli_write_output(a.out, name, write_report, &rw))
		goto out;
	ret = 0;
	goto out;
fail:
	cli_fail(name, err, NULL);
out:
	perfspy_report__free(r);
	perfspy_folder__free(f);
	perfspy_session__close(s);
	free(rules);
	return ret;
}
