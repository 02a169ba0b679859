// SPDX-License-Identifier: GPL-2.0
/*
 * py-spy captures -> folder: the public reader and the raw (folded)
 * format (see pyspy.h). Frames are read by the frame grammar
 * (common/frame.h) and stacks built in pyspy_stack.c.
 *
 * Raw grammar (docs/pyspy-formats.md §1.2): `frame;...;frame COUNT\n`
 * root first; no escaping, so the count is found by a right split on the
 * last space (§6) and a `process PID:"cmdline"` frame whose command line
 * holds ';' is re-joined (§1.6, multiprocessing spawn children). Older
 * versions' thread frames (`thread 1234`, `thread 0x7F.. ()`, §1.5) are
 * rewritten as `thread (1234)` (pys_push) so that every capture names
 * threads alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fold.h"
#include "common/frame.h"
#include "common/opts.h"
#include "pyspy.h"

/* ---- raw ---- */

/*
 * Where a `process PID:"` frame starting at @p ends: at the first ';'
 * (or the end @e) after which the text read so far ends in '"' and the
 * next frame does not start with a space. Command lines are argv joined by
 * spaces, so a ';' inside one is usually followed by a space (`spawn_main;
 * spawn_main(...)`) or not followed by a closing quote (`main;main(5)`);
 * frames never start with a space. Unclosed: the first ';' (no join).
 */
static const char *process_end(const char *p, const char *first, const char *e,
			       bool *unclosed)
{
	const char *q = first;
	size_t head;

	/* After one unclosed scan no later ';' of the line can close a
	 * frame either (the test depends on the position only): stop, so a
	 * line of many `process 1:"` tokens stays linear. */
	if (*unclosed || !(head = frame_process_head(p, (size_t)(first - p))))
		return first;
	for (;;) {
		if ((size_t)(q - p) > head && q[-1] == '"' &&
		    (q == e || q + 1 == e || q[1] != ' '))
			return q;
		if (q == e) {
			*unclosed = true;
			return first;
		}
		q = memchr(q + 1, ';', (size_t)(e - q - 1));
		if (!q)
			q = e;
	}
}

static int split_frames(struct pys_reader *r, const char *s, const char *e)
{
	const char *p = s, *t;
	bool unclosed = false;
	int err;

	if (s == e)
		return 0; /* " 7": an empty stack (docs/pyspy-formats.md §1.2) */
	for (;;) {
		t = memchr(p, ';', (size_t)(e - p));
		t = process_end(p, t ? t : e, e, &unclosed);
		err = pys_push(r, p, (size_t)(t - p));
		if (err || t == e)
			return err;
		p = t + 1;
	}
}

/* COUNT: decimal digits, no sign (a usize in py-spy). */
static bool parse_count(const char *s, const char *e, u64 *out)
{
	u64 v = 0;

	if (s == e)
		return false;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (u64)(*s - '0');
	}
	*out = v;
	return true;
}

/* One line: `STACK COUNT` (STACK may be empty). *@good is set when it
 * parsed, so a file of nothing but bad lines can be refused. */
static int raw_line(struct pys_reader *r, const char *s, const char *e,
		    u64 lineno, bool *good)
{
	const char *sp;
	u64 count;
	int err;

	if (e > s && e[-1] == '\r')
		e--;
	for (sp = s; sp < e && (*sp == ' ' || *sp == '\t'); sp++)
		;
	if (sp == e)
		return 0; /* blank (py-spy ends the file with one) */
	for (sp = e; sp > s && sp[-1] != ' '; sp--)
		;
	if (sp == s || !parse_count(sp, e, &count)) {
		r->st.bad++;
		pr_debug(r->log, "%s:%llu: not `frames COUNT`, skipped", r->name,
			 (unsigned long long)lineno);
		return 0;
	}
	r->nr_ids = 0;
	err = split_frames(r, s, sp - 1);
	if (!err)
		err = pys_commit(r, count);
	*good = true;
	return err;
}

#define BOM "\xef\xbb\xbf" /* a UTF-8 byte order mark from an editor */

