// SPDX-License-Identifier: GPL-2.0
/*
 * speedscope JSON -> folder (docs/pyspy-formats.md §2.1; the schema
 * is https://www.speedscope.app/file-format-schema.json):
 *
 *   {"profiles":[{"type":"sampled","name":..,"unit":..,
 *                 "samples":[[frame index, ...root first], ...],
 *                 "weights":[...]},
 *                {"type":"evented","name":..,"unit":..,
 *                 "events":[{"type":"O"|"C","frame":i,"at":t}, ...]}],
 *    "shared":{"frames":[{"name":..,"file":..,"line":..,"col":..}, ...]}}
 *
 * py-spy writes "profiles" before "shared", so a first pass reads the
 * frames and a second the profiles (the buffer is in memory). Weights:
 * py-spy's are all 1/rate, so a sampled profile with equal weights counts
 * one per sample; unequal weights count weight / smallest weight, rounded.
 * Evented profiles (other tools) count nanoseconds of open-frame time, the
 * `at` values rounded to whole nanoseconds before they are subtracted so
 * that the intervals add up to the span exactly.
 *
 * Profile names `Thread TID "NAME"` (`Process PID Thread TID "NAME"` with
 * --subprocesses) become a `thread (TID): NAME` root, as raw --threads
 * writes it, unless the samples already start with such a frame.
 */
#include <errno.h>
#include <math.h> /* isfinite, NAN: macros, no libm */
#include <stdlib.h>

#include "common/fold.h"
#include "common/frame.h"
#include "common/json_read.h"
#include "pyspy.h"

enum { SS_UNKNOWN, SS_SAMPLED, SS_EVENTED };

/* The CLI links no libm; these few roundings do not need it. */
static bool is_integral(double x)
{
	return x > -9e18 && x < 9e18 && (double)(long long)x == x;
}

/* Round half away from zero; |x| < 9e18. */
static long long round_ll(double x)
{
	return x < 0 ? -(long long)(0.5 - x) : (long long)(x + 0.5);
}


struct ss {
	struct pys_reader *r;
	u32 *frames; /* frame index -> folder id */
	size_t nr_frames, cap_frames;
	const char *profiles; /* the "profiles" value, for the second pass */
	const char *end;      /* end of the buffer */
	char *text;	      /* scratch for frame texts */
	size_t cap_text;
};

struct ss_profile {
	int type;
	double scale; /* unit -> nanoseconds (evented) */
	u32 thread;   /* folder id of the thread root, or FOLD_NO_ID */
	const char *samples, *weights, *events;
};

static int ss_text(struct ss *s, size_t need)
{
	return ensure_mem((void **)&s->text, &s->cap_text, 1, need);
}

/* `name (file:line)` from a frame record, py-spy raw style (§1.2); file
 * shortened by py-spy's __init__.py rule unless full_filenames. */
static int frame_text(struct ss *s, const char *name, const char *file,
		      double line, size_t *len)
{
	char sbuf[4096];
	const char *f = file;
	size_t nl = strlen(name), fl;
	int n;

	if (file && *file && !s->r->full_filenames)
		f = short_filename(file, sbuf, sizeof(sbuf));
	fl = f ? strlen(f) : 0;
	if (nl > SIZE_MAX / 2 - fl - 32 || ss_text(s, nl + fl + 32))
		return -ENOMEM;
	if (!fl)
		n = snprintf(s->text, s->cap_text, "%s", name);
	else if (is_integral(line) && line > -1e9 && line < 1e9 && line != 0)
		n = snprintf(s->text, s->cap_text, "%s (%s:%ld)", name, f, (long)line);
	else
		n = snprintf(s->text, s->cap_text, "%s (%s)", name, f);
	*len = n < 0 ? 0 : (size_t)n;
	return 0;
}

