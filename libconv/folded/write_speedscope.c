// SPDX-License-Identifier: GPL-2.0
/*
 * The speedscope writer: speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json, as shipped in the
 * speedscope 1.25.0 npm package: FileFormat.File with "$schema",
 * "shared": {"frames": [Frame]}, "profiles": [SampledProfile]).
 *
 * One sampled profile per thread: the leading `process ...` and
 * `thread (TID)...` root frames of a stack (docs/pyspy-formats.md §1.5-1.6)
 * name its profile and are not frames of it; stacks without them go to
 * one profile named after the title. This is what py-spy does with one
 * profile per (pid, thread) (docs/pyspy-formats.md §2.1), except that the
 * thread frame does not repeat inside the profile.
 *
 * With a timeline (perfspy_folder__keep_timeline(), docs/output.md §8)
 * a profile's samples are the thread's samples in time order, unit
 * "nanoseconds": startValue is the recording's first sample time (perf's
 * clock), and each sample weighs the time to the thread's next sample,
 * so a sample starts at startValue plus the weights before it, which is
 * its perf timestamp. A gap longer than 1.5 sampling intervals (the
 * thread was off CPU or not yet started) is an empty sample, which
 * speedscope draws as nothing, and the sample before it weighs one
 * interval (the median time between the thread's samples). Every
 * profile starts at the same startValue, so threads line up in time.
 *
 * Without one, a profile's samples are its distinct stacks (frame
 * indices, root first) in the raw writer's order, each weighed by its
 * count; unit "none", since a folder holds counts (or periods) but no
 * sampling rate.
 *
 * Frames: {"name"} plus "file" and "line" when the frame text has them
 * (`name (file:line)`); optional fields are left out rather than null,
 * as the schema types them as numbers. Native frames are grouped by
 * function as in the flame graph (write_group.c, docs/output.md §7.1):
 * `f (file.c)`, no line, unless perfspy_write_opts.lineno.
 * "activeProfileIndex" opens the heaviest thread first.
 */
#include "writers.h"
#include "common/hash.h"
#include "common/opts.h"

#include <errno.h>
#include <stdlib.h>


struct ss_group {
	u32 *prefix; /* root frames, a copy (fold_stack() lends its ids) */
	u32 nprefix;
	u64 total;
	u32 first;	   /* first member in ss.member order */
	u32 last;
};

struct ss {
	const struct perfspy_folder *f;
	u32 *order;		/* stacks in writer order */
	size_t nr;
	u32 *next;		/* next member of the same group */
	struct ss_group *g;
	size_t ng, cap_g;
	struct idmap by_hash;	/* prefix hash -> group + 1 chain head */
	struct fgroups grp;
	struct idmap frame_idx; /* group id -> speedscope index */
	u32 *frames;		/* speedscope index -> group id */
	u32 *sidx;		/* folder frame id -> speedscope index (ss_sidx) */
	size_t nframes, cap_frames;
	u32 *stack_grp;		/* folder stack index -> profile (group) */
	/* The timeline, sorted by profile then time (docs/output.md §8). */
	struct ss_tl *tl;
	size_t nr_tl;
	u64 t0;			/* the first sample's time: every startValue */
	bool ms; /* weights are milliseconds (--idle, docs/top.md §3) */
	struct fold_ids *ids;	/* fold_stack()'s room */
};

struct ss_tl {
	u64 time;
	u32 prof, stack;
};

static u32 root_prefix(const struct perfspy_folder *f, const u32 *ids, u32 nr)
{
	u32 k = 0;

	while (k < nr && frame_is_root(frame_kind_of(fold_name(f, ids[k]),
						     fold_name_len(f, ids[k]))))
		k++;
	return k;
}

/* The group of a prefix. Groups are found by a 32-bit hash of the prefix
 * ids, colliding prefixes chained by scanning: thread counts are small. */
static int ss_group(struct ss *s, const u32 *ids, u32 k, u32 *out)
{
	u32 h = (u32)hash_bytes(ids, (size_t)k * sizeof(*ids), 7) & 0x7fffffff;
	size_t i;
	u64 *v;

	for (;;) {
		v = idmap_get(&s->by_hash, h);
		if (!v)
			break;
		i = (size_t)*v;
		/* A group of no prefix holds no copy (NULL): memcmp() must
		 * not see it, even for 0 bytes. */
		if (s->g[i].nprefix == k &&
		    (!k || !memcmp(s->g[i].prefix, ids, (size_t)k * sizeof(*ids)))) {
			*out = (u32)i;
			return 0;
		}
		h = (h + 1) & 0x7fffffff; /* probe the next hash value */
	}
	if (ensure_mem((void **)&s->g, &s->cap_g, sizeof(*s->g), s->ng + 1))
		return -ENOMEM;
	s->g[s->ng] = (struct ss_group){ .nprefix = k,
					 .first = UINT32_MAX, .last = UINT32_MAX };
	if (k && !(s->g[s->ng].prefix = xreallocarray(NULL, k, sizeof(*ids))))
		return -ENOMEM;
	if (k)
		memcpy(s->g[s->ng].prefix, ids, (size_t)k * sizeof(*ids));
	v = idmap_put(&s->by_hash, h);
	if (!v) {
		free(s->g[s->ng].prefix);
		return -ENOMEM;
	}
	*v = s->ng;
	*out = (u32)s->ng++;
	return 0;
}