/* The lines of [*@p, @end) that are complete (all of them at @eof), read
 * and passed: *@p is left at the first unread byte. */
static int raw_lines(struct pys_reader *r, const char **p, const char *end,
		     bool eof, u64 *lineno, bool *good)
{
	const char *nl;
	int err;

	while (*p < end) {
		nl = memchr(*p, '\n', (size_t)(end - *p));
		if (!nl && !eof)
			break;
		err = raw_line(r, *p, nl ? nl : end, ++*lineno, good);
		if (err)
			return err;
		*p = nl ? nl + 1 : end;
	}
	return 0;
}

/* After the last line: a text of nothing but bad lines is no capture. */
static int raw_end(struct pys_reader *r, bool good)
{
	if (!good && r->st.bad) {
		pr_warn(r->log, "%s: no line has the py-spy raw form `frame;...;frame COUNT`",
			r->name);
		return -PERFSPY_E_CAPTURE;
	}
	return 0;
}

int pys_read_raw(struct pys_reader *r, const char *buf, size_t len)
{
	const char *p = buf;
	bool good = false;
	u64 lineno = 0;
	int err;

	if (len >= 3 && !memcmp(buf, BOM, 3))
		p += 3;
	err = raw_lines(r, &p, buf + len, true, &lineno, &good);
	return err ? err : raw_end(r, good);
}

/*
 * Raw lines from @fd a chunk at a time: a line is read once its '\n' (or
 * the end) is in the buffer and the rest moved to the front, so memory
 * holds a chunk and the longest line, not the whole text.
 */
static int read_raw_fd(struct pys_reader *r, int fd)
{
	size_t cap = 1 << 18, len = 0, used;
	bool good = false, eof = false, started = false;
	char *buf = malloc(cap);
	const char *p;
	u64 lineno = 0;
	ssize_t k;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (!err && !eof) {
		if (len == cap && ensure_mem((void **)&buf, &cap, 1, len + 1)) {
			err = -ENOMEM;
			break;
		}
		k = read(fd, buf + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err = -errno;
			break;
		}
		eof = !k;
		len += (size_t)k;
		if (!started && len < 3 && !eof)
			continue; /* not yet enough to tell a byte order mark */
		p = buf;
		if (!started && len >= 3 && !memcmp(buf, BOM, 3))
			p += 3;
		started = true;
		err = raw_lines(r, &p, buf + len, eof, &lineno, &good);
		used = (size_t)(p - buf);
		memmove(buf, p, len - used);
		len -= used;
	}
	free(buf);
	return err ? err : raw_end(r, good);
}

/* ---- the public reader ---- */

/* Format by content: '{' is speedscope; perf.data and JSON arrays
 * (chrometrace, dump --json) are refused with a message. */
static int detect(struct pys_reader *r, const char *buf, size_t len)
{
	size_t i = len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3) ? 3 : 0;

	if (len >= 8 && (!memcmp(buf, "PERFILE2", 8) || !memcmp(buf, "2ELIFREP", 8))) {
		pr_warn(r->log, "%s: this is a perf.data file, not a py-spy capture", r->name);
		return -PERFSPY_E_CAPTURE;
	}
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' ||
			   buf[i] == '\r'))
		i++;
	if (i < len && buf[i] == '{')
		return PERFSPY_CAPTURE_SPEEDSCOPE;
	if (i < len && buf[i] == '[') {
		pr_warn(r->log, "%s: a JSON array (py-spy chrometrace or dump --json) is not "
			"supported; record with --format raw or speedscope", r->name);
		return -PERFSPY_E_CAPTURE;
	}
	return PERFSPY_CAPTURE_RAW;
}

static void fill_stats(const struct pys_stats *st, struct perfspy_read_stats *out)
{
	struct perfspy_read_stats s = { .sz = out->sz };

	s.format = st->format;
	s.samples = st->samples;
	s.stacks = st->stacks;
	s.bad = st->bad;
	s.thread_samples = st->thread_samples;
	s.native_samples = st->native_samples;
	memcpy(out, &s, out->sz < sizeof(s) ? out->sz : sizeof(s));
}

