// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy merge: py-spy captures + perf samples -> stacks with py-spy's
 * Python lines and perf's counts and native frames (issue 4; the
 * semantics are perfspy_merge()'s in include/perfspy.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void merge_usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy merge --pyspy CAPTURE [--pyspy MORE...] [-i] INPUT [-o OUTPUT]\n"
		"\n"
		"Put perf's native time under py-spy's Python lines: perf samples are the\n"
		"clock, py-spy captures (--format raw or speedscope) supply the lines.\n"
		"\n"
		"  -p, --pyspy FILE      py-spy capture, raw or speedscope JSON ('-' reads\n"
		"                        standard input); repeat for more captures\n"
		"  -i, --input FILE      perf.data (converted here, with thread roots) or\n"
		"                        folded stacks (perfspy convert output); '-' reads\n"
		"                        standard input [default: perf.data]\n"
		"  -o, --output FILE     where to write; '-' is standard output [default: -]\n"
		"                        (written to a temporary file, renamed on success)\n"
		"      --format F        raw, flamegraph (SVG), speedscope or pprof [default: raw]\n"
		"      --threads         keep perf's `thread (TID): NAME` roots\n"
		"                        [default: only when the captures have them]\n"
		"      --no-threads      drop thread roots\n"
		"      --ignore-threads  match across threads even when both sides have\n"
		"                        thread ids\n"
		"      --no-native-join  do not join stacks without Python frames on\n"
		"                        native frames (py-spy --native captures)\n"
		"      --min-suffix N    shortest skeleton suffix that counts as a match\n"
		"                        [default: 1]\n"
		"      --python-file GLOB  frames whose file matches GLOB are Python\n"
		"                        frames too (scripts without .py); repeatable\n"
		"      --source PATH     a Python source file, or a directory py-spy's file\n"
		"                        names are found under, for joining py-spy lines on\n"
		"                        the definition enclosing them; repeatable [default:\n"
		"                        the sources perf.data's perf maps name]\n"
		"      --top N           unmatched skeletons to list [default: 5]\n"
		"  perf.data conversion (as in perfspy convert):\n"
		"      --event NAME, --pid PID, --tid TID, --comm NAME, --no-kernel,\n"
		"      --weight samples|period, --perf-map-dir DIR, --qualname,\n"
		"      --full-filenames, --symfs DIR, --buildid-dir DIR, --kallsyms FILE\n"
		"  -j, --jobs N          threads converting perf.data (as convert -j)\n"
		"                        [default: as convert's]\n"
		"  -q, --quiet           only errors on stderr (no summary)\n"
		"  -v, --verbose         more messages (twice: debug)\n"
		"  -h, --help            this help\n");
}

enum { O_FORMAT = 256, O_THREADS, O_NO_THREADS, O_IGNORE_THREADS, O_NO_NATIVE,
       O_MIN_SUFFIX, O_PYFILE, O_TOP, O_EVENT, O_PID, O_TID, O_COMM, O_NO_KERNEL,
       O_WEIGHT, O_PERF_MAP_DIR, O_QUALNAME, O_FULL_FILENAMES, O_SYMFS,
       O_BUILDID_DIR, O_KALLSYMS, O_SOURCE };

