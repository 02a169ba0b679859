// SPDX-License-Identifier: GPL-2.0
/*
 * What the perfspy subcommands share (cli.h): messages, option numbers,
 * opening sessions, progress, safe output files, signals, and loading an
 * input that is perf.data or folded stacks. The subcommands (cmd_*.c) use
 * this file and the library only, never one another.
 *
 * Inputs are told apart by their first bytes ("PERFILE2", the magic of
 * both perf.data layouts, perf's tools/perf/util/header.c; "2ELIFREP" in
 * the other byte order) rather than by their names.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *cli_prog = "perfspy";

/* The temporary output file to remove on a signal. Only the CLI may
 * keep process-wide state (here and the progress line's below): it is
 * the program, not the library. */
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

/* debuginfod (issue 14): libdebuginfod waits 90 s for a silent server by
 * default (debuginfod_find_debuginfo(3), DEBUGINFOD_TIMEOUT); a converter
 * should not hang that long, so the CLI's default is 10 s unless the
 * user set one. Its download progress is info-level: shown by default
 * when servers are configured. */
static bool debuginfod_on(const struct cli_common *c)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (c->no_debuginfod || !urls || !*urls)
		return false;
	setenv("DEBUGINFOD_TIMEOUT", "10", 0);
	return true;
}

