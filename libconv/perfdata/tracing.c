// SPDX-License-Identifier: GPL-2.0
/*
 * Tracing data (HEADER_TRACING_DATA): event names and formats for
 * tracepoint and uprobe events.
 *
 * The container is walked with a bounded cursor (struct cur); nothing is
 * read past the caller's size and no length is trusted before it has been
 * checked against what is left. Event format texts are handed to
 * libtraceevent one by one; a format it rejects costs that event only.
 * Independently of libtraceevent, the `name:` and `ID:` lines of every
 * format are scanned (tracing_check.c), so a name still comes out when
 * libtraceevent cannot read the rest; the text libtraceevent gets is
 * checked and rebuilt there too. At the end the names are frozen into a
 * table sorted by id, so lookups never touch the tep handle (whose lookups
 * write a cache and are not thread-safe).
 *
 * Layout sources: perf util/trace-event-info.c (writer,
 * tracing_data_header()) and util/trace-event-read.c (reader,
 * trace_report()), as summarised in docs/perf-data-format.md §6.1.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "perfspy.h"
#include "tracing_check.h"

/* Longest NUL-terminated string we accept (version, system name); perf's
 * read_string() stops at BUFSIZ - 1 = 8191. */
#define TR_MAX_STR 8191
/* comm length in the kernel (TASK_COMM_LEN - 1); perf reads "%d %16s". */
#define TR_MAX_COMM 16

struct tr_name {
	u64 id;
	const char *name; /* "system:name", in ti->strs */
};

/* One name found by our own scan of a format text. */
struct tr_fmt {
	u64 id;
	u32 seq; /* blob order, so the first of duplicate ids wins */
	const char *name;
};

struct trace_info {
	struct tep_handle *tep;
	struct arena strs;
	struct tr_name *names; /* sorted by id, ids unique */
	size_t nr_names;
	struct trace_info_stats stats;
};

struct tr_parse {
	struct cur c;
	const u8 *base;
	bool swap; /* blob byte order differs from ours */
	const struct log_sink *log;
	struct trace_info *ti;
	struct tr_fmt *fmts;
	size_t nr_fmts, cap_fmts;
};

/*
 * libtraceevent 1.7.1 keeps parser flags in statics (event-parse.c
 * is_flag_field, is_symbolic_field, show_warning), so two handles must
 * not parse at the same time. This lock is the module's only global and
 * holds no data.
 */
static pthread_mutex_t tr_tep_lock = PTHREAD_MUTEX_INITIALIZER;

static int tr_bad_at(struct tr_parse *p, size_t off, const char *what)
{
	pr_warn(p->log, "tracing data: %s at offset %zu", what, off);
	return -PERFSPY_E_FORMAT;
}

/* A malformed container; the offset is where the cursor stopped. */
static int tr_bad(struct tr_parse *p, const char *what)
{
	return tr_bad_at(p, (size_t)(p->c.p - p->base), what);
}

/* Numbers are in the blob's byte order (perf reads them with
 * tep_read_number(), trace-event-read.c read4/read8). */
static u32 tr_u32(struct tr_parse *p)
{
	u32 v = cur_u32(&p->c);

	return p->swap ? __builtin_bswap32(v) : v;
}

static u64 tr_u64(struct tr_parse *p)
{
	u64 v = cur_u64(&p->c);

	return p->swap ? __builtin_bswap64(v) : v;
}

/* A NUL-terminated string inside the blob, or NULL (and c->bad). */
static const char *tr_str(struct cur *c)
{
	size_t left = cur_left(c);
	const u8 *nul;

	if (c->bad)
		return NULL;
	nul = memchr(c->p, 0, left < TR_MAX_STR + 1 ? left : TR_MAX_STR + 1);
	if (!nul) {
		c->bad = true;
		return NULL;
	}
	return cur_take(c, (size_t)(nul - c->p) + 1);
}

/* A u64 length followed by that many bytes; NULL if they are not all
 * there. */
