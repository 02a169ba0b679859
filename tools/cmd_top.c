// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy top (issue 10, docs/top.md): py-spy top's live table from the
 * library's live capture. A worker thread folds the stream as it arrives
 * (the session `perfspy record` uses); from the conversion's progress
 * callback, which runs between records, it takes each interval's table
 * (perfspy_top__update) under a mutex. The main thread owns the
 * terminal: keys, resizing and drawing, with plain ANSI sequences
 * (alternate screen, cursor home, erase to end of line), so it works in
 * tmux and over ssh. When stdout is not a terminal it prints one table
 * per interval instead.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static void top_usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy top [options] (--pid PID | [--] COMMAND [ARGS...])\n"
		"\n"
		"A live table of the functions using the CPU, as py-spy top: Python\n"
		"frames with the native function under them that burns the time\n"
		"(`forward (model.py:40) -> cudaLaunchKernel`), refreshed every interval.\n"
		"Keys: q quits, s cycles the sort column, t toggles the per-thread view,\n"
		"p pauses the display. When stdout is not a terminal, one table is\n"
		"printed per interval.\n"
		"\n"
		"  -p, --pid PID         attach to this running process\n"
		"  -r, --rate HZ         samples per second of CPU time, per thread\n"
		"                        [default: 100]\n"
		"  -i, --interval S      seconds between refreshes [default: 1]\n"
		"  -d, --duration S      stop after S seconds [default: when the program\n"
		"                        exits, q or Ctrl-C]\n"
		"  -t, --threads         start in the per-thread view\n"
		"  -n, --rows N          rows printed per table when stdout is not a\n"
		"                        terminal [default: 20]\n"
		"      --idle            off-CPU time too: threads blocked (futex, sleep,\n"
		"                        I/O) count under the stack they blocked in; the\n"
		"                        table is then in milliseconds on and off CPU\n"
		"      --native-only     native (and kernel) frames only\n"
		"      --python-only     Python frames only\n"
		"  -q, --quiet           only errors on stderr\n"
		"  -v, --verbose         more messages (twice: debug)\n"
		"  -h, --help            this help\n");
}

enum { O_NATIVE_ONLY = 256, O_PYTHON_ONLY, O_IDLE };

static const struct option top_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "rate", required_argument, NULL, 'r' },
	{ "interval", required_argument, NULL, 'i' },
	{ "duration", required_argument, NULL, 'd' },
	{ "threads", no_argument, NULL, 't' },
	{ "rows", required_argument, NULL, 'n' },
	{ "native-only", no_argument, NULL, O_NATIVE_ONLY },
	{ "python-only", no_argument, NULL, O_PYTHON_ONLY },
	{ "idle", no_argument, NULL, O_IDLE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

enum sort_col { SORT_OWN, SORT_TOTAL, SORT_OWN_TIME, SORT_TOTAL_TIME, NR_SORT };

static const char *const sort_names[NR_SORT] = { "%Own", "%Total", "OwnTime", "TotalTime" };

struct top_args {
	int pid;
	long rate, rows;
	double interval, duration;
	int mode;
	bool threads, quiet, idle;
	int verbose;
	char **argv;
};

/* What the worker and the display share; everything below mu is under it. */
struct top_shared {
	struct perfspy_record *rec;
	struct perfspy_session *s;
	const struct top_args *a;
	int pid;
	pthread_mutex_t mu;
	struct perfspy_top *top, *top_thr; /* the two views, both kept current */
	struct perfspy_report *report;	    /* the interval's categories */
	struct perfspy_folder *folder;
	struct timespec last;
	double secs;	 /* the interval's length */
	uint64_t lost;
	unsigned gen;	 /* snapshots taken */
	bool done;	 /* the stream ended */
	int err;	 /* the conversion's error */
};

static volatile sig_atomic_t got_quit, got_winch;

static void on_quit(int sig)
{
	(void)sig;
	got_quit = 1;
}

static void on_winch(int sig)
{
	(void)sig;
	got_winch = 1;
}

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* Take one interval's table; under sh->mu. */
static int snapshot(struct top_shared *sh, const struct timespec *now)
{
	PERFSPY_OPTS(perfspy_report_opts, ro);
	PERFSPY_OPTS(perfspy_info, info);
	int err;

	err = perfspy_top__update(sh->top, sh->folder);
	if (!err)
		err = perfspy_top__update(sh->top_thr, sh->folder);
	if (err)
		return err;
	perfspy_report__free(sh->report);
	sh->report = NULL;
	/* An empty interval has no categories: none shown. */
	if (perfspy_folder__total(perfspy_top__interval(sh->top)) &&
	    (err = perfspy_report__new(perfspy_top__interval(sh->top), &ro, &sh->report)))
		return err;
	if (!perfspy_session__info(sh->s, &info))
		sh->lost = info.nr_lost;
	sh->secs = since(&sh->last, now);
	sh->last = *now;
	sh->gen++;
	return 0;
}

/* The conversion's progress callback: between records, so the folder
 * holds still while it is read. */
static int on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct top_shared *sh = ctx;
	struct timespec now;
	int err = 0;

	(void)done;
	(void)total;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (since(&sh->last, &now) < sh->a->interval)
		return 0;
	pthread_mutex_lock(&sh->mu);
	err = snapshot(sh, &now);
	pthread_mutex_unlock(&sh->mu);
	return err ? 1 : 0;
}

