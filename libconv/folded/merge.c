// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy_merge(): the py-spy key index, the matching of each perf stack,
 * and the public entry (see merge.h for the semantics; frames are
 * classified in merge_frames.c, merged stacks written in merge_out.c).
 *
 * Keys. A py-spy stack with Python skeleton a[0..m) (root first) is
 * indexed under EXACT(a), SUFFIX(a[m-k..m)) for every k, EXACT_NAT(a, n[0..l))
 * for every prefix of the native frames n after its last Python frame (py-spy
 * --native), and NATIVE(n[0..l)). Each key exists per thread id when the
 * merge is thread-aware and once for "any thread". Hashes of suffixes are
 * built from the leaf backwards so that a perf stack computes all of its
 * own in one pass; a hit is verified against the stack that created the
 * key, so a hash collision can never join different skeletons.
 *
 * Matching order for a perf stack with Python frames: EXACT on its own
 * thread, EXACT on any thread, then SUFFIX from the longest suffix down
 * (perf stacks cut short at the root, py-spy stacks seen deeper), own
 * thread first. An EXACT hit is narrowed by EXACT_NAT when py-spy --native
 * frames agree with the perf stack's frames under its last Python frame.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/fold.h"
#include "common/opts.h"
#include "common/pyscan.h"
#include "merge.h"

/* ---- the key index ---- */

struct mg_key {
	u64 hash, tid;
	u32 len_py, len_nat;
	u8 kind;
	const u32 *py; /* Python atoms, root first; the key is the last len_py */
	u32 nr_py;
	const u32 *nat; /* native atoms; the key is the first len_nat */
};

/* Hashes of keys: the kind and the thread id seed a chain that takes
 * one atom at a time, so a key of k atoms extends the key of k - 1. */
static u64 h_seed(int kind, u64 tid)
{
	return hash_mix(((u64)kind << 56) ^ hash_mix(tid + 0x9e3779b97f4a7c15ULL));
}

static u64 h_step(u64 h, u32 atom)
{
	return hash_mix(h ^ (((u64)atom + 1) * 0x9e3779b97f4a7c15ULL));
}

static bool key_equal(const struct mg *m, const struct mg_entry *e,
		      const struct mg_key *k)
{
	const struct mg_pstack *r = &m->ps[e->rep];

	if (e->hash != k->hash || e->kind != k->kind || e->tid != k->tid ||
	    e->len_py != k->len_py || e->len_nat != k->len_nat)
		return false;
	if (k->len_py && memcmp(m->pool + r->py_off + r->nr_py - k->len_py,
				k->py + k->nr_py - k->len_py, k->len_py * sizeof(*k->py)))
		return false;
	return !k->len_nat ||
	       !memcmp(m->pool + r->nat_off, k->nat, k->len_nat * sizeof(*k->nat));
}

struct mg_slot {
	u64 hash;
	u32 ent;
};

struct mg_probe {
	const struct mg *m;
	const struct mg_key *k;
};

static bool slot_eq(const void *ent, const void *key)
{
	const struct mg_probe *p = key;

	return key_equal(p->m, &p->m->ents[((const struct mg_slot *)ent)->ent], p->k);
}

static struct mg_entry *lookup(const struct mg *m, const struct mg_key *k)
{
	struct mg_probe p = { m, k };
	const struct mg_slot *s = htab_find(&m->ent_tab, k->hash, slot_eq, &p);

	return s ? &m->ents[s->ent] : NULL;
}

/* Link py-spy stack @stack to the entry of @k, creating the entry (with
 * @stack as the representative its key is verified against). */