static const char *tr_sized(struct tr_parse *p, u64 size)
{
	if (p->c.bad || size > cur_left(&p->c)) {
		p->c.bad = true;
		return NULL;
	}
	return cur_take(&p->c, (size_t)size);
}

/*
 * perf decides whether saved cmdlines follow with atof(version) >= 0.6
 * (trace_report()). Same test without atof, which depends on the locale:
 * any non-zero integer part, or a first fraction digit of 6 or more.
 */
static bool tr_version_has_cmdlines(const char *v)
{
	while (*v == ' ' || (*v >= '\t' && *v <= '\r'))
		v++;
	if (*v == '+')
		v++;
	for (; *v >= '0' && *v <= '9'; v++)
		if (*v != '0')
			return true;
	return *v == '.' && v[1] >= '6' && v[1] <= '9';
}

/* Remember the scanned name of one format as a fallback. */
static int tr_add_fallback(struct tr_parse *p, const char *sys,
			   const struct tr_scan *sc)
{
	struct tr_fmt *f;
	int err;

	err = ensure_mem((void **)&p->fmts, &p->cap_fmts, sizeof(*p->fmts),
			 p->nr_fmts + 1);
	if (err)
		return err;
	f = &p->fmts[p->nr_fmts];
	f->name = arena_printf(&p->ti->strs, "%s:%.*s", sys, (int)sc->name_len,
			       sc->name);
	if (!f->name)
		return -ENOMEM;
	f->id = sc->id;
	f->seq = (u32)p->nr_fmts;
	p->nr_fmts++;
	return 0;
}


/*
 * One format text: our scan first, then libtraceevent. perf treats a
 * tep_parse_event() failure as fatal for the whole file
 * (trace-event-read.c read_event_files()); we count it and go on.
 * tep_parse_format() is tep_parse_event() plus the event pointer, which
 * is valid only when it returns 0.
 */
static int tr_format(struct tr_parse *p, const char *sys, const char *text,
		     size_t len)
{
	struct trace_info *ti = p->ti;
	struct tep_event *ev = NULL;
	enum tep_errno terr;
	struct tr_scan sc;
	size_t tep_len = 0;
	char *tep_text;
	char msg[128];
	int err;

	ti->stats.nr_formats++;
	if (!tr_scan_format(text, len, &sc)) {
		ti->stats.nr_rejected++;
		pr_debug(p->log, "tracing data: format %u of %s has no name "
			 "or ID", ti->stats.nr_formats, sys);
		return 0;
	}
	err = tr_add_fallback(p, sys, &sc);
	if (!err)
		err = tr_tep_text(&sc, text + len, &tep_text, &tep_len);
	if (err)
		return err;
	if (!tep_text) {
		ti->stats.nr_rejected++;
		pr_debug(p->log, "tracing data: %s:%.*s kept from libtraceevent "
			 "(unexpected format text)", sys, (int)sc.name_len,
			 sc.name);
		return 0;
	}
	terr = tep_parse_format(ti->tep, &ev, tep_text, tep_len, sys);
	free(tep_text);
	if (terr) {
		ti->stats.nr_tep_failed++;
		tep_strerror(ti->tep, terr, msg, sizeof(msg));
		pr_debug(p->log, "tracing data: %s:%.*s skipped by "
			 "libtraceevent: %s", sys, (int)sc.name_len, sc.name, msg);
	} else if (ev && (ev->flags & TEP_EVENT_FL_FAILED)) {
		ti->stats.nr_tep_partial++;
		pr_debug(p->log, "tracing data: %s:%.*s only partly parsed",
			 sys, (int)sc.name_len, sc.name);
	}
	return 0;
}

/* u32 count, then count × { u64 size, format } (record_ftrace_files()
 * and record_event_files() in trace-event-info.c). */