static void *worker(void *arg)
{
	struct top_shared *sh = arg;
	PERFSPY_OPTS(perfspy_convert_opts, co,
		/* Thread roots: the thread count and the per-thread view. */
		.threads = true,
		.pid = sh->pid,
		.progress_fn = on_progress,
		.progress_ctx = sh,
		.idle = sh->a->idle,
	);
	struct timespec now;
	int err;

	err = perfspy_session__convert(sh->s, &co, sh->folder);
	pthread_mutex_lock(&sh->mu);
	if (!err) {
		/* The last part of an interval, unless nothing came. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (perfspy_folder__total(sh->folder) && since(&sh->last, &now) > 0.2)
			err = snapshot(sh, &now);
	}
	sh->err = err;
	sh->done = true;
	pthread_mutex_unlock(&sh->mu);
	return NULL;
}

/* ------------------------------------------------------------ display */

struct screen {
	char *buf;
	size_t len, cap;
	int cols, lines;
	bool tty;
};

static void put(struct screen *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct screen *sc, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *nb;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(sc->buf + sc->len, sc->cap - sc->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < sc->cap - sc->len) {
			sc->len += (size_t)n;
			return;
		}
		nb = realloc(sc->buf, sc->cap * 2 + (size_t)n + 64);
		if (!nb)
			return; /* the line is left out; the next draw retries */
		sc->buf = nb;
		sc->cap = sc->cap * 2 + (size_t)n + 64;
	}
}

/* One line cut to the screen's width (bytes of UTF-8 counted as columns
 * once per character), then erase to its end. */
static void line(struct screen *sc, const char *text)
{
	size_t i, cols = 0, max = sc->cols > 0 ? (size_t)sc->cols : (size_t)-1;

	for (i = 0; text[i]; i++) {
		if (((unsigned char)text[i] & 0xc0) != 0x80 && ++cols > max)
			break;
	}
	put(sc, "%.*s%s\n", (int)i, text, sc->tty ? "\033[K" : "");
}

static int sort_by;

static int row_cmp(const void *x, const void *y)
{
	const struct perfspy_top_row *a = x, *b = y;
	uint64_t va, vb;

	switch (sort_by) {
	case SORT_TOTAL: va = a->total, vb = b->total; break;
	case SORT_OWN_TIME: va = a->own_all, vb = b->own_all; break;
	case SORT_TOTAL_TIME: va = a->total_all, vb = b->total_all; break;
	default: va = a->own, vb = b->own; break;
	}
	if (va != vb)
		return va < vb ? 1 : -1;
	return (a->sz > b->sz) - (a->sz < b->sz);
}

static void fmt_time(char *buf, size_t size, uint64_t w, double per)
{
	snprintf(buf, size, "%.2fs", (double)w * per);
}

/* Draw the table; under sh->mu. @max_rows: 0 means the screen's. */
static void draw(struct top_shared *sh, struct screen *sc, int sort, bool by_thread,
		 bool paused, long max_rows)
{
	PERFSPY_OPTS(perfspy_top_stats, st);
	PERFSPY_OPTS(perfspy_report_row, cat);
	struct perfspy_top *t = by_thread ? sh->top_thr : sh->top;
	struct perfspy_top_row *rows = NULL;
	char text[1024], own_t[32], tot_t[32];
	size_t nr = perfspy_top__nr_rows(t), i, shown;
	/* Seconds per unit: a sample is 1/rate s of CPU; --idle counts ms. */
	double per = sh->a->idle ? 0.001 : 1.0 / (double)(sh->a->rate ? sh->a->rate : 100), tot;
	uint64_t rtot;
	int len, k, header = 5; /* lines above the rows */

	sc->len = 0;
	if (sc->tty)
		put(sc, "\033[H");
	perfspy_top__stats(t, &st);
	snprintf(text, sizeof(text),
		 "perfspy top: pid %d  %.1f %s  threads: %u  lost: %llu  "
		 "sort: %s%s%s", sh->pid, sh->secs > 0 ? (double)st.total / sh->secs : 0.0,
		 sh->a->idle ? "ms/s on+off CPU" : "samples/s",
		 st.nr_threads, (unsigned long long)sh->lost, sort_names[sort],
		 by_thread ? "  [threads]" : "", paused ? "  [paused]" : "");
	line(sc, text);
	/* The report's categories, largest first, as many as fit. */
	len = snprintf(text, sizeof(text), "categories:");
	rtot = sh->report ? perfspy_report__total(sh->report) : 0;
	for (k = 0; rtot && !perfspy_report__category(sh->report, (uint32_t)k, &cat); k++) {
		if (len >= (int)sizeof(text) - 1)
			break;
		if (!cat.samples)
			continue;
		len += snprintf(text + len, sizeof(text) - (size_t)len, "%s %s %.1f%%",
				k ? "," : "", cat.name, 100.0 * (double)cat.samples / (double)rtot);
	}
	if (!rtot)
		snprintf(text + len, sizeof(text) - (size_t)len, " (no samples yet)");
	line(sc, text);
	line(sc, sc->tty ? "keys: q quit  s sort  t threads  p pause" : "");
	line(sc, "");
	line(sc, "  %Own   %Total  OwnTime  TotalTime  Function (filename:line)");
	if (nr)
		rows = calloc(nr, sizeof(*rows));
	for (i = 0; rows && i < nr; i++) {
		rows[i].sz = sizeof(rows[i]);
		perfspy_top__row(t, i, &rows[i]);
	}
	if (rows && nr > 1 && sort != SORT_OWN) {
		/* qsort is not stable: the library's order breaks ties. */
		sort_by = sort;
		for (i = 0; i < nr; i++)
			rows[i].sz = i; /* the library's rank, for ties */
		qsort(rows, nr, sizeof(*rows), row_cmp);
	}
	shown = max_rows > 0 ? (size_t)max_rows :
		sc->lines > header + 1 ? (size_t)(sc->lines - header - 1) : 0;
	tot = st.total ? (double)st.total : 1.0;
	for (i = 0; rows && i < nr && i < shown; i++) {
		const struct perfspy_top_row *r = &rows[i];

		if (!r->own_all && !r->total_all)
			break;
		fmt_time(own_t, sizeof(own_t), r->own_all, per);
		fmt_time(tot_t, sizeof(tot_t), r->total_all, per);
		if (by_thread)
			snprintf(text, sizeof(text), "%6.2f%% %6.2f%% %8s %10s  [%d %s] %s",
				 100.0 * (double)r->own / tot, 100.0 * (double)r->total / tot,
				 own_t, tot_t, r->tid, r->thread_name ? r->thread_name : "",
				 r->name);
		else
			snprintf(text, sizeof(text), "%6.2f%% %6.2f%% %8s %10s  %s",
				 100.0 * (double)r->own / tot, 100.0 * (double)r->total / tot,
				 own_t, tot_t, r->name);
		line(sc, text);
	}
	free(rows);
	if (sc->tty)
		put(sc, "\033[J");
}

static void draw_flush(struct screen *sc)
{
	size_t off = 0;
	ssize_t n;

	while (off < sc->len) {
		n = write(STDOUT_FILENO, sc->buf + off, sc->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		off += (size_t)n;
	}
}

static struct termios saved_tio;
static bool tio_saved, alt_screen;

static void term_restore(void)
{
	static const char leave[] = "\033[?25h\033[?1049l";

	if (alt_screen && write(STDOUT_FILENO, leave, sizeof(leave) - 1) < 0)
		alt_screen = false;
	alt_screen = false;
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
	tio_saved = false;
}

/* Alternate screen, hidden cursor; keys one at a time without echo
 * (output processing stays on, so '\n' still moves to column 0). */
static void term_enter(void)
{
	static const char enter[] = "\033[?1049h\033[H\033[2J\033[?25l";
	struct termios tio;

	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved_tio)) {
		tio = saved_tio;
		tio.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		tio.c_cc[VMIN] = 0;
		tio.c_cc[VTIME] = 0;
		if (!tcsetattr(STDIN_FILENO, TCSAFLUSH, &tio))
			tio_saved = true;
	}
	if (write(STDOUT_FILENO, enter, sizeof(enter) - 1) > 0)
		alt_screen = true;
	atexit(term_restore);
}

