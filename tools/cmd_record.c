// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy record: sample a live process (attach with --pid, or launch a
 * command) through the library's live capture, fold as it arrives, and
 * write py-spy output. Flags are py-spy record's, so a py-spy user changes
 * only the program name.
 *
 * The capture (perfspy_record__*) hands a pipe-layout perf.data stream to
 * the same session `perfspy convert -i -` uses; this file only wires them
 * together, turns Ctrl-C into a stop, and prints what happened. Output
 * files are written to temporary files and renamed at the end (cli_out),
 * so a refused or failed recording leaves none.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static void record_usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy record [options] (--pid PID | [--] COMMAND [ARGS...])\n"
		"\n"
		"Sample a running process or a command in the kernel (perf_event, no\n"
		"stopping of threads, so it never falls behind), with Python, native and\n"
		"kernel frames, and write py-spy output. The flags are py-spy record's.\n"
		"\n"
		"  -p, --pid PID         attach to this running process\n"
		"  -d, --duration S      stop after S seconds [default: when the program\n"
		"                        exits, or Ctrl-C]\n"
		"  -r, --rate HZ         samples per second of CPU time, per thread\n"
		"                        [default: 100]\n"
		"  -o, --output FILE     where to write; '-' is standard output\n"
		"                        [default: NAME-TIME.svg/.txt/.json]\n"
		"  -f, --format FMT      flamegraph (interactive SVG), raw (py-spy folded\n"
		"                        stacks), speedscope (JSON) or pprof (gzipped\n"
		"                        profile.proto) [default: flamegraph]\n"
		"  -t, --threads         a root frame `thread (TID): NAME` per stack\n"
		"  -s, --subprocesses    also child processes (and their threads)\n"
		"      --nolineno        no line numbers in Python frames\n"
		"      --full-filenames  Python file names as recorded, not shortened\n"
		"      --save FILE       also write what was recorded as perf.data\n"
		"                        (pipe layout: perf report/script -i, perfspy convert -i)\n"
		"      --title TEXT      title of the SVG / name of the speedscope file\n"
		"      --lineno          flamegraph, speedscope: one frame per source line\n"
		"                        of native functions [default: one per function]\n"
		"      --stack-size N    user stack bytes per sample (multiple of 8, at most\n"
		"                        65528) [default: 65528]\n"
		"      --mmap-pages N    ring buffer pages per CPU (power of 2)\n"
		"                        [default: 1024; above 250 Hz, 250 ms of full-size\n"
		"                        samples; fewer on many CPUs (64 MiB in all) or if\n"
		"                        the memlock limit says so]\n"
		"      --idle            off-CPU time too: each thread's time blocked (futex,\n"
		"                        sleep, I/O) under the stack it blocked in; counts\n"
		"                        are then milliseconds, on and off CPU\n"
		"      --native          accepted for py-spy compatibility (native frames\n"
		"                        are always shown)\n"
		"  -q, --quiet           only errors on stderr\n"
		"  -v, --verbose         more messages (twice: debug)\n"
		"  -h, --help            this help\n"
		"\n"
		"A launched command gets PYTHONPERFSUPPORT=1, so CPython 3.12+ names its\n"
		"Python frames with no change to the command line.\n");
}

enum { O_NOLINENO = 256, O_FULL_FILENAMES, O_SAVE, O_TITLE, O_STACK_SIZE,
       O_MMAP_PAGES, O_NATIVE, O_LINENO, O_IDLE };

