// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy report: where the CPU goes, by category, thread and innermost
 * Python frame, from a perf.data file or stream or from folded stacks
 * (py-spy raw, `perfspy convert` output).
 *
 * Also here: cli_load_input(), which `convert` shares, telling perf.data
 * from folded text by the file's first bytes ("PERFILE2", the magic of
 * both perf.data layouts, perf's tools/perf/util/header.c; "2ELIFREP" in
 * the other byte order) rather than by its name.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

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

/* One folded line `frame;...;frame COUNT`: 1 added, 0 malformed,
 * negative on error. The count is the last space-separated field. */
static int add_folded_line(struct perfspy_folder *f, char *line, size_t len,
			   const char ***frames, size_t *cap)
{
	char *sp, *end, *p;
	unsigned long long count;
	size_t nr = 0;

	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = 0;
	sp = strrchr(line, ' ');
	if (!sp || sp[1] < '0' || sp[1] > '9')
		return 0;
	errno = 0;
	count = strtoull(sp + 1, &end, 10);
	if (errno || *end)
		return 0;
	*sp = 0;
	for (p = line; p; nr++) {
		if (nr >= *cap) {
			size_t ncap = *cap ? *cap * 2 : 64;
			const char **n = realloc(*frames, ncap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			*frames = n;
			*cap = ncap;
		}
		(*frames)[nr] = p;
		p = strchr(p, ';');
		if (p)
			*p++ = 0;
	}
	if (nr == 1 && !*line) /* " COUNT": the empty stack */
		nr = 0;
	return perfspy_folder__add(f, *frames, nr, count) ? -ENOMEM : 1;
}

/* Read folded stacks from @in into @f; 0 or -1 (message printed). */
static int read_folded(FILE *in, const char *name, struct perfspy_folder *f)
{
	const char **frames = NULL;
	size_t cap = 0, lcap = 0, lineno = 0, good = 0, bad = 0;
	char *line = NULL;
	ssize_t len;
	int rc = 0;

	while ((len = getline(&line, &lcap, in)) >= 0) {
		lineno++;
		if (len == 0 || line[0] == '\n' || line[0] == '#')
			continue;
		rc = add_folded_line(f, line, (size_t)len, &frames, &cap);
		if (rc < 0)
			break;
		if (rc == 0 && !bad++)
			cli_err("%s:%zu: not `frames COUNT`, skipped", name, lineno);
		good += rc == 1;
	}
	if (rc >= 0 && ferror(in))
		rc = -errno;
	free(line);
	free(frames);
	if (rc < 0) {
		cli_err("%s: %s", name, strerror(-rc));
		return -1;
	}
	if (!good) {
		/* Nothing usable: say why as the reader would for perf.data. */
		cli_err(lineno ? "%s: not a perf.data file (no PERFILE2 magic at offset 0) nor folded stacks" :
			"%s: empty file at offset 0 (neither perf.data nor folded stacks)", name);
		return -1;
	}
	if (bad)
		cli_err("%s: %zu malformed line%s skipped", name, bad, bad == 1 ? "" : "s");
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
	FILE *in;
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
	in = fd ? fdopen(fd, "r") : stdin;
	if (!in) {
		cli_err("%s: %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	rc = read_folded(in, name, f);
	if (in != stdin)
		fclose(in);
	return rc;
}

static void report_usage(FILE *f)
{
	fprintf(f,
		"usage: perfspy report [options]\n"
		"\n"
		"Where the CPU goes: shares of samples by category (CUDA launch, CUDA sync,\n"
		"allocator, GIL, Python interpreter, kernel, other native, Python code), each\n"
		"with its innermost Python frames, native leaves, threads and kernel entries.\n"
		"A stack's category is the first rule matching a frame below its innermost\n"
		"Python frame (--print-rules shows the built-in rules and their format).\n"
		"\n"
		"  -i, --input FILE      perf.data (file or '-' pipe) or folded stacks (py-spy\n"
		"                        raw, perfspy convert output), told apart by content\n"
		"                        [default: perf.data]\n"
		"  -o, --output FILE     where to write [default: standard output]\n"
		"      --by WHAT         rows of the table: category, thread (thread names,\n"
		"                        from `thread (TID): NAME` roots) or python (innermost\n"
		"                        Python frame) [default: category]\n"
		"      --top N           entries per list [default: 5]\n"
		"      --json            one JSON object: {\"samples\", \"categories\": [{\"name\",\n"
		"                        \"samples\", \"share\", \"python\", \"native\", \"threads\",\n"
		"                        \"syscalls\"}], \"threads\": [...], \"python\": [...]}\n"
		"      --rules FILE      categories from FILE instead of the built-in rules\n"
		"      --print-rules     print the built-in rules and exit\n"
		"perf.data input only (stacks are read with --threads and interpreter frames\n"
		"kept, so thread names and GIL/interpreter frames can be seen):\n"
		"      --event NAME, --pid PID, --tid TID, --comm NAME, --weight samples|period,\n"
		"      --perf-map-dir DIR, --symfs DIR, --buildid-dir DIR, --kallsyms FILE\n"
		"                        as for convert\n"
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
	static const char *const names[] = { "category", "thread", "python" };
	int i;

	for (i = 0; i < 3; i++) {
		if (!strcmp(s, names[i])) {
			*by = i;
			return 0;
		}
	}
	cli_err("--by: expected category, thread or python, got '%s'", s);
	return -1;
}

struct report_args {
	const char *in, *out, *rules_path;
	struct cli_common common;
	struct perfspy_convert_opts co;
	struct perfspy_report_write_opts wo;
};

/* 0 to run, 1 to exit 0 (help, rules printed), 2 on a usage error. */
static int report_parse(int argc, char **argv, struct report_args *a)
{
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "i:o:qvh", report_opts, NULL)) != -1) {
		switch (c) {
		case 'i': a->in = optarg; break;
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
		case 'q': a->common.quiet = true; break;
		case 'v': a->common.verbose++; break;
		case 'h': report_usage(stdout); return 1;
		default: report_usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		cli_err("report: unexpected argument '%s' (the input is given with -i)",
			argv[optind]);
		return 2;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = { .in = "perf.data", .out = "-" };
	PERFSPY_OPTS(perfspy_report_opts, ro, .log_fn = cli_log);
	struct perfspy_session *s = NULL;
	struct perfspy_folder *f = NULL;
	struct perfspy_report *r = NULL;
	struct cli_out o = { 0 };
	char *rules = NULL, msg[256];
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
	if (a.rules_path) {
		rules = read_text(a.rules_path);
		if (!rules)
			return 2;
		ro.rules = rules;
		ro.rules_name = a.rules_path;
	}
	cli_install_signals();
	if (!a.common.quiet && isatty(STDERR_FILENO))
		a.co.progress_fn = cli_progress;
	err = perfspy_folder__new(&f);
	if (!err && !cli_load_input(a.in, &a.common, &a.co, f, &s))
		err = perfspy_report__new(f, &ro, &r);
	else if (!err)
		goto out;
	if (err)
		goto fail;
	if (cli_out_open(&o, a.out))
		goto out;
	err = perfspy_report__write(r, o.f, &a.wo);
	if (err) {
		cli_out_abort(&o);
		goto fail;
	}
	if (cli_out_commit(&o))
		goto out;
	ret = 0;
	goto out;
fail:
	perfspy_strerror(err, msg, sizeof(msg));
	cli_err("report: %s", msg);
out:
	perfspy_report__free(r);
	perfspy_folder__free(f);
	perfspy_session__close(s);
	free(rules);
	return ret;
}