/* The speedscope index of folder frame @id's group, made if new. */
static int ss_frame(struct ss *s, u32 id)
{
	u64 *v;
	int err = fgroups_of(&s->grp, id, &id);

	if (err)
		return err;
	v = idmap_get(&s->frame_idx, id);
	if (v)
		return 0;
	if (ensure_mem((void **)&s->frames, &s->cap_frames, sizeof(*s->frames),
		       s->nframes + 1))
		return -ENOMEM;
	v = idmap_put(&s->frame_idx, id);
	if (!v)
		return -ENOMEM;
	*v = s->nframes;
	s->frames[s->nframes++] = id;
	return 0;
}

/* Group the stacks and number the frames, both in writer order. */
static int ss_prepare(struct ss *s)
{
	const u32 *ids;
	u32 nr, k, j, g;
	u64 count;
	size_t i;
	int err = fold_sorted(s->f, &s->order);

	if (err)
		return err;
	s->nr = perfspy_folder__nr_stacks(s->f);
	s->next = xreallocarray(NULL, s->nr + 1, sizeof(*s->next));
	s->stack_grp = xreallocarray(NULL, s->nr + 1, sizeof(*s->stack_grp));
	if (!s->next || !s->stack_grp)
		return -ENOMEM;
	for (i = 0; i < s->nr; i++) {
		err = fold_stack(s->f, s->order[i], s->ids, &ids, &nr, &count);
		if (err)
			return err;
		k = root_prefix(s->f, ids, nr);
		err = ss_group(s, ids, k, &g);
		for (j = k; !err && j < nr; j++)
			err = ss_frame(s, ids[j]);
		if (err)
			return err;
		s->next[i] = UINT32_MAX;
		if (s->g[g].last == UINT32_MAX)
			s->g[g].first = (u32)i;
		else
			s->next[s->g[g].last] = (u32)i;
		s->g[g].last = (u32)i;
		s->g[g].total += count;
		s->stack_grp[s->order[i]] = g;
	}
	return 0;
}

static int cmp_tl(const void *a, const void *b)
{
	const struct ss_tl *x = a, *y = b;

	if (x->prof != y->prof)
		return x->prof < y->prof ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->stack > y->stack) - (x->stack < y->stack);
}

/* The folder's timeline by profile and time; none (s->nr_tl 0) when the
 * folder kept none or it does not cover the stacks (combined inputs), or
 * the weights are off-CPU milliseconds (--idle): a sample's time is then
 * where a wait began, and the one-entry-per-sample timeline would misdraw
 * stretches that the weights already measure (docs/top.md §3). */
static int ss_timeline(struct ss *s)
{
	size_t i, nr;
	const struct fold_tl *tl = fold_timeline(s->f, &nr);

	if (!tl || s->ms)
		return 0;
	for (i = 0; i < nr; i++)
		if (tl[i].stack >= s->nr)
			return 0;
	s->tl = xreallocarray(NULL, nr, sizeof(*s->tl));
	if (!s->tl)
		return -ENOMEM;
	s->t0 = tl[0].time;
	for (i = 0; i < nr; i++) {
		s->tl[i] = (struct ss_tl){ tl[i].time, s->stack_grp[tl[i].stack], tl[i].stack };
		if (tl[i].time < s->t0)
			s->t0 = tl[i].time;
	}
	xqsort(s->tl, nr, sizeof(*s->tl), cmp_tl);
	s->nr_tl = nr;
	return 0;
}

static void ss_put_frame(struct wout *w, const struct fgroups *grp, u32 id)
{
	struct frame_parts p;

	frame_parse(fgroups_name(grp, id), fgroups_len(grp, id), &p);
	wout_str(w, "{\"name\":\"");
	wout_json(w, p.func, p.func_len);
	wout_str(w, "\"");
	if (p.file) {
		wout_str(w, ",\"file\":\"");
		wout_json(w, p.file, p.file_len);
		wout_str(w, "\"");
	}
	if (p.line > 0) /* py-spy's -1 (unknown) is no line */
		wout_fmt(w, ",\"line\":%ld", p.line);
	wout_str(w, "}");
}