static const struct option record_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "duration", required_argument, NULL, 'd' },
	{ "rate", required_argument, NULL, 'r' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "threads", no_argument, NULL, 't' },
	{ "subprocesses", no_argument, NULL, 's' },
	{ "nolineno", no_argument, NULL, O_NOLINENO },
	{ "full-filenames", no_argument, NULL, O_FULL_FILENAMES },
	{ "save", required_argument, NULL, O_SAVE },
	{ "title", required_argument, NULL, O_TITLE },
	{ "lineno", no_argument, NULL, O_LINENO },
	{ "stack-size", required_argument, NULL, O_STACK_SIZE },
	{ "mmap-pages", required_argument, NULL, O_MMAP_PAGES },
	{ "native", no_argument, NULL, O_NATIVE },
	{ "idle", no_argument, NULL, O_IDLE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The recording Ctrl-C stops: this is the program, so one global. */
static struct perfspy_record *volatile active_rec;

static void on_stop_signal(int sig)
{
	(void)sig;
	perfspy_record__stop(active_rec); /* an atomic store: signal-safe */
}

static void install_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART; /* the session's read() goes on to EOF */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

struct rec_args {
	int pid;
	double duration;
	long rate, stack_size, mmap_pages;
	const char *out, *save;
	bool subprocesses, quiet, idle;
	int verbose;
	char **argv;
};

static int parse_format(const char *s, int *fmt)
{
	if (!strcmp(s, "raw"))
		*fmt = PERFSPY_FORMAT_RAW;
	else if (!strcmp(s, "flamegraph"))
		*fmt = PERFSPY_FORMAT_FLAMEGRAPH;
	else if (!strcmp(s, "speedscope"))
		*fmt = PERFSPY_FORMAT_SPEEDSCOPE;
	else if (!strcmp(s, "pprof"))
		*fmt = PERFSPY_FORMAT_PPROF;
	else {
		cli_err("--format: expected raw, flamegraph, speedscope or pprof, got '%s'", s);
		return -1;
	}
	return 0;
}

/* First line of a small /proc file, without the newline; "" if none. */
static void read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)size, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

/* "python3.12" when /proc/PID/maps shows a libpython or the executable
 * is named python*, else "" (then no perf-map note is due). */
static void python_of(int pid, char *ver, size_t size)
{
	char path[64], line[4096], *p;
	FILE *f;

	ver[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		p = strrchr(line, '/');
		if (!p || !(!strncmp(p + 1, "libpython", 9) || !strncmp(p + 1, "python", 6)))
			continue;
		p += !strncmp(p + 1, "lib", 3) ? 4 : 1;
		snprintf(ver, size, "%.*s", (int)strspn(p, "python0123456789."), p);
		/* "libpython3.12.so" leaves "python3.12." */
		if (*ver && ver[strlen(ver) - 1] == '.')
			ver[strlen(ver) - 1] = '\0';
		break;
	}
	fclose(f);
}

/* Seconds since the epoch at which live process @pid started (field 22
 * of /proc/PID/stat after the command name, in clock ticks after boot,
 * plus /proc/stat's btime, proc(5)); 0 if unknown. */
static double started_at(int pid)
{
	unsigned long long boot = 0, after = 0;
	char path[64], line[1024], *rest;
	long tck = sysconf(_SC_CLK_TCK);
	FILE *f;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	read_line(path, line, sizeof(line));
	rest = strrchr(line, ')');
	while (rest && field < 21) {
		rest = strchr(rest + 1, ' ');
		field++;
	}
	if (tck <= 0 || !rest || sscanf(rest, " %*s %llu", &after) != 1)
		return 0;
	if ((f = fopen("/proc/stat", "re"))) {
		while (!boot && fgets(line, sizeof(line), f))
			sscanf(line, "btime %llu", &boot);
		fclose(f);
	}
	return boot ? (double)boot + (double)after / (double)tck : 0;
}

/* issue 9: an attached Python without a perf map shows native frames
 * only; say so once, with the ways to fix it. A map older than the
 * process is an earlier process's with the same pid (pids wrap at
 * pid_max), which the library leaves unused too (machine.c). */
static void perf_map_note(int pid)
{
	char ver[32], path[96];
	int minor = 0;
	bool stale = false;
	struct stat st;
	double start;

	python_of(pid, ver, sizeof(ver));
	if (!*ver)
		return;
	/* In a container, in its own /tmp under its own pid (where the
	 * library looks for it). */
	perfspy_perf_map_path(pid, path, sizeof(path));
	if (!access(path, R_OK) && !stat(path, &st)) {
		start = started_at(pid);
		stale = start > 0 && (double)st.st_mtime < start - 2;
		if (!stale) {
			fprintf(stderr, "%s: %s writes a perf map (%s): Python frames will be named\n",
				cli_prog, ver, path);
			return;
		}
	}
	sscanf(ver, "python3.%d", &minor);
	fprintf(stderr,
		"%s: note: pid %d (%s) writes no perf map (%s), so its stacks will show\n"
		"  native frames only (the interpreter's C functions), no Python functions.\n"
		"  To see Python frames (CPython 3.12+), start the program with one of:\n"
		"    python -X perf ...\n"
		"    PYTHONPERFSUPPORT=1 python ...\n"
		"    sys.activate_stack_trampoline(\"perf\") called in the program\n"
		"  %s: record with py-spy as well and join both\n"
		"  with `perfspy merge` (py-spy's Python lines over perf's frames).\n",
		cli_prog, pid, ver, path,
		minor && minor < 12 ? "This Python (3.11 or older) has no perf support" :
				      "Python 3.11 and older have no perf support");
	if (stale)
		fprintf(stderr, "  (%s is older than pid %d: an earlier process's with that pid)\n",
			path, pid);
}

