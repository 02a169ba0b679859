// SPDX-License-Identifier: GPL-2.0
/*
 * The pprof writer: the folder's stacks as a gzipped perftools.profiles
 * Profile (pprof.proto; google/pprof proto/profile.proto), the format
 * Pyroscope, Parca and `go tool pprof` read.
 *
 * Only frame text is known here (common/write.h's frame_parse), so:
 * - one Location per distinct frame text, with one Line; frames the
 *   caller says are inlined callees (perfspy_write_opts.frame_inlined,
 *   from the session) are Lines of the next frame's Location instead,
 *   callee first (profile.proto, Location.line);
 * - one Function per distinct (name, file): `f (a.c:10)` and `f (a.c:12)`
 *   are two Locations of one Function, the line going to Line.line;
 *   Python frames keep their .py file as Function.filename, and when the
 *   caller says their lines are first lines (perfspy_write_opts
 *   .python_first_lines) one Function per (name, file, line) with
 *   start_line, as two definitions may share a name in one file;
 * - native frames named after their library (`func (libc.so.6)`), kernel
 *   frames and unnamed code (`0x1f00 (lib)`) get a Mapping per library
 *   name, with the full path and build id when the caller passes the
 *   session's DSOs (perfspy_write_opts.dso_paths), without addresses;
 *   frames that name a source file (`f (a.c:10)`) get their library's
 *   Mapping when the caller tells it (perfspy_write_opts.frame_lib);
 * - the program's Mapping (perfspy_write_opts.main_binary) comes first:
 *   pprof takes mapping[0] for the main binary (profile.proto, Profile
 *   .mapping; `go tool pprof` names it on its "File:" line);
 * - root frames become labels, not Locations: `thread (TID): NAME` gives
 *   `tid` (a number) and `thread`, `process PID:"cmd"` gives `pid` and
 *   `comm`, and `[key=value]` (perfspy combine --label-root) gives key;
 * - every sample has the label `category`: its stack's category in
 *   `perfspy report` (report.c's built-in rules).
 * A frame whose parts do not give back its exact text is written as a
 * Function named by the whole text, so reading the profile back
 * (read_pprof.c) gives the same frames.
 *
 * Output is deterministic: stacks in fold_sorted() order, ids and
 * strings numbered by first use in that order, gzip without a file name
 * or time stamp (zlib writes MTIME 0, RFC 1952 §2.3.1).
 */
#include "writers.h"
#include "common/hash.h"
#include "pprof.pb-c.h"
#include "report.h"
#include "common/opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile PProfile;
typedef Perftools__Profiles__ValueType PValueType;
typedef Perftools__Profiles__Sample PSample;
typedef Perftools__Profiles__Label PLabel;
typedef Perftools__Profiles__Mapping PMapping;
typedef Perftools__Profiles__Location PLocation;
typedef Perftools__Profiles__Line PLine;
typedef Perftools__Profiles__Function PFunction;

/* A string table made of a private folder: string index = id + 1, since
 * index 0 must be "" (profile.proto, string_table). */
struct strtab {
	struct perfspy_folder *f;
	u32 n;
};

static s64 str_idx(struct strtab *t, const char *s, size_t len)
{
	u32 id;

	if (!len)
		return 0;
	id = fold_intern(t->f, s, len);
	if (id == FOLD_NO_ID)
		return -1;
	if (id >= t->n)
		t->n = id + 1;
	return (s64)id + 1;
}

#define NOT_ROOT UINT64_MAX

/* Per-sample pieces, turned into pointers once every pool has its final
 * address. */
struct sample_ref {
	size_t loc_off, lab_off;
	u32 nloc, nlab;
};