static int insert(struct mg *m, const struct mg_key *k, u32 stack)
{
	struct mg_probe p = { m, k };
	struct mg_entry *e;
	struct mg_slot *s;

	if (htab_reserve(&m->ent_tab))
		return -ENOMEM;
	s = htab_probe(&m->ent_tab, k->hash, slot_eq, &p);
	if (htab_used(s)) {
		e = &m->ents[s->ent];
	} else {
		if (m->nr_ents >= UINT32_MAX - 1 ||
		    ensure_mem((void **)&m->ents, &m->cap_ents, sizeof(*m->ents),
			       m->nr_ents + 1))
			return -ENOMEM;
		e = &m->ents[m->nr_ents];
		memset(e, 0, sizeof(*e));
		e->hash = k->hash;
		e->tid = k->tid;
		e->kind = k->kind;
		e->len_py = k->len_py;
		e->len_nat = k->len_nat;
		e->rep = stack;
		s->ent = (u32)m->nr_ents++;
		htab_claim(&m->ent_tab, s, k->hash);
	}
	if (m->nr_links >= UINT32_MAX - 1 ||
	    ensure_mem((void **)&m->links, &m->cap_links, sizeof(*m->links),
		       m->nr_links + 1))
		return -ENOMEM;
	m->links[m->nr_links].stack = stack;
	m->links[m->nr_links].next = e->head;
	e->head = (u32)++m->nr_links;
	return 0;
}

/* Keys of one py-spy stack for one thread key @tid (module comment). */
static int index_keys(struct mg *m, const struct mg_pstack *p, u32 si, u64 tid)
{
	struct mg_key k = { .tid = tid, .py = m->pool + p->py_off, .nr_py = p->nr_py,
			    .nat = m->pool + p->nat_off };
	u64 hs = h_seed(MG_K_SUFFIX, tid), he = h_seed(MG_K_EXACT, tid);
	u64 hn = h_seed(MG_K_EXACT_NAT, tid), hj = h_seed(MG_K_NATIVE, tid);
	int err = 0;
	u32 i;

	for (i = 1; !err && i <= p->nr_py; i++) {
		u32 a = k.py[p->nr_py - i];

		hs = h_step(hs, a);
		he = h_step(he, a);
		hn = h_step(hn, a);
		k.kind = MG_K_SUFFIX, k.len_py = i, k.hash = hs;
		err = insert(m, &k, si);
	}
	k.kind = MG_K_EXACT, k.len_py = p->nr_py, k.hash = he;
	if (!err && p->nr_py)
		err = insert(m, &k, si);
	for (i = 1; !err && i <= p->nr_nat; i++) {
		hn = h_step(hn, k.nat[i - 1]);
		k.kind = MG_K_EXACT_NAT, k.len_py = p->nr_py, k.len_nat = i, k.hash = hn;
		err = insert(m, &k, si);
	}
	for (i = 1; !err && i <= p->nr_nat; i++) {
		hj = h_step(hj, k.nat[i - 1]);
		k.kind = MG_K_NATIVE, k.len_py = 0, k.len_nat = i, k.hash = hj;
		err = insert(m, &k, si);
		m->any_native_keys = true;
	}
	return err;
}

/* A thread-aware merge looks a stack up under its own thread first and
 * under "any thread" (tid 0) second, so py-spy stacks go under both. */
static int index_stack(struct mg *m, u32 si)
{
	const struct mg_pstack *p = &m->ps[si];
	int err = 0;

	if (m->thread_aware && p->tid)
		err = index_keys(m, p, si, p->tid);
	return err ? err : index_keys(m, p, si, 0);
}

/* Keep py-spy stack @idx's view in the pools. Stacks without Python
 * frames give nothing to join on: they count in the stats only. */