static void ss_put_name(struct wout *w, const struct ss *s,
			const struct ss_group *g, const char *title)
{
	u32 j;

	wout_str(w, "\"name\":\"");
	if (!g->nprefix)
		wout_json(w, title, strlen(title));
	for (j = 0; j < g->nprefix; j++) {
		if (j)
			wout_str(w, " / ");
		wout_json(w, fold_name(s->f, g->prefix[j]),
			  fold_name_len(s->f, g->prefix[j]));
	}
	wout_str(w, "\"");
}

/*
 * Each frame's speedscope index by its folder id, once ss_prepare() has
 * numbered every group: the timeline writes a stack per sample (95,000
 * of them on the system-wide bench file, a hundred frames each), and a
 * group look-up and a hash probe per frame were a fifth of the
 * conversion. ss_prepare() numbered every group of every stack;
 * UINT32_MAX: in no stack.
 */
static int ss_sidx(struct ss *s)
{
	size_t n = fold_nr_names(s->f), i;
	u64 *v;

	s->sidx = xreallocarray(NULL, n + 1, sizeof(*s->sidx));
	if (!s->sidx)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		u32 g = s->grp.gid[i];

		v = g == FOLD_NO_ID ? NULL : idmap_get(&s->frame_idx, g);
		s->sidx[i] = v ? (u32)*v : UINT32_MAX;
	}
	return 0;
}

/* The frame indices of folder stack @idx without its root prefix. */
static void ss_put_stack(struct wout *w, const struct ss *s, u32 idx, u32 nprefix)
{
	const u32 *ids;
	u32 nr, j;
	u64 count;
	char *p, *q;

	if (fold_stack(s->f, idx, s->ids, &ids, &nr, &count)) {
		w->err = -ENOMEM;
		return;
	}
	/* Straight into the output buffer when the list fits: at most
	 * 10 digits (a u32) and a comma a frame. */
	if (nr >= nprefix && (p = wout_room(w, 2 + (size_t)(nr - nprefix) * 11))) {
		q = p;
		*q++ = '[';
		for (j = nprefix; j < nr; j++) {
			if (j > nprefix)
				*q++ = ',';
			q = fmt_u64(q, s->sidx[ids[j]]);
		}
		*q++ = ']';
		wout_wrote(w, (size_t)(q - p));
		return;
	}
	wout_str(w, "[");
	for (j = nprefix; j < nr; j++) {
		if (j > nprefix)
			wout_str(w, ",");
		wout_u64(w, s->sidx[ids[j]]);
	}
	wout_str(w, "]");
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return (x > y) - (x < y);
}

/* A thread's sampling interval: the median of the positive times between
 * its samples [@a, @b) (1 ns when it has none). 0 or -ENOMEM. */
static int ss_interval(const struct ss *s, size_t a, size_t b, u64 *out)
{
	u64 *d = xreallocarray(NULL, b - a + 1, sizeof(*d));
	size_t i, n = 0;

	if (!d)
		return -ENOMEM;
	for (i = a + 1; i < b; i++)
		if (s->tl[i].time > s->tl[i - 1].time)
			d[n++] = s->tl[i].time - s->tl[i - 1].time;
	xqsort(d, n, sizeof(*d), cmp_u64);
	*out = n ? d[n / 2] : 1;
	free(d);
	return 0;
}

/* Profile @gi from the timeline entries [@a, @b): samples in time
 * order, weights in nanoseconds (see the head comment). */
static int ss_put_timed(struct wout *w, const struct ss *s, size_t gi,
			size_t a, size_t b, const char *title)
{
	const struct ss_group *g = &s->g[gi];
	u64 iv, d, end = s->t0;
	size_t i, k;
	int pass, err = ss_interval(s, a, b, &iv);

	if (err)
		return err;
	wout_str(w, "{\"type\":\"sampled\",");
	ss_put_name(w, s, g, title);
	wout_str(w, ",\"unit\":\"nanoseconds\",\"startValue\":");
	wout_u64(w, s->t0);
	wout_str(w, ",\"endValue\":");
	if (a < b)
		end = s->tl[b - 1].time + iv;
	wout_u64(w, end);
	/* Two passes over the same rule: the samples, then their weights. */
	for (pass = 0; pass < 2; pass++) {
		wout_str(w, pass ? "],\n\"weights\":[" : ",\n\"samples\":[");
		k = 0;
		if (a < b && s->tl[a].time > s->t0) { /* not started yet */
			if (pass)
				wout_u64(w, s->tl[a].time - s->t0);
			else
				wout_str(w, "[]");
			k++;
		}
		for (i = a; i < b; i++) {
			d = i + 1 < b ? s->tl[i + 1].time - s->tl[i].time : iv;
			if (k++)
				wout_str(w, pass ? "," : ",\n");
			if (pass)
				wout_u64(w, d > iv + iv / 2 ? iv : d);
			else
				ss_put_stack(w, s, s->tl[i].stack, g->nprefix);
			if (d > iv + iv / 2) { /* off CPU: an empty sample */
				wout_str(w, pass ? "," : ",\n");
				if (pass)
					wout_u64(w, d - iv);
				else
					wout_str(w, "[]");
				k++;
			}
		}
	}
	wout_str(w, "]}");
	return 0;
}

