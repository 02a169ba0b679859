// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy convert: perf.data -> py-spy raw folded stacks.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cpus.h"

static void convert_usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy convert [options] [-i] [FILE]\n"
		"\n"
		"Write py-spy raw folded stacks (`frame;...;frame COUNT`, root first,\n"
		"sorted) for the samples of one event of a perf.data file or stream.\n"
		"\n"
		"  -i, --input FILE      perf.data to read (or give it as FILE); '-' reads a pipe\n"
		"                        (perf record -o - ... | perfspy convert -i -)\n"
		"                        [default: perf.data]\n"
		"                        Folded stacks (py-spy raw) are read too, for\n"
		"                        --format: told apart from perf.data by content\n"
		"  -o, --output FILE     where to write; '-' is standard output [default: -]\n"
		"                        (written to a temporary file, renamed on success)\n"
		"  -f, --format FMT      raw (py-spy folded stacks), flamegraph (interactive\n"
		"                        SVG, root on top) or speedscope (JSON, one profile\n"
		"                        per thread; implies --threads) or pprof (gzipped\n"
		"                        profile.proto for go tool pprof, Pyroscope, Parca;\n"
		"                        thread roots become labels) [default: raw]\n"
		"      --title TEXT      title of the SVG / name of the speedscope file\n"
		"      --lineno          flamegraph, speedscope: one frame per source line\n"
		"                        of native functions, as in raw [default: one per\n"
		"                        function, its lines and shares in the tooltip]\n"
		"      --event NAME      event to fold, as `perfspy info` names it\n"
		"                        [default: the one with the most samples, with\n"
		"                        the same event on every core PMU of a hybrid\n"
		"                        CPU (cpu_atom/cycles/ + cpu_core/cycles/)]\n"
		"      --pid PID         only samples of this process\n"
		"      --tid TID         only samples of this thread\n"
		"      --comm NAME       only samples of threads with this name\n"
		"      --no-kernel       drop kernel frames\n"
		"      --threads         add a root frame `thread (TID): NAME` per stack\n"
		"      --idle            off-CPU time too (from sched:sched_switch samples\n"
		"                        at switch-out): every count is then milliseconds;\n"
		"                        record with perf record -e sched:sched_switch\n"
		"                        -e cpu-clock --switch-events --call-graph dwarf\n"
		"      --weight W        'samples' counts samples, 'period' sums sample\n"
		"                        periods (ns for cpu-clock) [default: samples]\n"
		"      --perf-map-dir DIR  where perf-PID.map / jit-PID.dump files are\n"
		"                        (copied off the profiled machine) [default: /tmp]\n"
		"      --keep-interpreter  keep CPython's own frames (_PyEval_EvalFrameDefault,\n"
		"                        vectorcall glue) in stacks with Python frames\n"
		"      --python-only     Python frames only (to diff against py-spy)\n"
		"      --qualname        Python names as Class.method, not method\n"
		"      --nolineno        no line numbers (Python and native frames)\n"
		"      --full-filenames  Python file names as recorded, not shortened\n"
		"      --symfs DIR       look for binaries under DIR first\n"
		"      --buildid-dir DIR build-id cache [default: ~/.debug]\n"
		"      --kallsyms FILE   kernel symbols of the recorded kernel and boot\n"
		"                        (its /proc/kallsyms, copied) [default: the build-id\n"
		"                        cache, or /proc/kallsyms if this is that kernel]\n"
		"      --no-debuginfod   never fetch missing debug info from the servers in\n"
		"                        $DEBUGINFOD_URLS (asked only when it is set;\n"
		"                        $DEBUGINFOD_TIMEOUT [default here: 10 s])\n"
		"  -j, --jobs N          threads converting, the samples split by thread;\n"
		"                        the output is the same for every N [default: the\n"
		"                        online CPUs but one (left to the threads that\n"
		"                        warm memory) for --call-graph dwarf recordings,\n"
		"                        1 for frame-pointer ones, where more measured\n"
		"                        slower; at -j 1 a frame-pointer file of 2 MB or\n"
		"                        more has its stacks built on a second thread\n"
		"                        ($PERFSPY_BUILD_BEHIND=0 turns that off), their\n"
		"                        frames named ahead where stacks are shallow\n"
		"                        ($PERFSPY_NAME_AHEAD=0 turns that off); a dwarf\n"
		"                        file of 8 MB or more is read into memory ahead\n"
		"                        on a thread of its own ($PERFSPY_COPY_IN=0 turns\n"
		"                        that off)]\n"
		"  -q, --quiet           only errors on stderr, no progress\n"
		"  -v, --verbose         more messages (twice: debug)\n"
		"  -h, --help            this help\n");
}