/* py-spy's default name: PROGRAM-TIMESTAMP.EXT. */
static char *default_output(const struct rec_args *a, int fmt, int pid)
{
	const char *ext = fmt == PERFSPY_FORMAT_RAW ? "txt" :
			  fmt == PERFSPY_FORMAT_SPEEDSCOPE ? "json" :
			  fmt == PERFSPY_FORMAT_PPROF ? "pb.gz" : "svg";
	char name[64], path[64], stamp[32];
	struct tm tm;
	time_t t = time(NULL);
	char *out, *slash;

	if (a->argv && a->argv[0]) {
		slash = strrchr(a->argv[0], '/');
		snprintf(name, sizeof(name), "%s", slash ? slash + 1 : a->argv[0]);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		read_line(path, name, sizeof(name));
		if (!*name)
			snprintf(name, sizeof(name), "pid%d", pid);
	}
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	if (asprintf(&out, "%s-%s.%s", name, stamp, ext) < 0)
		return NULL;
	return out;
}

static int start(const struct rec_args *a, struct cli_out *save,
		 struct perfspy_record **rec)
{
	PERFSPY_OPTS(perfspy_record_opts, ro,
		.log_fn = cli_log,
		.log_level = a->quiet ? PERFSPY_LOG_ERROR :
			     a->verbose > 1 ? PERFSPY_LOG_DEBUG :
			     a->verbose ? PERFSPY_LOG_INFO : PERFSPY_LOG_WARN,
		.pid = a->pid,
		.argv = (const char *const *)a->argv,
		.rate = (uint32_t)a->rate,
		.stack_size = (uint32_t)a->stack_size,
		.mmap_pages = (uint32_t)a->mmap_pages,
		.duration_ms = (uint64_t)(a->duration * 1000.0 + 0.5),
		.save = save->f != NULL,
		.save_fd = save->f ? fileno(save->f) : -1,
		.idle = a->idle,
	);

	return cli_record_start(&ro, "record", rec);
}

struct thr_row {
	int pid, tid;
	const char *comm;
	uint64_t n;
	double cpu_s; /* < 0: unknown */
};

static int row_cmp(const void *x, const void *y)
{
	const struct thr_row *a = x, *b = y;

	if (a->n != b->n)
		return a->n < b->n ? 1 : -1;
	return a->tid - b->tid;
}

static int dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* Threads that ran at least this long get a rate (fewer samples say
 * little about one). */
#define RATE_MIN_CPU_S 0.2

/* issue 9: samples per thread, requested vs achieved rate, lost
 * records with the fix. */