static int add_pstack(struct mg *m, size_t idx)
{
	struct mg_view *v = &m->pv;
	struct mg_pstack *p;
	u32 i;
	int err;

	err = mg_build_view(m, &m->py, idx, v);
	if (err)
		return err;
	m->st.pyspy_total += v->count;
	if (!v->count || !v->nr_py)
		return 0; /* nothing to join on */
	m->st.pyspy_python += v->count;
	if (v->nr_nat)
		m->st.pyspy_native += v->count;
	if (m->nr_ps >= UINT32_MAX - 1 || m->nr_pool > UINT32_MAX - 2 * (size_t)v->nr - 2 ||
	    ensure_mem((void **)&m->ps, &m->cap_ps, sizeof(*m->ps), m->nr_ps + 1) ||
	    ensure_mem((void **)&m->pool, &m->cap_pool, sizeof(*m->pool),
		       m->nr_pool + v->nr_py + v->nr_nat) ||
	    ensure_mem((void **)&m->lines, &m->cap_lines, sizeof(*m->lines),
		       m->nr_pool + v->nr_py + v->nr_nat))
		return -ENOMEM;
	p = &m->ps[m->nr_ps];
	if (v->nr) {
		u32 *cp = arena_alloc(&m->ps_ids, (size_t)v->nr * sizeof(*cp));

		if (!cp)
			return -ENOMEM;
		memcpy(cp, v->ids, (size_t)v->nr * sizeof(*cp));
		p->ids = cp;
	} else {
		p->ids = v->ids;
	}
	m->nr_ps++;
	p->nr = v->nr;
	p->count = v->count;
	p->tid = v->tid;
	p->first = v->first;
	p->end = v->py[v->nr_py - 1] + 1;
	p->py_off = (u32)m->nr_pool;
	p->nr_py = v->nr_py;
	/* Atoms contiguous: a key check is one memcmp. */
	for (i = 0; i < v->nr_py; i++) {
		const struct mg_frame *f = &m->py.fr[v->ids[v->py[i]]];

		m->pool[m->nr_pool + i] = f->atom;
		m->lines[m->nr_pool + i] = f->line;
	}
	m->nr_pool += v->nr_py;
	p->nat_off = (u32)m->nr_pool;
	p->nr_nat = v->nr_nat;
	if (v->nr_nat)
		memcpy(m->pool + m->nr_pool, v->nat, v->nr_nat * sizeof(u32));
	m->nr_pool += v->nr_nat;
	return 0;
}

/* ---- matching perf stacks ---- */

enum { MG_NONE, MG_EXACT, MG_SUFFIX, MG_NATIVE };

struct mg_match {
	struct mg_entry *e;
	int level;
	bool other_thread, refined;
	u32 j; /* native join: where the perf stack's own frames resume */
};


/* Thread keys to try: own thread first when thread-aware. A thread py-spy
 * never saw (it started late, or ran only native code) still gets lines
 * from the other threads' stacks of the same skeleton. */
static int thread_keys(const struct mg *m, const struct mg_view *v, u64 *t)
{
	int n = 0;

	if (m->thread_aware && v->tid)
		t[n++] = v->tid;
	t[n++] = 0;
	return n;
}

/* EXACT, narrowed by the longest agreeing native path (EXACT_NAT). */
static bool match_exact(struct mg *m, const struct mg_view *v, u64 tid,
			struct mg_match *mt)
{
	struct mg_key k = { .tid = tid, .py = m->pa, .nr_py = v->nr_py, .nat = v->nat,
			    .kind = MG_K_EXACT, .len_py = v->nr_py };
	u64 he = h_seed(MG_K_EXACT, tid), hn = h_seed(MG_K_EXACT_NAT, tid);
	struct mg_entry *e, *r;
	u32 i;

	for (i = 0; i < v->nr_py; i++) {
		he = h_step(he, m->pa[v->nr_py - 1 - i]);
		hn = h_step(hn, m->pa[v->nr_py - 1 - i]);
	}
	k.hash = he;
	e = lookup(m, &k);
	if (!e)
		return false;
	k.kind = MG_K_EXACT_NAT;
	for (i = 1; i <= v->nr_nat; i++, e = r) {
		k.hash = hn = h_step(hn, v->nat[i - 1]);
		k.len_nat = i;
		r = lookup(m, &k);
		if (!r)
			break;
		mt->refined = true;
	}
	mt->e = e;
	mt->level = MG_EXACT;
	return true;
}

/* The longest suffix of the skeleton that some py-spy skeleton ends with. */
static bool match_suffix(struct mg *m, const struct mg_view *v, u64 tid,
			 struct mg_match *mt)
{
	struct mg_key k = { .tid = tid, .py = m->pa, .nr_py = v->nr_py,
			    .kind = MG_K_SUFFIX };
	u64 h = h_seed(MG_K_SUFFIX, tid);
	u32 i;

