// SPDX-License-Identifier: GPL-2.0
/*
 * py-spy captures -> folder: the public reader, the raw (folded) format,
 * and the frame-text classifier (see pyspy.h).
 *
 * Raw grammar (reference/pyspy-formats.md §1.2): `frame;...;frame COUNT\n`
 * root first; no escaping, so the count is found by a right split on the
 * last space (§6) and a `process PID:"cmdline"` frame whose command line
 * holds ';' is re-joined (§1.6, multiprocessing spawn children). Older
 * versions' thread frames (`thread 1234`, `thread 0x7F.. ()`, §1.5) are
 * rewritten as `thread (1234)` so that every capture names threads alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fold.h"
#include "common/opts.h"
#include "pyspy.h"

static bool all_digits(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* @n (<= 9) decimal digits as a number. */
static long digits_value(const char *s, size_t n)
{
	long v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static bool hex_id(const char *s, size_t n)
{
	size_t i;

	if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
	for (i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

static bool starts(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	return n >= k && !memcmp(s, lit, k);
}

/*
 * Thread pseudo-frames, every version (pyspy-formats.md §1.5, §6):
 * `thread (ID)`, `thread (ID): NAME` (0.3.4+, the name from 0.4.0),
 * `thread ID` (0.3.0-0.3.3), `thread ID ()` (0.2.x). ID is a decimal OS
 * thread id or 0x-hex pthread id.
 */
static bool parse_thread(const char *s, size_t n, struct pys_frame *fr)
{
	const char *p = s + 7, *e = s + n, *id, *ie;

	if (!starts(s, n, "thread ") || p == e)
		return false;
	fr->name = e;
	fr->name_len = 0;
	if (*p == '(') {
		id = p + 1;
		ie = memchr(id, ')', (size_t)(e - id));
		if (!ie)
			return false;
		p = ie + 1;
		if (p != e) {
			if (e - p < 2 || p[0] != ':' || p[1] != ' ')
				return false;
			fr->name = p + 2;
			fr->name_len = (size_t)(e - p - 2);
		}
	} else {
		id = p;
		ie = memchr(id, ' ', (size_t)(e - id));
		if (!ie)
			ie = e;
		else if (e - ie != 3 || memcmp(ie, " ()", 3))
			return false;
	}
	if (!all_digits(id, (size_t)(ie - id)) && !hex_id(id, (size_t)(ie - id)))
		return false;
	fr->kind = PYS_THREAD;
	fr->tid = id;
	fr->tid_len = (size_t)(ie - id);
	return true;
}

/* `process PID:"cmdline"` (pyspy-formats.md §1.6). */
static bool process_head(const char *s, size_t n, size_t *head)
{
	size_t i = 8;

	if (!starts(s, n, "process "))
		return false;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == 8 || n - i < 2 || s[i] != ':' || s[i + 1] != '"')
		return false;
	*head = i + 2;
	return true;
}

/* The '(' matching the final ')' of @s, or NULL. Balanced matching keeps
 * `f (a (1).py:3)` and `operator() (x.cc:3)` whole. */
static const char *open_paren(const char *s, size_t n)
{
	size_t i = n, depth = 0;

	while (i-- > 0) {
		if (s[i] == ')')
			depth++;
		else if (s[i] == '(' && --depth == 0)
			return i && s[i - 1] == ' ' ? s + i : NULL;
	}
	return NULL;
}

/* The last " (" of @s (the §6 rule), for unbalanced texts. */
static const char *last_space_paren(const char *s, size_t n)
{
	size_t i;

	for (i = n; i-- > 1;)
		if (s[i] == '(' && s[i - 1] == ' ')
			return s + i;
	return NULL;
}

static bool python_file(const char *f, size_t n, const char *const *extra)
{
	char buf[4096];

	if ((n >= 3 && !memcmp(f + n - 3, ".py", 3)) ||
	    (n >= 4 && !memcmp(f + n - 4, ".pyw", 4)) ||
	    (n >= 2 && f[0] == '<' && f[n - 1] == '>'))
		return true;
	if (!extra || n >= sizeof(buf))
		return false;
	memcpy(buf, f, n);
	buf[n] = '\0';
	for (; *extra; extra++)
		if (!fnmatch(*extra, buf, 0))
			return true;
	return false;
}

/* FILE[:LINE] inside the parentheses. */
static void split_file_line(const char *c, size_t n, struct pys_frame *fr)
{
	size_t i = n, k;

	fr->file = c;
	fr->file_len = n;
	while (i > 0 && c[i - 1] != ':')
		i--;
	if (!i)
		return;
	k = i < n && c[i] == '-' ? i + 1 : i;
	if (!all_digits(c + k, n - k) || n - k > 9)
		return;
	fr->line = digits_value(c + k, n - k) * (k > i ? -1 : 1);
	fr->has_line = true;
	fr->file_len = i - 1;
}

void pys_parse_frame(const char *s, size_t n, const char *const *extra,
		     struct pys_frame *fr)
{
	const char *op;
	size_t head;

	memset(fr, 0, sizeof(*fr));
	fr->kind = PYS_NATIVE;
	fr->name = s;
	fr->name_len = n;
	if (parse_thread(s, n, fr))
		return;
	if (process_head(s, n, &head) && n > head && s[n - 1] == '"') {
		fr->kind = PYS_PROCESS;
		return;
	}
	if (!n || s[n - 1] != ')')
		return;
	op = open_paren(s, n);
	if (!op)
		op = last_space_paren(s, n);
	if (!op)
		return;
	fr->name_len = (size_t)(op - 1 - s);
	split_file_line(op + 1, (size_t)(s + n - 1 - op - 1), fr);
	if (python_file(fr->file, fr->file_len, extra))
		fr->kind = PYS_PYTHON;
}

bool pys_tid_decimal(const struct pys_frame *fr, u64 *tid)
{
	u64 v = 0;
	size_t i;

	if (fr->kind != PYS_THREAD || !all_digits(fr->tid, fr->tid_len) ||
	    fr->tid_len > 19)
		return false;
	for (i = 0; i < fr->tid_len; i++)
		v = v * 10 + (u64)(fr->tid[i] - '0');
	*tid = v;
	return true;
}

/* ---- building stacks ---- */

/* The canonical `thread (ID)[: NAME]` text of an old-style thread frame
 * into *@out (malloc'ed), or NULL when @s is already canonical. */
static int canonical_thread(const char *s, size_t n, char **out, size_t *olen)
{
	struct pys_frame fr;
	char *buf;
	size_t k;

	*out = NULL;
	if (!starts(s, n, "thread ") || starts(s, n, "thread (") ||
	    !parse_thread(s, n, &fr))
		return 0;
	buf = malloc(fr.tid_len + 16);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, "thread (", 8);
	memcpy(buf + 8, fr.tid, fr.tid_len);
	k = 8 + fr.tid_len;
	buf[k++] = ')';
	*out = buf;
	*olen = k;
	return 0;
}

/* Frame kinds are cached per folder id (zeroed on growth, since the
 * folder may hold frames of an earlier read). */
static int kind_of(struct pys_reader *r, u32 id)
{
	struct pys_frame fr;

	if (id >= r->nr_kinds) {
		if (ensure_mem((void **)&r->kinds, &r->cap_kinds, 1, (size_t)id + 1))
			return -ENOMEM;
		memset(r->kinds + r->nr_kinds, 0, (size_t)id + 1 - r->nr_kinds);
		r->nr_kinds = (size_t)id + 1;
	}
	if (!r->kinds[id]) {
		pys_parse_frame(fold_name(r->f, id), fold_name_len(r->f, id), NULL, &fr);
		r->kinds[id] = (u8)(fr.kind + 1);
	}
	return r->kinds[id] - 1;
}

int pys_push_id(struct pys_reader *r, u32 id)
{
	if (kind_of(r, id) < 0 ||
	    ensure_mem((void **)&r->ids, &r->cap_ids, sizeof(*r->ids), r->nr_ids + 1))
		return -ENOMEM;
	r->ids[r->nr_ids++] = id;
	return 0;
}

int pys_kind(const struct pys_reader *r, u32 id)
{
	return id < r->nr_kinds && r->kinds[id] ? r->kinds[id] - 1 : PYS_NATIVE;
}

int pys_push(struct pys_reader *r, const char *s, size_t n)
{
	char *canon;
	size_t cn;
	u32 id;

	if (canonical_thread(s, n, &canon, &cn))
		return -ENOMEM;
	id = canon ? fold_intern(r->f, canon, cn) : fold_intern(r->f, s, n);
	free(canon);
	return id == FOLD_NO_ID ? -ENOMEM : pys_push_id(r, id);
}

int pys_commit(struct pys_reader *r, u64 weight)
{
	bool py = false, native = false, thread = false;
	static const u32 none;
	size_t i;
	int err;

	if (r->nr_ids > UINT32_MAX) {
		r->nr_ids = 0;
		r->st.bad++;
		return 0;
	}
	r->st.stacks++;
	if (weight) {
		/* An empty stack may have no array yet; fold wants a pointer. */
		err = fold_add_ids(r->f, r->ids ? r->ids : &none, (u32)r->nr_ids, weight);
		if (err)
			return err;
		for (i = 0; i < r->nr_ids; i++) {
			int k = pys_kind(r, r->ids[i]);

			/* A thread root: after any process frames (§1.6). */
			thread |= k == PYS_THREAD && !py && !native;
			py |= k == PYS_PYTHON;
			native |= py && k == PYS_NATIVE;
		}
		r->st.samples += weight;
		if (thread)
			r->st.thread_samples += weight;
		if (native)
			r->st.native_samples += weight;
	}
	r->nr_ids = 0;
	return 0;
}

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
	if (*unclosed || !process_head(p, (size_t)(first - p), &head))
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
		return 0; /* " 7": an empty stack (pyspy-formats.md §1.2) */
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

int pys_read_raw(struct pys_reader *r, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;
	bool good = false;
	u64 lineno = 0;
	int err;

	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		p += 3; /* a UTF-8 byte order mark from an editor */
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		err = raw_line(r, p, nl ? nl : end, ++lineno, &good);
		if (err)
			return err;
		p = nl ? nl + 1 : end;
	}
	if (!good && r->st.bad) {
		pr_warn(r->log, "%s: no line has the py-spy raw form `frame;...;frame COUNT`",
			r->name);
		return -PERFSPY_E_CAPTURE;
	}
	return 0;
}

