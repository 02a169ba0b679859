// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy: command-line front end. Subcommands live one per file
 * (cmd_*.c); this file dispatches and holds what they share.
 */
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *cli_prog = "perfspy";

/* The temporary output file to remove on a signal. Only this file may
 * keep process-wide state: it is the program, not the library. */
static volatile sig_atomic_t pending_tmp_set;
static char pending_tmp[4096];

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_log(void *ctx, int level, const char *msg)
{
	static const char *const tags[] = { "error", "warning", "info", "debug" };

	(void)ctx;
	cli_progress_end();
	fprintf(stderr, "%s: %s: %s\n", cli_prog,
		tags[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

int cli_parse_num(const char *s, const char *what, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max) {
		cli_err("--%s: '%s' is not a number from %ld to %ld", what, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

struct perfspy_session *cli_open(const char *path, const struct cli_common *c)
{
	PERFSPY_OPTS(perfspy_open_opts, o,
		.log_fn = cli_log,
		.log_level = c->quiet ? PERFSPY_LOG_ERROR :
			     c->verbose > 1 ? PERFSPY_LOG_DEBUG :
			     c->verbose ? PERFSPY_LOG_INFO : PERFSPY_LOG_WARN,
		.symfs = c->symfs,
		.buildid_dir = c->buildid_dir,
		.perf_map_dir = c->perf_map_dir,
	);
	struct perfspy_session *s;
	char msg[256];
	int err;

	err = perfspy_session__open(path, &o, &s);
	if (err) {
		perfspy_strerror(err, msg, sizeof(msg));
		cli_err("%s: %s", strcmp(path, "-") ? path : "<stdin>", msg);
		return NULL;
	}
	return s;
}

static bool progress_shown;
static struct timespec progress_start;

int cli_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct timespec now;
	double el, rate;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!progress_start.tv_sec && !progress_start.tv_nsec) {
		progress_start = now;
		return 0;
	}
	el = (double)(now.tv_sec - progress_start.tv_sec) +
	     (now.tv_nsec - progress_start.tv_nsec) / 1e9;
	if (el < 2.0) /* only long runs show progress */
		return 0;
	rate = done / el / 1e6;
	if (total)
		fprintf(stderr, "\r%s: %.0f/%.0f MB (%.0f%%), %.1f MB/s, ETA %.0fs   ",
			cli_prog, done / 1e6, total / 1e6, 100.0 * done / total,
			rate, rate > 0 ? (total - done) / 1e6 / rate : 0.0);
	else
		fprintf(stderr, "\r%s: %.0f MB, %.1f MB/s   ", cli_prog,
			done / 1e6, rate);
	progress_shown = true;
	return 0;
}

void cli_progress_end(void)
{
	if (progress_shown) {
		fputc('\n', stderr);
		progress_shown = false;
	}
}

int cli_out_open(struct cli_out *o, const char *path)
{
	const char *slash;
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* A device or FIFO: renaming over it would replace the
		 * node, so write to it directly. */
		o->f = fopen(path, "w");
		if (!o->f) {
			cli_err("%s: cannot open output: %s", path, strerror(errno));
			return -1;
		}
		o->direct = true;
		return 0;
	}
	o->path = strdup(path);
	slash = strrchr(path, '/');
	if (!o->path || asprintf(&o->tmp, "%.*s.%s.tmp.XXXXXX",
				 slash ? (int)(slash - path + 1) : 0, path,
				 slash ? slash + 1 : path) < 0) {
		free(o->path);
		cli_err("out of memory");
		return -1;
	}
	fd = mkstemp(o->tmp);
	if (fd < 0) {
		cli_err("%s: cannot create output: %s", path, strerror(errno));
		free(o->path);
		free(o->tmp);
		o->path = o->tmp = NULL;
		return -1;
	}
	if (strlen(o->tmp) < sizeof(pending_tmp)) {
		memcpy(pending_tmp, o->tmp, strlen(o->tmp) + 1);
		pending_tmp_set = 1;
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		close(fd);
		cli_out_abort(o);
		cli_err("%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int cli_out_commit(struct cli_out *o)
{
	int err = 0;

	if (!o->path) {
		const char *name = o->direct ? "output" : "<stdout>";

		if (fflush(o->f) != 0 || ferror(o->f)) {
			cli_err("%s: write error: %s", name, strerror(errno));
			if (o->direct)
				fclose(o->f);
			return -1;
		}
		if (o->direct && fclose(o->f) != 0) {
			cli_err("%s: write error: %s", name, strerror(errno));
			return -1;
		}
		return 0;
	}
	/* No fsync: the rename gives atomicity against our own failures and
	 * signals, which is what a half-written profile needs; durability
	 * across a power cut is not worth a flush of hundreds of MB. */
	if (fflush(o->f) != 0 || ferror(o->f))
		err = -1;
	if (fclose(o->f) != 0)
		err = -1;
	o->f = NULL;
	if (!err && rename(o->tmp, o->path) != 0)
		err = -1;
	if (err) {
		cli_err("%s: write error: %s", o->path, strerror(errno));
		unlink(o->tmp);
	}
	pending_tmp_set = 0;
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return err;
}

void cli_out_abort(struct cli_out *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	pending_tmp_set = 0;
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
}

static void on_signal(int sig)
{
	(void)sig;
	if (pending_tmp_set)
		unlink(pending_tmp);
	_exit(130);
}

void cli_install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

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
		"  record    sample a running process or a command (live, through\n"
		"            perf_event) -> py-spy flame graph, raw or speedscope\n"
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
	if (!strcmp(argv[1], "convert"))
		return cmd_convert(argc - 1, argv + 1);
	if (!strcmp(argv[1], "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "merge"))
		return cmd_merge(argc - 1, argv + 1);
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	cli_err("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
