// SPDX-License-Identifier: GPL-2.0
/*
 * pprof -> folder (perfspy_folder__read_pprof): the inverse of
 * write_pprof.c, and a reader of any pprof profile (go tool pprof's,
 * Pyroscope's, Parca's exports) for `perfspy combine`.
 *
 * Frames are rebuilt as the output contract spells them (docs/output.md): a Line becomes `name (file:line)`, `name (file)`
 * without a line, `name (mapping file)` when the Function has no file
 * (how write_pprof.c keeps library names), or just `name`; a Location
 * without Lines becomes `0x<address> (mapping file)`. A Location's Lines
 * are inlined callee first (profile.proto), so they are reversed into
 * the root-first stack. Labels `pid`/`comm` and `tid`/`thread` become
 * the root frames `process PID:"comm"` and `thread (TID): NAME`; any
 * other string label (but `category`, which is derived from the stack)
 * becomes a root frame `[key=value]`, in key order, so that combine's
 * --label-root survives a trip through pprof.
 *
 * The value read is the default sample type's (Profile.default_sample_type),
 * else the last one, as `go tool pprof` picks (profile.proto: "clients
 * should default to the last sample value").
 */
#include "writers.h"
#include "pprof.pb-c.h"
#include "common/opts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile PProfile;
typedef Perftools__Profiles__Location PLocation;
typedef Perftools__Profiles__Function PFunction;
typedef Perftools__Profiles__Mapping PMapping;
typedef Perftools__Profiles__Label PLabel;

/* Sorted (id, index) pairs: ids are any non-zero u64 (profile.proto). */
struct idx {
	u64 id;
	size_t i;
};

static int cmp_idx(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct idx *find_idx(const struct idx *v, size_t n, u64 id)
{
	struct idx key = { .id = id };

	return n ? bsearch(&key, v, n, sizeof(*v), cmp_idx) : NULL;
}

struct rd {
	const PProfile *p;
	struct perfspy_folder *f;
	struct log_sink log;
	const char *name;
	struct idx *locs, *fns, *maps;
	u32 **loc_frames; /* per Location: interned frame ids, root first */
	u32 *loc_nframes;
	char *buf;
	size_t cap;
	u64 samples, stacks, bad, thread_samples;
	/* perfspy_read_opts.pprof_frame */
	int (*frame_fn)(void *ctx, const char *frame, size_t len, bool inlined,
			const char *filename, const char *build_id);
	void *frame_ctx;
};

/* String @i of the table, or "" when out of range. */
static const char *str_at(const struct rd *r, s64 i)
{
	if (i <= 0 || (u64)i >= r->p->n_string_table)
		return "";
	return r->p->string_table[i];
}

/* printf into r->buf; its length, or -ENOMEM. */
static int fmt(struct rd *r, const char *f, ...) __attribute__((format(printf, 2, 3)));

static int fmt(struct rd *r, const char *f, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, f);
		n = vsnprintf(r->buf, r->cap, f, ap);
		va_end(ap);
		if (n < 0)
			return -ENOMEM;
		if ((size_t)n < r->cap)
			return n;
		if (ensure_mem((void **)&r->buf, &r->cap, 1, (size_t)n + 1))
			return -ENOMEM;
	}
}

static const char *mapping_file(const struct rd *r, u64 id)
{
	const struct idx *m = find_idx(r->maps, r->p->n_mapping, id);

	const char *s, *slash;

	if (!m)
		return "";
	/* Frames name a library by its last path component (as stacks.c
	 * does); write_pprof.c may have stored the full path. */
	s = str_at(r, r->p->mapping[m->i]->filename);
	slash = s[0] == '/' ? strrchr(s, '/') : NULL;
	return slash && slash[1] ? slash + 1 : s;
}

/* Location @li's frames to perfspy_read_opts.pprof_frame: the first
 * (its last Line, the caller) as called, the rest as inlined into it
 * (profile.proto: line[i] is inlined into line[i + 1]). */
static int tell_frames(struct rd *r, size_t li)
{
	const PLocation *loc = r->p->location[li];
	const struct idx *m = find_idx(r->maps, r->p->n_mapping, loc->mapping_id);
	const PMapping *map = m ? r->p->mapping[m->i] : NULL;
	const char *file = map ? str_at(r, map->filename) : "";
	const char *bid = map ? str_at(r, map->build_id) : "";
	u32 j;
	int err;

	for (j = 0; j < r->loc_nframes[li]; j++) {
		u32 id = r->loc_frames[li][j];

		err = r->frame_fn(r->frame_ctx, fold_name(r->f, id), fold_name_len(r->f, id),
				  j > 0, file, bid);
		if (err < 0)
			return err;
	}
	return 0;
}