static void term_size(struct screen *sc)
{
	struct winsize ws;

	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col && ws.ws_row) {
		sc->cols = ws.ws_col;
		sc->lines = ws.ws_row;
	} else {
		sc->cols = 80;
		sc->lines = 24;
	}
}

static int parse_args(int argc, char **argv, struct top_args *a)
{
	char *end;
	double *dst;
	int c;

	while ((c = getopt_long(argc, argv, "+:p:r:i:d:tn:qvh", top_opts, NULL)) != -1) {
		long v;

		switch (c) {
		case 'p':
			if (cli_parse_num(optarg, "pid", 1, INT_MAX, &v))
				return 2;
			a->pid = (int)v;
			break;
		case 'r':
			if (cli_parse_num(optarg, "rate", 1, 100000, &a->rate))
				return 2;
			break;
		case 'i':
		case 'd':
			dst = c == 'i' ? &a->interval : &a->duration;
			errno = 0;
			*dst = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(*dst >= 0.1) || *dst > 1e9) {
				cli_err("--%s: '%s' is not a number of seconds (0.1 or more)",
					c == 'i' ? "interval" : "duration", optarg);
				return 2;
			}
			break;
		case 't': a->threads = true; break;
		case 'n':
			if (cli_parse_num(optarg, "rows", 1, 100000, &a->rows))
				return 2;
			break;
		case O_NATIVE_ONLY: a->mode = PERFSPY_TOP_NATIVE; break;
		case O_PYTHON_ONLY: a->mode = PERFSPY_TOP_PYTHON; break;
		case O_IDLE: a->idle = true; break;
		case 'q': a->quiet = true; break;
		case 'v': a->verbose++; break;
		case 'h': top_usage(stdout); return 0;
		default: return cli_usage_error("top", c, argv);
		}
	}
	if (optind < argc)
		a->argv = argv + optind;
	if (!a->pid == !a->argv) {
		cli_err("top: give either --pid PID or a command to run (after --)");
		return 2;
	}
	return -1;
}

