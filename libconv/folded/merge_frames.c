// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy_merge(), the frames: what each distinct frame text of either
 * side is (Python, native, thread or process pseudo-frame; see
 * pyspy.h), the atoms keys are made of, and stacks seen through them
 * (merge.h struct mg_view).
 *
 * Atoms. A Python frame's atom is (last name component, file) with the
 * line dropped: `Outer.Inner.method (m.py:12)` and `method (m.py:10)`
 * are one atom (py-spy 0.4.2 co_name vs 0.4.3+ qualnames, perfspy
 * --qualname). py-spy's file names are first mapped to the perf side's:
 * a speedscope capture holds full paths where perfspy prints py-spy's
 * short ones (docs/pyspy-formats.md §1.4, §2.1). A native frame's
 * atom is its name; address-only frames get none.
 *
 * Definitions. Two functions can share a name in one file
 * (`Linear.forward`, `Attention.forward`); joining on the name alone
 * puts one's perf samples under the other's py-spy lines. perfspy's
 * Python frames carry the definition's first line (read from the source,
 * py-spy --function semantics), py-spy's the line executing. So when the
 * perf side has lines, its atom is (name, file, first line); a py-spy
 * frame takes the perf definition of its name and file that starts last
 * at or before its line (the one enclosing it: the innermost code object
 * has that name). With one perf definition of the name the py-spy frame
 * takes it whatever its line (as a join on the name would); with none at
 * or before its line it joins nothing. Perf frames without lines (source
 * unreadable, --nolineno) keep the (name, file) atom.
 *
 * Sources. That rule is blind to definitions perf never saw (a third
 * `forward` that only sleeps, or ran before perf started): a py-spy line in
 * one is given the perf definition above it. When the file's source is
 * given (perfspy_merge_opts.sources), the py-spy line is resolved to the
 * definition that encloses it, by the same scanner that gave perf its
 * first lines (common/pyscan.c), and the frame joins that definition or
 * nothing. The scanner's innermost definition must carry the frame's
 * name: a lambda or comprehension (no def statement of its own) falls
 * back to the rule above.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/fold.h"
#include "common/pyscan.h"
#include "merge.h"

static int grow_frames(struct mg_side *s, u32 id)
{
	if (id < s->nr_fr)
		return 0;
	if (ensure_mem((void **)&s->fr, &s->cap_fr, sizeof(*s->fr), (size_t)id + 1))
		return -ENOMEM;
	memset(s->fr + s->nr_fr, 0, ((size_t)id + 1 - s->nr_fr) * sizeof(*s->fr));
	s->nr_fr = (size_t)id + 1;
	return 0;
}

static u32 intern2(struct mg *m, struct perfspy_folder *f, char tag,
		   const char *a, size_t na, const char *b, size_t nb)
{
	size_t n = 1 + na + (b ? 1 + nb : 0);

	if (ensure_mem((void **)&m->text, &m->cap_text, 1, n))
		return FOLD_NO_ID;
	m->text[0] = tag;
	memcpy(m->text + 1, a, na);
	if (b) {
		m->text[1 + na] = '\x1f'; /* never in a frame name */
		memcpy(m->text + 2 + na, b, nb);
	}
	return fold_intern(f, m->text, n);
}

static u64 base_hash(const char *f, size_t n)
{
	size_t i = n;

	while (i > 0 && f[i - 1] != '/')
		i--;
	return hash_bytes(f + i, n - i, 0);
}

/* One file is the other plus leading directories: `torch/nn/x.py` and
 * `/venv/lib/.../torch/nn/x.py` (py-spy short names vs speedscope's full
 * ones, docs/pyspy-formats.md §1.4 and §2.1). */
static bool suffix_compatible(const char *a, size_t na, const char *b, size_t nb)
{
	if (na > nb)
		return suffix_compatible(b, nb, a, na);
	return na && !memcmp(a, b + nb - na, na) && (na == nb || b[nb - na - 1] == '/');
}