static int tr_formats(struct tr_parse *p, const char *sys)
{
	u32 nr = tr_u32(p);
	const char *text;
	u64 size;
	int err;

	if (p->c.bad)
		return tr_bad(p, "missing format count");
	/* Each entry takes at least 8 bytes, so nr is bounded by the blob. */
	for (u32 i = 0; i < nr; i++) {
		size = tr_u64(p);
		text = tr_sized(p, size);
		if (!text)
			return tr_bad(p, "format runs past the end");
		err = tr_format(p, sys, text, (size_t)size);
		if (err)
			return err;
	}
	return 0;
}

static int tr_systems(struct tr_parse *p)
{
	u32 nr = tr_u32(p);
	const char *sys;
	char *copy;
	int err;

	if (p->c.bad)
		return tr_bad(p, "missing system count");
	for (u32 i = 0; i < nr; i++) {
		sys = tr_str(&p->c);
		if (!sys)
			return tr_bad(p, "unterminated system name");
		copy = arena_strdup(&p->ti->strs, sys);
		if (!copy)
			return -ENOMEM;
		err = tr_formats(p, copy);
		if (err)
			return err;
	}
	return 0;
}

/*
 * "header_page\0" u64 size data, "header_event\0" u64 size data
 * (record_header_files()). Like perf (read_header_files()), take the
 * long size from the header page's "commit" field when it parses, since
 * that is the kernel's; keep the blob's value when it is not 4 or 8.
 */
static int tr_headers(struct tr_parse *p)
{
	const char *data, *stop;
	const void *tag;
	u64 size;
	int hl;

	tag = cur_take(&p->c, 12);
	if (!tag || memcmp(tag, "header_page", 12))
		return tr_bad(p, "no header_page");
	size = tr_u64(p);
	data = tr_sized(p, size);
	if (!data)
		return tr_bad(p, "header_page runs past the end");
	/*
	 * The header page is field lines too; libtraceevent sees it only
	 * when they pass our check (see tr_tep_text()). It only reads the
	 * buffer (init_input_buf() stores a const char *); the prototype
	 * lacks const. Size 0 selects its old-kernel defaults.
	 */
	if (!tr_fields_ok(data, data + size, &stop) || stop != data + size) {
		pr_debug(p->log, "tracing data: header_page kept from "
			 "libtraceevent (unexpected text)");
	} else if (!tep_parse_header_page(p->ti->tep, (char *)data,
					  (unsigned long)size,
					  tep_get_long_size(p->ti->tep))) {
		hl = tep_get_header_page_size(p->ti->tep);
		if (hl == 4 || hl == 8)
			tep_set_long_size(p->ti->tep, hl);
	}

	tag = cur_take(&p->c, 13);
	if (!tag || memcmp(tag, "header_event", 13))
		return tr_bad(p, "no header_event");
	size = tr_u64(p);
	if (!tr_sized(p, size))
		return tr_bad(p, "header_event runs past the end");
	return 0;
}