/* A number value into *@v, or any other value skipped (*@v kept). */
static int number_or_skip(struct jr *j, double *v)
{
	int c = jr_peek(j);

	if (c == '-' || (c >= '0' && c <= '9'))
		return jr_number(j, v);
	return jr_skip(j);
}

/* Read a string value into a malloc'ed copy (*@out, NULL for null). */
static int dup_string(struct jr *j, char **out)
{
	const char *v;
	size_t n;
	int err;

	free(*out);
	*out = NULL;
	if (jr_null(j))
		return 0;
	err = jr_string(j, &v, &n);
	if (err)
		return err;
	*out = strndup(v, n);
	return *out ? 0 : -ENOMEM;
}

static int read_frame(struct ss *s, struct jr *j)
{
	char *name = NULL, *file = NULL;
	double line = 0;
	bool first = true;
	const char *k;
	size_t n;
	u32 id;
	int r, err = 0;

	if (!jr_obj_begin(j))
		return j->err;
	while (!err && (r = jr_obj_next(j, &first, &k, &n)) == 1) {
		if (jr_key_is(k, n, "name"))
			err = dup_string(j, &name);
		else if (jr_key_is(k, n, "file"))
			err = dup_string(j, &file);
		else if (jr_key_is(k, n, "line"))
			err = number_or_skip(j, &line);
		else
			err = jr_skip(j);
	}
	if (!err && r < 0)
		err = r;
	if (!err)
		err = frame_text(s, name ? name : "", file, line, &n);
	free(name);
	free(file);
	if (err)
		return err;
	id = fold_intern(s->r->f, s->text, n);
	if (id == FOLD_NO_ID || ensure_mem((void **)&s->frames, &s->cap_frames,
					   sizeof(*s->frames), s->nr_frames + 1))
		return -ENOMEM;
	s->frames[s->nr_frames++] = id;
	return 0;
}

static int read_frames(struct ss *s, struct jr *j)
{
	bool first = true;
	int r;

	if (!jr_arr_begin(j))
		return j->err;
	while ((r = jr_arr_next(j, &first)) == 1) {
		r = read_frame(s, j);
		if (r)
			return r;
	}
	return r;
}

/* First pass: "shared"."frames", and where "profiles" is. */
static int read_top(struct ss *s, struct jr *j)
{
	bool first = true, shared = false, f2;
	const char *k;
	size_t n;
	int r, err = 0;

	if (!jr_obj_begin(j))
		return j->err;
	while (!err && (r = jr_obj_next(j, &first, &k, &n)) == 1) {
		if (jr_key_is(k, n, "profiles")) {
			jr_peek(j);
			s->profiles = j->p;
			err = jr_skip(j);
		} else if (jr_key_is(k, n, "shared") && jr_obj_begin(j)) {
			shared = true;
			f2 = true;
			while (!err && (r = jr_obj_next(j, &f2, &k, &n)) == 1)
				err = jr_key_is(k, n, "frames") ? read_frames(s, j) : jr_skip(j);
		} else {
			err = j->err ? j->err : jr_skip(j);
		}
	}
	if (!err && (r < 0 || !shared || !s->profiles))
		err = r < 0 ? r : -PERFSPY_E_CAPTURE;
	return err;
}

/* `Thread TID "NAME"` / `Process PID Thread TID "NAME"` -> the folder id
 * of `thread (TID): NAME`, or FOLD_NO_ID when the name is not like that. */
