// SPDX-License-Identifier: GPL-2.0
/*
 * From one sample to its frames (see stacks.h).
 *
 * Frame text follows the output contract of docs/output.md: native frames as
 * py-spy --native writes them (`func (file:line)`, `func (lib)`,
 * `0x<addr> (lib)`), Python frames as `name (short_file:line)` from the
 * perf-map or jitdump name of the trampoline the frame ran through.
 */
#include "stacks.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/fold.h"
#include "namer.h"
#include "perfspy.h"

/* Callchain context markers (enum perf_callchain_context, uapi). */
#define CTX_MAX ((u64)-4095)
#define CTX_KERNEL ((u64)-128)
#define CTX_USER ((u64)-512)

/* Deep Python stacks need room: about 5 native frames per Python frame
 * and up to ~120 Python frames in a 64 KiB dump
 * (docs/cpython-perf.md §3). */
#define UNW_MAX_FRAMES 1024

enum { FK_DSO, FK_KERNEL, FK_JIT, FK_ANON, FK_NOMAP, FK_RAW };

/* FF_INTERP_DSO: any frame of the python binary or libpython, kept by
 * py-spy's token rule or not (`thread_run`), for the frames rootward of a
 * stack's outermost Python frame (filter()). */
enum { FF_PYTHON = 1, FF_INTERP = 2, FF_INTERP_DSO = 4 };

struct stk_cache_ent {
	u64 hash;
	u64 a, b;
	u32 first; /* into fids */
	u16 nr;
	u8 kind;
	/* FK_DSO with no symbol: its text is the address of the sample
	 * that resolved it (stk_ctx.raw_ips, by @first), so other addresses
	 * of that offset (the same library at another address, in another
	 * process) get their own FK_RAW entry: the text never depends on
	 * which sample came first (issue 16: -j N sessions see samples in
	 * another order). That address is kept outside the entry so that
	 * entries are 32 bytes: a power of two, so a slot never straddles
	 * two cache lines and the table's sizes are whole huge pages
	 * (docs/design.md §6.10). */
	bool raw;
};
_Static_assert(sizeof(struct stk_cache_ent) == 32, "frame cache slots: 32 bytes");

struct stk_cache_key {
	u64 a, b;
	u8 kind;
};

static bool cache_eq(const void *ent, const void *key)
{
	const struct stk_cache_ent *e = ent;
	const struct stk_cache_key *k = key;

	return e->a == k->a && e->b == k->b && e->kind == k->kind;
}

/*
 * A native frame's text is made of a function name, and a source file
 * and line or a library name (native_frame()). Those strings live as long
 * as the symbolizer: symbol names and kernel names are kept per DSO and
 * per kallsyms entry, DWARF names and paths are interned (symbols.c,
 * dwarf_lines.c, kallsyms.c), libraries are the DSO's own path. So the
 * same pointers always make the same text, and the frame id can be found
 * by them: on the build bench recording 95,500 addresses name 58,500
 * texts, and each address's text was formatted, hashed and compared in
 * full to find an id the folder already had (issue 16). Two pointers to
 * equal strings are two entries with the same id.
 */
struct name_ent {
	u64 hash;
	const char *func;
	const char *where; /* the file, or the library when there is none */
	s32 line;	   /* -1: @where is the library */
	u32 id;
};
_Static_assert(sizeof(struct name_ent) == 32, "name memo slots: 32 bytes");

struct name_key {
	const char *func, *where;
	s32 line;
};

static bool name_eq(const void *ent, const void *key)
{
	const struct name_ent *e = ent;
	const struct name_key *k = key;

	return e->func == k->func && e->where == k->where && e->line == k->line;
}

int stk_init(struct stk_ctx *c, struct sym_ctx *sym, struct machine *mach,
	     struct unw_ctx *unw, struct perfspy_folder *folder,
	     const struct py_opts *py, const struct stk_opts *o,
	     struct perfspy_stats *stats)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->sym = sym;
	c->mach = mach;
	c->unw = unw;
	c->folder = folder;
	c->stats = stats;
	c->o = *o;
	htab_init(&c->cache, sizeof(struct stk_cache_ent), 4096);
	strset_init(&c->libs);
	strset_init(&c->short_paths);
	htab_init(&c->names, sizeof(struct name_ent), 4096);
	htab_init(&c->named, sizeof(u64), 4096);
	err = py_ctx_new(py, &c->py);
	if (err)
		return err;
	c->uframes = calloc(UNW_MAX_FRAMES, sizeof(*c->uframes));
	if (!c->uframes) {
		stk_free(c);
		return -ENOMEM;
	}
	return 0;
}

void stk_free(struct stk_ctx *c)
{
	stk_shed(c);
	py_ctx_free(c->py);
	idmap_free(&c->inlined);
	idmap_free(&c->src_frames);
	strset_free(&c->libs);
	memset(c, 0, sizeof(*c));
}

void stk_shed(struct stk_ctx *c)
{
	strset_free(&c->short_paths);
	free(c->short_at);
	c->short_at = NULL;
	c->cap_short_at = 0;
	htab_free(&c->names);
	/* The memo points into the frame cache's frames; the runs'
	 * memo holds its ids. */
	free(c->memo);
	c->memo = NULL;
	free(c->blk);
	c->blk = NULL;
	htab_free(&c->cache);
	idmap_free(&c->raw_ips);
	free(c->fids);
	free(c->fflags);
	free(c->stack);
	free(c->sflags);
	free(c->uframes);
	idmap_free(&c->rdsos);
	htab_free(&c->named);
	c->fids = c->stack = NULL;
	c->fflags = c->sflags = NULL;
	c->uframes = NULL;
	c->nr_fids = c->cap_fids = c->cap_fflags = c->cap_stack = c->cap_sflags = 0;
}

int stk_merge(struct stk_ctx *dst, const struct stk_ctx *src, const u32 *map)
{
	size_t pos = 0;
	u64 key, val, *v;
	u32 lid;
	int r;

	dst->unw_samples += src->unw_samples;
	dst->unw_root += src->unw_root;
	dst->unw_cut += src->unw_cut;
	dst->unw_lost += src->unw_lost;
	if (src->max_stack_used > dst->max_stack_used)
		dst->max_stack_used = src->max_stack_used;
	/* The frame-text tables: keys are text hashes, values become @dst's
	 * frame ids. A key @dst has keeps its entry: it differs from one
	 * pass's only on a 32-bit hash collision, where the other text then
	 * reads as not inlined (mark_inlined). */
	while (idmap_next(&src->inlined, &pos, &key, &val)) {
		if (idmap_get(&dst->inlined, key))
			continue;
		if (!(v = idmap_put(&dst->inlined, key)))
			return -ENOMEM;
		*v = map[(u32)val];
	}
	for (pos = 0; idmap_next(&src->src_frames, &pos, &key, &val);) {
		if (idmap_get(&dst->src_frames, key))
			continue;
		r = strset_add(&dst->libs, strset_str(&src->libs, (u32)(val >> 32)),
			       strset_len(&src->libs, (u32)(val >> 32)), &lid);
		if (r < 0 || !(v = idmap_put(&dst->src_frames, key)))
			return -ENOMEM;
		*v = (u64)lid << 32 | map[(u32)val];
	}
	return py_ctx_add_sources(dst->py, src->py);
}