/* Copy [s, s+n) into a NUL-terminated heap string; NULL on ENOMEM. */
static char *tr_strndup(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/*
 * One printk_formats line: `0xADDR : "fmt"`. perf splits at the first
 * ':' and skips one more character (trace-event-parse.c
 * parse_ftrace_printk()). tep_parse_printk_formats() is not used: for a
 * last line without ':' it strdup()s one byte past its copy, and
 * tep_register_print_string() looks up to 3 bytes before a string shorter
 * than 3, so such lines are skipped here.
 */
static int tr_printk_line(struct tr_parse *p, const char *line, size_t len)
{
	const char *colon = memchr(line, ':', len);
	char *buf, *fmt;
	u64 addr;
	int ret = 0;

	if (!colon || (size_t)(colon - line) + 2 > len) {
		p->ti->stats.nr_bad_lines++;
		return 0;
	}
	buf = tr_strndup(line, len);
	if (!buf)
		return -ENOMEM;
	buf[colon - line] = '\0';
	addr = strtoull(buf, NULL, 16);
	fmt = buf + (colon - line) + 2;
	if (strlen(fmt + (*fmt == '"')) < 3) {
		p->ti->stats.nr_bad_lines++;
	} else {
		errno = 0;
		if (tep_register_print_string(p->ti->tep, fmt, addr) &&
		    errno == ENOMEM)
			ret = -ENOMEM;
	}
	free(buf);
	return ret;
}

/* One saved_cmdlines line: "PID COMM" (parse_saved_cmdline() reads it
 * with "%d %16s"). */
static int tr_cmdline_line(struct tr_parse *p, const char *line, size_t len)
{
	const char *s = line, *end = line + len, *comm;
	char name[TR_MAX_COMM + 1];
	u64 pid = 0;
	size_t n;

	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		pid = pid * 10 + (u64)(*s - '0');
		if (pid > INT_MAX)
			break;
	}
	if (s == line || pid > INT_MAX || s == end || *s != ' ') {
		p->ti->stats.nr_bad_lines++;
		return 0;
	}
	comm = s + 1;
	n = (size_t)(end - comm);
	if (!n || memchr(comm, '\0', n)) {
		p->ti->stats.nr_bad_lines++;
		return 0;
	}
	if (n > TR_MAX_COMM)
		n = TR_MAX_COMM;
	memcpy(name, comm, n);
	name[n] = '\0';
	errno = 0;
	if (tep_register_comm(p->ti->tep, name, (int)pid) && errno == ENOMEM)
		return -ENOMEM;
	return 0;
}

/* Feed each '\n'-terminated line of [text, text+len) to @fn. */
static int tr_lines(struct tr_parse *p, const char *text, size_t len,
		    int (*fn)(struct tr_parse *, const char *, size_t))
{
	const char *end = text + len, *eol;
	int err;

	while (text < end) {
		eol = memchr(text, '\n', (size_t)(end - text));
		if (!eol)
			eol = end;
		if (eol > text) {
			err = fn(p, text, (size_t)(eol - text));
			if (err)
				return err;
		}
		text = eol + 1;
	}
	return 0;
}

/*
 * The tail: u32 kallsyms size + data (perf >= 5.x writes 0 and skips a
 * non-empty one, read_proc_kallsyms()), u32 printk size + data, and for
 * version >= 0.6 u64 saved-cmdlines size + data.
 */
static int tr_tail(struct tr_parse *p, bool has_cmdlines)
{
	const char *data;
	u64 size;
	int err;

	size = tr_u32(p);
	if (!tr_sized(p, size))
		return tr_bad(p, "kallsyms run past the end");
	size = tr_u32(p);
	data = tr_sized(p, size);
	if (!data)
		return tr_bad(p, "printk formats run past the end");
	err = tr_lines(p, data, (size_t)size, tr_printk_line);
	if (err || !has_cmdlines)
		return err;
	size = tr_u64(p);
	data = tr_sized(p, size);
	if (!data)
		return tr_bad(p, "saved cmdlines run past the end");
	return tr_lines(p, data, (size_t)size, tr_cmdline_line);
}

/*
 * Magic, version, endian byte, long size and page size; sets up the tep
 * handle as trace_report() does.
 */
static int tr_preamble(struct tr_parse *p, bool *has_cmdlines)
{
	static const u8 magic[10] = { 0x17, 0x08, 0x44, 't', 'r',
				      'a',  'c',  'i',  'n', 'g' };
	const void *m = cur_take(&p->c, sizeof(magic));
	struct tep_handle *tep = p->ti->tep;
	const char *version;
	u8 big, long_size;
	u32 page_size;
	size_t at;

	if (!m || memcmp(m, magic, sizeof(magic)))
		return tr_bad(p, "bad magic");
	version = tr_str(&p->c);
	if (!version)
		return tr_bad(p, "unterminated version");
	*has_cmdlines = tr_version_has_cmdlines(version);
	at = (size_t)(p->c.p - p->base);
	big = cur_u8(&p->c);
	long_size = cur_u8(&p->c);
	if (p->c.bad || big > 1)
		return tr_bad_at(p, at, "bad endian byte");
	if (long_size != 4 && long_size != 8)
		return tr_bad_at(p, at + 1, "bad long size");
	p->swap = big != (u8)tep_is_bigendian();
	page_size = tr_u32(p);
	if (p->c.bad || !page_size || page_size > INT_MAX)
		return tr_bad_at(p, at + 2, "bad page size");

	tep_set_flag(tep, TEP_NSEC_OUTPUT);
	tep_set_file_bigendian(tep, big ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, tep_is_bigendian() ? TEP_BIG_ENDIAN :
							    TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, long_size);
	tep_set_page_size(tep, (int)page_size);
	return 0;
}