struct pp {
	const struct perfspy_folder *in;
	struct strtab str;
	/* Function keys (function_id()) are bytes, not text: a set that
	 * keeps them as they are. id == index. */
	struct strset fnkeys;
	struct perfspy_folder *mapkeys; /* id == index */
	struct idmap loc_of;			 /* frame id -> Location id */
	PLocation *locs;
	size_t *loc_lo; /* locs[i]'s Lines start at lines[loc_lo[i]] */
	PLine *lines;
	size_t nlocs, cap_locs, cap_loc_lo, nlines, cap_lines;
	/* Inline groups (perfspy_write_opts.frame_inlined): */
	bool (*inlined_fn)(void *ctx, const char *frame, size_t len);
	void *inlined_ctx;
	bool first_lines; /* perfspy_write_opts.python_first_lines */
	struct idmap inl_of; /* frame id -> 2 inlined, 1 not */
	struct strset grpkeys; /* each group's frame ids, as bytes */
	struct idmap grp_of;		/* group key id -> Location id */
	PFunction *fns;
	size_t nfns, cap_fns;
	PMapping *maps;
	size_t nmaps, cap_maps;
	u64 *loc_ids; /* all samples' location ids, leaf first */
	size_t nloc_ids, cap_loc_ids;
	PLabel *labs; /* each root frame's labels, once */
	size_t nlabs, cap_labs;
	struct idmap root_of; /* frame id -> its labels (root_frame_labels) */
	u32 *labref;	      /* all samples' labels, indices into labs */
	size_t nlabref, cap_labref;
	struct perfspy_report *rep; /* stack categories (report.c) */
	u32 *cat_lab;		    /* category -> its label + 1, 0: none yet */
	struct sample_ref *refs;
	PSample *samples;
	s64 *values;
	size_t nsamples;
	s64 k_tid, k_thread, k_pid, k_comm, k_category;
	const char *const *dso_paths, *const *dso_bids;
	size_t nr_dsos;
	/* perfspy_write_opts.frame_lib */
	const char *(*frame_lib)(void *ctx, const char *frame, size_t len);
	void *frame_lib_ctx;
	struct fold_ids ids; /* fold_stack()'s room */
};

/* Function id for (@name, @file, @start), made on first use. 0 on ENOMEM. */
static u64 function_id(struct pp *pp, const char *name, size_t nlen,
		       const char *file, size_t flen, s64 start)
{
	char stackbuf[512], *key = stackbuf;
	size_t klen = nlen + 1 + flen + sizeof(start);
	PFunction *fn;
	u32 id;
	int r;

	/* '\n' cannot occur in folded frame text, so it separates the parts. */
	if (klen > sizeof(stackbuf) && !(key = malloc(klen)))
		return 0;
	memcpy(key, name, nlen);
	key[nlen] = '\n';
	memcpy(key + nlen + 1, file, flen);
	memcpy(key + nlen + 1 + flen, &start, sizeof(start));
	/* Not fold_intern(): it rewrites newline and ';' bytes, and the
	 * line's bytes may be either (10 read as 32 made the forward of line
	 * 10 and the forward of line 32 of one file one Function). */
	r = strset_add(&pp->fnkeys, key, klen, &id);
	if (key != stackbuf)
		free(key);
	if (r < 0)
		return 0;
	if (id < pp->nfns)
		return (u64)id + 1;
	if (ensure_mem((void **)&pp->fns, &pp->cap_fns, sizeof(*pp->fns), pp->nfns + 1))
		return 0;
	fn = &pp->fns[pp->nfns];
	perftools__profiles__function__init(fn);
	fn->id = (u64)id + 1;
	fn->name = str_idx(&pp->str, name, nlen);
	fn->system_name = fn->name;
	fn->filename = str_idx(&pp->str, file, flen);
	fn->start_line = start;
	if (fn->name < 0 || fn->filename < 0)
		return 0;
	pp->nfns++;
	return fn->id;
}

/* The caller's DSO whose path ends in the component @lib (the name frames
 * show, stacks.c basename_of), or -1. */
static ssize_t dso_of(const struct pp *pp, const char *lib, size_t len)
{
	size_t i, n;

	for (i = 0; i < pp->nr_dsos; i++) {
		const char *p = pp->dso_paths[i];

		if (!p)
			continue;
		n = strlen(p);
		if (n >= len && !memcmp(p + n - len, lib, len) &&
		    (n == len || p[n - len - 1] == '/'))
			return (ssize_t)i;
	}
	return -1;
}

/* The caller's DSO whose path is @path, or -1. */
static ssize_t dso_at(const struct pp *pp, const char *path)
{
	size_t i;

	for (i = 0; i < pp->nr_dsos; i++)
		if (pp->dso_paths[i] && !strcmp(pp->dso_paths[i], path))
			return (ssize_t)i;
	return -1;
}

/* Mapping id for library @lib (the name frames show), made on first use:
 * for @path when given (the main binary), else for the caller's DSO of
 * that name; the DSO's path and build id when the caller has them, else
 * just the name. 0 on ENOMEM. */