/* FNV-1a of the text, folded to the idmap's key range (UINT32_MAX is its
 * empty key). */
static u32 text_key(const char *s, size_t len)
{
	u32 h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (u8)s[i]) * 16777619u;
	return h == UINT32_MAX ? h - 1 : h;
}

/* One frame id per text hash: two inlined texts with the same 32-bit
 * hash keep the later one, and the other reads as not inlined (its Lines
 * are then separate Locations, nothing worse). */
static int mark_inlined(struct stk_ctx *c, u32 id)
{
	u64 *v;

	if (id == FOLD_NO_ID || !c->folder)
		return 0;
	v = idmap_put(&c->inlined, text_key(fold_name(c->folder, id), fold_name_len(c->folder, id)));
	if (!v)
		return -ENOMEM;
	*v = id;
	return 0;
}

bool stk_frame_inlined(const struct stk_ctx *c, const char *s, size_t len)
{
	u64 *v;

	if (!c->folder)
		return false;
	v = idmap_get(&c->inlined, text_key(s, len));
	return v && fold_name_len(c->folder, (u32)*v) == len &&
	       !memcmp(fold_name(c->folder, (u32)*v), s, len);
}

/* Remember that frame @id, whose text names a source file, came from
 * library @lib. Same 32-bit hash rule as mark_inlined(). */
static int mark_src(struct stk_ctx *c, u32 id, const char *lib)
{
	u32 lid;
	u64 *v;
	int r;

	if (id == FOLD_NO_ID || !c->folder)
		return 0;
	r = strset_add(&c->libs, lib, strlen(lib), &lid);
	if (r < 0)
		return r;
	v = idmap_put(&c->src_frames,
		      text_key(fold_name(c->folder, id), fold_name_len(c->folder, id)));
	if (!v)
		return -ENOMEM;
	*v = (u64)lid << 32 | id;
	return 0;
}

const char *stk_frame_lib(const struct stk_ctx *c, const char *s, size_t len)
{
	u64 *v;
	u32 id;

	if (!c->folder)
		return NULL;
	v = idmap_get(&c->src_frames, text_key(s, len));
	if (!v)
		return NULL;
	id = (u32)*v;
	if (fold_name_len(c->folder, id) != len || memcmp(fold_name(c->folder, id), s, len))
		return NULL;
	return strset_str(&c->libs, (u32)(*v >> 32));
}

/* ------------------------------------------------------------ render */