static int cmp_pfile(const void *x, const void *y)
{
	const struct mg_pfile *a = x, *b = y;

	return a->bhash < b->bhash ? -1 : a->bhash > b->bhash ? 1 :
	       a->file < b->file ? -1 : a->file > b->file;
}

static int grow_canon(struct mg *m, u32 fid)
{
	if (fid < m->nr_canon)
		return 0;
	if (ensure_mem((void **)&m->canon, &m->cap_canon, sizeof(*m->canon),
		       (size_t)fid + 1))
		return -ENOMEM;
	memset(m->canon + m->nr_canon, 0, ((size_t)fid + 1 - m->nr_canon) * sizeof(u32));
	m->nr_canon = (size_t)fid + 1;
	return 0;
}

#define MG_ON_PERF 0x80000000u

/* The perf-side file that py-spy's file @fid names: itself if perf has
 * it, else the one suffix-compatible perf file with that base name. */
static u32 py_canon(struct mg *m, u32 fid)
{
	const char *t = fold_name(m->files, fid);
	size_t n = fold_name_len(m->files, fid), lo = 0, hi, i;
	u64 h = base_hash(t, n);
	u32 found = fid, hits = 0;

	if (m->canon[fid] & MG_ON_PERF)
		return fid;
	if (!m->nr_pfiles)
		return fid;
	if (!m->pfiles_sorted) {
		xqsort(m->pfiles, m->nr_pfiles, sizeof(*m->pfiles), cmp_pfile);
		m->pfiles_sorted = true;
	}
	for (hi = m->nr_pfiles; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->pfiles[mid].bhash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < m->nr_pfiles && m->pfiles[i].bhash == h; i++) {
		u32 p = m->pfiles[i].file;

		if (suffix_compatible(t, n, fold_name(m->files, p),
				      fold_name_len(m->files, p))) {
			found = p;
			hits++;
		}
	}
	return hits == 1 ? found : fid;
}

/* The file id of a Python frame's file on side @s, canonicalized. */
static u32 file_id(struct mg *m, struct mg_side *s, const char *f, size_t n)
{
	u32 fid = fold_intern(m->files, f, n);

	if (fid == FOLD_NO_ID || grow_canon(m, fid))
		return FOLD_NO_ID;
	if (s == &m->perf) {
		if (!(m->canon[fid] & MG_ON_PERF)) {
			if (ensure_mem((void **)&m->pfiles, &m->cap_pfiles,
				       sizeof(*m->pfiles), m->nr_pfiles + 1))
				return FOLD_NO_ID;
			m->pfiles[m->nr_pfiles].bhash = base_hash(f, n);
			m->pfiles[m->nr_pfiles++].file = fid;
			m->canon[fid] = MG_ON_PERF | (fid + 1);
		}
		return fid;
	}
	if (!m->canon[fid])
		m->canon[fid] = py_canon(m, fid) + 1;
	return (m->canon[fid] & ~MG_ON_PERF) - 1;
}

/* co_name vs co_qualname (docs/pyspy-formats.md, the 0.4.3 warning): compare
 * the last component, `Outer.Inner.method` -> `method`. */
static void last_component(const char **name, size_t *n)
{
	size_t i = *n;

	while (i > 0 && (*name)[i - 1] != '.')
		i--;
	if (i < *n) {
		*name += i;
		*n -= i;
	}
}