static u64 mapping_id(struct pp *pp, const char *lib, size_t len, const char *path)
{
	PMapping *m;
	u32 id = fold_intern(pp->mapkeys, lib, len);
	ssize_t d;

	if (id == FOLD_NO_ID)
		return 0;
	if (id < pp->nmaps)
		return (u64)id + 1;
	if (ensure_mem((void **)&pp->maps, &pp->cap_maps, sizeof(*pp->maps), pp->nmaps + 1))
		return 0;
	m = &pp->maps[pp->nmaps];
	perftools__profiles__mapping__init(m);
	m->id = (u64)id + 1;
	d = path ? dso_at(pp, path) : dso_of(pp, lib, len);
	if (d >= 0) {
		const char *bid = pp->dso_bids ? pp->dso_bids[d] : NULL;

		path = pp->dso_paths[d];
		if (bid && (m->build_id = str_idx(&pp->str, bid, strlen(bid))) < 0)
			return 0;
	}
	m->filename = path ? str_idx(&pp->str, path, strlen(path)) : str_idx(&pp->str, lib, len);
	m->has_functions = true;
	if (m->filename < 0)
		return 0;
	pp->nmaps++;
	return m->id;
}

/* The program's Mapping, first of all (perfspy_write_opts.main_binary):
 * keyed by its last path component, the name its frames show. */
static int main_mapping(struct pp *pp, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *lib = slash && slash[1] ? slash + 1 : path;

	if (!*path)
		return 0;
	return mapping_id(pp, lib, strlen(lib), path) ? 0 : -ENOMEM;
}

/* Do @p's parts spell @s exactly (`func (file[:line])`)? */
static bool parts_exact(const char *s, size_t len, const struct frame_parts *p)
{
	char tail[32];
	size_t n = 0;

	if (!p->file)
		return p->func_len == len;
	if (!p->file_len) /* `g ()`: an empty file would read back as `g` */
		return false;
	if (p->line)
		n = (size_t)snprintf(tail, sizeof(tail), ":%lu", p->line);
	return p->func_len + 2 + p->file_len + n + 1 == len &&
	       !memcmp(s + p->func_len, " (", 2) &&
	       !memcmp(s + p->func_len + 2 + p->file_len, tail, n) &&
	       s[len - 1] == ')';
}

/* A library name rather than a source file: what native frames without a
 * line show in their parentheses (docs/output.md). */
static bool is_library(const struct frame_parts *p)
{
	return p->kind == FRAME_KERNEL || (p->kind == FRAME_NATIVE && !p->line);
}

/* Function, line and mapping of frame @id. 0 or -ENOMEM. */
static int frame_line(struct pp *pp, u32 id, u64 *fn, s64 *line, u64 *map)
{
	const char *s = fold_name(pp->in, id);
	size_t len = fold_name_len(pp->in, id);
	struct frame_parts p;

	frame_parse(s, len, &p);
	if (!parts_exact(s, len, &p)) {
		p.func_len = len;
		p.file = NULL;
		p.file_len = 0;
		p.line = 0;
	}
	*map = 0;
	if (p.file && is_library(&p)) {
		*map = mapping_id(pp, p.file, p.file_len, NULL);
		*fn = *map ? function_id(pp, p.func, p.func_len, "", 0, 0) : 0;
	} else {
		const char *lib = p.file && p.kind == FRAME_NATIVE && pp->frame_lib ?
				  pp->frame_lib(pp->frame_lib_ctx, s, len) : NULL;

		/* A frame naming its source file: its library's Mapping, when
		 * the caller knows it. Reading back takes the file, not the
		 * Mapping (read_pprof.c), so the text is kept. */
		if (lib && *lib && !(*map = mapping_id(pp, lib, strlen(lib), NULL)))
			return -ENOMEM;
		*fn = function_id(pp, p.func, p.func_len, p.file ? p.file : "", p.file_len,
				  pp->first_lines && p.kind == FRAME_PYTHON && p.line > 0 ? (s64)p.line : 0);
	}
	*line = (s64)p.line;
	return *fn ? 0 : -ENOMEM;
}

/* A new Location for frames @fids[0..n), leaf first: one Line each, the
 * inlined callees first and the function they are inlined into last
 * (profile.proto, Location.line). Its id, or 0 on ENOMEM. */