static int thread_root(struct ss *s, const char *name, size_t n, u32 *out)
{
	const char *t = NULL, *e = name + n, *id, *ie, *q;
	size_t i, len;

	*out = FOLD_NO_ID;
	for (i = 0; i + 7 <= n && !t; i++)
		if (!memcmp(name + i, "Thread ", 7) && (!i || name[i - 1] == ' '))
			t = name + i;
	if (!t)
		return 0;
	id = t + 7;
	for (ie = id; ie < e && *ie != ' '; ie++)
		;
	q = ie < e ? ie + 1 : e;
	if (e - q >= 2 && *q == '"' && e[-1] == '"')
		q++, e--;
	else
		q = e;
	if (ss_text(s, (size_t)(ie - id) + (size_t)(e - q) + 16))
		return -ENOMEM;
	len = (size_t)snprintf(s->text, s->cap_text, "thread (%.*s)%s%.*s", (int)(ie - id),
			       id, e > q ? ": " : "", (int)(e - q), q);
	if (frame_kind_of(s->text, len) != FRAME_THREAD)
		return 0;
	*out = fold_intern(s->r->f, s->text, len);
	return *out == FOLD_NO_ID ? -ENOMEM : 0;
}

static double unit_scale(const char *u, size_t n)
{
	if (jr_key_is(u, n, "seconds"))
		return 1e9;
	if (jr_key_is(u, n, "milliseconds"))
		return 1e6;
	if (jr_key_is(u, n, "microseconds"))
		return 1e3;
	return 1; /* nanoseconds, none, bytes */
}

/* Start a stack with the profile's thread root. */
static int begin_stack(struct ss *s, const struct ss_profile *p)
{
	s->r->nr_ids = 0;
	return p->thread == FOLD_NO_ID ? 0 : pys_push_id(s->r, p->thread);
}

/* Push sample frame @idx (a JSON number); false if it is not a valid
 * index. A sample that starts with its own thread frame (py-spy
 * --threads puts one in, §2.1) replaces the profile's. */
static int push_frame(struct ss *s, const struct ss_profile *p, double idx,
		      bool *ok)
{
	u32 id;

	if (!(idx >= 0 && idx < (double)s->nr_frames && is_integral(idx))) {
		*ok = false;
		return 0;
	}
	id = s->frames[(size_t)idx];
	if (pys_push_id(s->r, id))
		return -ENOMEM;
	if (s->r->nr_ids == 2 && p->thread != FOLD_NO_ID &&
	    s->r->ids[0] == p->thread && pys_kind(s->r, id) == FRAME_THREAD) {
		s->r->ids[0] = id;
		s->r->nr_ids = 1;
	}
	return 0;
}

/* A parser over the value at @at (a position recorded in the first
 * scan of the enclosing object). */
static void jr_at(struct ss *s, struct jr *j, const char *at)
{
	jr_init(j, at, (size_t)(s->end - at));
}

/*
 * The weights array as a count per sample: 1 each when all are equal
 * (py-spy: 1/rate), else weight / smallest positive weight, rounded. A
 * negative, NaN or missing weight gives count 0 (the sample is bad).
 */
static int read_weights(struct ss *s, const char *at, u64 **out, size_t *nr)
{
	double *w = NULL, min = 0;
	size_t n = 0, cap = 0, i;
	bool first = true, equal = true;
	struct jr j;
	int r;

	*out = NULL;
	*nr = 0;
	if (!at)
		return 0;
	jr_at(s, &j, at);
	if (!jr_arr_begin(&j))
		return j.err;
	while ((r = jr_arr_next(&j, &first)) == 1) {
		if (ensure_mem((void **)&w, &cap, sizeof(*w), n + 1)) {
			r = -ENOMEM;
			break;
		}
		r = jr_number(&j, &w[n]);
		if (r)
			break;
		if (!(w[n] >= 0) || !isfinite(w[n]))
			w[n] = -1;
		else if (w[n] > 0 && (!min || w[n] < min))
			min = w[n];
		equal &= w[n] == w[0];
		n++;
	}
	jr_free(&j);
	*out = r ? NULL : xreallocarray(NULL, n + 1, sizeof(**out));
	if (!r && !*out)
		r = -ENOMEM;
	for (i = 0; !r && i < n; i++) {
		double c = w[i] < 0 ? 0 : equal ? 1 : min ? w[i] / min : 0;

		(*out)[i] = c < 1e18 ? (u64)round_ll(c) : 0;
	}
	free(w);
	*nr = n;
	return r;
}