/* ---- the public reader ---- */

/* The whole file in one buffer: speedscope needs two passes over it,
 * and raw lines are short-lived views into it. */
static int read_whole(const char *path, char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	struct stat st;
	char *buf;
	ssize_t k;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (u64)st.st_size < SIZE_MAX)
		cap = (size_t)st.st_size + 1;
	buf = malloc(cap);
	while (buf) {
		if (n == cap && ensure_mem((void **)&buf, &cap, 1, n + 1)) {
			err = -ENOMEM;
			break;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? -errno : 0;
			break;
		}
		n += (size_t)k;
	}
	close(fd);
	if (!buf || err) {
		free(buf);
		return buf ? err : -ENOMEM;
	}
	*out = buf;
	*len = n;
	return 0;
}

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

PERFSPY_API int perfspy_folder__read_pyspy(struct perfspy_folder *f, const char *path,
					   const void *buf, size_t len,
					   const struct perfspy_read_opts *opts,
					   struct perfspy_read_stats *stats)
{
	struct log_sink log = { 0 };
	struct pys_reader r = { 0 };
	char *data = NULL;
	int err;

	if (!OPTS_VALID(opts, perfspy_read_opts) ||
	    (stats && stats->sz < sizeof(size_t)))
		return -PERFSPY_E_OPTS;
	if (!f || (!path && !buf && len))
		return -EINVAL;
	log.fn = OPTS_GET(opts, log_fn, NULL);
	log.ctx = OPTS_GET(opts, log_ctx, NULL);
	log.level = log_level_pick(OPTS_GET(opts, log_level, 0),
				   OPTS_GET(opts, log_level_set, false));
	r.f = f;
	r.log = &log;
	r.name = OPTS_GET(opts, display_name, NULL);
	if (!r.name)
		r.name = path ? path : "<capture>";
	r.full_filenames = OPTS_GET(opts, full_filenames, false);
	if (path) {
		err = read_whole(path, &data, &len);
		if (err)
			return err;
		buf = data;
	}
	err = read_buf(&r, buf ? buf : "", len, OPTS_GET(opts, format, 0));
	if (!err && stats)
		fill_stats(&r.st, stats);
	free(data);
	free(r.ids);
	free(r.kinds);
	return err;
}