static u64 new_location(struct pp *pp, const u32 *fids, u32 n)
{
	PLocation *loc;
	u64 fn, map;
	s64 line;
	u32 i;

	if (ensure_mem((void **)&pp->locs, &pp->cap_locs, sizeof(*pp->locs), pp->nlocs + 1) ||
	    ensure_mem((void **)&pp->loc_lo, &pp->cap_loc_lo, sizeof(*pp->loc_lo), pp->nlocs + 1) ||
	    ensure_mem((void **)&pp->lines, &pp->cap_lines, sizeof(*pp->lines), pp->nlines + n))
		return 0;
	loc = &pp->locs[pp->nlocs];
	perftools__profiles__location__init(loc);
	pp->loc_lo[pp->nlocs] = pp->nlines;
	for (i = 0; i < n; i++) {
		PLine *ln = &pp->lines[pp->nlines + i];

		if (frame_line(pp, fids[i], &fn, &line, &map))
			return 0;
		perftools__profiles__line__init(ln);
		ln->function_id = fn;
		ln->line = line;
		/* The outermost function's library: an inlined callee's text
		 * (a header's inline function) may be shared by libraries. */
		if (map)
			loc->mapping_id = map;
	}
	pp->nlines += n;
	loc->n_line = n;
	loc->id = ++pp->nlocs;
	return loc->id;
}

/* Location id of frame @id, made on first use. 0 on ENOMEM. */
static u64 location_id(struct pp *pp, u32 id)
{
	u64 *v = idmap_get(&pp->loc_of, id), loc;

	if (v)
		return *v;
	loc = new_location(pp, &id, 1);
	if (!loc || !(v = idmap_put(&pp->loc_of, id)))
		return 0;
	*v = loc;
	return loc;
}

/* Is frame @id an inlined callee (perfspy_write_opts.frame_inlined)? */
static int is_inlined(struct pp *pp, u32 id)
{
	u64 *v = idmap_get(&pp->inl_of, id);

	if (!v) {
		v = idmap_put(&pp->inl_of, id);
		if (!v)
			return -ENOMEM;
		*v = pp->inlined_fn(pp->inlined_ctx, fold_name(pp->in, id),
				    fold_name_len(pp->in, id)) ? 2 : 1;
	}
	return *v == 2;
}

/* Location id of the inline group @fids[0..n) (leaf first, n > 1), made
 * on first use; groups are keyed by the bytes of their frame ids (a
 * string set keeps bytes as given). Printing the ids as text was half of
 * a pprof conversion of deep stacks (issue 16). 0 on ENOMEM. */
static u64 group_location_id(struct pp *pp, const u32 *fids, u32 n)
{
	u64 *v, loc = 0;
	u32 kid;

	if (strset_add(&pp->grpkeys, (const char *)fids, (size_t)n * sizeof(*fids), &kid) < 0)
		return 0;
	v = idmap_get(&pp->grp_of, kid);
	if (v)
		return *v;
	loc = new_location(pp, fids, n);
	if (!loc || !(v = idmap_put(&pp->grp_of, kid)))
		return 0;
	*v = loc;
	return loc;
}

static PLabel *new_label(struct pp *pp, s64 key)
{
	PLabel *l;

	if (ensure_mem((void **)&pp->labs, &pp->cap_labs, sizeof(*pp->labs), pp->nlabs + 1))
		return NULL;
	l = &pp->labs[pp->nlabs++];
	perftools__profiles__label__init(l);
	l->key = key;
	return l;
}

/* Decimal @s[0..n) into *@v; false if it is not one. */
static bool parse_dec(const char *s, size_t n, s64 *v)
{
	u64 x = 0;
	size_t i;

	if (!n || n > 18)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (u64)(s[i] - '0');
	}
	*v = (s64)x;
	return true;
}

/* Labels of root frame @s: `thread (TID)[: NAME]` or `process PID:"cmd"`
 * (frame_parse has checked the shape). 0 or -ENOMEM. */