/* One sample: an array of frame indices, root first. */
static int read_sample(struct ss *s, const struct ss_profile *p, struct jr *j,
		       u64 weight)
{
	bool first = true, ok = true;
	double idx;
	int r, err;

	if (!jr_arr_begin(j))
		return j->err;
	err = begin_stack(s, p);
	while (!err && (r = jr_arr_next(j, &first)) == 1) {
		err = jr_number(j, &idx);
		if (!err)
			err = push_frame(s, p, idx, &ok);
	}
	if (err || r < 0)
		return err ? err : r;
	if (!ok || !weight) {
		s->r->st.bad++;
		return 0;
	}
	return pys_commit(s->r, weight);
}

static int read_sampled(struct ss *s, const struct ss_profile *p)
{
	bool first = true;
	u64 *counts;
	size_t nw, i = 0;
	struct jr j;
	int r;

	if (!p->samples)
		return 0;
	r = read_weights(s, p->weights, &counts, &nw);
	if (r)
		return r;
	jr_at(s, &j, p->samples);
	if (!jr_arr_begin(&j))
		r = j.err;
	while (!r && (r = jr_arr_next(&j, &first)) == 1) {
		/* No weights at all: one per sample, as speedscope does. */
		r = read_sample(s, p, &j, !p->weights ? 1 : i < nw ? counts[i] : 0);
		i++;
	}
	jr_free(&j);
	free(counts);
	return r;
}

struct ss_event {
	int type; /* 'O', 'C', or 0 */
	double frame, at;
};

static int read_event(struct jr *j, struct ss_event *ev)
{
	bool first = true;
	const char *k, *v;
	size_t n;
	int r, err = 0;

	memset(ev, 0, sizeof(*ev));
	ev->frame = -1;
	ev->at = NAN;
	if (!jr_obj_begin(j))
		return j->err;
	while (!err && (r = jr_obj_next(j, &first, &k, &n)) == 1) {
		if (jr_key_is(k, n, "type") && jr_peek(j) == '"') {
			err = jr_string(j, &v, &n);
			ev->type = !err && n == 1 && (*v == 'O' || *v == 'C') ? *v : 0;
		} else if (jr_key_is(k, n, "frame")) {
			err = number_or_skip(j, &ev->frame);
		} else if (jr_key_is(k, n, "at")) {
			err = number_or_skip(j, &ev->at);
		} else {
			err = jr_skip(j);
		}
	}
	return err ? err : r;
}

/* The open frames (speedscope frame indices), root first. */
struct ss_open {
	size_t *idx;
	size_t n, cap;
};

/* Count the time since the last event for the open stack. */
static int commit_open(struct ss *s, const struct ss_profile *p,
		       const struct ss_open *o, u64 weight)
{
	bool ok = true;
	size_t i;
	int err;

	if (!o->n || !weight)
		return 0;
	err = begin_stack(s, p);
	for (i = 0; !err && i < o->n; i++)
		err = push_frame(s, p, (double)o->idx[i], &ok);
	return err ? err : pys_commit(s->r, weight);
}

/* Apply an open/close event; false if it does not fit the open stack. */
static bool apply_event(struct ss_open *o, const struct ss_event *ev, int *err)
{
	size_t f = (size_t)ev->frame, i;

	if (ev->type == 'O') {
		if (ensure_mem((void **)&o->idx, &o->cap, sizeof(*o->idx), o->n + 1)) {
			*err = -ENOMEM;
			return false;
		}
		o->idx[o->n++] = f;
		return true;
	}
	/* speedscope requires closes in stack order; a close deeper down
	 * also closes what was opened above it. */
	for (i = o->n; i-- > 0;) {
		if (o->idx[i] == f) {
			bool top = i + 1 == o->n;

			o->n = i;
			return top;
		}
	}
	return false;
}