static int tr_fmt_cmp(const void *a, const void *b)
{
	const struct tr_fmt *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int tr_u64_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Name for one id: libtraceevent's first, else the first scanned one.
 * *@name stays NULL when neither knows the id. */
static int tr_name_for(struct tr_parse *p, u64 id, size_t *fi,
		       const char **name)
{
	struct trace_info *ti = p->ti;
	struct tep_event *ev = NULL;

	/* With no events libtraceevent would bsearch() a NULL array. */
	if (tep_get_events_count(ti->tep) > 0)
		ev = tep_find_event(ti->tep, (int)id);
	*name = NULL;
	while (*fi < p->nr_fmts && p->fmts[*fi].id < id)
		(*fi)++;
	if (ev && ev->name && ev->system) {
		*name = arena_printf(&ti->strs, "%s:%s", ev->system, ev->name);
		return *name ? 0 : -ENOMEM;
	}
	if (*fi < p->nr_fmts && p->fmts[*fi].id == id) {
		ti->stats.nr_fallback++;
		pr_debug(p->log, "tracing data: name of id %llu from format text",
			 (unsigned long long)id);
		*name = p->fmts[*fi].name;
	}
	return 0;
}

/*
 * Freeze the names into ti->names: every id libtraceevent knows plus
 * every id the scan found, sorted and unique.
 */
static int tr_build_names(struct tr_parse *p)
{
	struct trace_info *ti = p->ti;
	int nr_ev = tep_get_events_count(ti->tep);
	size_t nr_ids = 0, fi = 0;
	struct tep_event *ev;
	const char *name;
	int err = 0;
	u64 *ids;

	if (nr_ev < 0)
		nr_ev = 0;
	xqsort(p->fmts, p->nr_fmts, sizeof(*p->fmts), tr_fmt_cmp);
	ids = xreallocarray(NULL, (size_t)nr_ev + p->nr_fmts, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (int i = 0; i < nr_ev; i++) {
		ev = tep_get_event(ti->tep, i);
		if (ev && ev->id >= 0)
			ids[nr_ids++] = (u64)ev->id;
	}
	for (size_t i = 0; i < p->nr_fmts; i++)
		ids[nr_ids++] = p->fmts[i].id;
	if (nr_ids)
		xqsort(ids, nr_ids, sizeof(*ids), tr_u64_cmp);

	ti->names = xreallocarray(NULL, nr_ids, sizeof(*ti->names));
	if (!ti->names) {
		free(ids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr_ids && !err; i++) {
		if (i && ids[i] == ids[i - 1])
			continue;
		err = tr_name_for(p, ids[i], &fi, &name);
		if (err || !name)
			continue;
		ti->names[ti->nr_names].id = ids[i];
		ti->names[ti->nr_names++].name = name;
	}
	free(ids);
	ti->stats.nr_names = (u32)ti->nr_names;
	return err;
}

/* The whole blob, with the tep lock held. */
static int tr_parse_all(struct tr_parse *p)
{
	bool has_cmdlines = false;
	int err;

	err = tr_preamble(p, &has_cmdlines);
	if (!err)
		err = tr_headers(p);
	if (!err)
		err = tr_formats(p, "ftrace");
	if (!err)
		err = tr_systems(p);
	if (!err)
		err = tr_tail(p, has_cmdlines);
	if (!err)
		err = tr_build_names(p);
	return err;
}

int trace_info_parse(const void *data, size_t size, const struct log_sink *log,
		     struct trace_info **out, size_t *used)
{
	struct tr_parse p = { .base = data, .log = log };
	struct trace_info *ti;
	int err;

	*out = NULL;
	*used = 0;
	ti = calloc(1, sizeof(*ti));
	if (!ti)
		return -ENOMEM;
	arena_init(&ti->strs);
	ti->tep = tep_alloc();
	if (!ti->tep) {
		trace_info_free(ti);
		return -ENOMEM;
	}
	cur_init(&p.c, data, size);
	p.ti = ti;

	pthread_mutex_lock(&tr_tep_lock);
	/* The library must not print; see the caveat in tracing.h. */
	tep_set_loglevel(TEP_LOG_NONE);
	err = tr_parse_all(&p);
	pthread_mutex_unlock(&tr_tep_lock);

	free(p.fmts);
	if (err) {
		trace_info_free(ti);
		return err;
	}
	pr_debug(log, "tracing data: %zu bytes, %u formats, %u names; "
		 "%u formats kept from libtraceevent, %u rejected and %u "
		 "partly parsed by it", (size_t)(p.c.p - p.base),
		 ti->stats.nr_formats, ti->stats.nr_names,
		 ti->stats.nr_rejected, ti->stats.nr_tep_failed,
		 ti->stats.nr_tep_partial);
	*used = (size_t)(p.c.p - p.base);
	*out = ti;
	return 0;
}

const char *trace_info_event_name(const struct trace_info *ti, u64 config)
{
	size_t lo = 0, hi, mid;

	if (!ti)
		return NULL;
	hi = ti->nr_names;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ti->names[mid].id == config)
			return ti->names[mid].name;
		if (ti->names[mid].id < config)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct tep_handle *trace_info_tep(const struct trace_info *ti)
{
	return ti ? ti->tep : NULL;
}

void trace_info_get_stats(const struct trace_info *ti,
			  struct trace_info_stats *st)
{
	if (ti)
		*st = ti->stats;
	else
		memset(st, 0, sizeof(*st));
}

void trace_info_free(struct trace_info *ti)
{
	if (!ti)
		return;
	tep_free(ti->tep);
	arena_free(&ti->strs);
	free(ti->names);
	free(ti);
}

/* One numeric field of @ev from @raw, bounds-checked against @size. */
static int tr_field(struct tep_event *ev, const char *name, const void *raw,
		    size_t size, u64 *val)
{
	struct tep_format_field *f = tep_find_field(ev, name);
	unsigned long long v;

	if (!f || (f->flags & TEP_FIELD_IS_ARRAY) || f->size <= 0 || f->size > 8)
		return -ENOENT;
	if ((size_t)f->offset + (size_t)f->size > size)
		return -EINVAL;
	if (tep_read_number_field(f, raw, &v))
		return -ENOENT;
	*val = v;
	return 0;
}

int trace_sched_switch(const struct trace_info *ti, u64 config, const void *raw,
		       size_t size, struct trace_switch *out)
{
	struct tep_event *ev;
	u64 prev, next;
	int err = -ENOENT;

	if (!ti || !ti->tep || config > INT_MAX)
		return -ENOENT;
	pthread_mutex_lock(&tr_tep_lock);
	ev = tep_find_event(ti->tep, (int)config);
	if (ev && !(ev->flags & TEP_EVENT_FL_FAILED)) {
		err = tr_field(ev, "prev_state", raw, size, &out->prev_state);
		if (!err)
			err = tr_field(ev, "prev_pid", raw, size, &prev);
		if (!err)
			err = tr_field(ev, "next_pid", raw, size, &next);
		if (!err) {
			out->prev_pid = (u32)prev;
			out->next_pid = (u32)next;
		}
	}
	pthread_mutex_unlock(&tr_tep_lock);
	return err;
}
