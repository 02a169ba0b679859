// SPDX-License-Identifier: GPL-2.0
/*
 * What the perfspy subcommands share (cli.h): messages, option numbers,
 * opening sessions, progress, safe output files, signals, and loading an
 * input that is perf.data or folded stacks. The subcommands (cmd_*.c) use
 * this file and the library only, never one another.
 *
 * Messages, exit codes and output files follow docs/conventions.md §11.
 *
 * Inputs are told apart by their first bytes ("PERFILE2", the magic of
 * both perf.data layouts, perf's tools/perf/util/header.c; "2ELIFREP" in
 * the other byte order) rather than by their names.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cpus.h"

const char *cli_prog = "perfspy";

/* The temporary output file to remove on a signal. Only the CLI may
 * keep process-wide state (here and the progress line's below): it is
 * the program, not the library. */
static volatile sig_atomic_t pending_tmp_set;
static char pending_tmp[4096];

void cli_err(const char *fmt, ...)
{
	va_list ap;

	cli_log_flush(); /* a held library error came first */
	fprintf(stderr, "%s: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * One cause, one line (issue 15): the library logs an error and then
 * returns its code, which the command would print again in its own
 * words. So the library's last error message is held here, and
 * cli_fail() prints it in place of the code's text; one that no
 * cli_fail() claims is printed by cli_log_flush() (main() calls it).
 */
static char held_err[1024];
static bool held;
/* Info level was raised for debuginfod's progress alone (cli_open()):
 * other info lines (`-v`'s file lookups) stay hidden. */
static bool info_debuginfod_only;

void cli_log_flush(void)
{
	if (held)
		fprintf(stderr, "%s: %s\n", cli_prog, held_err);
	held = false;
}

void cli_log(void *ctx, int level, const char *msg)
{
	static const char *const tags[] = { "error", "warning", "info", "debug" };

	(void)ctx;
	cli_progress_end();
	cli_log_flush();
	if (level <= PERFSPY_LOG_ERROR) {
		snprintf(held_err, sizeof(held_err), "%s", msg);
		held = true;
		return;
	}
	if (level == PERFSPY_LOG_INFO && info_debuginfod_only &&
	    strncmp(msg, "debuginfod: ", 12))
		return;
	fprintf(stderr, "%s: %s: %s\n", cli_prog,
		tags[level > 3 ? 3 : level], msg);
}

void cli_fail(const char *name, int err, const char *extra)
{
	char msg[256];

	cli_progress_end();
	if (held) {
		fprintf(stderr, "%s: %s%s\n", cli_prog, held_err, extra ? extra : "");
		held = false;
		return;
	}
	perfspy_strerror(err, msg, sizeof(msg));
	fprintf(stderr, "%s: %s: %s%s\n", cli_prog, name, msg, extra ? extra : "");
}

int cli_usage_error(const char *cmd, int c, char **argv)
{
	const char *opt = optind > 0 ? argv[optind - 1] : "";
	char name[64];

	/* A long option is the argument itself (up to any '='); a short one
	 * is optopt (the argument may be a cluster such as -qx). */
	if (!strncmp(opt, "--", 2))
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(opt, "="), opt);
	else
		snprintf(name, sizeof(name), "-%c", optopt > 0 && optopt < 128 ? optopt : '?');
	cli_err("%s: %s '%s'%s (see 'perfspy %s --help')", cmd,
		c == ':' ? "option" : "unknown option", name,
		c == ':' ? " needs a value" : "", cmd);
	return 2;
}

int cli_input_arg(const char *cmd, int argc, char **argv, const char **in, bool in_set)
{
	if (optind < argc && !in_set)
		*in = argv[optind++];
	if (optind < argc) {
		cli_err("%s: unexpected argument '%s': one input, as -i FILE or FILE (see 'perfspy %s --help')",
			cmd, argv[optind], cmd);
		return -1;
	}
	return 0;
}

/* A --symfs, --buildid-dir or --perf-map-dir that names no directory is
 * a typo more often than not: say so, once, and go on (nothing is found
 * there, as with an empty one). */
void cli_check_dirs(const struct cli_common *c)
{
	const char *const names[] = { "--symfs", "--buildid-dir", "--perf-map-dir" };
	const char *const dirs[] = { c->symfs, c->buildid_dir, c->perf_map_dir };
	struct stat st;
	size_t i;

	for (i = 0; i < 3; i++)
		if (dirs[i] && (stat(dirs[i], &st) || !S_ISDIR(st.st_mode)) && !c->quiet)
			fprintf(stderr, "%s: warning: %s %s: %s\n", cli_prog, names[i], dirs[i],
				stat(dirs[i], &st) ? strerror(errno) : "not a directory");
}

int cli_default_jobs(const struct perfspy_info *info)
{
	long n = cli_cpus();

	if (!info || !info->has_user_stack)
		return 1;
	/* One CPU is left to the warming threads (docs/design.md §6.5). */
	n--;
	return n < 1 ? 1 : n > 256 ? 256 : (int)n;
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

/* @fd >= 0: open the session on it (named @path in messages), else open
 * @path. */
static struct perfspy_session *open_session(const char *path, int fd,
					    const struct cli_common *c)
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
	int err;

	cli_check_dirs(c);
	info_debuginfod_only = o.log_level == PERFSPY_LOG_INFO && level == PERFSPY_LOG_WARN;
	if (fd >= 0) {
		o.display_name = path;
		err = perfspy_session__open_fd(fd, &o, &s);
	} else {
		err = perfspy_session__open(path, &o, &s);
	}
	if (err) {
		cli_fail(strcmp(path, "-") ? path : "<stdin>", err, NULL);
		return NULL;
	}
	return s;
}

struct perfspy_session *cli_open(const char *path, const struct cli_common *c)
{
	return open_session(path, -1, c);
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

/*
 * The file -o names: a symlink's target (written through, as a shell's
 * redirection would, not replaced by a regular file), else @path itself.
 * malloc'ed; NULL on ENOMEM.
 */
static char *out_target(const char *path)
{
	char link[4096], *t;
	const char *slash;
	struct stat st;
	ssize_t n;
	int hops;

	t = strdup(path);
	for (hops = 0; t && hops < 40; hops++) {
		if (lstat(t, &st) || !S_ISLNK(st.st_mode))
			return t;
		n = readlink(t, link, sizeof(link) - 1);
		if (n < 0)
			return t;
		link[n] = '\0';
		slash = strrchr(t, '/');
		if (link[0] == '/' || !slash) {
			free(t);
			t = strdup(link);
		} else {
			char *nt;

			/* A relative target is relative to the link's directory. */
			if (asprintf(&nt, "%.*s%s", (int)(slash - t + 1), t, link) < 0)
				nt = NULL;
			free(t);
			t = nt;
		}
	}
	return t;
}

int cli_out_open(struct cli_out *o, const char *path)
{
	const char *slash;
	struct stat st;
	mode_t mask, mode;
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
	/* The mode any tool's open(O_CREAT, 0666) gives (0666 & ~umask), or
	 * the mode of the file replaced; mkstemp() creates 0600. */
	mask = umask(0);
	umask(mask);
	mode = stat(path, &st) == 0 ? st.st_mode & 07777 : 0666 & ~mask;
	o->path = out_target(path);
	slash = o->path ? strrchr(o->path, '/') : NULL;
	if (!o->path || asprintf(&o->tmp, "%.*s.%s.tmp.XXXXXX",
				 slash ? (int)(slash - o->path + 1) : 0, o->path,
				 slash ? slash + 1 : o->path) < 0) {
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
	if (fchmod(fd, mode))
		cli_err("%s: warning: cannot set mode %o: %s", path, (unsigned)mode,
			strerror(errno));
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

/*
 * @tmp takes @path's place, as rename() does. An existing @path is
 * swapped with @tmp (renameat2 RENAME_EXCHANGE), then unlinked under the
 * temporary name: a plain rename() over an existing file makes ext4 start
 * writeback of the new file's delayed-allocation blocks at once (its
 * auto_da_alloc option, on by default: the kernel's
 * Documentation/admin-guide/ext4.rst), which cost 33-52 ms for a 114 MB
 * output on this project's machine and slowed the next writes to the
 * disk for seconds: re-running a conversion into the same file took
 * 0.21-0.47 s against 0.15-0.17 s into a new one (docs/design.md §6.11). Where the exchange is not to be had (an older kernel or another
 * file system, no file to replace), rename().
 */
static int replace(const char *tmp, const char *path)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) != 0)
		return rename(tmp, path);
	/* @tmp is the old file now: its link goes, the new file stays. */
	if (unlink(tmp) != 0)
		cli_err("%s: warning: the file replaced stays as %s: %s", path, tmp,
			strerror(errno));
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
	if (!err && replace(o->tmp, o->path) != 0)
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

/*
 * Blocks for a temporary output file ahead of its writes. ext4 reserves
 * a delayed block for each page a write() fills; into blocks that
 * fallocate() gave the file the same writes cost less: 114 MB in 1 MB
 * writes took 20-45 ms into a new file and 11.5-12.3 ms after one
 * fallocate() of 0.0-0.3 ms on this project's machine, and on tmpfs 57-59
 * ms against 46-48 ms with the fallocate() (docs/design.md §6.11). The
 * file grows ahead in steps of its size so far, 4 MB to 64 MB, from its
 * first MB on (smaller outputs never call it); cli_write_output() cuts
 * it back to what was written. Where fallocate() fails (a file system
 * without it, a full disk) the writes go on without it, as before.
 */
struct prealloc {
	int fd;
	off_t done, alloc;
	bool off;
};

#define PREALLOC_FROM ((off_t)1 << 20)
#define PREALLOC_MIN ((off_t)4 << 20)
#define PREALLOC_MAX ((off_t)64 << 20)

static ssize_t prealloc_write(void *cookie, const char *buf, size_t n)
{
	struct prealloc *pa = cookie;
	size_t left = n;
	ssize_t w;

	if (!n)
		return 0;
	if (!pa->off && pa->done + (off_t)n > pa->alloc &&
	    pa->done + (off_t)n > PREALLOC_FROM) {
		off_t end = pa->done + (off_t)n, step = end;

		step = step < PREALLOC_MIN ? PREALLOC_MIN : step > PREALLOC_MAX ? PREALLOC_MAX : step;
		if (fallocate(pa->fd, 0, pa->alloc, end + step - pa->alloc) == 0)
			pa->alloc = end + step;
		else
			pa->off = true;
	}
	while (left) {
		w = write(pa->fd, buf, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		buf += w;
		left -= (size_t)w;
		pa->done += w;
	}
	/* A short count tells stdio the rest failed; errno says why. */
	return left == n ? -1 : (ssize_t)(n - left);
}

/* The cookie's close: the descriptor is the cli_out's, closed there. */
static int prealloc_close(void *cookie)
{
	(void)cookie;
	return 0;
}

int cli_write_output(const char *path, const char *name,
		     int (*write_fn)(void *ctx, FILE *f), void *ctx)
{
	struct cli_out o;
	struct prealloc pa = { .fd = -1 };
	FILE *f = NULL;
	int err;

	if (cli_out_open(&o, path))
		return -1;
	/* A temporary file of ours: written through the preallocating
	 * stream (no buffer of its own: the writers buffer). */
	if (o.path && fflush(o.f) == 0) {
		pa.fd = fileno(o.f);
		f = fopencookie(&pa, "w", (cookie_io_functions_t){
			.write = prealloc_write, .close = prealloc_close });
		if (f)
			setvbuf(f, NULL, _IONBF, 0);
	}
	err = write_fn(ctx, f ? f : o.f);
	if (f) {
		if (!err && (fflush(f) != 0 || ferror(f)))
			err = -EIO;
		fclose(f);
		/* What was allocated past the end goes. */
		if (!err && pa.alloc > pa.done && ftruncate(pa.fd, pa.done) != 0)
			err = -errno;
	}
	if (err) {
		cli_out_abort(&o);
		cli_fail(name, err, NULL);
		return -1;
	}
	return cli_out_commit(&o);
}

struct folder_write {
	struct perfspy_folder *f;
	const struct perfspy_write_opts *wo;
};

static int write_folder(void *ctx, FILE *f)
{
	struct folder_write *w = ctx;

	return perfspy_folder__write(w->f, f, w->wo);
}

int cli_write_folder(const char *path, const char *name, struct perfspy_folder *f,
		     const struct perfspy_write_opts *wo)
{
	struct folder_write w = { f, wo };

	return cli_write_output(path, name, write_folder, &w);
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
	int err;

	err = perfspy_folder__read_folded_fd(f, fd, &ro, &rs);
	if (err == -PERFSPY_E_CAPTURE || (!err && !rs.stacks)) {
		/* Nothing usable: say why as the reader would for perf.data,
		 * in place of what the folded reader held against it. */
		held = false;
		cli_err(!empty ? "%s: not a perf.data file (no PERFILE2 magic at offset 0) nor folded stacks" :
			"%s: empty file at offset 0 (neither perf.data nor folded stacks)", name);
		return -1;
	}
	if (err) {
		cli_fail(name, err, NULL);
		return -1;
	}
	return 0;
}

void cli_convert_error(struct perfspy_session *s, const char *name, int err)
{
	PERFSPY_OPTS(perfspy_event, ev);
	char extra[512];
	size_t k;
	uint32_t i;

	extra[0] = '\0';
	if (err == -PERFSPY_E_NO_EVENT && s) {
		k = (size_t)snprintf(extra, sizeof(extra), "; events in this file:");
		for (i = 0; !perfspy_session__event(s, i, &ev) && k < sizeof(extra); i++)
			k += (size_t)snprintf(extra + k, sizeof(extra) - k, " %s", ev.name);
	}
	cli_fail(name, err, extra);
}

/*
 * A recording whose samples hit this many DSOs (a system-wide profile:
 * 38 and 42 on the bench's; one program's: 3-9) fills tens of MB of
 * tables, and its heap is given huge pages from the start rather than
 * after heapwarm.c's 48 MB (docs/design.md §6.15): they cost at most a
 * part of one 2 MB page of RSS, which a heap of that size does not
 * notice, and save the warming of every 4 KB page below 48 MB.
 */
#define BIG_HEAP_DSOS 16

/*
 * So does a recording in file layout with this much sample data
 * (docs/design.md §6.27): its frame-pointer conversion runs a second
 * session that builds the stacks (§6.25), each with its tables, and a
 * DWARF one unwinds megabytes of stack dumps. Below 48 MB its heap stayed
 * on 4 KB pages that the warmer touched one by one: 57 ms of that
 * thread's CPU on the deep-stack bench file, taken from the two that
 * convert. Pipe-layout recordings (`perf record -o -`, bench-memory's,
 * whose heap stays near 24 MB however long they are) keep the threshold.
 */
#define BIG_HEAP_DATA ((uint64_t)2 << 20)

static void heap_hint(const struct perfspy_info *info)
{
	if (!info)
		return;
	if (info->nr_dsos_hit >= BIG_HEAP_DSOS ||
	    (!info->pipe_mode && !info->compressed && info->data_size >= BIG_HEAP_DATA))
		cli_heapwarm_big();
}

/* PERFSPY_NAME_AHEAD, PERFSPY_BUILD_BEHIND and PERFSPY_COPY_IN, =0 or
 * =1, turn the names read ahead (docs/design.md §6.19, §6.26), the
 * stacks built on a second thread (§6.25) and the data read into memory
 * ahead (§6.32) off, or on wherever they can run: to measure them, and
 * to test both ways. Unset (or anything else): the library decides.
 * @never, @always, @auto: the option's values. */
static int helper_env(const char *name, int never, int always, int dflt)
{
	const char *e = getenv(name);

	if (e && !strcmp(e, "0"))
		return never;
	if (e && !strcmp(e, "1"))
		return always;
	return dflt;
}

int cli_load_input(const char *path, const struct cli_common *c,
		   const struct perfspy_convert_opts *co,
		   struct perfspy_folder *f, struct perfspy_session **sp)
{
	struct perfspy_convert_opts o;
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
		PERFSPY_OPTS(perfspy_info, info);
		const struct perfspy_info *known;
		struct stat st;
		bool stream = fd && (fstat(fd, &st) || !S_ISREG(st.st_mode));

		/* A named pipe (or any path that is not a regular file) is
		 * read from this fd: closed and opened again, it would have
		 * no reader for a moment, and its writer would die of
		 * SIGPIPE with the data past the pipe's buffer unread. */
		if (fd && !stream)
			close(fd);
		*sp = open_session(path, stream ? fd : -1, c);
		if (!*sp) {
			if (stream)
				close(fd);
			return -1;
		}
		/* What the header tells of the conversion ahead: how large
		 * its heap grows, and, with no -j, as many jobs as pay. */
		known = perfspy_session__info(*sp, &info) ? NULL : &info;
		heap_hint(known);
		o = *co;
		if (!o.jobs)
			o.jobs = cli_default_jobs(known);
		o.name_ahead = helper_env("PERFSPY_NAME_AHEAD", PERFSPY_NAME_AHEAD_NEVER,
					  PERFSPY_NAME_AHEAD_ALWAYS, PERFSPY_NAME_AHEAD_AUTO);
		o.build_behind = helper_env("PERFSPY_BUILD_BEHIND", PERFSPY_BUILD_BEHIND_NEVER,
					    PERFSPY_BUILD_BEHIND_ALWAYS,
					    PERFSPY_BUILD_BEHIND_AUTO);
		o.copy_in = helper_env("PERFSPY_COPY_IN", PERFSPY_COPY_IN_NEVER,
				       PERFSPY_COPY_IN_ALWAYS, PERFSPY_COPY_IN_AUTO);
		err = perfspy_session__convert(*sp, &o, f);
		cli_progress_end();
		if (err)
			cli_convert_error(*sp, name, err);
		/* A stream is read once, by the conversion: the session
		 * reads it no more (perfspy_session__open_fd leaves the fd
		 * to its caller). */
		if (stream)
			close(fd);
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

static const char *frame_lib(void *ctx, const char *frame, size_t len)
{
	return perfspy_session__frame_lib(ctx, frame, len);
}

void cli_pprof_opts_free(struct perfspy_write_opts *wo)
{
	free((void *)wo->dso_paths);
	free((void *)wo->dso_build_ids);
	wo->dso_paths = wo->dso_build_ids = NULL;
	wo->nr_dsos = 0;
}

static int by_samples(const void *a, const void *b)
{
	const struct held_key *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* Append the @n keys of @k (sorted by samples, the first 5) to @buf. */
static size_t list_keys(char *buf, size_t size, size_t k, struct held_key *keys,
			size_t n, bool comms)
{
	size_t i;

	if (n) /* qsort's array may not be NULL, even for 0 elements */
		qsort(keys, n, sizeof(*keys), by_samples);
	for (i = 0; i < n && i < 5 && k < size; i++) {
		if (comms)
			k += (size_t)snprintf(buf + k, size - k, "%s%s (%llu)", i ? ", " : "",
					      keys[i].name ? keys[i].name : "?",
					      (unsigned long long)keys[i].n);
		else
			k += (size_t)snprintf(buf + k, size - k, "%s%d (%llu)", i ? ", " : "",
					      keys[i].pid, (unsigned long long)keys[i].n);
	}
	if (n > 5 && k < size)
		k += (size_t)snprintf(buf + k, size - k, ", %zu more", n - 5);
	return k < size ? k : size - 1;
}

void cli_filter_empty(struct perfspy_session *s, const char *name,
		      const struct perfspy_convert_opts *co)
{
	PERFSPY_OPTS(perfspy_thread, t);
	struct held_key *pids = NULL, *comms = NULL;
	size_t np = 0, nc = 0, i, k = 0;
	char what[128], buf[1024];
	uint32_t idx;

	k = 0;
	if (co->pid)
		k += (size_t)snprintf(what + k, sizeof(what) - k, " --pid %d", co->pid);
	if (co->tid)
		k += (size_t)snprintf(what + k, sizeof(what) - k, " --tid %d", co->tid);
	if (co->comm)
		snprintf(what + k, sizeof(what) - k, " --comm '%.60s'", co->comm);
	for (idx = 0; !perfspy_session__thread(s, idx, &t); idx++)
		;
	pids = calloc(idx + 1, sizeof(*pids));
	comms = calloc(idx + 1, sizeof(*comms));
	if (!pids || !comms) {
		free(pids);
		free(comms);
		cli_err("%s: no samples match%s", name, what);
		return;
	}
	/* Threads come sorted by (pid, tid): a pid's threads are adjacent. */
	for (idx = 0; !perfspy_session__thread(s, idx, &t); idx++) {
		if (!t.nr_samples)
			continue;
		if (!np || pids[np - 1].pid != t.pid)
			pids[np++] = (struct held_key){ .pid = t.pid };
		pids[np - 1].n += t.nr_samples;
		for (i = 0; i < nc; i++)
			if (!strcmp(comms[i].name ? comms[i].name : "", t.comm ? t.comm : ""))
				break;
		if (i == nc)
			comms[nc++] = (struct held_key){ .name = t.comm };
		comms[i].n += t.nr_samples;
	}
	k = (size_t)snprintf(buf, sizeof(buf), "; samples by pid: ");
	k = list_keys(buf, sizeof(buf), k, pids, np, false);
	if (k < sizeof(buf))
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "; by thread name: ");
	if (k < sizeof(buf))
		list_keys(buf, sizeof(buf), k, comms, nc, true);
	cli_err("%s: no samples match%s%s", name, what,
		np ? buf : "; the file has no samples");
	free(pids);
	free(comms);
}

/* The program that ran the most samples of those kept (@pid, @tid and
 * @comm as perfspy_convert_opts filters them: 0 or NULL keeps all), for
 * pprof's mapping[0]; ties go to the first path in byte order
 * (by_samples()). NULL if no thread's program is known, or on ENOMEM (the
 * output then lacks it, as with the DSOs). */
static const char *main_binary(struct perfspy_session *s, int pid, int tid, const char *comm)
{
	PERFSPY_OPTS(perfspy_thread, t);
	struct held_key *exes;
	const char *ret = NULL;
	size_t n = 0, i;
	uint32_t idx;

	for (idx = 0; !perfspy_session__thread(s, idx, &t); idx++)
		;
	exes = calloc(idx + 1, sizeof(*exes));
	if (!exes)
		return NULL;
	for (idx = 0; !perfspy_session__thread(s, idx, &t); idx++) {
		if (!t.exe || !t.nr_samples || (pid && t.pid != pid) || (tid && t.tid != tid) ||
		    (comm && (!t.comm || strcmp(t.comm, comm))))
			continue;
		for (i = 0; i < n && strcmp(exes[i].name, t.exe); i++)
			;
		if (i == n)
			exes[n++] = (struct held_key){ .name = t.exe };
		exes[i].n += t.nr_samples;
	}
	ret = cli_top_name(exes, n);
	free(exes);
	return ret;
}

const char *cli_top_name(struct held_key *keys, size_t n)
{
	if (!n) /* qsort's array may not be NULL, even for 0 elements */
		return NULL;
	qsort(keys, n, sizeof(*keys), by_samples);
	return keys[0].name;
}

void cli_pprof_opts(struct perfspy_session *s, int pid, int tid, const char *comm,
		    struct perfspy_write_opts *wo)
{
	PERFSPY_OPTS(perfspy_info, info);

	session_dsos(s, wo);
	wo->main_binary = main_binary(s, pid, tid, comm);
	/* The span of the recording's samples, whatever the filters keep:
	 * the time the profile covers. */
	if (!perfspy_session__info(s, &info) && info.time_last > info.time_first)
		wo->duration_ns = info.time_last - info.time_first;
	/* Frames that name their source file get their library's Mapping. */
	wo->frame_lib = frame_lib;
	wo->frame_lib_ctx = s;
	wo->frame_inlined = frame_inlined;
	wo->frame_inlined_ctx = s;
	wo->python_first_lines = true; /* a session's frames: first lines */
}

void cli_svg_opts(struct perfspy_session *s, struct perfspy_write_opts *wo)
{
	wo->frame_lib = frame_lib;
	wo->frame_lib_ctx = s;
}

/* perf_event_open said no: why, and the fixes (record and top). */
static void record_permission_message(int err)
{
	char paranoid[32] = "";
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");

	if (f) {
		if (!fgets(paranoid, (int)sizeof(paranoid), f))
			paranoid[0] = '\0';
		fclose(f);
		paranoid[strcspn(paranoid, "\n")] = '\0';
	}
	cli_err("not allowed to sample (perf_event_open: %s; kernel.perf_event_paranoid = %s).\n"
		"  Fix: run as root, or give perfspy CAP_PERFMON (Linux 5.8+; CAP_SYS_ADMIN\n"
		"  before): sudo setcap cap_perfmon,cap_sys_ptrace+ep $(command -v perfspy),\n"
		"  or allow user-space sampling of your own processes:\n"
		"  sudo sysctl kernel.perf_event_paranoid=1. In a container, perf_event_open\n"
		"  must be allowed too (docker: --cap-add PERFMON, or a seccomp profile\n"
		"  that permits it).",
		strerror(-err), *paranoid ? paranoid : "?");
}

int cli_record_start(const struct perfspy_record_opts *ro, const char *verb,
		     struct perfspy_record **rec)
{
	char msg[256];
	int err = perfspy_record__start(ro, rec);

	if (!err)
		return 0;
	if (err == -EACCES || err == -EPERM) {
		record_permission_message(err);
		return -1;
	}
	perfspy_strerror(err, msg, sizeof(msg));
	if (err == -ESRCH)
		cli_err("no process %d", ro->pid);
	else if (ro->argv)
		cli_err("cannot %s '%s': %s", verb, ro->argv[0], msg);
	else
		cli_err("cannot %s pid %d: %s", verb, ro->pid, msg);
	return -1;
}
