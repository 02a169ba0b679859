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
 * A profile's samples are its distinct stacks (frame indices, root
 * first) in the raw writer's order, each weighed by its count; unit
 * "none", since a folder holds counts (or periods) but no sampling rate.
 * Frames: {"name"} plus "file" and "line" when the frame text has them
 * (`name (file:line)`); optional fields are left out rather than null,
 * as the schema types them as numbers.
 * "activeProfileIndex" opens the heaviest thread first.
 */
#include "writers.h"
#include "common/hash.h"

#include <errno.h>
#include <stdlib.h>


struct ss_group {
	const u32 *prefix; /* root frames (into the folder's pool) */
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
	struct idmap frame_idx; /* folder frame id -> speedscope index */
	u32 *frames;		/* speedscope index -> folder frame id */
	size_t nframes, cap_frames;
	bool ms; /* weights are milliseconds (--idle, docs/top.md §3) */
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
		if (s->g[i].nprefix == k &&
		    !memcmp(s->g[i].prefix, ids, (size_t)k * sizeof(*ids))) {
			*out = (u32)i;
			return 0;
		}
		h = (h + 1) & 0x7fffffff; /* probe the next hash value */
	}
	if (ensure_mem((void **)&s->g, &s->cap_g, sizeof(*s->g), s->ng + 1))
		return -ENOMEM;
	v = idmap_put(&s->by_hash, h);
	if (!v)
		return -ENOMEM;
	*v = s->ng;
	s->g[s->ng] = (struct ss_group){ .prefix = ids, .nprefix = k,
					 .first = UINT32_MAX, .last = UINT32_MAX };
	*out = (u32)s->ng++;
	return 0;
}

static int ss_frame(struct ss *s, u32 id)
{
	u64 *v = idmap_get(&s->frame_idx, id);

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
	if (!s->next)
		return -ENOMEM;
	for (i = 0; i < s->nr; i++) {
		fold_stack(s->f, s->order[i], &ids, &nr, &count);
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
	}
	return 0;
}

static void ss_put_frame(struct wout *w, const struct perfspy_folder *f, u32 id)
{
	struct frame_parts p;

	frame_parse(fold_name(f, id), fold_name_len(f, id), &p);
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

static void ss_put_profile(struct wout *w, const struct ss *s,
			   const struct ss_group *g, const char *title)
{
	const u32 *ids;
	u32 nr, j, i;
	u64 count;

	wout_str(w, "{\"type\":\"sampled\",");
	ss_put_name(w, s, g, title);
	wout_str(w, s->ms ? ",\"unit\":\"milliseconds\",\"startValue\":0,\"endValue\":" :
			    ",\"unit\":\"none\",\"startValue\":0,\"endValue\":");
	wout_u64(w, g->total);
	wout_str(w, ",\n\"samples\":[");
	for (i = g->first; i != UINT32_MAX; i = s->next[i]) {
		fold_stack(s->f, s->order[i], &ids, &nr, &count);
		wout_str(w, i == g->first ? "[" : ",\n[");
		for (j = g->nprefix; j < nr; j++) {
			if (j > g->nprefix)
				wout_str(w, ",");
			wout_u64(w, *idmap_get(&s->frame_idx, ids[j]));
		}
		wout_str(w, "]");
	}
	wout_str(w, "],\n\"weights\":[");
	for (i = g->first; i != UINT32_MAX; i = s->next[i]) {
		fold_stack(s->f, s->order[i], &ids, &nr, &count);
		if (i != g->first)
			wout_str(w, ",");
		wout_u64(w, count);
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

static void ss_put(struct wout *w, const struct ss *s, const char *title)
{
	size_t i, heaviest = 0;

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
		ss_put_frame(w, s->f, s->frames[i]);
	}
	wout_str(w, "]},\n\"profiles\":[\n");
	if (!s->ng) /* speedscope wants a profile to show, even an empty one */
		ss_put_empty(w, title);
	for (i = 0; i < s->ng; i++) {
		if (i)
			wout_str(w, ",\n");
		ss_put_profile(w, s, &s->g[i], title);
	}
	wout_str(w, "]}\n");
}

int write_speedscope(const struct perfspy_folder *f, FILE *out,
		     const char *title, bool ms)
{
	struct ss s = { .f = f, .ms = ms };
	struct wout w;
	int err;

	err = wout_init(&w, out);
	if (err)
		return err;
	err = ss_prepare(&s);
	if (!err)
		ss_put(&w, &s, title ? title : "perfspy");
	free(s.order);
	free(s.next);
	free(s.g);
	free(s.frames);
	idmap_free(&s.by_hash);
	idmap_free(&s.frame_idx);
	if (err) {
		free(w.buf);
		return err;
	}
	return wout_finish(&w);
}