static void ss_put_profile(struct wout *w, const struct ss *s,
			   const struct ss_group *g, const char *title)
{
	u32 i;

	wout_str(w, "{\"type\":\"sampled\",");
	ss_put_name(w, s, g, title);
	wout_str(w, s->ms ? ",\"unit\":\"milliseconds\",\"startValue\":0,\"endValue\":" :
			    ",\"unit\":\"none\",\"startValue\":0,\"endValue\":");
	wout_u64(w, g->total);
	wout_str(w, ",\n\"samples\":[");
	for (i = g->first; i != UINT32_MAX; i = s->next[i]) {
		if (i != g->first)
			wout_str(w, ",\n");
		ss_put_stack(w, s, s->order[i], g->nprefix);
	}
	wout_str(w, "],\n\"weights\":[");
	for (i = g->first; i != UINT32_MAX; i = s->next[i]) {
		if (i != g->first)
			wout_str(w, ",");
		wout_u64(w, fold_stack_count(s->f, s->order[i]));
	}
	wout_str(w, "]}");
}

static void ss_put_empty(struct wout *w, const char *title)
{
	wout_str(w, "{\"type\":\"sampled\",\"name\":\"");
	wout_json(w, title, strlen(title));
	wout_str(w, "\",\"unit\":\"none\",\"startValue\":0,\"endValue\":0,"
		    "\"samples\":[],\"weights\":[]}");
}

static int ss_put(struct wout *w, const struct ss *s, const char *title)
{
	size_t i, heaviest = 0, a = 0, b;
	int err = 0;

	for (i = 1; i < s->ng; i++)
		if (s->g[i].total > s->g[heaviest].total)
			heaviest = i;
	wout_str(w, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n");
	wout_fmt(w, "\"exporter\":\"perfspy@%s\",\"name\":\"", perfspy_version_string());
	wout_json(w, title, strlen(title));
	wout_fmt(w, "\",\"activeProfileIndex\":%zu,\n\"shared\":{\"frames\":[\n", heaviest);
	for (i = 0; i < s->nframes; i++) {
		if (i)
			wout_str(w, ",\n");
		ss_put_frame(w, &s->grp, s->frames[i]);
	}
	wout_str(w, "]},\n\"profiles\":[\n");
	if (!s->ng) /* speedscope wants a profile to show, even an empty one */
		ss_put_empty(w, title);
	for (i = 0; !err && i < s->ng; i++) {
		if (i)
			wout_str(w, ",\n");
		if (!s->nr_tl) {
			ss_put_profile(w, s, &s->g[i], title);
			continue;
		}
		for (b = a; b < s->nr_tl && s->tl[b].prof == i; b++)
			;
		err = ss_put_timed(w, s, i, a, b, title);
		a = b;
	}
	wout_str(w, "]}\n");
	return err;
}

int write_speedscope(const struct perfspy_folder *f, FILE *out,
		     const struct perfspy_write_opts *opts)
{
	const char *title = OPTS_GET(opts, title, NULL);
	struct fold_ids ids = { 0 };
	size_t gi;
	struct ss s = { .f = f, .ms = OPTS_GET(opts, milliseconds, false), .ids = &ids };
	struct wout w;
	int err;

	err = wout_init(&w, out);
	if (err)
		return err;
	err = fgroups_init(&s.grp, f, OPTS_GET(opts, lineno, false));
	if (!err)
		err = ss_prepare(&s);
	if (!err)
		err = ss_sidx(&s);
	if (!err)
		err = ss_timeline(&s);
	if (!err)
		err = ss_put(&w, &s, title ? title : "perfspy");
	fgroups_free(&s.grp);
	free(s.stack_grp);
	free(s.tl);
	free(s.order);
	free(s.next);
	for (gi = 0; gi < s.ng; gi++)
		free(s.g[gi].prefix);
	free(s.g);
	free(s.frames);
	free(s.sidx);
	idmap_free(&s.by_hash);
	idmap_free(&s.frame_idx);
	fold_ids_free(&ids);
	if (err) {
		free(w.buf);
		return err;
	}
	return wout_finish(&w);
}