	for (i = 1; i <= v->nr_py; i++)
		m->hs[i] = h = h_step(h, m->pa[v->nr_py - i]);
	for (i = v->nr_py; i >= m->min_suffix && i > 0; i--) {
		k.len_py = i;
		k.hash = m->hs[i];
		mt->e = lookup(m, &k);
		if (mt->e) {
			mt->level = MG_SUFFIX;
			return true;
		}
	}
	return false;
}

/*
 * Exact on any thread before a suffix on the own thread: the whole
 * skeleton pins the call path, a suffix only its leaf end (a pool of
 * workers runs one skeleton, and their lines differ less than paths do).
 */
static int match_python(struct mg *m, const struct mg_view *v, struct mg_match *mt)
{
	u64 t[2];
	int nt = thread_keys(m, v, t), i;

	if (ensure_mem((void **)&m->pa, &m->cap_pa, sizeof(*m->pa), (size_t)v->nr_py + 1) ||
	    ensure_mem((void **)&m->hs, &m->cap_hs, sizeof(*m->hs), (size_t)v->nr_py + 1))
		return -ENOMEM;
	for (i = 0; i < (int)v->nr_py; i++)
		m->pa[i] = m->perf.fr[v->ids[v->py[i]]].atom;
	for (i = 0; i < nt; i++) {
		mt->other_thread = i > 0;
		if (match_exact(m, v, t[i], mt))
			return 0;
	}
	for (i = 0; i < nt; i++) {
		mt->other_thread = i > 0;
		if (match_suffix(m, v, t[i], mt))
			return 0;
	}
	mt->other_thread = false;
	return 0;
}

/* Native join: the run of named perf frames that matches the longest
 * py-spy native path; on a tie the deepest (innermost Python context). */
static void match_native_tid(struct mg *m, const u32 *pos, u32 na, u64 tid,
			     struct mg_match *mt)
{
	struct mg_key k = { .tid = tid, .kind = MG_K_NATIVE };
	u32 jj, l, best = 0;
	struct mg_entry *e;
	u64 h;

	for (jj = 0; jj < na; jj++) {
		h = h_seed(MG_K_NATIVE, tid);
		k.nat = m->pa + jj;
		for (l = 1; jj + l <= na && l <= MG_MAX_NATIVE; l++) {
			k.hash = h = h_step(h, m->pa[jj + l - 1]);
			k.len_nat = l;
			e = lookup(m, &k);
			if (!e)
				break;
			if (l >= best) {
				best = l;
				mt->e = e;
				mt->j = pos[jj];
				mt->level = MG_NATIVE;
			}
		}
	}
}

static int match_native(struct mg *m, const struct mg_view *v, struct mg_match *mt)
{
	u32 *pos, na = 0, i;
	u64 t[2];
	int nt = thread_keys(m, v, t), k;

	if (!m->native_join || !m->any_native_keys)
		return 0;
	if (ensure_mem((void **)&m->pa, &m->cap_pa, sizeof(*m->pa), (size_t)v->nr * 2 + 1))
		return -ENOMEM;
	pos = m->pa + v->nr;
	for (i = v->first; i < v->nr; i++) {
		u32 a = m->perf.fr[v->ids[i]].atom;

		if (a != MG_NO_ATOM) {
			pos[na] = i;
			m->pa[na++] = a;
		}
	}
	for (k = 0; k < nt && mt->level == MG_NONE; k++) {
		mt->other_thread = k > 0;
		match_native_tid(m, pos, na, t[k], mt);
	}
	return 0;
}

/* Whether one of the @len leaf-side Python frames of perf stack @v the
 * match used has no definition line: it joined on its name alone. */
static bool names_only(const struct mg *m, const struct mg_view *v, u32 len)
{
	u32 i;

	for (i = v->nr_py - (len < v->nr_py ? len : v->nr_py); i < v->nr_py; i++)
		if (!m->perf.fr[v->ids[v->py[i]]].line)
			return true;
	return false;
}