static int intern_buf(struct rd *r, int n, u32 *out)
{
	if (n < 0)
		return n;
	*out = fold_intern(r->f, r->buf, (size_t)n);
	return *out == FOLD_NO_ID ? -ENOMEM : 0;
}

/* The frames of Location @li, root first. */
static int location_frames(struct rd *r, size_t li)
{
	const PLocation *loc = r->p->location[li];
	const char *mf = mapping_file(r, loc->mapping_id);
	size_t n = loc->n_line ? loc->n_line : 1, j;
	u32 *ids = xreallocarray(NULL, n, sizeof(*ids));
	int err = 0;

	if (!ids)
		return -ENOMEM;
	r->loc_frames[li] = ids;
	r->loc_nframes[li] = (u32)n;
	if (!loc->n_line)
		return intern_buf(r, *mf ? fmt(r, "0x%llx (%s)", (unsigned long long)loc->address, mf) :
				       fmt(r, "0x%llx", (unsigned long long)loc->address), ids);
	for (j = 0; !err && j < n; j++) {
		const Perftools__Profiles__Line *ln = loc->line[n - 1 - j];
		const struct idx *fi = find_idx(r->fns, r->p->n_function, ln->function_id);
		const PFunction *fn = fi ? r->p->function[fi->i] : NULL;
		const char *name = fn ? str_at(r, fn->name) : "";
		const char *file = fn ? str_at(r, fn->filename) : "";

		if (!*name)
			name = fn ? str_at(r, fn->system_name) : "";
		if (!*name)
			name = "[unknown]";
		if (*file && ln->line > 0)
			err = intern_buf(r, fmt(r, "%s (%s:%lld)", name, file, (long long)ln->line),
					 &ids[j]);
		else if (*file)
			err = intern_buf(r, fmt(r, "%s (%s)", name, file), &ids[j]);
		else if (*mf)
			err = intern_buf(r, fmt(r, "%s (%s)", name, mf), &ids[j]);
		else
			err = intern_buf(r, fmt(r, "%s", name), &ids[j]);
	}
	return err;
}

static int cmp_label_key(const void *a, const void *b, void *ctx)
{
	const struct rd *r = ctx;
	const PLabel *x = *(PLabel *const *)a, *y = *(PLabel *const *)b;
	int c = strcmp(str_at(r, x->key), str_at(r, y->key));

	return c ? c : strcmp(str_at(r, x->str), str_at(r, y->str));
}

/* Root frames from the labels of @s into @ids; their number, or -ENOMEM. */
static int label_roots(struct rd *r, const Perftools__Profiles__Sample *s, u32 *ids,
		       bool *thread)
{
	const PLabel *pid = NULL, *comm = NULL, *tid = NULL, *tname = NULL;
	PLabel **other = NULL;
	size_t i, nother = 0;
	int n = 0, err = 0;

	other = xreallocarray(NULL, s->n_label + 1, sizeof(*other));
	if (!other)
		return -ENOMEM;
	for (i = 0; i < s->n_label; i++) {
		const char *k = str_at(r, s->label[i]->key);

		if (!strcmp(k, "pid"))
			pid = s->label[i];
		else if (!strcmp(k, "comm"))
			comm = s->label[i];
		else if (!strcmp(k, "tid"))
			tid = s->label[i];
		else if (!strcmp(k, "thread"))
			tname = s->label[i];
		else if (*k && strcmp(k, "category") && *str_at(r, s->label[i]->str))
			other[nother++] = s->label[i];
	}
	qsort_r(other, nother, sizeof(*other), cmp_label_key, r);
	for (i = 0; !err && i < nother; i++)
		err = intern_buf(r, fmt(r, "[%s=%s]", str_at(r, other[i]->key),
					str_at(r, other[i]->str)), &ids[n++]);
	if (!err && (pid || comm))
		err = intern_buf(r, fmt(r, "process %lld:\"%s\"", pid ? (long long)pid->num : 0LL,
					comm ? str_at(r, comm->str) : ""), &ids[n++]);
	if (!err && tid) {
		char idbuf[32];
		const char *id = idbuf;

		if (tid->str > 0)
			id = str_at(r, tid->str);
		else
			snprintf(idbuf, sizeof(idbuf), "%lld", (long long)tid->num);
		err = tname ? intern_buf(r, fmt(r, "thread (%s): %s", id, str_at(r, tname->str)),
					 &ids[n++]) :
			      intern_buf(r, fmt(r, "thread (%s)", id), &ids[n++]);
		*thread = true;
	}
	free(other);
	return err ? err : n;
}

