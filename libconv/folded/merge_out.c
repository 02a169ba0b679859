// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy_merge(), the writing half: the py-spy variants of a key, how a
 * perf count is split over them, and the merged stacks (see merge.h).
 *
 * Rounding: each perf stack's count is split by largest remainder
 * (Hamilton's method), so it is conserved exactly, stack by stack. The
 * remainders that lost are carried, per key, to the next perf stack of
 * that key: otherwise every count-1 stack (common with DWARF callchains,
 * which make many distinct native leaves) would go to the most frequent
 * line and the others would never show. Carried, they make the order of
 * the perf stacks decide ties: perfspy_merge() takes them in the order
 * of their text, whatever order the input had.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/fold.h"
#include "merge.h"

/* ---- output frames ---- */

/* Each input frame is interned in the output once; later uses hit the
 * per-side id cache. */
u32 mg_out_id(struct mg *m, struct mg_side *s, u32 id)
{
	if (id >= s->nr_out) {
		if (ensure_mem((void **)&s->out, &s->cap_out, sizeof(*s->out), (size_t)id + 1))
			return FOLD_NO_ID;
		memset(s->out + s->nr_out, 0, ((size_t)id + 1 - s->nr_out) * sizeof(u32));
		s->nr_out = (size_t)id + 1;
	}
	if (!s->out[id]) {
		u32 o = fold_intern(m->out, fold_name(s->f, id), fold_name_len(s->f, id));

		if (o == FOLD_NO_ID)
			return FOLD_NO_ID;
		s->out[id] = o + 1;
	}
	return s->out[id] - 1;
}

/* `NAME (FILE:LINE)` for perf Python frame @id, or `NAME (FILE)` when
 * @line is 0, interned in @f. */
static u32 with_line(struct mg *m, struct perfspy_folder *f, u32 id, s32 line)
{
	struct frame_parts fr;
	size_t n;
	int k;

	frame_parse_globs(fold_name(m->perf.f, id), fold_name_len(m->perf.f, id),
			  m->py_files, &fr);
	n = fr.func_len + fr.file_len + 24;
	if (ensure_mem((void **)&m->text, &m->cap_text, 1, n))
		return FOLD_NO_ID;
	k = line ? snprintf(m->text, n, "%.*s (%.*s:%d)", (int)fr.func_len, fr.func,
			    (int)fr.file_len, fr.file, line) :
		   snprintf(m->text, n, "%.*s (%.*s)", (int)fr.func_len, fr.func,
			    (int)fr.file_len, fr.file);
	if (k < 0 || (size_t)k >= n)
		return FOLD_NO_ID;
	return fold_intern(f, m->text, (size_t)k);
}

/* Perf Python frame @id with py-spy's @line (cached per (id, line)). */
static u32 rewritten(struct mg *m, u32 id, s32 line)
{
	u64 key = (u64)id << 32 | (u32)line, *v;
	u32 o;

	if (line <= 0)
		return mg_out_id(m, &m->perf, id);
	v = idmap_get(&m->rew, key);
	if (v)
		return (u32)*v;
	v = idmap_put(&m->rew, key);
	if (!v)
		return FOLD_NO_ID;
	/* On -ENOMEM the merge stops, so the entry is never read again. */
	o = with_line(m, m->out, id, line);
	*v = o;
	return o;
}

/* ---- variants ---- */

static s32 ps_line(const struct mg *m, const struct mg_pstack *p, u32 i)
{
	return m->lines[p->py_off + i];
}

struct vctx {
	const struct mg *m;
	const struct mg_entry *e;
};

/* Python keys: variants differ in the lines of the matched frames. */
static int cmp_lines(const void *x, const void *y, void *ctx)
{
	const struct vctx *c = ctx;
	const struct mg_pstack *a = &c->m->ps[*(const u32 *)x];
	const struct mg_pstack *b = &c->m->ps[*(const u32 *)y];
	u32 k = c->e->len_py, i;

	for (i = 0; i < k; i++) {
		s32 la = ps_line(c->m, a, a->nr_py - k + i);
		s32 lb = ps_line(c->m, b, b->nr_py - k + i);

		if (la != lb)
			return la < lb ? -1 : 1;
	}
	return 0;
}

/* Native join: variants differ in the py-spy frames above the join. */
static int cmp_prefix(const void *x, const void *y, void *ctx)
{
	const struct vctx *c = ctx;
	const struct mg_pstack *a = &c->m->ps[*(const u32 *)x];
	const struct mg_pstack *b = &c->m->ps[*(const u32 *)y];
	u32 na = a->end - a->first, nb = b->end - b->first;
	u32 i;

	for (i = 0; i < na && i < nb; i++)
		if (a->ids[a->first + i] != b->ids[b->first + i])
			return a->ids[a->first + i] < b->ids[b->first + i] ? -1 : 1;
	return na < nb ? -1 : na > nb;
}

/* Sort the entry's py-spy stacks by variant and sum equal ones: the
 * variants come out in line order, which makes ties deterministic. */
int mg_build_vars(struct mg *m, struct mg_entry *e)
{
	int (*cmp)(const void *, const void *, void *) =
		e->kind == MG_K_NATIVE ? cmp_prefix : cmp_lines;
	struct vctx c = { m, e };
	u32 l, n = 0, i;

	if (e->built)
		return 0;
	for (l = e->head; l; l = m->links[l - 1].next)
		n++;
	if (ensure_mem((void **)&m->sort, &m->cap_sort, sizeof(*m->sort), (size_t)n + 1))
		return -ENOMEM;
	for (l = e->head, i = 0; l; l = m->links[l - 1].next)
		m->sort[i++] = m->links[l - 1].stack;
	qsort_r(m->sort, n, sizeof(*m->sort), cmp, &c);
	e->vars = calloc(n ? n : 1, sizeof(*e->vars));
	if (!e->vars)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		u64 w = m->ps[m->sort[i]].count;

		if (!i || cmp(&m->sort[i - 1], &m->sort[i], &c))
			e->vars[e->nr_vars++].rep = m->sort[i];
		e->vars[e->nr_vars - 1].weight += w;
		e->total += w;
	}
	e->built = true;
	return 0;
}