/* Match and write one perf stack, counting it in exactly one of exact,
 * suffix, unmatched and no_python (which native_matched is a part of). */
static int merge_stack(struct mg *m, size_t idx)
{
	struct mg_view *v = &m->pv;
	struct mg_match mt = { 0 };
	int err;

	err = mg_build_view(m, &m->perf, idx, v);
	if (err || !v->count)
		return err;
	m->st.total += v->count;
	err = v->nr_py ? match_python(m, v, &mt) : match_native(m, v, &mt);
	if (err)
		return err;
	if (mt.level != MG_NONE && mt.other_thread)
		m->st.other_thread += v->count;
	if ((mt.level == MG_EXACT || mt.level == MG_SUFFIX) &&
	    names_only(m, v, mt.level == MG_EXACT ? v->nr_py : mt.e->len_py))
		m->st.name_only += v->count;
	switch (mt.level) {
	case MG_EXACT:
		m->st.exact += v->count;
		if (mt.refined)
			m->st.refined += v->count;
		return mg_emit_python(m, v, mt.e);
	case MG_SUFFIX:
		m->st.suffix += v->count;
		return mg_emit_python(m, v, mt.e);
	case MG_NATIVE:
		m->st.no_python += v->count;
		m->st.native_matched += v->count;
		return mg_emit_native(m, v, mt.e, mt.j);
	}
	if (v->nr_py) {
		m->st.unmatched += v->count;
		err = mg_note_unmatched(m, v);
	} else {
		m->st.no_python += v->count;
	}
	return err ? err : mg_emit_asis(m, v);
}

/* ---- the public entry ---- */

static void mg_free(struct mg *m)
{
	size_t i;

	for (i = 0; i < m->nr_ents; i++)
		free(m->ents[i].vars);
	for (i = 0; i < m->nr_defs; i++)
		free(m->defs[i].line);
	free(m->defs);
	for (i = 0; i < m->nr_srcs; i++)
		py_tab_free(m->srcs[i].tab);
	free(m->srcs);
	free(m->src_files);
	free(m->src_dirs);
	perfspy_folder__free(m->atoms);
	perfspy_folder__free(m->files);
	free(m->perf.fr);
	free(m->perf.out);
	free(m->py.fr);
	free(m->py.out);
	free(m->pfiles);
	free(m->canon);
	free(m->ps);
	arena_free(&m->ps_ids);
	free(m->pool);
	free(m->lines);
	free(m->ents);
	htab_free(&m->ent_tab);
	free(m->links);
	idmap_free(&m->rew);
	free(m->text);
	free(m->obuf);
	free(m->alloc);
	free(m->sort);
	free(m->hs);
	free(m->pa);
	free(m->pv.py);
	free(m->pv.nat);
	fold_ids_free(&m->pv.buf);
}

static int mg_init(struct mg *m, const struct perfspy_merge_opts *o)
{
	int roots = OPTS_GET(o, thread_roots, PERFSPY_MERGE_ROOTS_KEEP);

	if (roots < PERFSPY_MERGE_ROOTS_KEEP || roots > PERFSPY_MERGE_ROOTS_DROP)
		return -PERFSPY_E_OPTS;
	m->log.fn = OPTS_GET(o, log_fn, NULL);
	m->log.ctx = OPTS_GET(o, log_ctx, NULL);
	m->log.level = log_level_pick(OPTS_GET(o, log_level, 0),
				      OPTS_GET(o, log_level_set, false));
	m->py_files = OPTS_GET(o, python_files, NULL);
	m->sources = OPTS_GET(o, sources, NULL);
	m->min_suffix = OPTS_GET(o, min_suffix, 0) ? OPTS_GET(o, min_suffix, 0) : 1;
	m->native_join = !OPTS_GET(o, no_native_join, false);
	m->unmatched = OPTS_GET(o, unmatched, NULL);
	m->keep_roots = roots;
	htab_init(&m->ent_tab, sizeof(struct mg_slot), 1024);
	if (perfspy_folder__new(&m->atoms) || perfspy_folder__new(&m->files))
		return -ENOMEM;
	return 0;
}