static u32 intern_fmt(struct stk_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static u32 intern_fmt(struct stk_ctx *c, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return FOLD_NO_ID;
	return fold_intern(c->folder, buf, (size_t)n < sizeof(buf) ? (size_t)n :
			   sizeof(buf) - 1);
}

/*
 * A frame's text built by hand: one per distinct native address, and
 * vsnprintf was half of the cost of naming them on a system-wide
 * profile. The bytes are intern_fmt()'s: what does not fit in 4,095
 * bytes is cut there.
 */
struct fbuf {
	char b[4096];
	size_t n;
};

static void fb_str(struct fbuf *f, const char *s)
{
	size_t k;

	if (!s)
		s = "(null)"; /* as glibc's printf has it: never expected */
	k = strlen(s);

	if (k > sizeof(f->b) - 1 - f->n)
		k = sizeof(f->b) - 1 - f->n;
	memcpy(f->b + f->n, s, k);
	f->n += k;
}

/* @v in base @base (10 or 16, lower case), as %llu or %llx print it. */
static void fb_num(struct fbuf *f, u64 v, unsigned base)
{
	char t[24];
	size_t i = sizeof(t);

	t[--i] = '\0';
	do {
		t[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	fb_str(f, t + i);
}

/*
 * short_filename() of @path, once per path: it stats each parent
 * directory for an __init__.py (py-spy's rule, docs/pyspy-formats.md
 * §1.4), 2,100 stat() calls on the build bench recording when asked per
 * address. The short name is always a tail of the path, so the offset
 * where it starts is what is kept. Without memory, asked again.
 */
static const char *short_file(struct stk_ctx *c, const char *path)
{
	char sbuf[4096];
	const char *s;
	size_t len = strlen(path);
	u32 id;
	int r = strset_add(&c->short_paths, path, len, &id);

	if (r == 0)
		return path + c->short_at[id];
	s = short_filename(path, sbuf, sizeof(sbuf));
	if (s != path)
		s = path + len - strlen(s);
	if (r == 1 && !ensure_mem((void **)&c->short_at, &c->cap_short_at,
				  sizeof(*c->short_at), (size_t)id + 1))
		c->short_at[id] = (u32)(s - path);
	else if (r == 1)
		/* No room for the offset: the path must not stay in the set
		 * without one. */
		strset_free(&c->short_paths);
	return s;
}

/* The text of native_frame(), formatted and interned. */
static u32 format_frame(struct stk_ctx *c, const struct sym_frame *fr,
			 const char *lib, u64 addr)
{
	struct fbuf f;

	f.n = 0;
	if (!fr || !fr->func) {
		fb_str(&f, "0x");
		fb_num(&f, addr, 16);
	} else {
		fb_str(&f, fr->func);
	}
	fb_str(&f, " (");
	if (!fr || !fr->func || !fr->file) {
		fb_str(&f, lib);
	} else {
		fb_str(&f, short_file(c, fr->file));
		/* --nolineno: py-spy drops the line of every frame, native
		 * ones too, so all samples in one function are one frame. */
		if (fr->line > 0 && !c->o.no_lineno) {
			fb_str(&f, ":");
			fb_num(&f, (u64)fr->line, 10);
		}
	}
	fb_str(&f, ")");
	return fold_intern(c->folder, f.b, f.n);
}

/* py-spy's native frame style (docs/pyspy-formats.md §1.8 item 5):
 * `func (file:line)` with DWARF, `func (lib)` without, `0x<addr> (lib)`
 * with no symbol. A named frame's id is remembered by its strings
 * (struct name_ent). */
static u32 native_frame(struct stk_ctx *c, const struct sym_frame *fr,
			const char *lib, u64 addr)
{
	struct name_key k;
	struct name_ent *e;
	u64 h;
	u32 id;

	if (!fr || !fr->func)
		return format_frame(c, fr, lib, addr);
	k.func = fr->func;
	k.where = fr->file ? fr->file : lib;
	k.line = !fr->file ? -1 : fr->line > 0 && !c->o.no_lineno ? fr->line : 0;
	if (htab_reserve(&c->names))
		return FOLD_NO_ID;
	h = hash_mix((u64)(uintptr_t)k.func ^ hash_mix((u64)(uintptr_t)k.where + (u64)(u32)k.line));
	e = htab_probe(&c->names, h, name_eq, &k);
	if (htab_used(e))
		return e->id;
	id = format_frame(c, fr, lib, addr);
	if (id != FOLD_NO_ID) {
		e->func = k.func;
		e->where = k.where;
		e->line = k.line;
		e->id = id;
		htab_claim(&c->names, e, h);
	}
	return id;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* MEMO_COPY: copy_frames() copies a cache entry's first frames as one
 * block of this many, read past the frames' end: both arrays keep that
 * many - 1 entries of room past their last. */
#define MEMO_COPY 4

static int add_id(struct stk_ctx *c, u32 id, u8 flags)
{
	size_t need = c->nr_fids + MEMO_COPY;

	if (id == FOLD_NO_ID ||
	    ensure_mem((void **)&c->fids, &c->cap_fids, sizeof(*c->fids), need) ||
	    ensure_mem((void **)&c->fflags, &c->cap_fflags, 1, need))
		return -ENOMEM;
	c->fids[c->nr_fids] = id;
	c->fflags[c->nr_fids++] = flags;
	return 0;
}

static int render_jit(struct stk_ctx *c, const struct jit_entry *j)
{
	const char *text;
	int r = py_render(c->py, j->name, &text);

	if (r < 0)
		return r;
	if (r > 0) {
		c->stats->frames_python++;
		return add_id(c, fold_intern_str(c->folder, text), FF_PYTHON);
	}
	/* Some other JIT (perf-map-agent, V8): its name as given. */
	return add_id(c, intern_fmt(c, "%s ([JIT])", j->name), 0);
}

void stk_drop_names(struct stk_ctx *c)
{
	htab_free(&c->names);
	idmap_free(&c->rdsos);
	c->rsym = NULL;
	c->rlock = NULL;
	c->namer = NULL;
}

void stk_share_names(struct stk_ctx *c, struct sym_ctx *rsym, pthread_mutex_t *rlock)
{
	c->rsym = rsym;
	c->rlock = rlock;
}

/* sym_resolve() of @dso's twin in the shared symbolizer (stk_ctx.rsym),
 * under rlock if there is one (a namer's, left to this thread alone, has
 * none). The frames' strings are rsym's: they live as long as it does. */
static int shared_resolve(struct stk_ctx *c, struct sym_dso *dso, u64 b,
			  struct sym_frame *frames)
{
	u64 *v = idmap_put(&c->rdsos, (u64)(uintptr_t)dso);
	struct sym_dso *twin;
	int n;

	if (!v)
		return -ENOMEM;
	if (c->rlock)
		pthread_mutex_lock(c->rlock);
	n = *v ? 0 : sym_dso_twin(c->rsym, dso, &twin);
	if (!n && !*v)
		*v = (u64)(uintptr_t)twin;
	if (!n)
		n = sym_resolve(c->rsym, (struct sym_dso *)(uintptr_t)*v, b >> 1, b & 1, frames);
	if (c->rlock)
		pthread_mutex_unlock(c->rlock);
	return n;
}

/*
 * What render_dso() needs of a DSO's path: its last part, and whether
 * its frames can be the interpreter's (py_is_interpreter_frame() is
 * false for every function of a DSO that is neither the interpreter nor
 * libc, libpthread or the loader). Worked out once per DSO and kept in a
 * few slots by its address (DSOs live as long as the symbolizer): a
 * string test per address was 2% of the build bench recording (issue 16).
 */
enum { DC_OTHER, DC_INTERP, DC_LIBC };

static const struct stk_dso_class *dso_class(struct stk_ctx *c, const struct sym_dso *dso)
{
	struct stk_dso_class *k = &c->dso_classes[hash_mix((u64)(uintptr_t)dso) &
						   (ARRAY_SIZE(c->dso_classes) - 1)];
	const char *path;

	if (k->dso == dso)
		return k;
	path = sym_dso_name(dso);
	k->dso = dso;
	k->lib = basename_of(path);
	k->cls = py_is_interpreter_dso(path) ? DC_INTERP :
		py_is_libc_dso(path) ? DC_LIBC : DC_OTHER;
	return k;
}

static int render_dso(struct stk_ctx *c, struct sym_dso *dso, u64 b, u64 ip)
{
	struct sym_frame frames[SYM_MAX_FRAMES];
	const struct stk_dso_class *dc = dso_class(c, dso);
	const char *path = sym_dso_name(dso), *lib = dc->lib;
	bool interp_dso = dc->cls == DC_INTERP;
	int n, i, err;

	/* The frame cache asks once per (DSO, offset, return): on its own
	 * the symbolizer needs no cache of its own. The shared one keeps
	 * it, for the other sessions' frame caches. */
	n = NAMER_MISS;
	if (c->namer) {
		/* docs/design.md §6.19: the names log first; once the namer
		 * has left, its symbolizer, which has the DSOs open. */
		n = namer_take(c->namer, c->sample, path, b, frames);
		if (n == NAMER_MISS && !c->rsym)
			c->rsym = namer_left(c->namer);
	}
	if (n == NAMER_MISS)
		n = c->rsym ? shared_resolve(c, dso, b, frames) :
			sym_resolve_once(c->sym, dso, b >> 1, b & 1, frames);
	if (n < 0)
		return n;
	if (!n) {
		c->raw = true;
		c->stats->frames_unknown++;
		return add_id(c, native_frame(c, NULL, lib, ip),
			      interp_dso ? FF_INTERP | FF_INTERP_DSO : 0);
	}
	for (i = 0; i < n; i++) {
		/* Inlined frames take the class of the function they were
		 * inlined into (the outermost one, last). */
		u8 fl = dc->cls != DC_OTHER &&
			py_is_interpreter_frame(frames[n - 1].func, path) &&
			py_is_interpreter_frame(frames[i].func, path) ? FF_INTERP : 0;

		if (interp_dso)
			fl |= FF_INTERP_DSO;

		u32 id = native_frame(c, &frames[i], lib, ip);

		err = add_id(c, id, fl);
		/* frames[0 .. n-2] are inlined into the next one (symbols.h). */
		if (!err && i < n - 1)
			err = mark_inlined(c, id);
		if (!err && frames[i].func && frames[i].file)
			err = mark_src(c, id, lib);
		if (err)
			return err;
	}
	return 0;
}

/* The kernel's frames' library, and their names' key in the names log. */
static const char KERNEL_DSO[] = "[kernel.kallsyms]";

/*
 * Kernel address @ip's name into *@kf: 1, 0 for none, or -ENOMEM. From
 * the names log first (docs/design.md §6.26); else from the shared
 * symbolizer under its lock (-j N), the namer's once it has left (its
 * kernel symbols read already), or this session's own.
 */
static int kernel_frame(struct stk_ctx *c, u64 ip, struct sym_frame *kf)
{
	struct sym_ctx *ks;
	int n = NAMER_MISS;

	if (c->namer) {
		n = namer_take(c->namer, c->sample, KERNEL_DSO, ip, kf);
		if (n == NAMER_MISS && !c->rsym)
			c->rsym = namer_left(c->namer);
	}
	if (n != NAMER_MISS)
		return n;
	ks = c->rsym ? c->rsym : c->sym;
	if (c->rlock)
		pthread_mutex_lock(c->rlock);
	n = mach_kernel_syms_in(c->mach, ks) ? sym_kernel_resolve(ks, ip, kf) : 0;
	if (c->rlock)
		pthread_mutex_unlock(c->rlock);
	kf->file = NULL;
	return n;
}

static int resolve_into(struct stk_ctx *c, struct stk_cache_ent *e,
			const struct unw_code *code, const char *anon_name, u64 ip)
{
	struct sym_frame kf;
	int n;

	e->first = (u32)c->nr_fids;
	switch (e->kind) {
	case FK_DSO:
		n = render_dso(c, code->dso, e->b, ip);
		break;
	case FK_JIT:
		n = render_jit(c, code->jit);
		break;
	case FK_KERNEL:
		n = kernel_frame(c, ip, &kf);
		if (n < 0)
			break;
		if (!n)
			c->stats->frames_unknown++;
		n = add_id(c, native_frame(c, n ? &kf : NULL, KERNEL_DSO, ip), 0);
		break;
	default:
		c->stats->frames_unknown++;
		n = add_id(c, native_frame(c, NULL, anon_name ? anon_name : "?", ip), 0);
		break;
	}
	if (n < 0)
		return n;
	e->nr = (u16)(c->nr_fids - e->first);
	return 0;
}

/* ------------------------------------------------------------ lookup */

/* find_code(), with the map found (NULL: none, and *@next the start of
 * the next map above @pc). */
static const struct mach_map *code_at(struct stk_ctx *c, u64 pc, struct unw_code *out,
				      u64 *next)
{
	const struct mach_map *map = mach_find_map_next(c->mach, c->pid, pc, next);

	memset(out, 0, sizeof(*out));
	if (!map)
		return NULL;
	if (map->dso) { /* an ELF file or the [vdso] image */
		out->kind = UNW_CODE_DSO;
		out->dso = map->dso;
		out->file_off = pc - map->start + map->pgoff;
	} else if (map->kind == MAPK_ANON &&
		   (out->jit = mach_find_jit(c->mach, c->pid, pc))) {
		out->kind = UNW_CODE_JIT;
	}
	return map;
}

/* What @pc of process c->pid points into; the unwinder's callback. */
static int find_code(void *arg, u64 pc, struct unw_code *out)
{
	u64 next;

	code_at(arg, pc, out, &next);
	return 0;
}

/* The cache entry of (@a, @b, @kind): used, or free with its key set for
 * the caller to fill and claim with *@h. NULL on ENOMEM. */
static struct stk_cache_ent *cache_probe(struct stk_ctx *c, u64 a, u64 b, u8 kind,
					 u64 *h)
{
	struct stk_cache_key key = { a, b, kind };
	struct stk_cache_ent *e;

	if (htab_reserve(&c->cache))
		return NULL;
	*h = hash_mix(a ^ hash_mix(b + kind));
	e = htab_probe(&c->cache, *h, cache_eq, &key);
	if (!htab_used(e)) {
		e->a = a;
		e->b = b;
		e->kind = kind;
		e->raw = false;
	}
	return e;
}

static int push_frames_e(struct stk_ctx *c, u64 ip, bool kernel, bool is_return,
			 const struct unw_code *code, size_t *n,
			 const struct stk_cache_ent **used);

/* The entries the stack's arrays need for @nr more frames after @n: 2
 * past them, as put_frames() always reserved, and MEMO_COPY more for
 * copy_frames()' block. */
static inline size_t frames_need(size_t n, u32 nr)
{
	return n + nr + MEMO_COPY + 2;
}

static inline int reserve_frames(struct stk_ctx *c, size_t n, u32 nr)
{
	size_t need = frames_need(n, nr);

	return ensure_mem((void **)&c->stack, &c->cap_stack, sizeof(*c->stack), need) ||
	       ensure_mem((void **)&c->sflags, &c->cap_sflags, 1, need) ? -ENOMEM : 0;
}

/* @nr frames (ids @fi, flags @ff) to @to and @tf: an address and its
 * inlined callers, mostly 1 to MEMO_COPY, copied as one block (what lies
 * past them is overwritten or past the stack's end; add_id() keeps the
 * source's room past its last frame, so the block must start at one: an
 * entry of no frames copies nothing), a loop otherwise (issue 16). */
static inline __attribute__((always_inline)) void
copy_frames(u32 *to, u8 *tf, const u32 *fi, const u8 *ff, u32 nr)
{
	u32 j;

	if (nr - 1u < MEMO_COPY) { /* 1 <= nr <= MEMO_COPY */
		memcpy(to, fi, MEMO_COPY * sizeof(*to));
		memcpy(tf, ff, MEMO_COPY);
	} else {
		for (j = 0; j < nr; j++) {
			to[j] = fi[j];
			tf[j] = ff[j];
		}
	}
}

/* A frame cache entry's frames, c->fids[@first, @first + @nr), onto the
 * stack at *@n, counted. */
static inline __attribute__((always_inline)) int
put_frames(struct stk_ctx *c, u32 first, u32 nr, size_t *n)
{
	if (reserve_frames(c, *n, nr))
		return -ENOMEM;
	copy_frames(c->stack + *n, c->sflags + *n, c->fids + first, c->fflags + first, nr);
	*n += nr;
	c->stats->frames += nr;
	return 0;
}

/*
 * Frames for one address, innermost first, cached per (DSO, offset),
 * JIT entry, kernel address or raw address. @code may be NULL (looked
 * up here). Appends to c->stack/c->sflags at *@n.
 */
static int push_frames(struct stk_ctx *c, u64 ip, bool kernel, bool is_return,
		       const struct unw_code *code, size_t *n)
{
	return push_frames_e(c, ip, kernel, is_return, code, n, NULL);
}

/*
 * The map of @ip itself, given the look at the byte before (code_at():
 * its map @at, else the next map's start @next; none made: NULL and 0),
 * where that settles it: the same map holds both, or none holds either
 * (the next map starts past @ip). Return addresses past the end of a
 * stack walked without frame pointers are mostly in no map (issue 16: a
 * second look was 2% of the build recording's converting thread).
 */
static const struct mach_map *map_after(struct stk_ctx *c, u64 ip,
					const struct mach_map *at, u64 next)
{
	if (at ? ip < at->end : next > ip)
		return at;
	return mach_find_map(c->mach, c->pid, ip);
}

/* push_frames(), and with @used the cache entry whose frames went on
 * the stack (its first and nr stay as they are for the session). */
static int push_frames_e(struct stk_ctx *c, u64 ip, bool kernel, bool is_return,
			 const struct unw_code *code, size_t *n,
			 const struct stk_cache_ent **used)
{
	const struct mach_map *at = NULL;
	const char *anon_name = NULL;
	struct unw_code local;
	struct stk_cache_ent *e;
	u64 a = 0, b = ip, h, next = 0;
	u8 kind;
	int err;

	if (kernel) {
		kind = FK_KERNEL;
	} else {
		if (!code) {
			at = code_at(c, ip - is_return, &local, &next);
			if (ip < (u64)is_return)
				next = 0; /* ip - 1 wrapped: it says nothing of ip */
			if (local.kind == UNW_CODE_DSO)
				local.file_off += is_return;
			code = &local;
		}
		if (code->kind == UNW_CODE_DSO) {
			kind = FK_DSO;
			a = (u64)(uintptr_t)code->dso;
			b = (code->file_off << 1) | is_return;
		} else if (code->kind == UNW_CODE_JIT) {
			kind = FK_JIT;
			a = (u64)(uintptr_t)code->jit;
			b = 0;
		} else {
			const struct mach_map *map = map_after(c, ip, at, next);

			kind = map ? FK_ANON : FK_NOMAP;
			anon_name = map ? map->short_name : NULL;
			a = (u64)(uintptr_t)anon_name;
			if (!map)
				c->stats->frames_no_map++;
		}
	}
	if (!(e = cache_probe(c, a, b, kind, &h)))
		return -ENOMEM;
	if (!htab_used(e)) {
		/* resolve_into() does not touch the cache, so @e stays put. */
		c->raw = false;
		err = resolve_into(c, e, code, anon_name, ip);
		if (err)
			return err;
		e->raw = c->raw;
		if (e->raw) {
			u64 *v = idmap_put(&c->raw_ips, e->first);

			if (!v)
				return -ENOMEM;
			*v = ip;
		}
		htab_claim(&c->cache, e, h);
	}
	if (e->raw && *idmap_get(&c->raw_ips, e->first) != ip) {
		u8 fl = c->fflags[e->first];

		if (!(e = cache_probe(c, a, ip, FK_RAW, &h)))
			return -ENOMEM;
		if (!htab_used(e)) {
			const char *path = sym_dso_name((struct sym_dso *)(uintptr_t)a);

			e->first = (u32)c->nr_fids;
			c->stats->frames_unknown++;
			if ((err = add_id(c, native_frame(c, NULL, basename_of(path), ip), fl)))
				return err;
			e->nr = 1;
			htab_claim(&c->cache, e, h);
		}
	}
	err = put_frames(c, e->first, e->nr, n);
	if (!err && used)
		*used = e;
	return err;
}

/* ------------------------------------------------------------ stacks */

/*
 * aarch64 frame-pointer samples: the leaf's caller is in LR until the
 * leaf's prologue saves it, and the kernel's frame-record walk starts at
 * x29, the caller's record, so that caller is missing. perf script adds
 * it from the sampled LR when its unwind of the leaf from pc and LR alone
 * gives LR and it is not the next entry already (tools/perf/util/
 * machine.c with arm64-frame-pointer-unwind-support.c); so do we
 * (unw_leaf_caller, docs/arm64.md §2.3).
 * Entry @i is the user leaf.
 */
static int push_lr_caller(struct stk_ctx *c, const struct rec_sample *smp, u64 i,
			  size_t *n)
{
	struct unw_code code;
	u64 ip = rec_callchain_ip(smp, i), caller, next;
	int r;

	if (!c->unw || unw_ctx_arch(c->unw)->lr == ARCH_NOREG || !smp->regs)
		return 0;
	find_code(c, ip, &code);
	r = unw_leaf_caller(c->unw, smp, c->regs_mask, &code, &caller);
	if (r <= 0)
		return r;
	next = i + 1 < smp->callchain_nr ? rec_callchain_ip(smp, i + 1) : 0;
	if (caller == next)
		return 0;
	return push_frames(c, caller, false, true, NULL, n);
}

/*
 * The memo in front of the frame cache (docs/design.md §6.8): a
 * callchain entry's frames depend on the process's maps (the same key
 * the session's callchain cache trusts, mach_maps_gen()), the address,
 * and whether it is kernel code and a return address. A deep stack
 * repeats a few addresses many times (recursion, a loop's call sites),
 * so a small direct-mapped table of those keys gives the frame cache's
 * entry without looking up the map or probing the cache. Only frames of
 * an ELF file or the kernel are kept: which perf map names an anonymous
 * address may change under one key (a map read as it grows, jit_follow;
 * an exec stops the lookup in the parent's map, mach_find_jit()).
 */
#define STK_MEMO_BITS 10
#define STK_MEMO (1u << STK_MEMO_BITS) /* slots */

struct stk_memo {
	u64 ip;
	u64 pg;    /* memo_pg(): the process and its maps generation */
	u32 first; /* the frame cache entry's frames */
	u16 nr;
	u8 key;    /* MEMO_* */
};

_Static_assert(sizeof(struct stk_memo) == 24, "memo slots: 24 bytes");

enum { MEMO_USED = 1, MEMO_KERNEL = 2, MEMO_RET = 4 };

static inline u64 memo_pg(s32 pid, u32 gen)
{
	return ((u64)gen << 32) | (u32)pid;
}

/* The process and generation word of kernel addresses' memo slots:
 * no process's (memo_pg() of pid -1 in generation 0xffffffff), and
 * their key has MEMO_KERNEL besides. */
#define MEMO_PG_KERNEL UINT64_MAX

/* @ip's memo slot for the process and generation @pg. One multiply
 * (Fibonacci hashing, the product's top bits): the slot is looked for
 * once per callchain entry of every chain the session's cache misses
 * (issue 16: the full 64-bit mix was a tenth of the walk's
 * instructions). */
static inline size_t memo_idx(u64 ip, u64 pg)
{
	return (size_t)(((ip ^ (pg << 40)) * 0x9e3779b97f4a7c15ULL) >> (64 - STK_MEMO_BITS));
}

/* Whether memo slot @m holds @ip of the process and maps generation
 * @pg with @key (MEMO_*). */
static inline bool memo_holds(const struct stk_memo *m, u64 ip, u64 pg, u8 key)
{
	return m->ip == ip && m->pg == pg && m->key == key;
}

/* A memo miss: the frame cache's frames for @ip onto the stack, and
 * into slot @m when they may be kept there. */
static int push_memo_miss(struct stk_ctx *c, struct stk_memo *m, u64 ip, bool kernel,
			  bool is_return, u64 pg, u8 key, size_t *n)
{
	const struct stk_cache_ent *e = NULL;
	int err = push_frames_e(c, ip, kernel, is_return, NULL, n, &e);

	if (err || !e || (e->kind != FK_DSO && e->kind != FK_RAW && e->kind != FK_KERNEL))
		return err;
	*m = (struct stk_memo){ ip, pg, e->first, e->nr, key };
	return 0;
}

/*
 * The memo of runs (docs/design.md §6.34). A deep stack is deep because
 * a few call sites repeat (recursion, layers of one framework), so its
 * entries come in runs that other chains have too, at other depths: a
 * recursive-descent parser's chains are its three functions' return
 * addresses in ever new orders. Four consecutive return addresses of one
 * context and process (and maps generation) have the frames the four
 * have one by one, so those are kept per run in a direct-mapped table,
 * found with one hash of the four and copied as one block: a few
 * instructions per entry instead of a memo lookup each. A run is kept
 * only when each of its entries' frames is one the memo may keep (and
 * they fit in STK_BLK_FR); the context's first entry, whose frames may
 * take the sampled LR (push_lr_caller()), never starts or joins one.
 */
#define STK_BLK_N 4
#define STK_BLK_BITS 10
#define STK_BLK (1u << STK_BLK_BITS) /* slots */
#define STK_BLK_FR 12		       /* frames a slot holds */

struct stk_blk {
	u64 ip[STK_BLK_N];
	u64 pg; /* as stk_memo.pg */
	u32 fr[STK_BLK_FR];
	u8 fl[STK_BLK_FR];
	u8 nfr;
	u8 key; /* MEMO_*; 0: unused */
};

static inline size_t blk_idx(const u64 *a, u64 pg)
{
	u64 h = (a[0] * 0x9e3779b97f4a7c15ULL) ^ (a[1] * 0xc2b2ae3d27d4eb4fULL) ^
		(a[2] * 0x165667b19e3779f9ULL) ^ (a[3] * 0xd6e8feb86659fd93ULL) ^
		(pg * 0xff51afd7ed558ccdULL);

	return (size_t)(h >> (64 - STK_BLK_BITS));
}

static inline bool blk_holds(const struct stk_blk *b, const u64 *a, u64 pg, u8 key)
{
	return b->key == key && b->pg == pg && b->ip[0] == a[0] && b->ip[1] == a[1] &&
	       b->ip[2] == a[2] && b->ip[3] == a[3];
}

/* Room past @k for @nr more frames, as push_callchain()'s locals track
 * it: *@room, and the arrays' pointers taken again after a reserve that
 * may move them. 0 or -ENOMEM. */
static inline __attribute__((always_inline)) int
room_for(struct stk_ctx *c, size_t k, u32 nr, size_t *room, u32 **st, u8 **sf,
	 const u32 **fids, const u8 **ffl)
{
	if (frames_need(k, nr) <= *room)
		return 0;
	if (reserve_frames(c, k, nr))
		return -ENOMEM;
	*room = c->cap_stack < c->cap_sflags ? c->cap_stack : c->cap_sflags;
	*st = c->stack;
	*sf = c->sflags;
	*fids = c->fids;
	*ffl = c->fflags;
	return 0;
}

/* Callchain entries, leaf first. @user: also take the user context
 * (frame-pointer recordings); DWARF recordings unwind it instead.
 * A memo hit, the common case, is done here without a call: the stack's
 * length and the frame count stay in locals, written back around the
 * calls that need them. */
static int push_callchain(struct stk_ctx *c, const struct rec_sample *smp,
			  bool user, size_t *n)
{
	bool kernel = smp->cpumode == PERF_RECORD_MISC_KERNEL, first = true;
	bool skip = kernel && c->o.no_kernel;
	/* Locals, not fields: the flag bytes stored below may alias
	 * anything, so fields would be loaded again at every entry. */
	const u64 nr_cc = smp->callchain_nr;
	const u8 *cc = smp->callchain;
	struct stk_memo *memo = NULL;
	struct stk_blk *blk = NULL, *fill = NULL;
	u32 *st = NULL;
	u8 *sf = NULL;
	const u32 *fids = NULL;
	const u8 *ffl = NULL;
	size_t k = *n, room = 0, fill_k = 0;
	u64 i, ip, pg = 0, hits = 0, fill_end = 0;
	u8 key = MEMO_USED | (kernel ? MEMO_KERNEL : 0);
	int err = 0;

	if (nr_cc && !c->mach->jit_follow &&
	    (c->memo || (c->memo = calloc(STK_MEMO, sizeof(*c->memo))))) {
		memo = c->memo;
		pg = memo_pg(c->pid, mach_maps_gen(c->mach, c->pid));
		/* Not for chains shorter than two runs; without memory
		 * for it, entry by entry as before. */
		if (nr_cc >= 2 * STK_BLK_N &&
		    (c->blk || (c->blk = calloc(STK_BLK, sizeof(*c->blk)))))
			blk = c->blk;
	}

	if (!nr_cc) {
		if ((kernel && c->o.no_kernel) || (!kernel && !user))
			return 0;
		return push_frames(c, smp->ip, kernel, false, NULL, n);
	}
	for (i = 0; i < nr_cc; i++) {
		ip = get_u64(cc + i * 8);
		if (ip >= CTX_MAX) {
			kernel = ip == CTX_KERNEL;
			skip = !(kernel || (ip == CTX_USER && user)) ||
				(kernel && c->o.no_kernel);
			key = MEMO_USED | (kernel ? MEMO_KERNEL : 0);
			first = true;
			continue;
		}
		if (skip)
			continue;
		/* The first entry of a context is where the task was
		 * interrupted, the rest are return addresses. */
		if (memo) {
			/* A kernel address's frames are the same in every
			 * process and maps generation (the frame cache keys
			 * it by the address alone): one key for all. */
			const u64 mpg = kernel ? MEMO_PG_KERNEL : pg;
			struct stk_memo *m = &memo[memo_idx(ip, mpg)];

			if (blk && !first && !fill && i + STK_BLK_N <= nr_cc) {
				u64 a[STK_BLK_N] = { ip, get_u64(cc + (i + 1) * 8),
						     get_u64(cc + (i + 2) * 8),
						     get_u64(cc + (i + 3) * 8) };

				/* No context mark among them: one run. */
				if (a[1] < CTX_MAX && a[2] < CTX_MAX && a[3] < CTX_MAX) {
					struct stk_blk *b = &blk[blk_idx(a, mpg)];

					if (blk_holds(b, a, mpg, key)) {
						/* The whole slot is copied, a fixed
						 * size: room for it past k, as for
						 * copy_frames(). */
						if ((err = room_for(c, k, STK_BLK_FR, &room, &st, &sf,
								    &fids, &ffl)))
							break;
						memcpy(st + k, b->fr, sizeof(b->fr));
						memcpy(sf + k, b->fl, sizeof(b->fl));
						k += b->nfr;
						hits += b->nfr;
						i += STK_BLK_N - 1;
						continue;
					}
					/* Filled as its entries are walked. */
					fill = b;
					fill_k = k;
					fill_end = i + STK_BLK_N;
					b->key = 0;
					memcpy(b->ip, a, sizeof(a));
					b->pg = mpg;
				}
			}
			if (memo_holds(m, ip, mpg, key)) {
				u32 nr = m->nr;

				/* room: what both arrays hold past k, known
				 * without a call (reserve_frames()). A call
				 * below may move the arrays: it sets room to
				 * 0, and the pointers are taken again here. */
				if ((err = room_for(c, k, nr, &room, &st, &sf, &fids, &ffl)))
					break;
				copy_frames(st + k, sf + k, fids + m->first, ffl + m->first, nr);
				k += nr;
				hits += nr;
			} else {
				err = push_memo_miss(c, m, ip, kernel, !first, mpg, key, &k);
				room = 0;
				/* Frames the memo may not keep, no run keeps. */
				if (fill && !memo_holds(m, ip, mpg, key))
					fill = NULL;
			}
			if (fill && i + 1 == fill_end) {
				if (!err && k - fill_k <= STK_BLK_FR) {
					fill->nfr = (u8)(k - fill_k);
					memcpy(fill->fr, c->stack + fill_k, fill->nfr * sizeof(*fill->fr));
					memcpy(fill->fl, c->sflags + fill_k, fill->nfr);
					fill->key = key;
				}
				fill = NULL;
			}
		} else {
			err = push_frames(c, ip, kernel, !first, NULL, &k);
		}
		if (!err && first && !kernel) {
			err = push_lr_caller(c, smp, i, &k);
			room = 0;
		}
		first = false;
		key |= MEMO_RET;
		if (err)
			break;
	}
	c->stats->frames += hits;
	*n = k;
	return err;
}

/*
 * LBR call stacks (perf record --call-graph lbr: PERF_SAMPLE_BRANCH_STACK
 * with PERF_SAMPLE_BRANCH_CALL_STACK in branch_sample_type). The LBR
 * then holds the user calls not yet returned from, most recent first,
 * each entry's `from` being the call instruction. The stack is the
 * callchain's kernel part, the sample's user ip, then those `from`s:
 * the order perf's resolve_lbr_callchain_sample (tools/perf/util/
 * machine.c) builds, which takes the first entry's `to` (the entry of
 * the current function) as leaf where we take the ip itself. Returns 0
 * when the sample is not one (then the callchain is used as usual).
 */
static u64 lbr_user_start(const struct rd_evsel *ev, const struct rec_sample *smp)
{
	u64 i;

	if (!(ev->attr.sample_type & PERF_SAMPLE_BRANCH_STACK) ||
	    !(ev->attr.branch_sample_type & PERF_SAMPLE_BRANCH_CALL_STACK) ||
	    !smp->branch_nr)
		return 0;
	/* LBR call stacks record user code only; perf uses them only
	 * when the callchain has a user part. */
	for (i = 0; i < smp->callchain_nr; i++)
		if (rec_callchain_ip(smp, i) == CTX_USER)
			return i + 1;
	return 0;
}

/*
 * When the calls outnumber the LBR (16 to 32 entries) the root is
 * missing; the callchain's own user part (frame pointers) may reach it.
 * It joins where one of its return addresses follows the last `from`
 * (an x86 call instruction is at most 15 bytes), and its entries past
 * that point go on the stack. Frame-pointer chains broken by code
 * without frame pointers simply do not join.
 */
static int push_lbr(struct stk_ctx *c, const struct rec_sample *smp, u64 u,
		    size_t *n)
{
	u64 i, j, ip, last;
	int err;

	err = push_callchain(c, smp, false, n);
	if (err)
		return err;
	ip = u < smp->callchain_nr && rec_callchain_ip(smp, u) < CTX_MAX ?
		rec_callchain_ip(smp, u) : rec_branch_to(smp, 0);
	err = push_frames(c, ip, false, false, NULL, n);
	for (i = 0; !err && i < smp->branch_nr; i++)
		err = push_frames(c, rec_branch_from(smp, i), false, false, NULL, n);
	if (err)
		return err;
	last = rec_branch_from(smp, smp->branch_nr - 1);
	for (j = u + 1; j < smp->callchain_nr; j++) {
		ip = rec_callchain_ip(smp, j);
		if (ip >= CTX_MAX)
			return 0;
		if (ip > last && ip - last <= 15)
			break;
	}
	for (j++; j < smp->callchain_nr; j++) {
		ip = rec_callchain_ip(smp, j);
		if (ip >= CTX_MAX || ip < 4096)
			break;
		err = push_frames(c, ip, false, true, NULL, n);
		if (err)
			return err;
	}
	return 0;
}

static int push_unwound(struct stk_ctx *c, const struct rd_evsel *ev,
			const struct rec_sample *smp, size_t *n)
{
	enum unw_end end;
	int nr, i, err;

	nr = unw_sample(c->unw, smp, ev->attr.sample_regs_user, find_code, c,
			c->uframes, UNW_MAX_FRAMES, &end);
	if (nr < 0)
		return nr;
	if (!nr)
		return 0;
	c->unw_samples++;
	if (smp->stack_dyn_size > c->max_stack_used)
		c->max_stack_used = (u32)smp->stack_dyn_size;
	if (end == UNW_END_ROOT)
		c->unw_root++;
	else if (end == UNW_END_CUT)
		c->unw_cut++;
	else
		c->unw_lost++;
	for (i = 0; c->folder && i < nr; i++) {
		const struct unw_frame *f = &c->uframes[i];

		err = push_frames(c, f->pc, false, f->is_return, &f->code, n);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Drop interpreter frames from stacks with Python frames; with
 * python_only keep nothing but Python frames. Rootward of the outermost
 * Python frame (the stack is leaf first: the frames after it) every
 * frame of the interpreter goes, whatever py-spy's token rule says, with
 * libc's start frames: a thread's start-up (`clone3;start_thread;
 * pythread_wrapper;thread_run`) or the interpreter's main
 * (`_start;...;Py_RunMain`), so a thread's stack is rooted at its
 * `_bootstrap (threading.py:N)` as in py-spy's output (docs/output.md
 * §4.3; `thread_run` and the DWARF name `clone3` used to escape it, issue
 * 15). A program embedding Python keeps its own frames there (`main;
 * run_script`), as py-spy --native does (docs/pyspy-formats.md §1.8
 * item 4). keep_interpreter keeps them all.
 */
/* The OR of @n bytes at @p, sixteen a step. */
static u8 or_bytes(const u8 *p, size_t n)
{
	u64 acc = 0, a, b;
	size_t i = 0;
	u8 r = 0;

	for (; i + 16 <= n; i += 16) {
		memcpy(&a, p + i, 8);
		memcpy(&b, p + i + 8, 8);
		acc |= a | b;
	}
	for (; i < n; i++)
		r |= p[i];
	acc |= acc >> 32;
	acc |= acc >> 16;
	acc |= acc >> 8;
	return (u8)acc | r;
}

static size_t filter(struct stk_ctx *c, size_t n)
{
	bool has_py = false;
	size_t i, o, k = 0;
	u8 any = 0;

	/* Most stacks have no Python frame: one pass of wide ORs says so
	 * (4% of the deep-stack file's instructions went to the search
	 * below). Written out: GCC 12 at -O2 leaves the plain loop a byte
	 * a step (1.5 instructions a frame, issue 16). */
	any = or_bytes(c->sflags, n);
	if (!(any & FF_PYTHON))
		return c->o.python_only ? 0 : n;
	for (i = n; i > 0 && !has_py; i--)
		has_py = c->sflags[i - 1] & FF_PYTHON;
	if (c->o.python_only) {
		for (i = 0; i < n; i++)
			if (c->sflags[i] & FF_PYTHON)
				c->stack[k++] = c->stack[i];
		return k;
	}
	if (!has_py || c->o.keep_interpreter)
		return n;
	/* i is now the index of the outermost Python frame. */
	for (o = i, i = 0; i < n; i++) {
		if ((c->sflags[i] & FF_INTERP) ||
		    (i > o && (c->sflags[i] & FF_INTERP_DSO))) {
			c->stats->frames_interpreter++;
			continue;
		}
		c->stack[k] = c->stack[i];
		c->sflags[k++] = c->sflags[i];
	}
	return k;
}

/* htab_probe()'s key test: an entry is its whole key, the hash word. */
static bool named_eq(const void *ent, const void *key)
{
	(void)ent;
	(void)key;
	return true;
}

/*
 * What the naming session named: a set of 64-bit fingerprints of (DSO,
 * offset, return): entries of the hash word alone, 8 bytes, where the
 * frame cache's are 32 (docs/design.md §6.26). On the build bench
 * recording the memo misses 183,000 of 193,000 user entries (hundreds of
 * short processes run the same code at other addresses) and the frame
 * cache's table
 * outgrew the second-level cache: each look was a load from the third
 * level, about 100-170 ns on this project's machine. The 41,700
 * fingerprints fit in 1 MB. Two keys of one fingerprint (odds of about
 * 1e-10 there) lose only time: the second address is not named ahead,
 * and the session that builds the stack names it itself.
 */
/* 1 if @dso's @b was not named before (and is now taken), 0 if it was,
 * -ENOMEM. */
static int named_add(struct stk_ctx *c, const struct sym_dso *dso, u64 b)
{
	u64 h = hash_mix((u64)(uintptr_t)dso ^ hash_mix(b));
	void *e;

	if (htab_reserve(&c->named))
		return -ENOMEM;
	e = htab_probe(&c->named, h, named_eq, NULL);
	if (htab_used(e))
		return 0;
	htab_claim(&c->named, e, h);
	return 1;
}

/* A kernel address of sample @sample: named into @nm unless named before
 * (docs/design.md §6.26). The frame cache keys kernel frames by the
 * address alone (push_frames_e()), so does this. Where the kernel's
 * symbols are unusable (another machine's recording) the record says
 * so, with no frame: the session that builds then never reads them. */
static int name_kernel(struct stk_ctx *c, u64 ip, u64 sample, struct namer *nm)
{
	const u8 key = MEMO_USED | MEMO_KERNEL;
	struct stk_memo *m = &c->memo[memo_idx(ip, MEMO_PG_KERNEL)];
	struct sym_frame kf;
	int n;

	/* The memo first, as for user addresses (name_one()): a kernel
	 * stack's addresses repeat in most samples, and the set of what
	 * was named is too large to stay in cache. */
	if (memo_holds(m, ip, MEMO_PG_KERNEL, key))
		return 0;
	*m = (struct stk_memo){ ip, MEMO_PG_KERNEL, 0, 0, key };
	n = named_add(c, NULL, ip);
	if (n <= 0)
		return n;
	n = mach_kernel_syms(c->mach) ? sym_kernel_resolve(c->sym, ip, &kf) : 0;
	if (n < 0)
		return n;
	kf.file = NULL;
	return namer_put(nm, sample, KERNEL_DSO, ip, &kf, (u32)n);
}

/*
 * One user address of stk_name_ahead(): named and logged unless named
 * before (named_add()), with the key push_frames_e() gives it. The memo
 * (push_callchain()'s table, holding no frames here) skips the repeats of
 * deep stacks without the map lookup.
 */
static int name_one(struct stk_ctx *c, u64 ip, bool is_return, u32 gen, u64 sample,
		    struct namer *nm)
{
	u8 key = MEMO_USED | (is_return ? MEMO_RET : 0);
	struct sym_frame frames[SYM_MAX_FRAMES];
	struct unw_code code;
	u64 pg = memo_pg(c->pid, gen), b;
	struct stk_memo *m = &c->memo[memo_idx(ip, pg)];
	int n;

	if (memo_holds(m, ip, pg, key))
		return 0;
	find_code(c, ip - is_return, &code);
	if (code.kind != UNW_CODE_DSO)
		return 0;
	*m = (struct stk_memo){ ip, pg, 0, 0, key };
	b = ((code.file_off + is_return) << 1) | is_return;
	n = named_add(c, code.dso, b);
	if (n <= 0)
		return n;
	n = sym_resolve_once(c->sym, code.dso, b >> 1, b & 1, frames);
	if (n < 0)
		return n;
	return namer_put(nm, sample, sym_dso_name(code.dso), b, frames, (u32)n);
}

int stk_name_ahead(struct stk_ctx *c, const struct rd_evsel *ev,
		   const struct rec_sample *smp, u64 sample, struct namer *nm)
{
	bool kernel = smp->cpumode == PERF_RECORD_MISC_KERNEL, first = true, skip = false;
	u32 gen;
	u64 i, ip;
	int err = 0;

	/* stk_build()'s choice: these take their user frames elsewhere. */
	if ((smp->regs_abi && smp->stack_size) || lbr_user_start(ev, smp) ||
	    c->mach->jit_follow)
		return 0;
	c->pid = (s32)smp->pid;
	if (!c->memo && !(c->memo = calloc(STK_MEMO, sizeof(*c->memo))))
		return -ENOMEM;
	gen = mach_maps_gen(c->mach, c->pid);
	if (!smp->callchain_nr)
		return !kernel ? name_one(c, smp->ip, false, gen, sample, nm) :
			c->o.no_kernel ? 0 : name_kernel(c, smp->ip, sample, nm);
	/* push_callchain()'s walk, user and kernel contexts. */
	for (i = 0; !err && i < smp->callchain_nr; i++) {
		ip = rec_callchain_ip(smp, i);
		if (ip >= CTX_MAX) {
			kernel = ip == CTX_KERNEL;
			skip = !(kernel || ip == CTX_USER);
			first = true;
			continue;
		}
		if (!skip && !kernel)
			err = name_one(c, ip, !first, gen, sample, nm);
		else if (!skip && !c->o.no_kernel)
			err = name_kernel(c, ip, sample, nm);
		first = false;
	}
	return err;
}

int stk_build(struct stk_ctx *c, const struct rd_evsel *ev,
	      const struct rec_sample *smp, size_t *n)
{
	bool dwarf = smp->regs_abi && smp->stack_size;
	u64 lbr = dwarf ? 0 : lbr_user_start(ev, smp);
	int err;

	*n = 0;
	c->pid = (s32)smp->pid;
	c->regs_mask = ev->attr.sample_regs_user;
	if (c->folder && lbr) {
		err = push_lbr(c, smp, lbr, n);
		if (err)
			return err;
	} else if (c->folder) {
		/* DWARF recordings carry only the kernel part in the
		 * callchain (exclude_callchain_user, docs/perf-data-format.md §2.2). */
		err = push_callchain(c, smp, !dwarf, n);
		if (err)
			return err;
	}
	if (dwarf) {
		err = push_unwound(c, ev, smp, n);
		if (err)
			return err;
	}
	if (c->folder)
		*n = filter(c, *n);
	return 0;
}

/* ------------------------------------------------ mapped by the caller */

/*
 * The entries below serve callers that know each address's map already
 * (perf's dlfilter API resolves it: perfspy_symbolizer in
 * libconv/symbolizer.c). They append to the same stack, through the same
 * cache and renderers, as a perf.data sample's frames do, so the frame
 * text is the same by construction.
 */

int stk_push_dso(struct stk_ctx *c, struct sym_dso *dso, u64 file_off, u64 ip,
		 bool is_return, size_t *n)
{
	struct unw_code code = {
		.kind = UNW_CODE_DSO,
		.dso = dso,
		.file_off = file_off,
	};

	return push_frames(c, ip, false, is_return, &code, n);
}

int stk_push_kernel(struct stk_ctx *c, u64 ip, bool is_return, size_t *n)
{
	if (c->o.no_kernel)
		return 0;
	return push_frames(c, ip, true, is_return, NULL, n);
}

/* Append one uncached frame id (names already cached by py_render and
 * the folder's interning). */
static int push_one(struct stk_ctx *c, u32 id, u8 flags, size_t *n)
{
	if (id == FOLD_NO_ID ||
	    ensure_mem((void **)&c->stack, &c->cap_stack, sizeof(*c->stack), *n + 2) ||
	    ensure_mem((void **)&c->sflags, &c->cap_sflags, 1, *n + 2))
		return -ENOMEM;
	c->stack[*n] = id;
	c->sflags[(*n)++] = flags;
	c->stats->frames++;
	return 0;
}

int stk_push_symbol(struct stk_ctx *c, const char *name, size_t *n)
{
	const char *text;
	int r = py_render(c->py, name, &text);

	if (r < 0)
		return r;
	if (r > 0) {
		c->stats->frames_python++;
		return push_one(c, fold_intern_str(c->folder, text), FF_PYTHON, n);
	}
	/* As render_jit(): another JIT's name as given. */
	return push_one(c, intern_fmt(c, "%s ([JIT])", name), 0, n);
}

int stk_push_unknown(struct stk_ctx *c, const char *lib, u64 ip, size_t *n)
{
	c->stats->frames_unknown++;
	if (!lib)
		c->stats->frames_no_map++;
	return push_one(c, native_frame(c, NULL, lib ? lib : "?", ip), 0, n);
}

size_t stk_finish(struct stk_ctx *c, size_t n)
{
	return filter(c, n);
}