/* ---- rounding ---- */

static int cmp_credit(const void *x, const void *y, void *ctx)
{
	const struct mg_var *v = ctx;
	u32 a = *(const u32 *)x, b = *(const u32 *)y;

	if (v[a].credit != v[b].credit)
		return v[a].credit > v[b].credit ? -1 : 1;
	return a < b ? -1 : a > b;
}

int mg_apportion(u64 count, struct mg_var *vars, u32 n, u64 total, u64 *out,
		 u32 *scratch)
{
	unsigned __int128 c = count;
	u64 given = 0, left;
	u32 i;

	if (!n || !total)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		unsigned __int128 p = c * vars[i].weight;

		out[i] = (u64)(p / total);
		given += out[i];
		/* The remainder, in 1/total units, joins the carried credit:
		 * the ranking key of largest remainder. */
		vars[i].credit += (__int128)(p % total);
		scratch[i] = i;
	}
	left = count - given; /* < n: each floor loses less than one */
	if (!left)
		return 0;
	qsort_r(scratch, n, sizeof(*scratch), cmp_credit, vars);
	for (i = 0; i < left && i < n; i++) {
		out[scratch[i]]++;
		vars[scratch[i]].credit -= total;
	}
	return 0;
}

/* ---- merged stacks ---- */

static int push(struct mg *m, u32 *n, u32 id)
{
	if (id == FOLD_NO_ID ||
	    ensure_mem((void **)&m->obuf, &m->cap_obuf, sizeof(*m->obuf), (size_t)*n + 1))
		return -ENOMEM;
	m->obuf[(*n)++] = id;
	return 0;
}

/* The perf stack's root pseudo-frames (thread roots unless dropped). */
static int push_roots(struct mg *m, const struct mg_view *v, u32 *n)
{
	u32 i;
	int err = 0;

	for (i = 0; !err && i < v->first; i++) {
		if (!m->keep_roots && m->perf.fr[v->ids[i]].kind == FRAME_THREAD + 1)
			continue;
		err = push(m, n, mg_out_id(m, &m->perf, v->ids[i]));
	}
	return err;
}