static int root_labels(struct pp *pp, const char *s, size_t len, enum frame_kind kind)
{
	const char *id = s + 8, *end, *name;
	size_t idlen, nlen;
	PLabel *l;
	s64 num;

	if (kind == FRAME_THREAD) {
		end = memchr(id, ')', len - 8);
		idlen = (size_t)(end - id);
		name = end + 1 < s + len ? end + 3 : NULL;
		if (!(l = new_label(pp, pp->k_tid)))
			return -ENOMEM;
		if (parse_dec(id, idlen, &num))
			l->num = num;
		else if ((l->str = str_idx(&pp->str, id, idlen)) < 0)
			return -ENOMEM;
		if (name) {
			nlen = len - (size_t)(name - s);
			if (!(l = new_label(pp, pp->k_thread)) ||
			    (l->str = str_idx(&pp->str, name, nlen)) < 0)
				return -ENOMEM;
		}
		return 0;
	}
	/* `process PID:"cmd"`; py-spy quotes the command line. */
	end = memchr(id, ':', len - 8);
	if (!(l = new_label(pp, pp->k_pid)))
		return -ENOMEM;
	if (!parse_dec(id, (size_t)(end - id), &l->num))
		l->num = 0;
	name = end + 1;
	nlen = len - (size_t)(name - s);
	if (nlen >= 2 && name[0] == '"' && name[nlen - 1] == '"') {
		name++;
		nlen -= 2;
	}
	if (!(l = new_label(pp, pp->k_comm)) || (l->str = str_idx(&pp->str, name, nlen)) < 0)
		return -ENOMEM;
	return 0;
}

/* A `[key=value]` root (perfspy combine --label-root): key and value, or
 * false. Keys are identifiers (letters, digits, '_', '.', '-'). */
static bool label_root(const char *s, size_t len, size_t *klen)
{
	size_t i;

	if (len < 4 || s[0] != '[' || s[len - 1] != ']')
		return false;
	for (i = 1; i < len - 1 && s[i] != '='; i++)
		if (!(s[i] == '_' || s[i] == '.' || s[i] == '-' ||
		      (s[i] >= '0' && s[i] <= '9') || ((s[i] | 32) >= 'a' && (s[i] | 32) <= 'z')))
			return false;
	if (i == 1 || i >= len - 1)
		return false;
	*klen = i - 1;
	return true;
}

/* The labels of frame @id when it is a root frame, made once per frame:
 * *@v = first label index << 32 | number of labels, or NOT_ROOT. Samples
 * share the labels (protobuf-c only reads them). 0 or -ENOMEM. */
static int root_frame_labels(struct pp *pp, u32 id, u64 *v)
{
	const char *s = fold_name(pp->in, id);
	size_t len = fold_name_len(pp->in, id), first = pp->nlabs, klen;
	enum frame_kind kind;
	PLabel *l;
	int err;

	if (label_root(s, len, &klen)) {
		if (!(l = new_label(pp, str_idx(&pp->str, s + 1, klen))) || l->key < 0 ||
		    (l->str = str_idx(&pp->str, s + 2 + klen, len - 3 - klen)) < 0)
			return -ENOMEM;
	} else {
		kind = frame_kind_of(s, len);
		if (!frame_is_root(kind)) {
			*v = NOT_ROOT;
			return 0;
		}
		err = root_labels(pp, s, len, kind);
		if (err)
			return err;
	}
	*v = (u64)first << 32 | (pp->nlabs - first);
	return 0;
}

/* The `category` label of stack @idx: the report's category (report.c,
 * built-in rules), one label per category shared by its samples. */
static int category_label(struct pp *pp, size_t idx)
{
	u32 cat = pp->rep->stack_cat[idx];
	const char *name;
	size_t len;
	PLabel *l;

	if (!pp->cat_lab[cat]) {
		name = rp_text(pp->rep, cat, true, &len);
		if (!(l = new_label(pp, pp->k_category)) ||
		    (l->str = str_idx(&pp->str, name, len)) < 0)
			return -ENOMEM;
		pp->cat_lab[cat] = (u32)pp->nlabs;
	}
	if (ensure_mem((void **)&pp->labref, &pp->cap_labref, sizeof(*pp->labref),
		       pp->nlabref + 1))
		return -ENOMEM;
	pp->labref[pp->nlabref++] = pp->cat_lab[cat] - 1;
	return 0;
}