static int add_samples(struct rd *r, size_t vi)
{
	u32 *ids = NULL;
	size_t cap = 0, i, j;
	int err = 0;

	for (i = 0; !err && i < r->p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = r->p->sample[i];
		size_t need = s->n_label + 2, n;
		bool thread = false, bad = false;
		int nroot;

		if (vi >= s->n_value || s->value[vi] < 0) {
			r->bad++;
			continue;
		}
		if (!s->value[vi])
			continue;
		for (j = 0; j < s->n_location_id; j++) {
			const struct idx *li = find_idx(r->locs, r->p->n_location, s->location_id[j]);

			if (!li) {
				bad = true;
				break;
			}
			need += r->loc_nframes[li->i];
		}
		if (bad) {
			r->bad++;
			continue;
		}
		if (ensure_mem((void **)&ids, &cap, sizeof(*ids), need)) {
			err = -ENOMEM;
			break;
		}
		nroot = label_roots(r, s, ids, &thread);
		if (nroot < 0) {
			err = nroot;
			break;
		}
		n = (size_t)nroot;
		for (j = s->n_location_id; j-- > 0;) {
			const struct idx *li = find_idx(r->locs, r->p->n_location, s->location_id[j]);

			memcpy(ids + n, r->loc_frames[li->i], r->loc_nframes[li->i] * sizeof(*ids));
			n += r->loc_nframes[li->i];
		}
		if (n > UINT32_MAX) {
			r->bad++;
			continue;
		}
		err = fold_add_ids(r->f, ids, (u32)n, (u64)s->value[vi]);
		r->samples += (u64)s->value[vi];
		r->stacks++;
		if (thread)
			r->thread_samples += (u64)s->value[vi];
	}
	free(ids);
	return err;
}

static int build_index(struct idx **out, size_t n, const void *const *msgs, size_t id_off)
{
	struct idx *v = xreallocarray(NULL, n + 1, sizeof(*v));
	size_t i;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		memcpy(&v[i].id, (const char *)msgs[i] + id_off, sizeof(u64));
		v[i].i = i;
	}
	qsort(v, n, sizeof(*v), cmp_idx);
	*out = v;
	return 0;
}

/* Which value to read (see the top comment). */
static size_t value_index(const PProfile *p)
{
	size_t i;

	if (!p->n_sample_type)
		return 0;
	if (p->default_sample_type > 0)
		for (i = 0; i < p->n_sample_type; i++)
			if (p->sample_type[i]->type == p->default_sample_type)
				return i;
	return p->n_sample_type - 1;
}

static int read_profile(struct rd *r)
{
	const PProfile *p = r->p;
	size_t i;
	int err;

	err = build_index(&r->locs, p->n_location, (const void *const *)p->location,
			  offsetof(PLocation, id));
	if (!err)
		err = build_index(&r->fns, p->n_function, (const void *const *)p->function,
				  offsetof(PFunction, id));
	if (!err)
		err = build_index(&r->maps, p->n_mapping, (const void *const *)p->mapping,
				  offsetof(PMapping, id));
	if (err)
		return err;
	r->loc_frames = xreallocarray(NULL, p->n_location + 1, sizeof(*r->loc_frames));
	r->loc_nframes = xreallocarray(NULL, p->n_location + 1, sizeof(*r->loc_nframes));
	if (!r->loc_frames || !r->loc_nframes)
		return -ENOMEM;
	memset(r->loc_frames, 0, (p->n_location + 1) * sizeof(*r->loc_frames));
	for (i = 0; !err && i < p->n_location; i++) {
		err = location_frames(r, i);
		if (!err && r->frame_fn)
			err = tell_frames(r, i);
	}
	if (!err)
		err = add_samples(r, value_index(p));
	return err;
}

/* @len bytes at @buf, gunzipped when they start with the gzip magic
 * (RFC 1952 §2.3.1: 1f 8b); *@out is NULL when they are not. */
/* Inflates a gzip member; input that is not gzip is left as it is (0,
 * *@out NULL). On a corrupt or cut stream, *@bad_at is the input offset
 * where inflating stopped. */