static void summary(struct perfspy_session *s, const struct perfspy_record *rec,
		    const struct perfspy_record_stats *st, const struct rec_args *a)
{
	PERFSPY_OPTS(perfspy_thread, t);
	struct thr_row *rows = NULL, *nr_rows;
	double secs = st->duration_ns / 1e9, *rates = NULL, cpu_all = 0, rated_n = 0;
	size_t n = 0, nr_rates = 0, i, shown = 20;
	uint64_t total = 0, ns;

	for (i = 0; s && !perfspy_session__thread(s, (uint32_t)i, &t); i++) {
		if ((!a->subprocesses && t.pid != st->pid) || !t.nr_samples)
			continue;
		nr_rows = realloc(rows, (n + 1) * sizeof(*rows));
		if (!nr_rows)
			break;
		rows = nr_rows;
		rows[n++] = (struct thr_row){ t.pid, t.tid, t.comm, t.nr_samples,
			!perfspy_record__thread_cpu(rec, t.tid, &ns) ? ns / 1e9 : -1 };
		total += t.nr_samples;
	}
	if (n) {
		qsort(rows, n, sizeof(*rows), row_cmp);
		rates = calloc(n, sizeof(*rates));
	}
	fprintf(stderr, "%s: recorded %.1f s of pid %d: %llu samples in %zu thread%s%s\n",
		cli_prog, secs, st->pid, (unsigned long long)total, n, n == 1 ? "" : "s",
		a->subprocesses ? " (with subprocesses)" : "");
	for (i = 0; i < n; i++) {
		bool rated = rows[i].cpu_s >= RATE_MIN_CPU_S;

		if (rows[i].cpu_s > 0) {
			cpu_all += rows[i].cpu_s;
			rated_n += (double)rows[i].n;
		}
		if (rated && rates)
			rates[nr_rates++] = rows[i].n / rows[i].cpu_s;
		if (i >= shown)
			continue;
		fprintf(stderr, "  pid %d tid %d %-16s %8llu samples", rows[i].pid, rows[i].tid,
			rows[i].comm ? rows[i].comm : "?", (unsigned long long)rows[i].n);
		if (rows[i].cpu_s >= 0)
			fprintf(stderr, " %8.2f s on CPU", rows[i].cpu_s);
		if (rated && !a->idle)
			fprintf(stderr, " %7.1f Hz", rows[i].n / rows[i].cpu_s);
		fputc('\n', stderr);
	}
	if (n > shown)
		fprintf(stderr, "  ... %zu more threads\n", n - shown);
	/* Per thread the count is noisy when threads of a process take
	 * turns on a CPU (measured: 86-110 Hz per thread, 98 Hz in all, at
	 * 99 Hz). Our reading: the kernel swaps equivalent inherited
	 * contexts at a switch with the timer running (kernel/events/core.c
	 * perf_event_context_sched_out). The rate over all threads' CPU
	 * time is the one to trust. */
	if (a->idle)
		fprintf(stderr, "%s: --idle: the samples above include every switch-out (the "
			"context-switches event), so no rate is given\n", cli_prog);
	else if (cpu_all > 0)
		fprintf(stderr, "%s: rate: requested %u Hz per second on CPU, achieved %.1f Hz over "
			"all threads' CPU time (%.2f s)\n", cli_prog, st->rate, rated_n / cpu_all,
			cpu_all);
	else
		fprintf(stderr, "%s: rate: requested %u Hz per second on CPU; the threads' CPU "
			"time is unknown (they ended)\n", cli_prog, st->rate);
	if (nr_rates && !a->idle) {
		qsort(rates, nr_rates, sizeof(*rates), dbl_cmp);
		fprintf(stderr, "  per thread: %.1f Hz (lowest) / %.1f Hz (median) over the %zu "
			"that ran %.1f s or more\n", rates[0], rates[(nr_rates - 1) / 2],
			nr_rates, RATE_MIN_CPU_S);
	}
	if (!st->lost_records) {
		fprintf(stderr, "%s: lost records: 0\n", cli_prog);
	} else {
		fprintf(stderr,
			"%s: warning: %llu samples lost in %llu ring-buffer overflows: the kernel's\n"
			"  buffers (%u pages per CPU) filled before they were read. Fix: a larger\n"
			"  --mmap-pages (e.g. %u), a smaller --stack-size (e.g. 16384), or a\n"
			"  lower --rate\n",
			cli_prog, (unsigned long long)st->lost,
			(unsigned long long)st->lost_records, st->mmap_pages,
			st->mmap_pages ? st->mmap_pages * 4 : 4096);
	}
	if (!st->kernel)
		fprintf(stderr, "%s: note: kernel frames were not sampled "
			"(perf_event_paranoid allows user space only)\n", cli_prog);
	free(rates);
	free(rows);
}

static int parse_args(int argc, char **argv, struct rec_args *a,
		      struct perfspy_convert_opts *co, struct perfspy_write_opts *wo)
{
	char *end;
	long v;
	int c;