static int start(const struct top_args *a, struct perfspy_record **rec)
{
	PERFSPY_OPTS(perfspy_record_opts, ro,
		.log_fn = cli_log,
		.log_level = a->quiet ? PERFSPY_LOG_ERROR :
			     a->verbose > 1 ? PERFSPY_LOG_DEBUG :
			     a->verbose ? PERFSPY_LOG_INFO : PERFSPY_LOG_WARN,
		.pid = a->pid,
		.argv = (const char *const *)a->argv,
		.rate = (uint32_t)a->rate,
		.duration_ms = (uint64_t)(a->duration * 1000.0 + 0.5),
		.idle = a->idle,
	);

	return cli_record_start(&ro, "sample", rec);
}

/* The display loop: until q, a signal, or the end of the stream. */
static void run_display(struct top_shared *sh, const struct top_args *a)
{
	struct screen sc = { .tty = isatty(STDOUT_FILENO) };
	bool by_thread = a->threads, paused = false, dirty = true, done = false;
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	unsigned seen = 0;
	int sort = SORT_OWN;
	char key;

	if (sc.tty) {
		term_enter();
		term_size(&sc);
	}
	while (!got_quit && !done) {
		if (got_winch) {
			got_winch = 0;
			term_size(&sc);
			dirty = true;
		}
		pthread_mutex_lock(&sh->mu);
		done = sh->done;
		if (sh->gen != seen && !paused) {
			seen = sh->gen;
			dirty = true;
		}
		if (dirty && (sc.tty || sh->gen)) {
			draw(sh, &sc, sort, by_thread, paused, sc.tty ? 0 : a->rows ? a->rows : 20);
			if (!sc.tty)
				put(&sc, "\n");
		} else {
			dirty = false;
		}
		pthread_mutex_unlock(&sh->mu);
		if (dirty) {
			draw_flush(&sc);
			dirty = false;
		}
		if (done)
			break;
		/* Keys from a terminal; otherwise just the interval's tick. */
		if (poll(&pfd, tio_saved ? 1 : 0, 100) > 0 && (pfd.revents & POLLIN) &&
		    read(STDIN_FILENO, &key, 1) == 1) {
			switch (key) {
			case 'q': case 'Q': got_quit = 1; break;
			case 's': sort = (sort + 1) % NR_SORT; dirty = true; break;
			case 't': by_thread = !by_thread; dirty = true; break;
			case 'p': paused = !paused; dirty = true; break;
			default: break;
			}
		}
	}
	free(sc.buf);
	if (sc.tty)
		term_restore();
}