/* Record perf definition line @line for plain atom @plain. */
static int def_add(struct mg *m, u32 plain, s32 line)
{
	struct mg_defs *d;
	u32 i;

	if (plain >= m->nr_defs) {
		if (ensure_mem((void **)&m->defs, &m->cap_defs, sizeof(*m->defs),
			       (size_t)plain + 1))
			return -ENOMEM;
		memset(m->defs + m->nr_defs, 0, ((size_t)plain + 1 - m->nr_defs) * sizeof(*m->defs));
		m->nr_defs = (size_t)plain + 1;
	}
	d = &m->defs[plain];
	for (i = 0; i < d->n; i++)
		if (d->line[i] == line)
			return 0;
	if (d->n == d->cap) {
		u32 ncap = d->cap ? d->cap * 2 : 4;
		s32 *nl = realloc(d->line, ncap * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		d->line = nl;
		d->cap = ncap;
	}
	d->line[d->n++] = line;
	return 0;
}

/* The perf definition line a frame of plain atom @plain at @line joins
 * (see Definitions above); 0 for the plain atom, -1 for none. */
static s32 def_of(const struct mg *m, u32 plain, s32 line)
{
	const struct mg_defs *d = plain < m->nr_defs ? &m->defs[plain] : NULL;
	s32 best = -1;
	u32 i;

	if (!d || !d->n)
		return 0;
	if (d->n == 1)
		return d->line[0];
	for (i = 0; i < d->n; i++)
		if (d->line[i] <= line && d->line[i] > best)
			best = d->line[i];
	return best;
}

/* ---- sources ---- */

/* The sources as files and directories, each looked at once (a session
 * lists every Python file its perf maps named: thousands for torch). */
static int src_split(struct mg *m)
{
	const char *const *p;
	struct stat st;
	size_t n = 0;

	m->src_split = true;
	for (p = m->sources; p && *p; p++)
		n++;
	if (!n)
		return 0;
	m->src_files = malloc(n * sizeof(*m->src_files));
	m->src_dirs = malloc(n * sizeof(*m->src_dirs));
	if (!m->src_files || !m->src_dirs)
		return -ENOMEM;
	for (p = m->sources; *p; p++) {
		if (!stat(*p, &st) && S_ISDIR(st.st_mode))
			m->src_dirs[m->nr_src_dirs++] = *p;
		else
			m->src_files[m->nr_src_files++] = *p;
	}
	return 0;
}

/* Where file @f (@n bytes) is read: the one listed file that is @f or
 * ends in /@f (two different ones: ambiguous, none), else DIR/@f for the
 * first listed directory holding it, else @f when absolute. Into @buf. */
static bool src_path(const struct mg *m, const char *f, size_t n, char *buf, size_t size)
{
	const char *hit = NULL;
	struct stat st;
	size_t i;

	for (i = 0; i < m->nr_src_files; i++) {
		const char *p = m->src_files[i];
		size_t l = strlen(p);

		if (l >= n && suffix_compatible(f, n, p, l)) {
			if (hit && strcmp(hit, p))
				return false;
			hit = p;
		}
	}
	if (hit)
		return snprintf(buf, size, "%s", hit) < (int)size;
	for (i = 0; i < m->nr_src_dirs && f[0] != '/'; i++) {
		int k = snprintf(buf, size, "%s/%.*s", m->src_dirs[i], (int)n, f);

		if (k > 0 && (size_t)k < size && !stat(buf, &st) && S_ISREG(st.st_mode))
			return true;
	}
	return f[0] == '/' && n < size && snprintf(buf, size, "%.*s", (int)n, f) > 0;
}

/* The raw definition table of file @fid, read and scanned on first use;
 * NULL when no source (unreadable costs the resolution only). */
static const struct deftab *src_tab(struct mg *m, u32 fid, int *err)
{
	struct mg_src *e;
	char path[4096], *buf = NULL, *nb;
	size_t len = 0;

	if (fid >= m->nr_srcs) {
		if (ensure_mem((void **)&m->srcs, &m->cap_srcs, sizeof(*m->srcs),
			       (size_t)fid + 1)) {
			*err = -ENOMEM;
			return NULL;
		}
		memset(m->srcs + m->nr_srcs, 0, ((size_t)fid + 1 - m->nr_srcs) * sizeof(*m->srcs));
		m->nr_srcs = (size_t)fid + 1;
	}
	e = &m->srcs[fid];
	if (e->tried)
		return e->tab;
	e->tried = true;
	if (!m->src_split && (*err = src_split(m)))
		return NULL;
	if (!src_path(m, fold_name(m->files, fid), fold_name_len(m->files, fid), path,
		      sizeof(path)) || read_file_whole(path, &buf, &len))
		return NULL;
	nb = len <= SIZE_MAX - PY_PAD ? realloc(buf, len + PY_PAD) : NULL;
	if (!nb) {
		free(buf);
		*err = -ENOMEM;
		return NULL;
	}
	*err = py_scan_buffer(nb, len, &e->tab);
	free(nb);
	if (*err == -EINVAL) /* nested too deeply: the definitions before stand */
		*err = 0;
	if (*err) {
		py_tab_free(e->tab);
		e->tab = NULL;
	}
	pr_debug(&m->log, "merge: source of %s: %s", fold_name(m->files, fid),
		 e->tab ? path : "not scanned");
	return e->tab;
}

/* The first line of the innermost definition named @name (@nn bytes,
 * last component) that encloses @line in file @fid; 0 when unknown. The
 * innermost enclosing one is the frame's code object unless the line is a
 * nested def's header (the outer function executing `def`), or the frame
 * is a lambda or comprehension, which have no def of their own: then
 * none carries the name, or an outer one of that name does. */
static s32 src_def(struct mg *m, u32 fid, const char *name, size_t nn, s32 line, int *err)
{
	const struct deftab *t;
	size_t pos = SIZE_MAX, ql;
	const char *q;
	int first;

	if (!m->sources || line <= 0)
		return 0;
	t = src_tab(m, fid, err);
	while (t && (first = py_tab_enclosing(t, line, &pos, &q))) {
		ql = strlen(q);
		last_component(&q, &ql);
		if (ql == nn && !memcmp(q, name, nn))
			return first;
	}
	return 0;
}

/* The atom (name, file, definition line); the plain one for @def 0. */
static u32 def_atom(struct mg *m, u32 plain, const char *name, size_t nn, u32 fid,
		    s32 def)
{
	char buf[4096];
	int k;

	if (!def)
		return plain;
	k = snprintf(buf, sizeof(buf), "%.*s\x1e%d", (int)fold_name_len(m->files, fid),
		     fold_name(m->files, fid), def);
	if (k < 0 || (size_t)k >= sizeof(buf))
		return plain;
	return intern2(m, m->atoms, 'P', name, nn, buf, (size_t)k);
}

/* `LIB+0xOFF`: perfspy's name for code without a symbol. py-spy writes
 * an absolute address there, so it anchors no join either. */
static bool is_file_offset(const char *s, size_t n)
{
	size_t i = n;

	while (i > 0 && ((s[i - 1] >= '0' && s[i - 1] <= '9') ||
			 (s[i - 1] >= 'a' && s[i - 1] <= 'f')))
		i--;
	return i < n && i >= 4 && s[i - 1] == 'x' && s[i - 2] == '0' && s[i - 3] == '+';
}

static int classify(struct mg *m, struct mg_side *s, u32 id, struct mg_frame *out)
{
	struct frame_parts fr;
	enum frame_kind kind;
	const char *name;
	size_t nn;
	u32 fid;

	frame_parse_globs(fold_name(s->f, id), fold_name_len(s->f, id), m->py_files, &fr);
	kind = pys_kind_of(&fr);
	out->kind = (u8)(kind + 1);
	out->atom = MG_NO_ATOM;
	name = fr.func;
	nn = fr.func_len;
	if (kind == FRAME_THREAD) {
		if (frame_tid_decimal(&fr, &out->tid) && out->tid)
			s->threads = true;
	} else if (kind == FRAME_PYTHON) {
		last_component(&name, &nn);
		fid = file_id(m, s, fr.file, fr.file_len);
		if (fid == FOLD_NO_ID)
			return -ENOMEM;
		out->atom = intern2(m, m->atoms, 'P', name, nn, fold_name(m->files, fid),
				    fold_name_len(m->files, fid));
		if (out->atom == FOLD_NO_ID)
			return -ENOMEM;
		out->line = fr.has_line && fr.line > 0 && fr.line < INT32_MAX ? (s32)fr.line : 0;

		/* perf views are all built before py-spy's (mg_prepare), so
		 * every perf definition is known when py-spy frames come. */
		if (s == &m->perf && out->line) {
			if (def_add(m, out->atom, out->line))
				return -ENOMEM;
			out->atom = def_atom(m, out->atom, name, nn, fid, out->line);
		} else if (s != &m->perf) {
			s32 def = def_of(m, out->atom, out->line), src;
			int err = 0;

			/* Perf frames of this name have lines: the source decides. */
			if (def) {
				src = src_def(m, fid, name, nn, out->line, &err);
				if (err)
					return err;
				def = src ? src : def;
			}

			out->atom = def < 0 ? intern2(m, m->atoms, 'P', name, nn, "\x1e-", 2) :
				    def_atom(m, out->atom, name, nn, fid, def);
		}
		if (out->atom == FOLD_NO_ID)
			return -ENOMEM;
	} else if (kind == FRAME_NATIVE && nn && !(nn > 2 && name[0] == '0' && name[1] == 'x') &&
		   !is_file_offset(name, nn)) {
		/* Address-only frames (`0x7f.. (lib)`) differ between runs:
		 * never a join anchor. */
		out->atom = intern2(m, m->atoms, 'N', name, nn, NULL, 0);
		if (out->atom == FOLD_NO_ID)
			return -ENOMEM;
	}
	return 0;
}

const struct mg_frame *mg_frame(struct mg *m, struct mg_side *s, u32 id)
{
	if (grow_frames(s, id))
		return NULL;
	if (!s->fr[id].kind && classify(m, s, id, &s->fr[id]))
		return NULL;
	return &s->fr[id];
}

/* ---- views ---- */

static int view_push(u32 **a, size_t *cap, u32 *n, u32 v)
{
	if (ensure_mem((void **)a, cap, sizeof(**a), (size_t)*n + 1))
		return -ENOMEM;
	(*a)[(*n)++] = v;
	return 0;
}

/*
 * Classify stack @idx of @s into @v. The native path is the named
 * native frames after the last Python frame; address-only frames are
 * skipped, as each side may name a frame the other could not.
 */
int mg_build_view(struct mg *m, struct mg_side *s, size_t idx, struct mg_view *v)
{
	const struct mg_frame *f;
	bool prefix = true;
	u32 i;

	if (fold_stack(s->f, idx, &v->buf, &v->ids, &v->nr, &v->count))
		return -ENOMEM;
	v->tid = 0;
	v->first = 0;
	v->nr_py = v->nr_nat = 0;
	for (i = 0; i < v->nr; i++) {
		f = mg_frame(m, s, v->ids[i]);
		if (!f)
			return -ENOMEM;
		if (prefix && (f->kind == FRAME_THREAD + 1 || f->kind == FRAME_PROCESS + 1)) {
			if (f->kind == FRAME_THREAD + 1 && !v->tid)
				v->tid = f->tid;
			v->first = i + 1;
			continue;
		}
		prefix = false;
		if (f->kind == FRAME_PYTHON + 1) {
			if (view_push(&v->py, &v->cap_py, &v->nr_py, i))
				return -ENOMEM;
			v->nr_nat = 0;
		} else if (v->nr_py && f->atom != MG_NO_ATOM && v->nr_nat < MG_MAX_NATIVE) {
			if (view_push(&v->nat, &v->cap_nat, &v->nr_nat, f->atom))
				return -ENOMEM;
		}
	}
	return 0;
}