enum { O_PID = 256, O_TID, O_COMM, O_EVENT, O_NO_KERNEL, O_THREADS, O_WEIGHT,
       O_SYMFS, O_BUILDID_DIR, O_PERF_MAP_DIR, O_KEEP_INTERP, O_PY_ONLY,
       O_QUALNAME, O_NOLINENO, O_FULL_FILENAMES, O_FORMAT, O_TITLE,
       O_KALLSYMS, O_NO_DEBUGINFOD, O_LINENO, O_IDLE };

static const struct option convert_opts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "pid", required_argument, NULL, O_PID },
	{ "tid", required_argument, NULL, O_TID },
	{ "comm", required_argument, NULL, O_COMM },
	{ "event", required_argument, NULL, O_EVENT },
	{ "no-kernel", no_argument, NULL, O_NO_KERNEL },
	{ "threads", no_argument, NULL, O_THREADS },
	{ "weight", required_argument, NULL, O_WEIGHT },
	{ "symfs", required_argument, NULL, O_SYMFS },
	{ "buildid-dir", required_argument, NULL, O_BUILDID_DIR },
	{ "kallsyms", required_argument, NULL, O_KALLSYMS },
	{ "perf-map-dir", required_argument, NULL, O_PERF_MAP_DIR },
	{ "keep-interpreter", no_argument, NULL, O_KEEP_INTERP },
	{ "python-only", no_argument, NULL, O_PY_ONLY },
	{ "qualname", no_argument, NULL, O_QUALNAME },
	{ "nolineno", no_argument, NULL, O_NOLINENO },
	{ "full-filenames", no_argument, NULL, O_FULL_FILENAMES },
	{ "format", required_argument, NULL, 'f' },
	{ "title", required_argument, NULL, O_TITLE },
	{ "lineno", no_argument, NULL, O_LINENO },
	{ "no-debuginfod", no_argument, NULL, O_NO_DEBUGINFOD },
	{ "idle", no_argument, NULL, O_IDLE },
	{ "jobs", required_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Say which event is folded when there are several (stackcollapse-perf
 * takes the first, silently; the library takes the one with the most
 * samples, with its twins on the other core PMUs of a hybrid CPU). */
static void note_events(struct perfspy_session *s, const char *path,
			const char *chosen)
{
	PERFSPY_OPTS(perfspy_info, info);
	PERFSPY_OPTS(perfspy_event, ev);
	uint32_t i, nfold = 0, twins;

	if (chosen || perfspy_session__info(s, &info) || info.nr_events < 2)
		return;
	for (i = 0; i < info.nr_events; i++)
		if (!perfspy_session__event(s, i, &ev) && ev.folded)
			nfold++;
	if (!nfold)
		return;
	twins = nfold;
	fprintf(stderr, "%s: note: %s has %u events; folding", cli_prog, path,
		info.nr_events);
	for (i = 0; i < info.nr_events; i++)
		if (!perfspy_session__event(s, i, &ev) && ev.folded)
			fprintf(stderr, " '%s' (%llu samples)%s", ev.name,
				(unsigned long long)ev.nr_samples, --nfold ? " +" : "");
	if (twins > 1)
		fprintf(stderr, " (the same event on each core PMU of a hybrid CPU)");
	fprintf(stderr, " (choose with --event:");
	for (i = 0; i < info.nr_events; i++)
		if (!perfspy_session__event(s, i, &ev))
			fprintf(stderr, " %s", ev.name);
	fprintf(stderr, ")\n");
}

/* Is the folded event (@name, or the first) cpu-clock or task-clock, whose
 * periods are nanoseconds? (perf_event.h: PERF_TYPE_SOFTWARE 1,
 * PERF_COUNT_SW_CPU_CLOCK 0, PERF_COUNT_SW_TASK_CLOCK 1.) pprof then
 * calls the weights cpu/nanoseconds. */
static bool clock_event(struct perfspy_session *s, const char *name)
{
	PERFSPY_OPTS(perfspy_event, ev);
	uint32_t i;

	for (i = 0; !perfspy_session__event(s, i, &ev); i++)
		if (!name || !strcmp(ev.name, name))
			return ev.type == 1 && ev.config <= 1;
	return false;
}

static void *close_main(void *arg)
{
	perfspy_session__close(arg);
	return NULL;
}

/*
 * Close @s on a thread of its own while the output is written, when the
 * writers do not call back into it (pprof's DSO table and inlined
 * frames, the flame graph's libraries): the folder holds copies of
 * every name. Closing ends each DSO's libelf and libdw state, 3.5% of
 * the converting thread on a system-wide recording with 42 DSOs, work
 * the other CPU can do while this one sorts and formats (issue 16,
 * docs/design.md §6.16). true: the thread has @s; join it with
 * pthread_join(*@th).
 */
static bool close_aside(struct perfspy_session *s, const struct perfspy_write_opts *wo,
			pthread_t *th)
{
	if (!s || wo->frame_inlined || wo->frame_lib || wo->nr_dsos ||
	    cli_cpus() < 2)
		return false;
	return !pthread_create(th, NULL, close_main, s);
}

int cmd_convert(int argc, char **argv)
{
	PERFSPY_OPTS(perfspy_convert_opts, co);
	PERFSPY_OPTS(perfspy_write_opts, wo);
	struct cli_common common = { 0 };
	const char *in = "perf.data", *out = "-";
	struct perfspy_session *s = NULL;
	struct perfspy_folder *f = NULL;
	const char *name;
	/* The perf.data-only options given, named to warn when the input
	 * is folded stacks, where they do nothing. */
	const char *given[32];
	size_t nr_given = 0, i;
	bool in_set = false, closing = false;
	pthread_t closer;
	int c, li = 0, err, ret = 1;
	long v;

	while ((c = getopt_long(argc, argv, ":i:o:f:j:qvh", convert_opts, &li)) != -1) {
		switch (c) {
		case 'i': in = optarg; in_set = true; break;
		case 'o': out = optarg; break;
		case O_PID:
		case O_TID:
			if (cli_parse_num(optarg, c == O_PID ? "pid" : "tid", 1, 0x7fffffff, &v))
				return 2;
			*(c == O_PID ? &co.pid : &co.tid) = (int)v;
			break;
		case O_COMM: co.comm = optarg; break;
		case O_EVENT: co.event = optarg; break;
		case O_NO_KERNEL: co.no_kernel = true; break;
		case O_THREADS: co.threads = true; break;
		case O_WEIGHT:
			if (!strcmp(optarg, "samples")) {
				co.weight = PERFSPY_WEIGHT_SAMPLES;
			} else if (!strcmp(optarg, "period")) {
				co.weight = PERFSPY_WEIGHT_PERIOD;
			} else {
				cli_err("--weight: expected 'samples' or 'period', got '%s'", optarg);
				return 2;
			}
			break;
		case O_SYMFS: common.symfs = optarg; break;
		case O_BUILDID_DIR: common.buildid_dir = optarg; break;
		case O_KALLSYMS: common.kallsyms = optarg; break;
		case O_PERF_MAP_DIR: common.perf_map_dir = optarg; break;
		case O_KEEP_INTERP: co.keep_interpreter = true; break;
		case O_PY_ONLY: co.python_only = true; break;
		case O_QUALNAME: co.qualname = true; break;
		case O_NOLINENO: co.no_lineno = true; break;
		case O_FULL_FILENAMES: co.full_filenames = true; break;
		case 'f':
			if (!strcmp(optarg, "raw")) {
				wo.format = PERFSPY_FORMAT_RAW;
			} else if (!strcmp(optarg, "flamegraph")) {
				wo.format = PERFSPY_FORMAT_FLAMEGRAPH;
			} else if (!strcmp(optarg, "speedscope")) {
				wo.format = PERFSPY_FORMAT_SPEEDSCOPE;
			} else if (!strcmp(optarg, "pprof")) {
				wo.format = PERFSPY_FORMAT_PPROF;
			} else {
				cli_err("--format: expected raw, flamegraph, speedscope or pprof, got '%s'",
					optarg);
				return 2;
			}
			break;
		case O_TITLE: wo.title = optarg; break;
		case O_LINENO: wo.lineno = true; break;
		case O_NO_DEBUGINFOD: common.no_debuginfod = true; break;
		case O_IDLE: co.idle = wo.milliseconds = true; break;
		case 'j':
			if (cli_parse_num(optarg, "jobs", 1, 256, &v))
				return 2;
			co.jobs = (int)v;
			break;
		case 'q': common.quiet = true; break;
		case 'v': common.verbose++; break;
		case 'h': convert_usage(stdout); return 0;
		default: return cli_usage_error("convert", c, argv);
		}
		if (c != 'i' && c != 'o' && c != 'f' && c != 'j' && c != 'q' && c != 'v' &&
		    c != O_TITLE && nr_given < sizeof(given) / sizeof(given[0]))
			given[nr_given++] = convert_opts[li].name;
	}
	if (cli_input_arg("convert", argc, argv, &in, in_set))
		return 2;
	/* --python-only keeps Python frames only; the interpreter's frames
	 * --keep-interpreter asks for would all be dropped again. */
	if (co.python_only && co.keep_interpreter) {
		cli_err("convert: --python-only and --keep-interpreter contradict each other (see 'perfspy convert --help')");
		return 2;
	}
	/* speedscope holds one profile per thread: its writer needs the
	 * thread roots, which become profile names, not frames. */
	if (wo.format == PERFSPY_FORMAT_SPEEDSCOPE)
		co.threads = true;
	cli_install_signals();
	if (!common.quiet && isatty(STDERR_FILENO))
		co.progress_fn = cli_progress;
	err = perfspy_folder__new(&f);
	if (err)
		goto fail;
	/* speedscope's time order needs every sample's time (docs/output.md §8). */
	if (wo.format == PERFSPY_FORMAT_SPEEDSCOPE)
		perfspy_folder__keep_timeline(f, true);
	if (cli_load_input(in, &common, &co, f, &s))
		goto out;
	name = strcmp(in, "-") ? in : "<stdin>";
	if (!s && nr_given && !common.quiet) {
		fprintf(stderr, "%s: warning: %s is folded stacks: ignoring", cli_prog, name);
		for (i = 0; i < nr_given; i++)
			fprintf(stderr, " --%s", given[i]);
		fprintf(stderr, " (options for perf.data input)\n");
	}
	if (s && !common.quiet)
		note_events(s, name, co.event);
	/* A filter that matched nothing is a mistake (a pid of another
	 * run), not an empty profile: no output file (issue 15). */
	if (s && (co.pid || co.tid || co.comm) && !perfspy_folder__nr_stacks(f)) {
		cli_filter_empty(s, name, &co);
		goto out;
	}
	wo.clock_ns = s && co.weight == PERFSPY_WEIGHT_PERIOD && clock_event(s, co.event);
	if (s && wo.format == PERFSPY_FORMAT_PPROF)
		cli_pprof_opts(s, co.pid, co.tid, co.comm, &wo);
	if (s && wo.format == PERFSPY_FORMAT_FLAMEGRAPH)
		cli_svg_opts(s, &wo);
	if ((closing = close_aside(s, &wo, &closer)))
		s = NULL;
	if (cli_write_folder(out, name, f, &wo))
		goto out;
	if (!perfspy_folder__nr_stacks(f) && !common.quiet)
		fprintf(stderr, "%s: warning: %s: no samples matched\n", cli_prog, name);
	ret = 0;
	goto out;
fail:
	cli_convert_error(s, strcmp(in, "-") ? in : "<stdin>", err);
out:
	cli_pprof_opts_free(&wo);
	perfspy_folder__free(f);
	perfspy_session__close(s);
	if (closing)
		pthread_join(closer, NULL);
	return ret;
}