	/* '+': options end at the command, whose own options stay its. */
	while ((c = getopt_long(argc, argv, "+:p:d:r:o:f:tsqvh", record_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (cli_parse_num(optarg, "pid", 1, INT_MAX, &v))
				return 2;
			a->pid = (int)v;
			break;
		case 'd':
			errno = 0;
			a->duration = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(a->duration > 0) ||
			    a->duration > 1e9) {
				cli_err("--duration: '%s' is not a number of seconds", optarg);
				return 2;
			}
			break;
		case 'r':
			if (cli_parse_num(optarg, "rate", 1, 100000, &a->rate))
				return 2;
			break;
		case 'o': a->out = optarg; break;
		case 'f':
			if (parse_format(optarg, &wo->format))
				return 2;
			break;
		case 't': co->threads = true; break;
		case 's': a->subprocesses = true; break;
		case O_NOLINENO: co->no_lineno = true; break;
		case O_FULL_FILENAMES: co->full_filenames = true; break;
		case O_SAVE: a->save = optarg; break;
		case O_TITLE: wo->title = optarg; break;
		case O_LINENO: wo->lineno = true; break;
		case O_STACK_SIZE:
			if (cli_parse_num(optarg, "stack-size", 8, 65528, &a->stack_size))
				return 2;
			if (a->stack_size % 8) {
				cli_err("--stack-size: %ld is not a multiple of 8", a->stack_size);
				return 2;
			}
			break;
		case O_MMAP_PAGES:
			if (cli_parse_num(optarg, "mmap-pages", 1, 1 << 20, &a->mmap_pages))
				return 2;
			if (a->mmap_pages & (a->mmap_pages - 1)) {
				cli_err("--mmap-pages: %ld is not a power of 2", a->mmap_pages);
				return 2;
			}
			break;
		case O_NATIVE: break;
		case O_IDLE: a->idle = co->idle = wo->milliseconds = true; break;
		case 'q': a->quiet = true; break;
		case 'v': a->verbose++; break;
		case 'h': record_usage(stdout); return 0;
		default: return cli_usage_error("record", c, argv);
		}
	}
	if (optind < argc)
		a->argv = argv + optind;
	if (!a->pid == !a->argv) {
		cli_err("record: give either --pid PID or a command to run (after --)");
		return 2;
	}
	return -1;
}

/*
 * The folding thread's priority (docs/design.md §3.3, "Keeping up"): on
 * CPUs the target keeps busy, this thread at nice 0 gets a fair share
 * among the target's threads (measured, 64 busy threads on 2 CPUs: a 5 s
 * recording took 17-27 s to finish, its 0.4 s of CPU spread thin; at
 * nice -10, 7-8 s). nice -10, as the library gives its capture thread:
 * only from the default nice 0 (a user who ran `nice -n N perfspy` keeps
 * N), only where allowed (CAP_SYS_NICE, RLIMIT_NICE), and after the
 * launched command was forked, so that it keeps its own priority.
 * Linux's nice is per thread (setpriority(2)).
 */