static int read_buf(struct pys_reader *r, const char *buf, size_t len, int format)
{
	int err;

	if (format == PERFSPY_CAPTURE_AUTO) {
		format = detect(r, buf, len);
		if (format < 0)
			return format;
	}
	r->st.format = format;
	if (format == PERFSPY_CAPTURE_RAW)
		err = pys_read_raw(r, buf, len);
	else if (format == PERFSPY_CAPTURE_SPEEDSCOPE)
		err = pys_read_speedscope(r, buf, len);
	else
		err = -PERFSPY_E_OPTS;
	if (!err && r->st.bad)
		pr_warn(r->log, "%s: %llu malformed %s skipped", r->name,
			(unsigned long long)r->st.bad,
			format == PERFSPY_CAPTURE_RAW ? "lines" : "samples or events");
	return err;
}

/* The reader for @f as @opts say; 0 or -PERFSPY_E_OPTS. */
static int reader_init(struct pys_reader *r, struct log_sink *log,
		       struct perfspy_folder *f, const struct perfspy_read_opts *opts,
		       const struct perfspy_read_stats *stats, const char *name)
{
	if (!OPTS_VALID(opts, perfspy_read_opts) ||
	    (stats && stats->sz < sizeof(size_t)))
		return -PERFSPY_E_OPTS;
	memset(r, 0, sizeof(*r));
	memset(log, 0, sizeof(*log));
	log->fn = OPTS_GET(opts, log_fn, NULL);
	log->ctx = OPTS_GET(opts, log_ctx, NULL);
	log->level = log_level_pick(OPTS_GET(opts, log_level, 0),
				    OPTS_GET(opts, log_level_set, false));
	r->f = f;
	r->log = log;
	r->name = OPTS_GET(opts, display_name, NULL);
	if (!r->name)
		r->name = name;
	r->full_filenames = OPTS_GET(opts, full_filenames, false);
	return 0;
}

static int reader_done(struct pys_reader *r, int err, struct perfspy_read_stats *stats)
{
	if (!err && stats)
		fill_stats(&r->st, stats);
	free(r->ids);
	free(r->kinds);
	return err;
}

PERFSPY_API int perfspy_folder__read_pyspy(struct perfspy_folder *f, const char *path,
					   const void *buf, size_t len,
					   const struct perfspy_read_opts *opts,
					   struct perfspy_read_stats *stats)
{
	struct log_sink log;
	struct pys_reader r;
	char *data = NULL;
	int err;

	err = reader_init(&r, &log, f, opts, stats, path ? path : "<capture>");
	if (err)
		return err;
	if (!f || (!path && !buf && len))
		return -EINVAL;
	if (path) {
		err = read_file_whole(path, &data, &len);
		if (err)
			return err;
		buf = data;
	}
	err = read_buf(&r, buf ? buf : "", len, OPTS_GET(opts, format, 0));
	free(data);
	return reader_done(&r, err, stats);
}

PERFSPY_API int perfspy_folder__read_folded_fd(struct perfspy_folder *f, int fd,
					       const struct perfspy_read_opts *opts,
					       struct perfspy_read_stats *stats)
{
	int format = OPTS_GET(opts, format, 0), err;
	struct log_sink log;
	struct pys_reader r;

	err = reader_init(&r, &log, f, opts, stats, "<fd>");
	if (err)
		return err;
	if (format != PERFSPY_CAPTURE_AUTO && format != PERFSPY_CAPTURE_RAW)
		return -PERFSPY_E_OPTS;
	if (!f || fd < 0)
		return -EINVAL;
	r.st.format = PERFSPY_CAPTURE_RAW;
	err = read_raw_fd(&r, fd);
	if (!err && r.st.bad)
		pr_warn(r.log, "%s: %llu malformed lines skipped", r.name,
			(unsigned long long)r.st.bad);
	return reader_done(&r, err, stats);
}