static int read_evented(struct ss *s, const struct ss_profile *p)
{
	struct ss_open o = { 0 };
	struct ss_event ev;
	bool first = true, started = false;
	double t;
	s64 last = 0, now;
	struct jr j;
	int r = 0;

	if (!p->events)
		return 0;
	jr_at(s, &j, p->events);
	if (!jr_arr_begin(&j))
		r = j.err;
	while (!r && (r = jr_arr_next(&j, &first)) == 1) {
		r = read_event(&j, &ev);
		if (r)
			break;
		t = ev.at * p->scale;
		if (!ev.type || !(ev.frame >= 0 && ev.frame < (double)s->nr_frames &&
				  is_integral(ev.frame)) ||
		    !(t > -4e18 && t < 4e18)) {
			s->r->st.bad++;
			continue;
		}
		now = (s64)round_ll(t);
		if (started && now > last)
			r = commit_open(s, p, &o, (u64)(now - last));
		if (!started || now > last)
			last = now;
		started = true;
		if (!r && !apply_event(&o, &ev, &r) && !r)
			s->r->st.bad++;
	}
	jr_free(&j);
	free(o.idx);
	return r;
}

/* One profile object: note where its arrays are, then read them. */
static int read_profile(struct ss *s, struct jr *j)
{
	struct ss_profile p = { .thread = FOLD_NO_ID, .scale = 1 };
	bool first = true;
	const char *k, *v;
	size_t n, vn;
	int r, err = 0;

	if (!jr_obj_begin(j))
		return j->err;
	while (!err && (r = jr_obj_next(j, &first, &k, &n)) == 1) {
		int key = jr_key_is(k, n, "type") ? 1 : jr_key_is(k, n, "name") ? 2 :
			  jr_key_is(k, n, "unit") ? 3 : 0;

		if (key && jr_peek(j) == '"') {
			err = jr_string(j, &v, &vn);
			if (err)
				break;
			if (key == 1)
				p.type = jr_key_is(v, vn, "sampled") ? SS_SAMPLED :
					 jr_key_is(v, vn, "evented") ? SS_EVENTED : SS_UNKNOWN;
			else if (key == 2)
				err = thread_root(s, v, vn, &p.thread);
			else
				p.scale = unit_scale(v, vn);
			continue;
		}
		jr_peek(j);
		if (jr_key_is(k, n, "samples"))
			p.samples = j->p;
		else if (jr_key_is(k, n, "weights"))
			p.weights = j->p;
		else if (jr_key_is(k, n, "events"))
			p.events = j->p;
		err = jr_skip(j);
	}
	if (err || r < 0)
		return err ? err : r;
	if (p.type == SS_SAMPLED)
		return read_sampled(s, &p);
	if (p.type == SS_EVENTED)
		return read_evented(s, &p);
	s->r->st.bad++;
	pr_debug(s->r->log, "%s: a profile of unknown type skipped", s->r->name);
	return 0;
}

int pys_read_speedscope(struct pys_reader *r, const char *buf, size_t len)
{
	struct ss s = { .r = r, .end = buf + len };
	bool first = true;
	struct jr j;
	int err;

	jr_init(&j, buf, len);
	err = read_top(&s, &j);
	if (!err && jr_peek(&j) >= 0)
		err = -PERFSPY_E_CAPTURE; /* bytes after the document */
	if (err == -PERFSPY_E_CAPTURE)
		pr_warn(r->log, "%s: not speedscope JSON (syntax error or no "
			"\"profiles\"/\"shared\" near byte %zu)", r->name, jr_offset(&j));
	jr_free(&j);
	if (!err) {
		jr_at(&s, &j, s.profiles);
		if (!jr_arr_begin(&j))
			err = j.err;
		while (!err && (err = jr_arr_next(&j, &first)) == 1)
			err = read_profile(&s, &j);
		jr_free(&j);
	}
	free(s.frames);
	free(s.text);
	return err;
}