static int add_sample(struct pp *pp, size_t idx, struct sample_ref *ref)
{
	const u32 *ids;
	u32 nr, root, j;
	u64 count, *v, first, n;
	int err;

	err = fold_stack(pp->in, idx, &pp->ids, &ids, &nr, &count);
	if (err)
		return err;
	ref->lab_off = pp->nlabref;
	for (root = 0; root < nr; root++) {
		v = idmap_get(&pp->root_of, ids[root]);
		if (!v) {
			v = idmap_put(&pp->root_of, ids[root]);
			if (!v || root_frame_labels(pp, ids[root], v))
				return -ENOMEM;
		}
		if (*v == NOT_ROOT)
			break;
		first = *v >> 32;
		n = *v & UINT32_MAX;
		if (ensure_mem((void **)&pp->labref, &pp->cap_labref, sizeof(*pp->labref),
			       pp->nlabref + n))
			return -ENOMEM;
		for (j = 0; j < n; j++)
			pp->labref[pp->nlabref++] = (u32)(first + j);
	}
	err = category_label(pp, idx);
	if (err)
		return err;
	ref->nlab = (u32)(pp->nlabref - ref->lab_off);
	ref->loc_off = pp->nloc_ids;
	if (ensure_mem((void **)&pp->loc_ids, &pp->cap_loc_ids, sizeof(*pp->loc_ids),
		       pp->nloc_ids + (nr - root)))
		return -ENOMEM;
	for (j = nr; j-- > root;) {
		u32 k = j, g[64], n;
		u64 loc;
		int in = 0;

		/* ids[k] inlined into ids[k - 1]: one Location from the leaf-most
		 * frame j up to the first frame that is not inlined. */
		while (pp->inlined_fn && k > root && j - k + 1 < ARRAY_SIZE(g) &&
		       (in = is_inlined(pp, ids[k])) == 1)
			k--;
		if (in < 0)
			return -ENOMEM;
		if (k == j) {
			loc = location_id(pp, ids[j]);
		} else {
			for (n = 0; n <= j - k; n++)
				g[n] = ids[j - n];
			loc = group_location_id(pp, g, n);
			j = k;
		}
		if (!loc)
			return -ENOMEM;
		pp->loc_ids[pp->nloc_ids++] = loc;
	}
	ref->nloc = (u32)(pp->nloc_ids - ref->loc_off);
	pp->values[pp->nsamples] = (s64)count;
	pp->nsamples++;
	return 0;
}

/* protobuf-c's output sink: appended pieces are gathered in @ibuf and go
 * through deflate to the FILE a buffer at a time, so the serialized
 * profile is never whole in memory. protobuf-c appends every tag and
 * varint on its own; one deflate() call per piece made packing 3x slower
 * than packing into one flat buffer (measured on 300k stacks). */
struct gzsink {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	size_t ilen;
	unsigned char ibuf[256 * 1024];
	unsigned char obuf[64 * 1024];
	int err;
};