int cmd_top(int argc, char **argv)
{
	PERFSPY_OPTS(perfspy_open_opts, oo, .display_name = "<recording>");
	PERFSPY_OPTS(perfspy_record_stats, st);
	PERFSPY_OPTS(perfspy_top_opts, to);
	struct top_args a = { .interval = 1.0 };
	struct top_shared sh = { .a = &a };
	struct sigaction sa;
	pthread_t thr;
	bool started = false;
	char msg[256];
	int ret, err;

	ret = parse_args(argc, argv, &a);
	if (ret >= 0)
		return ret;
	ret = 1;
	pthread_mutex_init(&sh.mu, NULL);
	to.mode = a.mode;
	if (perfspy_folder__new(&sh.folder) || perfspy_top__new(&to, &sh.top)) {
		cli_err("out of memory");
		goto out;
	}
	to.threads = true;
	if (perfspy_top__new(&to, &sh.top_thr)) {
		cli_err("out of memory");
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_quit;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_winch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	if (start(&a, &sh.rec))
		goto out;
	perfspy_record__stats(sh.rec, &st);
	sh.pid = st.pid;
	oo.log_fn = cli_log;
	/* Warnings would scribble over the table: errors only, unless -v. */
	oo.log_level = a.verbose > 1 ? PERFSPY_LOG_DEBUG : a.verbose ? PERFSPY_LOG_INFO :
		       PERFSPY_LOG_ERROR;
	oo.log_level_set = true;
	err = perfspy_session__open_fd(perfspy_record__fd(sh.rec), &oo, &sh.s);
	if (err) {
		perfspy_strerror(err, msg, sizeof(msg));
		cli_err("recording: %s", msg);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &sh.last);
	if (pthread_create(&thr, NULL, worker, &sh)) {
		cli_err("cannot start a thread");
		goto out;
	}
	started = true;
	run_display(&sh, &a);
	/* q or a signal: end the stream, so the conversion returns. */
	perfspy_record__stop(sh.rec);
	pthread_join(thr, NULL);
	started = false;
	err = perfspy_record__finish(sh.rec);
	perfspy_record__stats(sh.rec, &st);
	if (sh.err && sh.err != -PERFSPY_E_INTERRUPTED) {
		perfspy_strerror(sh.err, msg, sizeof(msg));
		cli_err("recording: %s", msg);
		goto out;
	}
	if (err && err != -EPIPE) {
		perfspy_strerror(err, msg, sizeof(msg));
		cli_err("recording ended early: %s", msg);
		goto out;
	}
	if (!a.quiet && !got_quit) {
		if (a.duration > 0 && (double)st.duration_ns >= a.duration * 1e9 * 0.99)
			fprintf(stderr, "%s: stopped after %.1f s\n", cli_prog, a.duration);
		else
			fprintf(stderr, "%s: pid %d ended\n", cli_prog, st.pid);
	}
	ret = 0;
out:
	if (started) {
		perfspy_record__stop(sh.rec);
		pthread_join(thr, NULL);
	}
	perfspy_session__close(sh.s);
	perfspy_record__free(sh.rec);
	perfspy_report__free(sh.report);
	perfspy_top__free(sh.top);
	perfspy_top__free(sh.top_thr);
	perfspy_folder__free(sh.folder);
	pthread_mutex_destroy(&sh.mu);
	return ret;
}