struct perfspy_session *cli_open(const char *path, const struct cli_common *c)
{
	int level = cli_log_level(c);
	PERFSPY_OPTS(perfspy_open_opts, o,
		.log_fn = cli_log,
		.log_level = debuginfod_on(c) && level == PERFSPY_LOG_WARN ?
			     PERFSPY_LOG_INFO : level,
		.log_level_set = true,
		.symfs = c->symfs,
		.buildid_dir = c->buildid_dir,
		.perf_map_dir = c->perf_map_dir,
		.kallsyms = c->kallsyms,
		.no_debuginfod = c->no_debuginfod,
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

int cli_log_level(const struct cli_common *c)
{
	return c->quiet ? PERFSPY_LOG_ERROR : c->verbose > 1 ? PERFSPY_LOG_DEBUG :
	       c->verbose ? PERFSPY_LOG_INFO : PERFSPY_LOG_WARN;
}

int cli_read_fd(int fd, const char *name, char **buf, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap), *nb;
	ssize_t k;

	while (b) {
		if (n == cap) {
			nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
			if (!nb)
				break;
			b = nb;
			cap *= 2;
		}
		k = read(fd, b + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			cli_err("%s: %s", name, strerror(errno));
			free(b);
			return -1;
		}
		if (!k) {
			*buf = b;
			*len = n;
			return 0;
		}
		n += (size_t)k;
	}
	free(b);
	cli_err("out of memory");
	return -1;
}

/* Look at the first 8 bytes of @fd without consuming them: pread on a
 * file, tee(2) on a pipe (it copies pipe data without taking it).
 * Returns the number of bytes seen (0 at EOF), or -1 when @fd can be
 * neither peeked nor rewound (a terminal, a socket). */
static ssize_t peek8(int fd, char *buf)
{
	struct stat st;
	int p[2];
	ssize_t n = -1;
	int tries;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		return pread(fd, buf, 8, lseek(fd, 0, SEEK_CUR));
	if (pipe(p))
		return -1;
	for (tries = 0; tries < 1000; tries++) {
		n = tee(fd, p[1], 8, 0);
		if (n <= 0)
			break;
		n = read(p[0], buf, (size_t)n);
		if (n >= 8)
			break;
		/* Fewer than 8 bytes in the pipe yet: wait for the writer. */
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	close(p[0]);
	close(p[1]);
	return n;
}

static bool is_perf_magic(const char *b, ssize_t n)
{
	return n >= 8 && (!memcmp(b, "PERFILE2", 8) || !memcmp(b, "2ELIFREP", 8));
}

/*
 * Folded stacks `frame;...;frame COUNT` (py-spy raw, perfspy convert
 * output) from @fd into @f, read by the library, so that the CLI reads
 * folded text by the same rules (frame grammar, thread roots of every
 * py-spy version, `process` frames holding ';') as merge reads its
 * captures. @empty: the input holds no byte. 0 or -1 (message printed).
 */
static int read_folded(int fd, const char *name, bool empty,
		       const struct cli_common *c, struct perfspy_folder *f)
{
	PERFSPY_OPTS(perfspy_read_opts, ro, .format = PERFSPY_CAPTURE_RAW,
		     .display_name = name, .log_fn = cli_log,
		     .log_level = cli_log_level(c),
		     .log_level_set = true);
	PERFSPY_OPTS(perfspy_read_stats, rs);
	char msg[256];
	int err;

	err = perfspy_folder__read_folded_fd(f, fd, &ro, &rs);
	if (err == -PERFSPY_E_CAPTURE || (!err && !rs.stacks)) {
		/* Nothing usable: say why as the reader would for perf.data. */
		cli_err(!empty ? "%s: not a perf.data file (no PERFILE2 magic at offset 0) nor folded stacks" :
			"%s: empty file at offset 0 (neither perf.data nor folded stacks)", name);
		return -1;
	}
	if (err) {
		perfspy_strerror(err, msg, sizeof(msg));
		cli_err("%s: %s", name, msg);
		return -1;
	}
	return 0;
}

static void print_convert_error(struct perfspy_session *s, const char *name, int err)
{
	PERFSPY_OPTS(perfspy_event, ev);
	char msg[256];
	uint32_t i;

	perfspy_strerror(err, msg, sizeof(msg));
	cli_err("%s: %s", name, msg);
	if (err != -PERFSPY_E_NO_EVENT)
		return;
	fprintf(stderr, "%s: events in this file:", cli_prog);
	for (i = 0; !perfspy_session__event(s, i, &ev); i++)
		fprintf(stderr, " %s", ev.name);
	fputc('\n', stderr);
}

int cli_load_input(const char *path, const struct cli_common *c,
		   const struct perfspy_convert_opts *co,
		   struct perfspy_folder *f, struct perfspy_session **sp)
{
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	char magic[8];
	ssize_t n;
	int rc, err;

	*sp = NULL;
	if (fd < 0) {
		cli_err("%s: %s", name, strerror(errno));
		return -1;
	}
	n = peek8(fd, magic);
	if (n < 0 || is_perf_magic(magic, n)) {
		if (fd)
			close(fd);
		*sp = cli_open(path, c);
		if (!*sp)
			return -1;
		err = perfspy_session__convert(*sp, co, f);
		cli_progress_end();
		if (err)
			print_convert_error(*sp, name, err);
		return err ? -1 : 0;
	}
	rc = read_folded(fd, name, n == 0, c, f);
	if (fd)
		close(fd);
	return rc;
}

/* pprof Mappings: the session's DSO paths and build ids (perfspy.h,
 * perfspy_write_opts.dso_paths). Arrays of the session's strings; the
 * caller frees the two arrays. -1 on ENOMEM (the output then lacks them). */
static int session_dsos(struct perfspy_session *s, struct perfspy_write_opts *wo)
{
	PERFSPY_OPTS(perfspy_dso, d);
	const char **paths = NULL, **bids = NULL;
	uint32_t n = 0, i;

	while (!perfspy_session__dso(s, n, &d))
		n++;
	if (!n)
		return 0;
	paths = calloc(n, sizeof(*paths));
	bids = calloc(n, sizeof(*bids));
	if (!paths || !bids) {
		free(paths);
		free(bids);
		return -1;
	}
	for (i = 0; i < n && !perfspy_session__dso(s, i, &d); i++) {
		paths[i] = d.path;
		bids[i] = d.build_id;
	}
	wo->dso_paths = paths;
	wo->dso_build_ids = bids;
	wo->nr_dsos = i;
	return 0;
}

static bool frame_inlined(void *ctx, const char *frame, size_t len)
{
	return perfspy_session__frame_inlined(ctx, frame, len);
}

void cli_pprof_opts(struct perfspy_session *s, struct perfspy_write_opts *wo)
{
	session_dsos(s, wo);
	wo->frame_inlined = frame_inlined;
	wo->frame_inlined_ctx = s;
	wo->python_first_lines = true; /* a session's frames: first lines */
}

static const char *frame_lib(void *ctx, const char *frame, size_t len)
{
	return perfspy_session__frame_lib(ctx, frame, len);
}

void cli_svg_opts(struct perfspy_session *s, struct perfspy_write_opts *wo)
{
	wo->frame_lib = frame_lib;
	wo->frame_lib_ctx = s;
}

void cli_pprof_opts_free(struct perfspy_write_opts *wo)
{
	free((void *)wo->dso_paths);
	free((void *)wo->dso_build_ids);
	wo->dso_paths = wo->dso_build_ids = NULL;
	wo->nr_dsos = 0;
}