static const struct option merge_opts[] = {
	{ "pyspy", required_argument, NULL, 'p' },
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "threads", no_argument, NULL, O_THREADS },
	{ "no-threads", no_argument, NULL, O_NO_THREADS },
	{ "ignore-threads", no_argument, NULL, O_IGNORE_THREADS },
	{ "no-native-join", no_argument, NULL, O_NO_NATIVE },
	{ "min-suffix", required_argument, NULL, O_MIN_SUFFIX },
	{ "python-file", required_argument, NULL, O_PYFILE },
	{ "top", required_argument, NULL, O_TOP },
	{ "source", required_argument, NULL, O_SOURCE },
	{ "event", required_argument, NULL, O_EVENT },
	{ "pid", required_argument, NULL, O_PID },
	{ "tid", required_argument, NULL, O_TID },
	{ "comm", required_argument, NULL, O_COMM },
	{ "no-kernel", no_argument, NULL, O_NO_KERNEL },
	{ "weight", required_argument, NULL, O_WEIGHT },
	{ "perf-map-dir", required_argument, NULL, O_PERF_MAP_DIR },
	{ "qualname", no_argument, NULL, O_QUALNAME },
	{ "full-filenames", no_argument, NULL, O_FULL_FILENAMES },
	{ "symfs", required_argument, NULL, O_SYMFS },
	{ "buildid-dir", required_argument, NULL, O_BUILDID_DIR },
	{ "kallsyms", required_argument, NULL, O_KALLSYMS },
	{ "jobs", required_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Everything the command line says. */
struct merge_args {
	const char **pyspy;
	size_t nr_pyspy;
	bool *native; /* per capture: has native frames under Python ones */
	const char **pyfiles; /* NULL-terminated */
	size_t nr_pyfiles;
	const char **sources; /* NULL-terminated: --source, then the session's */
	size_t nr_sources;
	char **owned; /* the session's source paths, copied */
	size_t nr_owned;
	const char *in, *out;
	int format, roots;
	unsigned top;
	struct cli_common common;
	struct perfspy_convert_opts co;
	struct perfspy_merge_opts mo;
};

static const char *shown(const char *path)
{
	return strcmp(path, "-") ? path : "<stdin>";
}

/* Append @s to a NULL-terminated array. */
static int append(const char ***a, size_t *n, const char *s)
{
	const char **p = realloc(*a, (*n + 2) * sizeof(**a));

	if (!p) {
		cli_err("out of memory");
		return -1;
	}
	p[(*n)++] = s;
	p[*n] = NULL;
	*a = p;
	return 0;
}

/* The perf.data conversion options (those of perfspy convert). */
static int convert_opt(struct merge_args *a, int c)
{
	long v;

	switch (c) {
	case O_EVENT: a->co.event = optarg; return 0;
	case O_PID:
	case O_TID:
		if (cli_parse_num(optarg, c == O_PID ? "pid" : "tid", 0, 0x7fffffff, &v))
			return -1;
		*(c == O_PID ? &a->co.pid : &a->co.tid) = (int)v;
		return 0;
	case O_COMM: a->co.comm = optarg; return 0;
	case O_NO_KERNEL: a->co.no_kernel = true; return 0;
	case O_WEIGHT:
		if (strcmp(optarg, "samples") && strcmp(optarg, "period")) {
			cli_err("--weight: expected 'samples' or 'period', got '%s'", optarg);
			return -1;
		}
		a->co.weight = strcmp(optarg, "samples") ? PERFSPY_WEIGHT_PERIOD :
							   PERFSPY_WEIGHT_SAMPLES;
		return 0;
	case O_PERF_MAP_DIR: a->common.perf_map_dir = optarg; return 0;
	case O_QUALNAME: a->co.qualname = true; return 0;
	case O_FULL_FILENAMES: a->co.full_filenames = true; return 0;
	case O_SYMFS: a->common.symfs = optarg; return 0;
	case O_BUILDID_DIR: a->common.buildid_dir = optarg; return 0;
	case O_KALLSYMS: a->common.kallsyms = optarg; return 0;
	}
	merge_usage(stderr);
	return -1;
}

/* Options of the merge itself; the rest are convert's. */
static int merge_opt(struct merge_args *a, int c)
{
	long v;

	switch (c) {
	case 'p': return append(&a->pyspy, &a->nr_pyspy, optarg);
	case 'i': a->in = optarg; return 0;
	case 'o': a->out = optarg; return 0;
	case O_FORMAT:
		a->format = !strcmp(optarg, "raw") ? PERFSPY_FORMAT_RAW :
			    !strcmp(optarg, "flamegraph") ? PERFSPY_FORMAT_FLAMEGRAPH :
			    !strcmp(optarg, "speedscope") ? PERFSPY_FORMAT_SPEEDSCOPE :
			    !strcmp(optarg, "pprof") ? PERFSPY_FORMAT_PPROF : -1;
		if (a->format < 0)
			cli_err("--format: expected raw, flamegraph, speedscope or pprof, got '%s'",
				optarg);
		return a->format < 0 ? -1 : 0;
	case O_THREADS:
	case O_NO_THREADS:
		/* Both given: which one was meant is unknown (issue 15). */
		if (a->roots >= 0) {
			cli_err("merge: --threads and --no-threads contradict each other (see 'perfspy merge --help')");
			return -1;
		}
		a->roots = c == O_THREADS ? PERFSPY_MERGE_ROOTS_KEEP : PERFSPY_MERGE_ROOTS_DROP;
		return 0;
	case O_IGNORE_THREADS: a->mo.ignore_threads = true; return 0;
	case O_NO_NATIVE: a->mo.no_native_join = true; return 0;
	case O_MIN_SUFFIX:
		if (cli_parse_num(optarg, "min-suffix", 0, 1000000, &v))
			return -1;
		a->mo.min_suffix = (uint32_t)v;
		return 0;
	case O_PYFILE: return append(&a->pyfiles, &a->nr_pyfiles, optarg);
	case O_SOURCE: return append(&a->sources, &a->nr_sources, optarg);
	case O_TOP:
		if (cli_parse_num(optarg, "top", 0, 1000000, &v))
			return -1;
		a->top = (unsigned)v;
		return 0;
	case 'j':
		if (cli_parse_num(optarg, "jobs", 1, 256, &v))
			return -1;
		a->co.jobs = (int)v;
		return 0;
	case 'q': a->common.quiet = true; return 0;
	case 'v': a->common.verbose++; return 0;
	}
	return convert_opt(a, c);
}

/* 1: help shown, 0: go on, -1: usage error. */
static int parse_args(struct merge_args *a, int argc, char **argv)
{
	bool in_set = false;
	int c;

	a->in = "perf.data";
	a->out = "-";
	a->top = 5;
	a->roots = -1;
	a->co.sz = sizeof(a->co);
	a->mo.sz = sizeof(a->mo);
	while ((c = getopt_long(argc, argv, ":p:i:o:j:qvh", merge_opts, NULL)) != -1) {
		if (c == 'h') {
			merge_usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':') {
			cli_usage_error("merge", c, argv);
			return -1;
		}
		if (c == 'i')
			in_set = true;
		if (merge_opt(a, c))
			return -1;
	}
	if (cli_input_arg("merge", argc, argv, &a->in, in_set))
		return -1;
	if (!a->nr_pyspy) {
		cli_err("merge: no py-spy capture (give one with --pyspy FILE)");
		return -1;
	}
	for (c = 0; c < (int)a->nr_pyspy; c++) {
		if (!strcmp(a->pyspy[c], "-") && !strcmp(a->in, "-")) {
			cli_err("merge: -i - and --pyspy - cannot both read standard input");
			return -1;
		}
	}
	a->mo.python_files = a->pyfiles;
	return 0;
}

/* Read the captures into @py; a->native[i]: capture i has --native frames. */
static int read_captures(struct merge_args *a, struct perfspy_folder *py)
{
	PERFSPY_OPTS(perfspy_read_opts, ro, .log_fn = cli_log,
		     .log_level = cli_log_level(&a->common), .log_level_set = true);
	char *buf = NULL;
	size_t i, len = 0;
	int err;

	for (i = 0; i < a->nr_pyspy; i++) {
		const char *p = a->pyspy[i];
		PERFSPY_OPTS(perfspy_read_stats, rs);

		ro.display_name = shown(p);
		if (!strcmp(p, "-") && buf) {
			cli_err("merge: standard input can be read only once");
			free(buf);
			return -1;
		}
		if (!strcmp(p, "-") && cli_read_fd(STDIN_FILENO, "<stdin>", &buf, &len))
			return -1;
		err = perfspy_folder__read_pyspy(py, strcmp(p, "-") ? p : NULL, buf, len,
						 &ro, &rs);
		if (err) {
			cli_fail(shown(p), err, NULL);
			free(buf);
			return -1;
		}
		if (!rs.samples && !a->common.quiet)
			fprintf(stderr, "%s: warning: %s: the capture holds no samples\n",
				cli_prog, shown(p));
		a->native[i] = rs.native_samples > 0;
	}
	free(buf);
	return 0;
}

/* The Python sources the session read first lines from, after any
 * --source: the merge reads the same files (perfspy_merge_opts.sources). */
static int keep_sources(struct merge_args *a, const struct perfspy_session *s)
{
	const char *p;
	char **no;
	uint32_t i;

	for (i = 0; !perfspy_session__python_source(s, i, &p); i++) {
		no = realloc(a->owned, (a->nr_owned + 1) * sizeof(*no));
		if (!no || !(no[a->nr_owned] = strdup(p))) {
			if (no)
				a->owned = no;
			cli_err("out of memory");
			return -1;
		}
		a->owned = no;
		if (append(&a->sources, &a->nr_sources, a->owned[a->nr_owned++]))
			return -1;
	}
	return 0;
}

/* The perf side: perf.data (file or pipe, converted with thread roots so
 * that the merge can match per thread) or folded stacks, told apart by
 * the PERFILE2 magic (cli_load_input). *@converted: it was perf.data. */
static int read_perf(struct merge_args *a, struct perfspy_folder *perf, bool *converted)
{
	struct perfspy_session *s = NULL;
	int err;

	a->co.threads = true;
	if (!a->common.quiet && isatty(STDERR_FILENO))
		a->co.progress_fn = cli_progress;
	err = cli_load_input(a->in, &a->common, &a->co, perf, &s);
	*converted = s != NULL;
	/* As convert: a filter that matched nothing is an error. */
	if (!err && s && (a->co.pid || a->co.tid || a->co.comm) &&
	    !perfspy_folder__nr_stacks(perf)) {
		cli_filter_empty(s, shown(a->in), &a->co);
		err = -1;
	}
	if (!err && s)
		err = keep_sources(a, s);
	perfspy_session__close(s);
	return err;
}

/* Percent with 0 for an empty whole, as the summary lines print it. */
static double pct(uint64_t n, uint64_t d)
{
	return d ? 100.0 * (double)n / (double)d : 0.0;
}

struct skel {
	char *text;
	uint64_t n;
};

static int cmp_skel(const void *x, const void *y)
{
	const struct skel *a = x, *b = y;

	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return strcmp(a->text, b->text);
}

/* The heaviest unmatched skeletons: the folder's raw text, parsed back
 * (`frames COUNT` lines), sorted by count. */
static void print_unmatched(struct perfspy_folder *um, uint64_t total, unsigned top)
{
	struct skel *v = NULL, *nv;
	size_t n = 0, len = 0, i;
	char *buf = NULL, *line, *save, *sp;
	FILE *mf = open_memstream(&buf, &len);

	if (!mf)
		return;
	if (perfspy_folder__write(um, mf, NULL) || fclose(mf)) {
		free(buf);
		return;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		sp = strrchr(line, ' ');
		if (!sp || !(nv = realloc(v, (n + 1) * sizeof(*v))))
			continue;
		v = nv;
		*sp = '\0';
		v[n].text = line;
		v[n++].n = strtoull(sp + 1, NULL, 10);
	}
	if (n) /* qsort's array may not be NULL, even for 0 elements */
		qsort(v, n, sizeof(*v), cmp_skel);
	if (n)
		fprintf(stderr, "%s: merge: top unmatched Python skeletons (root first):\n",
			cli_prog);
	for (i = 0; i < n && i < top; i++) {
		size_t l = strlen(v[i].text);

		/* Long skeletons: the root end is the least telling part. */
		fprintf(stderr, "%s: merge: %8llu %5.1f%%  %s%s\n", cli_prog,
			(unsigned long long)v[i].n, pct(v[i].n, total), l > 300 ? "..." : "",
			v[i].text + (l > 300 ? l - 300 : 0));
	}
	free(v);
	free(buf);
}

/* Stacks without Python frames: the native join's rate, or why there
 * was none. */
static void native_summary(const struct merge_args *a, const struct perfspy_merge_stats *st)
{
	size_t i;

	if (st->pyspy_native && !a->mo.no_native_join) {
		fprintf(stderr, "%s: merge: native join: %.1f%% of %llu perf samples without "
			"Python frames matched py-spy --native frames\n", cli_prog,
			pct(st->native_matched, st->no_python),
			(unsigned long long)st->no_python);
		return;
	}
	for (i = 0; i < a->nr_pyspy && !a->mo.no_native_join; i++)
		if (!a->native[i])
			fprintf(stderr, "%s: merge: note: %s has no native frames to join on "
				"(record it with py-spy --native)\n", cli_prog,
				shown(a->pyspy[i]));
	fprintf(stderr, "%s: merge: %llu perf samples (%.1f%%) have no Python frame; they "
		"are kept as they are\n", cli_prog, (unsigned long long)st->no_python,
		pct(st->no_python, st->total));
}

static void summary(const struct merge_args *a, const struct perfspy_merge_stats *st,
		    struct perfspy_folder *um)
{
	uint64_t py = st->exact + st->suffix + st->unmatched;

	if (py)
		fprintf(stderr, "%s: merge: %.1f%% matched exactly, %.1f%% by suffix, "
			"%.1f%% unmatched (of %llu perf samples with Python frames%s)\n",
			cli_prog, pct(st->exact, py), pct(st->suffix, py),
			pct(st->unmatched, py), (unsigned long long)py,
			st->thread_aware ? ", matched per thread" : "");
	if (st->name_only)
		fprintf(stderr, "%s: merge: %llu matched samples (%.1f%%) joined on function "
			"names only (a Python frame without a definition line: unreadable "
			"source, lambda or comprehension)\n", cli_prog,
			(unsigned long long)st->name_only,
			pct(st->name_only, st->exact + st->suffix));
	if (st->other_thread)
		fprintf(stderr, "%s: merge: %llu samples matched other threads' py-spy stacks "
			"(their own thread had none)\n", cli_prog,
			(unsigned long long)st->other_thread);
	if (st->no_python)
		native_summary(a, st);
	if (!py && st->total && !st->native_matched)
		fprintf(stderr, "%s: merge: note: no perf stack has Python frames: run CPython "
			"3.12+ with -X perf, or give a py-spy --native capture\n", cli_prog);
	if (st->total && !st->pyspy_total)
		fprintf(stderr, "%s: merge: note: the py-spy captures hold no samples: the "
			"perf stacks are written as they are\n", cli_prog);
	print_unmatched(um, st->total, a->top);
}

/* Through the writer API (issue 5's formats), into a temporary file
 * renamed on success, as convert does. */
static int write_out(struct merge_args *a, struct perfspy_folder *out)
{
	PERFSPY_OPTS(perfspy_write_opts, wo, .format = a->format, .title = "perfspy merge");

	return cli_write_folder(a->out, shown(a->out), out, &wo);
}

/*
 * Captures first (a bad capture fails before a long perf.data
 * conversion), then the perf side, the merge, the output, the summary.
 * @f: perf, py-spy, merged and unmatched-skeleton folders.
 */
static int run_merge(struct merge_args *a, struct perfspy_folder **f)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	bool converted = false;
	int err;

	a->native = calloc(a->nr_pyspy, sizeof(*a->native));
	if (!a->native) {
		cli_err("out of memory");
		return -1;
	}
	if (read_captures(a, f[1]) || read_perf(a, f[0], &converted))
		return -1;
	if (!converted && (a->co.pid || a->co.tid || a->co.comm || a->co.event) &&
	    !a->common.quiet)
		fprintf(stderr, "%s: warning: %s is folded stacks: ignoring --pid, --tid, --comm and --event (options for perf.data input)\n",
			cli_prog, shown(a->in));
	/* Roots perfspy added for matching show only if the user has them
	 * elsewhere (the captures) or asked; a folded input keeps its own. */
	a->mo.thread_roots = a->roots >= 0 ? a->roots :
			     converted ? PERFSPY_MERGE_ROOTS_LIKE_PYSPY :
					 PERFSPY_MERGE_ROOTS_KEEP;
	a->mo.log_fn = cli_log;
	a->mo.log_level = cli_log_level(&a->common);
	a->mo.log_level_set = true;
	a->mo.unmatched = f[3];
	a->mo.sources = a->sources;
	err = perfspy_merge(f[0], f[1], &a->mo, f[2], &st);
	if (err) {
		cli_fail("merge", err, NULL);
		return -1;
	}
	if (write_out(a, f[2]))
		return -1;
	if (!a->common.quiet)
		summary(a, &st, f[3]);
	return 0;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_args a = { 0 };
	struct perfspy_folder *f[4] = { NULL }; /* perf, py-spy, merged, unmatched */
	int i, r, ret = 1;

	r = parse_args(&a, argc, argv);
	if (r) {
		ret = r > 0 ? 0 : 2;
		goto out;
	}
	cli_install_signals();
	for (i = 0; i < 4; i++) {
		if (perfspy_folder__new(&f[i])) {
			cli_err("out of memory");
			goto out;
		}
	}
	ret = run_merge(&a, f) ? 1 : 0;
out:
	for (i = 0; i < 4; i++)
		perfspy_folder__free(f[i]);
	free(a.pyspy);
	free(a.pyfiles);
	free(a.native);
	free(a.sources);
	for (i = 0; i < (int)a.nr_owned; i++)
		free(a.owned[i]);
	free(a.owned);
	return ret;
}