static void raise_priority(void)
{
	id_t tid = (id_t)gettid();

	errno = 0;
	if (getpriority(PRIO_PROCESS, tid) == 0 && !errno)
		(void)setpriority(PRIO_PROCESS, tid, -10);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fold the stream as it arrives; returns the session (NULL on error,
 * message printed). */
static struct perfspy_session *fold_live(struct perfspy_record *rec,
					 const struct rec_args *a,
					 const struct perfspy_convert_opts *co,
					 struct perfspy_folder *f)
{
	PERFSPY_OPTS(perfspy_open_opts, oo,
		.log_fn = cli_log,
		.log_level = a->quiet ? PERFSPY_LOG_ERROR :
			     a->verbose > 1 ? PERFSPY_LOG_DEBUG :
			     a->verbose ? PERFSPY_LOG_INFO : PERFSPY_LOG_WARN,
		.display_name = "<recording>",
	);
	struct perfspy_session *s = NULL;
	char msg[256];
	int err;

	err = perfspy_session__open_fd(perfspy_record__fd(rec), &oo, &s);
	if (!err)
		err = perfspy_session__convert(s, co, f);
	if (err) {
		perfspy_strerror(err, msg, sizeof(msg));
		cli_err("recording: %s", msg);
		perfspy_session__close(s);
		return NULL;
	}
	return s;
}

int cmd_record(int argc, char **argv)
{
	PERFSPY_OPTS(perfspy_convert_opts, co);
	PERFSPY_OPTS(perfspy_write_opts, wo, .format = PERFSPY_FORMAT_FLAMEGRAPH);
	PERFSPY_OPTS(perfspy_record_stats, st);
	struct rec_args a = { 0 };
	struct perfspy_record *rec = NULL;
	struct perfspy_session *s = NULL;
	struct perfspy_folder *f = NULL;
	struct cli_out save = { 0 };
	char *out_path = NULL, msg[256];
	double t_start;
	int ret, err;

	ret = parse_args(argc, argv, &a, &co, &wo);
	if (ret >= 0)
		return ret;
	ret = 1;
	if (wo.format == PERFSPY_FORMAT_SPEEDSCOPE)
		co.threads = true; /* one profile per thread (as convert) */
	if (perfspy_folder__new(&f)) {
		cli_err("out of memory");
		return 1;
	}
	/* speedscope's time order (docs/output.md §8). */
	if (wo.format == PERFSPY_FORMAT_SPEEDSCOPE)
		perfspy_folder__keep_timeline(f, true);
	if (a.save && cli_out_open(&save, a.save))
		goto out;
	install_stop_signals();
	/* Attaching (opening events per thread, reading /proc) is work
	 * done on those busy CPUs too; a launched command is forked first. */
	if (a.pid)
		raise_priority();
	if (start(&a, &save, &rec))
		goto out;
	active_rec = rec;
	raise_priority();
	t_start = mono_s(); /* the events are enabled (or the child released) */
	perfspy_record__stats(rec, &st);
	if (!a.quiet) {
		if (a.pid)
			perf_map_note(a.pid);
		fprintf(stderr, "%s: sampling pid %d at %ld Hz%s; Ctrl-C to stop\n", cli_prog,
			st.pid, a.rate ? a.rate : 100, a.subprocesses ? " with subprocesses" : "");
	}
	/* Without -s only the target's own threads count (py-spy's
	 * default); inherit follows children too, so filter here. */
	if (!a.subprocesses)
		co.pid = st.pid;
	s = fold_live(rec, &a, &co, f);
	err = perfspy_record__finish(rec);
	active_rec = NULL;
	perfspy_record__stats(rec, &st);
	/* How far the folding ran behind the sampling (issue 16's keep-up
	 * bench reads it): the last record folded, past the sampling's end. */
	if (a.verbose)
		fprintf(stderr, "%s: folded the last record %.2f s after sampling ended\n", cli_prog,
			mono_s() - t_start - (double)st.duration_ns / 1e9);
	if (!s)
		goto out;
	if (err) {
		perfspy_strerror(err, msg, sizeof(msg));
		cli_err("recording ended early: %s", msg);
		goto out;
	}
	/* Writing: a Ctrl-C now removes the temporary files and exits. */
	cli_install_signals();
	if (!a.out)
		a.out = out_path = default_output(&a, wo.format, st.pid);
	if (!a.out)
		goto out;
	if (wo.format == PERFSPY_FORMAT_PPROF)
		cli_pprof_opts(s, st.pid > 0 ? st.pid : 0, 0, NULL, &wo);
	if (wo.format == PERFSPY_FORMAT_FLAMEGRAPH)
		cli_svg_opts(s, &wo);
	err = cli_write_folder(a.out, a.out, f, &wo);
	cli_pprof_opts_free(&wo);
	if (err)
		goto out;
	if (a.save) {
		err = cli_out_commit(&save);
		memset(&save, 0, sizeof(save)); /* committed or cleaned up */
		if (err)
			goto out;
	}
	if (!a.quiet) {
		summary(s, rec, &st, &a);
		fprintf(stderr, "%s: wrote %s (%zu stacks, %llu %s)", cli_prog,
			strcmp(a.out, "-") ? a.out : "<stdout>", perfspy_folder__nr_stacks(f),
			(unsigned long long)perfspy_folder__total(f),
			a.idle ? "ms on and off CPU" : "samples");
		if (a.save)
			fprintf(stderr, "; perf.data: %s", a.save);
		fputc('\n', stderr);
		if (!perfspy_folder__nr_stacks(f))
			fprintf(stderr, "%s: warning: no samples: the program was not on a CPU "
				"while recorded\n", cli_prog);
	}
	ret = 0;
out:
	if (save.f)
		cli_out_abort(&save);
	active_rec = NULL;
	perfspy_session__close(s);
	perfspy_record__free(rec);
	perfspy_folder__free(f);
	free(out_path);
	return ret;
}