static int gunzip(const u8 *buf, size_t len, u8 **out, size_t *olen, size_t *bad_at)
{
	z_stream z = { 0 };
	size_t cap = 0, n = 0;
	u8 *o = NULL;
	int ret;

	*out = NULL;
	if (len < 2 || buf[0] != 0x1f || buf[1] != 0x8b)
		return 0;
	/* Room for four times the input to start with (pprof protobuf
	 * compresses about that much), grown as it inflates. The buffer
	 * is allocated here: a capacity set ahead of an allocation left
	 * ensure_mem() nothing to do, and every input past 15 KB failed
	 * (inflate() refuses a NULL output). */
	if (ensure_mem((void **)&o, &cap, 1, len < SIZE_MAX / 8 ? len * 4 + 4096 : len))
		return -ENOMEM;
	if (inflateInit2(&z, 15 + 16) != Z_OK) {
		free(o);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)buf;
	do {
		if (ensure_mem((void **)&o, &cap, 1, n + 65536)) {
			ret = Z_MEM_ERROR;
			break;
		}
		z.avail_in = len - (size_t)(z.next_in - buf) > (1u << 30) ?
				     (1u << 30) : (uInt)(len - (size_t)(z.next_in - buf));
		z.next_out = o + n;
		z.avail_out = (uInt)(cap - n > (1u << 30) ? (1u << 30) : cap - n);
		ret = inflate(&z, Z_NO_FLUSH);
		n = (size_t)(z.next_out - o);
	} while (ret == Z_OK);
	*bad_at = (size_t)(z.next_in - buf);
	inflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(o);
		return ret == Z_MEM_ERROR ? -ENOMEM : -PERFSPY_E_CAPTURE;
	}
	*out = o;
	*olen = n;
	return 0;
}

PERFSPY_API int perfspy_folder__read_pprof(struct perfspy_folder *f, const char *path,
					   const void *buf, size_t len,
					   const struct perfspy_read_opts *opts,
					   struct perfspy_read_stats *stats)
{
	struct rd r = { .f = f };
	u8 *data = NULL, *raw = NULL;
	size_t rawlen = 0, i, bad_at = 0;
	PProfile *p = NULL;
	int err;

	if (!OPTS_VALID(opts, perfspy_read_opts) || (stats && stats->sz < sizeof(size_t)))
		return -PERFSPY_E_OPTS;
	if (!f || (!path && !buf && len))
		return -EINVAL;
	r.log.fn = OPTS_GET(opts, log_fn, NULL);
	r.log.ctx = OPTS_GET(opts, log_ctx, NULL);
	r.log.level = log_level_pick(OPTS_GET(opts, log_level, 0),
				     OPTS_GET(opts, log_level_set, false));
	r.name = OPTS_GET(opts, display_name, NULL);
	if (!r.name)
		r.name = path ? path : "<pprof>";
	if (path) {
		char *whole;

		err = read_file_whole(path, &whole, &len);
		if (err)
			return err;
		data = (u8 *)whole;
		buf = data;
	}
	err = gunzip(buf, len, &raw, &rawlen, &bad_at);
	if (err == -PERFSPY_E_CAPTURE)
		log_msg(&r.log, LOG_ERROR,
			"%s: not a pprof profile (its gzip stream is corrupt or cut short at offset %zu of %zu)",
			r.name, bad_at, len);
	if (!err) {
		p = perftools__profiles__profile__unpack(NULL, raw ? rawlen : len,
							  raw ? raw : (const u8 *)buf);
		if (!p) {
			log_msg(&r.log, LOG_ERROR, "%s: not a pprof profile (protobuf decoding failed)",
				r.name);
			err = -PERFSPY_E_CAPTURE;
		}
	}
	if (!err) {
		r.p = p;
		r.frame_fn = OPTS_GET(opts, pprof_frame, NULL);
		r.frame_ctx = OPTS_GET(opts, pprof_frame_ctx, NULL);
		if (r.frame_fn && p->n_mapping) {
			const PMapping *m = p->mapping[0];

			err = r.frame_fn(r.frame_ctx, NULL, 0, false, str_at(&r, m->filename),
					 str_at(&r, m->build_id));
			if (err > 0)
				err = 0;
		}
		if (!err)
			err = read_profile(&r);
		if (r.bad)
			pr_warn(&r.log, "%s: %llu samples skipped (unknown location or negative value)",
				r.name, (unsigned long long)r.bad);
	}
	if (!err && stats) {
		struct perfspy_read_stats st = { .sz = stats->sz };

		st.samples = r.samples;
		st.stacks = r.stacks;
		st.bad = r.bad;
		st.thread_samples = r.thread_samples;
		st.duration_ns = p->duration_nanos > 0 ? (u64)p->duration_nanos : 0;
		memcpy(stats, &st, stats->sz < sizeof(st) ? stats->sz : sizeof(st));
	}
	if (r.loc_frames)
		for (i = 0; p && i < p->n_location; i++)
			free(r.loc_frames[i]);
	free(r.loc_frames);
	free(r.loc_nframes);
	free(r.locs);
	free(r.fns);
	free(r.maps);
	free(r.buf);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(data);
	return err;
}