static void gz_run(struct gzsink *g, int flush)
{
	int ret;

	do {
		size_t n;

		g->z.next_out = g->obuf;
		g->z.avail_out = sizeof(g->obuf);
		ret = deflate(&g->z, flush);
		if (ret == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		n = sizeof(g->obuf) - g->z.avail_out;
		if (n && fwrite(g->obuf, 1, n, g->out) != n) {
			g->err = -EIO;
			return;
		}
	} while (g->z.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
}

static void gz_feed(struct gzsink *g, const uint8_t *data, size_t len, int flush)
{
	do {
		uInt k = len > (1u << 30) ? (1u << 30) : (uInt)len;

		g->z.next_in = (Bytef *)data;
		g->z.avail_in = k;
		gz_run(g, len == k ? flush : Z_NO_FLUSH);
		data += k;
		len -= k;
	} while (len && !g->err);
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gzsink *g = (struct gzsink *)b;

	if (g->err)
		return;
	if (g->ilen + len > sizeof(g->ibuf)) {
		if (g->ilen)
			gz_feed(g, g->ibuf, g->ilen, Z_NO_FLUSH);
		g->ilen = 0;
	}
	if (len >= sizeof(g->ibuf)) {
		gz_feed(g, data, len, Z_NO_FLUSH);
		return;
	}
	memcpy(g->ibuf + g->ilen, data, len);
	g->ilen += len;
}

static int write_gz(const PProfile *prof, FILE *out)
{
	struct gzsink *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	g->base.append = gz_append;
	g->out = out;
	/* windowBits 15 + 16: a gzip wrapper (zlib.h, deflateInit2). Level
	 * 1, as Go's runtime/pprof writes its profiles (gzip.BestSpeed): at
	 * zlib's default level deflate was a quarter of a pprof conversion
	 * of the build bench recording (264 ms for its 3.5 MB profile; 71 ms
	 * at level 1, for a file 7% larger). */
	if (deflateInit2(&g->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	protobuf_c_message_pack_to_buffer(&prof->base, &g->base);
	if (!g->err)
		gz_feed(g, g->ibuf, g->ilen, Z_FINISH);
	deflateEnd(&g->z);
	err = g->err;
	free(g);
	if (!err && ferror(out))
		err = -EIO;
	return err;
}

/* Everything pointing into the pools, now that they stop moving, and the
 * Profile around them. */
static int assemble(struct pp *pp, bool clock_ns, u64 duration_ns, FILE *out)
{
	PProfile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	PValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, pt;
	PValueType *vtp = &vt;
	PSample **sp = NULL;
	PLocation **lp = NULL;
	PLine **linep = NULL;
	PFunction **fp = NULL;
	PMapping **mp = NULL;
	PLabel **labp = NULL;
	char **strs = NULL;
	size_t i;
	int err = -ENOMEM;

	vt.type = str_idx(&pp->str, clock_ns ? "cpu" : "samples", clock_ns ? 3 : 7);
	vt.unit = str_idx(&pp->str, clock_ns ? "nanoseconds" : "count",
			  clock_ns ? 11 : 5);
	if (vt.type < 0 || vt.unit < 0)
		return -ENOMEM;
	pt = vt;
	sp = xreallocarray(NULL, pp->nsamples + 1, sizeof(*sp));
	lp = xreallocarray(NULL, pp->nlocs + 1, sizeof(*lp));
	linep = xreallocarray(NULL, pp->nlines + 1, sizeof(*linep));
	fp = xreallocarray(NULL, pp->nfns + 1, sizeof(*fp));
	mp = xreallocarray(NULL, pp->nmaps + 1, sizeof(*mp));
	labp = xreallocarray(NULL, pp->nlabref + 1, sizeof(*labp));
	strs = xreallocarray(NULL, (size_t)pp->str.n + 1, sizeof(*strs));
	if (!sp || !lp || !linep || !fp || !mp || !labp || !strs)
		goto out;
	for (i = 0; i < pp->nlabref; i++)
		labp[i] = &pp->labs[pp->labref[i]];
	for (i = 0; i < pp->nsamples; i++) {
		PSample *s = &pp->samples[i];
		const struct sample_ref *r = &pp->refs[i];

		perftools__profiles__sample__init(s);
		s->n_location_id = r->nloc;
		/* A stack of root frames only has no locations (and the pool
		 * may never have been allocated). */
		s->location_id = r->nloc ? pp->loc_ids + r->loc_off : NULL;
		s->n_value = 1;
		s->value = &pp->values[i];
		s->n_label = r->nlab;
		s->label = labp + r->lab_off;
		sp[i] = s;
	}
	for (i = 0; i < pp->nlines; i++)
		linep[i] = &pp->lines[i];
	for (i = 0; i < pp->nlocs; i++) {
		pp->locs[i].line = linep + pp->loc_lo[i];
		lp[i] = &pp->locs[i];
	}
	for (i = 0; i < pp->nfns; i++)
		fp[i] = &pp->fns[i];
	for (i = 0; i < pp->nmaps; i++)
		mp[i] = &pp->maps[i];
	/* protobuf-c wants NUL-terminated strings: fold.c keeps its names
	 * NUL-terminated (fold_intern copies len + 1 bytes). */
	strs[0] = "";
	for (i = 0; i < pp->str.n; i++)
		strs[i + 1] = (char *)fold_name(pp->str.f, (u32)i);
	prof.n_sample_type = 1;
	prof.sample_type = &vtp;
	prof.period_type = &pt;
	prof.period = 1;
	/* profile.proto: "Duration of the profile, if a duration makes
	 * sense"; no time_nanos, which the folded stacks do not keep. */
	prof.duration_nanos = duration_ns > INT64_MAX ? INT64_MAX : (int64_t)duration_ns;
	prof.n_sample = pp->nsamples;
	prof.sample = sp;
	prof.n_location = pp->nlocs;
	prof.location = lp;
	prof.n_function = pp->nfns;
	prof.function = fp;
	prof.n_mapping = pp->nmaps;
	prof.mapping = mp;
	prof.n_string_table = (size_t)pp->str.n + 1;
	prof.string_table = strs;
	err = write_gz(&prof, out);
out:
	free(sp);
	free(lp);
	free(linep);
	free(fp);
	free(mp);
	free(labp);
	free(strs);
	return err;
}

int write_pprof(const struct perfspy_folder *f, FILE *out,
		const struct perfspy_write_opts *opts)
{
	struct pp pp = { .in = f };
	bool clock_ns = OPTS_GET(opts, clock_ns, false);
	size_t i, nr = perfspy_folder__nr_stacks(f);
	u32 *idx = NULL;
	int err;

	pp.nr_dsos = OPTS_GET(opts, nr_dsos, 0);
	pp.dso_paths = OPTS_GET(opts, dso_paths, NULL);
	pp.dso_bids = OPTS_GET(opts, dso_build_ids, NULL);
	if (!pp.dso_paths)
		pp.nr_dsos = 0;
	err = perfspy_folder__new(&pp.str.f);
	strset_init(&pp.fnkeys);
	if (!err)
		err = perfspy_folder__new(&pp.mapkeys);
	strset_init(&pp.grpkeys);
	pp.inlined_fn = OPTS_GET(opts, frame_inlined, NULL);
	pp.first_lines = OPTS_GET(opts, python_first_lines, false);
	pp.inlined_ctx = OPTS_GET(opts, frame_inlined_ctx, NULL);
	pp.frame_lib = OPTS_GET(opts, frame_lib, NULL);
	pp.frame_lib_ctx = OPTS_GET(opts, frame_lib_ctx, NULL);
	if (!err && OPTS_GET(opts, main_binary, NULL))
		err = main_mapping(&pp, opts->main_binary);
	if (!err)
		err = fold_sorted(f, &idx);
	if (!err)
		err = rp_new(f, NULL, true, &pp.rep);
	if (err)
		goto out;
	err = -ENOMEM;
	pp.cat_lab = xreallocarray(NULL, pp.rep->ncats + 1, sizeof(*pp.cat_lab));
	if (!pp.cat_lab)
		goto out;
	memset(pp.cat_lab, 0, (pp.rep->ncats + 1) * sizeof(*pp.cat_lab));
	err = -ENOMEM;
	pp.refs = xreallocarray(NULL, nr + 1, sizeof(*pp.refs));
	pp.samples = xreallocarray(NULL, nr + 1, sizeof(*pp.samples));
	pp.values = xreallocarray(NULL, nr + 1, sizeof(*pp.values));
	if (!pp.refs || !pp.samples || !pp.values)
		goto out;
	pp.k_tid = str_idx(&pp.str, "tid", 3);
	pp.k_thread = str_idx(&pp.str, "thread", 6);
	pp.k_pid = str_idx(&pp.str, "pid", 3);
	pp.k_comm = str_idx(&pp.str, "comm", 4);
	pp.k_category = str_idx(&pp.str, "category", 8);
	if (pp.k_tid < 0 || pp.k_thread < 0 || pp.k_pid < 0 || pp.k_comm < 0 ||
	    pp.k_category < 0)
		goto out;
	err = 0;
	for (i = 0; !err && i < nr; i++)
		err = add_sample(&pp, idx[i], &pp.refs[i]);
	if (!err)
		err = assemble(&pp, clock_ns, OPTS_GET(opts, duration_ns, 0), out);
out:
	free(idx);
	perfspy_folder__free(pp.str.f);
	strset_free(&pp.fnkeys);
	perfspy_folder__free(pp.mapkeys);
	strset_free(&pp.grpkeys);
	idmap_free(&pp.inl_of);
	idmap_free(&pp.grp_of);
	free(pp.loc_lo);
	idmap_free(&pp.loc_of);
	free(pp.locs);
	free(pp.lines);
	free(pp.fns);
	free(pp.maps);
	free(pp.loc_ids);
	free(pp.labs);
	free(pp.labref);
	free(pp.cat_lab);
	perfspy_report__free(pp.rep);
	idmap_free(&pp.root_of);
	fold_ids_free(&pp.ids);
	free(pp.refs);
	free(pp.samples);
	free(pp.values);
	return err;
}