/* Classify both sides, keep the py-spy stacks and index them. Perf
 * frames first: py-spy file names are canonicalized against perf's. */
static int mg_prepare(struct mg *m, const struct perfspy_merge_opts *o)
{
	size_t i, n = perfspy_folder__nr_stacks(m->perf.f);
	int roots = OPTS_GET(o, thread_roots, PERFSPY_MERGE_ROOTS_KEEP);
	int err = 0;

	for (i = 0; !err && i < n; i++)
		err = mg_build_view(m, &m->perf, i, &m->pv);
	n = perfspy_folder__nr_stacks(m->py.f);
	for (i = 0; !err && i < n; i++)
		err = add_pstack(m, i);
	if (err)
		return err;
	m->thread_aware = !OPTS_GET(o, ignore_threads, false) && m->perf.threads &&
			  m->py.threads;
	m->keep_roots = roots == PERFSPY_MERGE_ROOTS_KEEP ||
			(roots == PERFSPY_MERGE_ROOTS_LIKE_PYSPY && m->py.threads);
	for (i = 0; !err && i < m->nr_ps; i++)
		err = index_stack(m, (u32)i);
	return err;
}

/* The library never prints: what the caller may want to show goes to
 * the log (the CLI prints its own summary from the stats). */
static void report(struct mg *m)
{
	const struct perfspy_merge_stats *s = &m->st;

	pr_info(&m->log, "merge: %llu py-spy samples (%llu with Python frames, %llu with "
		"native frames under them); %s", (unsigned long long)s->pyspy_total,
		(unsigned long long)s->pyspy_python, (unsigned long long)s->pyspy_native,
		m->thread_aware ? "matching per thread" : "matching across threads");
	if (s->no_python && m->native_join && !m->any_native_keys)
		pr_info(&m->log, "merge: %llu perf samples have no Python frame, and the "
			"py-spy capture has no native frames to join them on",
			(unsigned long long)s->no_python);
}

/* Copy as much as the caller's struct holds (sized structs, docs/conventions.md §4). */
static void copy_stats(const struct mg *m, struct perfspy_merge_stats *out)
{
	struct perfspy_merge_stats s = m->st;

	s.sz = out->sz;
	s.thread_aware = m->thread_aware;
	memcpy(out, &s, out->sz < sizeof(s) ? out->sz : sizeof(s));
}

PERFSPY_API int perfspy_merge(const struct perfspy_folder *perf,
			      const struct perfspy_folder *pyspy,
			      const struct perfspy_merge_opts *opts,
			      struct perfspy_folder *out,
			      struct perfspy_merge_stats *stats)
{
	struct mg m = { 0 };
	u32 *order = NULL;
	size_t i, n;
	int err;

	if (!OPTS_VALID(opts, perfspy_merge_opts) ||
	    (stats && stats->sz < sizeof(size_t)))
		return -PERFSPY_E_OPTS;
	if (!perf || !pyspy || !out || out == perf || out == pyspy)
		return -EINVAL;
	m.perf.f = perf;
	m.py.f = pyspy;
	m.out = out;
	err = mg_init(&m, opts);
	if (!err && m.unmatched &&
	    (m.unmatched == out || m.unmatched == perf || m.unmatched == pyspy))
		err = -EINVAL;
	if (!err)
		err = mg_prepare(&m, opts);
	/* The perf stacks in the order of their text, not of their ids:
	 * the rounding carries each key's remainders from one perf stack to
	 * the next (merge_out.c), so the order decides ties, and the ids'
	 * order is the input's (a perf.data file's samples, a folded file's
	 * lines, the -j N sessions' merge). Sorted, the same stacks give the
	 * same output from any input. */
	n = perfspy_folder__nr_stacks(perf);
	if (!err && n)
		err = fold_sorted(perf, &order);
	for (i = 0; !err && i < n; i++)
		err = merge_stack(&m, order[i]);
	free(order);
	if (!err) {
		report(&m);
		if (stats)
			copy_stats(&m, stats);
	}
	mg_free(&m);
	return err;
}