/* Add the stack in m->obuf (which may be unallocated when @n is 0). */
static int add_to(struct mg *m, struct perfspy_folder *f, u32 n, u64 weight)
{
	static const u32 none;

	return weight ? fold_add_ids(f, m->obuf ? m->obuf : &none, n, weight) : 0;
}

static int add_out(struct mg *m, u32 n, u64 weight)
{
	return add_to(m, m->out, n, weight);
}

/* Unmatched, or nothing to match: perf's frames as they are. */
int mg_emit_asis(struct mg *m, const struct mg_view *v)
{
	u32 n = 0, i;
	int err = push_roots(m, v, &n);

	for (i = v->first; !err && i < v->nr; i++)
		err = push(m, &n, mg_out_id(m, &m->perf, v->ids[i]));
	return err ? err : add_out(m, n, v->count);
}

/* Split @v->count over @e's variants into m->alloc. */
static int split(struct mg *m, const struct mg_view *v, struct mg_entry *e)
{
	int err = mg_build_vars(m, e);

	if (!err && (ensure_mem((void **)&m->alloc, &m->cap_alloc, sizeof(*m->alloc),
				(size_t)e->nr_vars + 1) ||
		     ensure_mem((void **)&m->sort, &m->cap_sort, sizeof(*m->sort),
				(size_t)e->nr_vars + 1)))
		err = -ENOMEM;
	return err ? err : mg_apportion(v->count, e->vars, e->nr_vars, e->total,
					 m->alloc, m->sort);
}

/* One variant of a Python-mode match: the perf frames, the last k
 * Python ones with the variant's lines. */
static int emit_lines(struct mg *m, const struct mg_view *v, const struct mg_entry *e,
		      const struct mg_pstack *r, u64 weight)
{
	u32 k = e->len_py, base = v->nr_py - k, n = 0, pi = 0, i, id;
	int err = push_roots(m, v, &n);

	for (i = v->first; !err && i < v->nr; i++) {
		if (pi < v->nr_py && v->py[pi] == i) {
			id = pi >= base ? rewritten(m, v->ids[i],
						    ps_line(m, r, r->nr_py - k + (pi - base))) :
					  mg_out_id(m, &m->perf, v->ids[i]);
			pi++;
		} else {
			id = mg_out_id(m, &m->perf, v->ids[i]);
		}
		err = push(m, &n, id);
	}
	return err ? err : add_out(m, n, weight);
}

int mg_emit_python(struct mg *m, const struct mg_view *v, struct mg_entry *e)
{
	int err = split(m, v, e);
	u32 i;

	for (i = 0; !err && i < e->nr_vars; i++)
		if (m->alloc[i])
			err = emit_lines(m, v, e, &m->ps[e->vars[i].rep], m->alloc[i]);
	return err;
}

/* One variant of a native join: perf roots, py-spy's frames down to its
 * last Python frame, then the perf frames from @j on. */
static int emit_joined(struct mg *m, const struct mg_view *v, const struct mg_pstack *r,
		       u32 j, u64 weight)
{
	u32 n = 0, i, end = r->end;
	int err = push_roots(m, v, &n);

	for (i = r->first; !err && i < end; i++)
		err = push(m, &n, mg_out_id(m, &m->py, r->ids[i]));
	for (i = j; !err && i < v->nr; i++)
		err = push(m, &n, mg_out_id(m, &m->perf, v->ids[i]));
	return err ? err : add_out(m, n, weight);
}

int mg_emit_native(struct mg *m, const struct mg_view *v, struct mg_entry *e, u32 j)
{
	int err = split(m, v, e);
	u32 i;

	for (i = 0; !err && i < e->nr_vars; i++)
		if (m->alloc[i])
			err = emit_joined(m, v, &m->ps[e->vars[i].rep], j, m->alloc[i]);
	return err;
}

int mg_note_unmatched(struct mg *m, const struct mg_view *v)
{
	u32 n = 0, i;
	int err = 0;

	if (!m->unmatched)
		return 0;
	for (i = 0; !err && i < v->nr_py; i++)
		err = push(m, &n, with_line(m, m->unmatched, v->ids[v->py[i]], 0));
	return err ? err : add_to(m, m->unmatched, n, v->count);
}
