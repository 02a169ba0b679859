// SPDX-License-Identifier: GPL-2.0
/*
 * `perfspy top`'s table (issue 10, docs/top.md): what a growing folder
 * gained since the last look, as py-spy top's rows (own and total per
 * function), with the native leaf under the innermost Python frame.
 *
 * The folder is never reset: a session caches stack indices of its
 * folder (session.c's chain cache), so clearing it under a running
 * conversion would break that cache. Instead each stack's weight at the
 * last update is kept, and the interval is the difference; stacks only
 * gain weight and are only appended (common/fold.h), so an index names
 * the same stack for the life of the folder.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/fold.h"
#include "common/frame.h"
#include "common/hash.h"
#include "common/opts.h"

struct top_row {
	u32 name;	 /* in t->names */
	u32 thread_name; /* in t->names, or STRSET_NONE */
	int tid;
	u64 own, total, own_all, total_all;
	u64 stamp; /* the stack that last counted its total */
};

struct perfspy_top {
	int mode;
	bool threads;
	struct strset names; /* display texts */
	struct strset keys;  /* "TID\x1fNAME" -> row index */
	struct top_row *rows;
	size_t nr_rows, cap_rows;
	u32 *order;
	size_t cap_order;
	u64 *prev; /* stack index -> weight at the last update */
	size_t nr_prev, cap_prev;
	struct idmap tids; /* tid -> interval that saw it */
	u64 interval, stamp;
	u64 total, total_all;
	u32 nr_threads;
	struct perfspy_folder *iv;
	char *buf;
	size_t cap_buf;
	u32 *stk;
	size_t cap_stk;
	struct fold_ids ids; /* fold_stack()'s room */
};

PERFSPY_API int perfspy_top__new(const struct perfspy_top_opts *opts,
				 struct perfspy_top **out)
{
	struct perfspy_top *t;

	if (!out || !OPTS_VALID(opts, perfspy_top_opts))
		return -PERFSPY_E_OPTS;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->mode = OPTS_GET(opts, mode, PERFSPY_TOP_MIXED);
	t->threads = OPTS_GET(opts, threads, false);
	if (t->mode < PERFSPY_TOP_MIXED || t->mode > PERFSPY_TOP_PYTHON) {
		free(t);
		return -EINVAL;
	}
	strset_init(&t->names);
	strset_init(&t->keys);
	*out = t;
	return 0;
}

PERFSPY_API void perfspy_top__free(struct perfspy_top *t)
{
	if (!t)
		return;
	strset_free(&t->names);
	strset_free(&t->keys);
	idmap_free(&t->tids);
	perfspy_folder__free(t->iv);
	free(t->rows);
	free(t->order);
	free(t->prev);
	free(t->buf);
	free(t->stk);
	fold_ids_free(&t->ids);
	free(t);
}

/* The row of (@tid, @name[0..len)), made on first sight; NULL on ENOMEM. */
static struct top_row *top_row_of(struct perfspy_top *t, int tid, u32 tname,
				  const char *name, size_t len)
{
	int klen = snprintf(NULL, 0, "%d\x1f", tid);
	u32 key, nm;
	int r;

	if (klen < 0 || ensure_mem((void **)&t->buf, &t->cap_buf, 1, (size_t)klen + len + 1))
		return NULL;
	snprintf(t->buf, (size_t)klen + 1, "%d\x1f", tid);
	memcpy(t->buf + klen, name, len);
	r = strset_add(&t->keys, t->buf, (size_t)klen + len, &key);
	if (r < 0)
		return NULL;
	if (r == 0)
		return &t->rows[key];
	/* strset ids count up from 0: the new key is row nr_rows. */
	if (strset_add(&t->names, name, len, &nm) < 0 ||
	    ensure_mem((void **)&t->rows, &t->cap_rows, sizeof(*t->rows), t->nr_rows + 1))
		return NULL;
	t->rows[t->nr_rows] = (struct top_row){ .name = nm, .thread_name = tname, .tid = tid };
	return &t->rows[t->nr_rows++];
}

/* Count @d on the row: own if @own, and total once per stack. */
static int top_count(struct perfspy_top *t, int tid, u32 tname, const char *name,
		     size_t len, u64 d, bool own)
{
	struct top_row *r = top_row_of(t, tid, tname, name, len);

	if (!r)
		return -ENOMEM;
	if (own) {
		r->own += d;
		r->own_all += d;
	}
	if (r->stamp != t->stamp) {
		r->stamp = t->stamp;
		r->total += d;
		r->total_all += d;
	}
	return 0;
}

/* Has the native frame a function name (not `0x<hex> (lib)`, `[unknown]`)? */
static bool top_named(const char *s, size_t len)
{
	return !(len >= 2 && s[0] == '0' && s[1] == 'x') && !(len && s[0] == '[');
}

/* `P -> func` (a user frame's name) or `P -> func [k]` (a kernel one). */
static int top_joined(struct perfspy_top *t, const char *py, size_t py_len,
		      const struct frame_parts *leaf, size_t *len)
{
	bool k = leaf->kind == FRAME_KERNEL;

	*len = py_len + 4 + leaf->func_len + (k ? 4 : 0);
	if (ensure_mem((void **)&t->buf, &t->cap_buf, 1, *len + 1))
		return -ENOMEM;
	memcpy(t->buf, py, py_len);
	memcpy(t->buf + py_len, " -> ", 4);
	memcpy(t->buf + py_len + 4, leaf->func, leaf->func_len);
	if (k)
		memcpy(t->buf + py_len + 4 + leaf->func_len, " [k]", 4);
	return 0;
}

static int top_stack(struct perfspy_top *t, const struct perfspy_folder *f,
		     const u32 *ids, u32 n, u64 d)
{
	u32 root = 0, j, tname = STRSET_NONE;
	long py = -1, user = -1, named = -1, kern = -1, leaf;
	struct frame_parts p, lp;
	char *own_text = NULL;
	size_t own_len = 0;
	u64 tid = 0, *seen;
	int err = 0;

	t->stamp++;
	for (; root < n; root++) {
		frame_parse(fold_name(f, ids[root]), fold_name_len(f, ids[root]), &p);
		if (!frame_is_root(p.kind))
			break;
		if (p.kind == FRAME_THREAD && frame_tid_decimal(&p, &tid) && t->threads &&
		    p.thread_name &&
		    strset_add(&t->names, p.thread_name, p.thread_name_len, &tname) < 0)
			return -ENOMEM;
	}
	if (tid) {
		seen = idmap_put(&t->tids, tid);
		if (!seen)
			return -ENOMEM;
		if (*seen != t->interval) {
			*seen = t->interval;
			t->nr_threads++;
		}
	}
	if (!t->threads)
		tid = 0, tname = STRSET_NONE;
	for (j = root; j < n; j++) {
		switch (frame_kind_of(fold_name(f, ids[j]), fold_name_len(f, ids[j]))) {
		case FRAME_PYTHON:
			if (t->mode == PERFSPY_TOP_NATIVE)
				break;
			py = j;
			user = named = kern = -1; /* the leaf is what lies under it */
			break;
		case FRAME_KERNEL: kern = j; break;
		default:
			user = j;
			if (top_named(fold_name(f, ids[j]), fold_name_len(f, ids[j])))
				named = j;
			break;
		}
	}
	/* The named one: a stripped driver's `0x7f.. (libcuda.so.1)` frames
	 * under cudaLaunchKernel say less than cudaLaunchKernel does. */
	leaf = named >= 0 ? named : user >= 0 ? user : kern;
	/* Totals: Python frames (or, without any, user native frames). */
	for (j = root; j < n && !err; j++) {
		enum frame_kind k = frame_kind_of(fold_name(f, ids[j]), fold_name_len(f, ids[j]));
		bool show = t->mode == PERFSPY_TOP_NATIVE ? k == FRAME_NATIVE :
			    py >= 0 || t->mode == PERFSPY_TOP_PYTHON ? k == FRAME_PYTHON :
			    k == FRAME_NATIVE;

		if (show && (long)j != py && (long)j != leaf)
			err = top_count(t, (int)tid, tname, fold_name(f, ids[j]),
					fold_name_len(f, ids[j]), d, false);
	}
	if (err)
		return err;
	if (t->mode == PERFSPY_TOP_PYTHON) {
		if (py < 0)
			return top_count(t, (int)tid, tname, "(no Python frame)", 17, d, true);
		return top_count(t, (int)tid, tname, fold_name(f, ids[py]),
				 fold_name_len(f, ids[py]), d, true);
	}
	if (py >= 0 && leaf >= 0) {
		frame_parse(fold_name(f, ids[leaf]), fold_name_len(f, ids[leaf]), &lp);
		err = top_count(t, (int)tid, tname, fold_name(f, ids[py]),
				fold_name_len(f, ids[py]), d, false);
		if (!err)
			err = top_joined(t, fold_name(f, ids[py]), fold_name_len(f, ids[py]),
					 &lp, &own_len);
		if (err)
			return err;
		/* top_count reuses t->buf for the key: copy the text out. */
		own_text = malloc(own_len);
		if (!own_text)
			return -ENOMEM;
		memcpy(own_text, t->buf, own_len);
		err = top_count(t, (int)tid, tname, own_text, own_len, d, true);
		free(own_text);
		return err;
	}
	if (py >= 0)
		return top_count(t, (int)tid, tname, fold_name(f, ids[py]),
				 fold_name_len(f, ids[py]), d, true);
	if (leaf < 0) /* roots only (python_only conversions, no frames) */
		return top_count(t, (int)tid, tname, "(no frame)", 10, d, true);
	return top_count(t, (int)tid, tname, fold_name(f, ids[leaf]),
			 fold_name_len(f, ids[leaf]), d, true);
}

/* The interval's copy of stack @ids in t->iv. */
static int top_copy(struct perfspy_top *t, const struct perfspy_folder *f,
		    const u32 *ids, u32 n, u64 d)
{
	u32 j;

	if (ensure_mem((void **)&t->stk, &t->cap_stk, sizeof(*t->stk), n ? n : 1))
		return -ENOMEM;
	for (j = 0; j < n; j++) {
		t->stk[j] = fold_intern(t->iv, fold_name(f, ids[j]), fold_name_len(f, ids[j]));
		if (t->stk[j] == FOLD_NO_ID)
			return -ENOMEM;
	}
	return fold_add_ids(t->iv, t->stk, n, d);
}

static int top_cmp(const void *a, const void *b, void *ctx)
{
	const struct perfspy_top *sort_top = ctx;
	const struct top_row *x = &sort_top->rows[*(const u32 *)a];
	const struct top_row *y = &sort_top->rows[*(const u32 *)b];
	int c;

	if (x->own != y->own)
		return x->own < y->own ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->own_all != y->own_all)
		return x->own_all < y->own_all ? 1 : -1;
	if (x->total_all != y->total_all)
		return x->total_all < y->total_all ? 1 : -1;
	c = strcmp(strset_str(&sort_top->names, x->name), strset_str(&sort_top->names, y->name));
	if (c)
		return c;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

PERFSPY_API int perfspy_top__update(struct perfspy_top *t,
				    const struct perfspy_folder *f)
{
	size_t n = f ? perfspy_folder__nr_stacks(f) : 0, i;
	const u32 *ids;
	u32 nr;
	u64 w, d;
	int err;

	if (!t || !f)
		return -EINVAL;
	perfspy_folder__free(t->iv);
	t->iv = NULL;
	err = perfspy_folder__new(&t->iv);
	if (err)
		return err;
	if (ensure_mem((void **)&t->prev, &t->cap_prev, sizeof(*t->prev), n ? n : 1))
		return -ENOMEM;
	for (; t->nr_prev < n; t->nr_prev++)
		t->prev[t->nr_prev] = 0;
	for (i = 0; i < t->nr_rows; i++)
		t->rows[i].own = t->rows[i].total = 0;
	t->interval++;
	t->total = 0;
	t->nr_threads = 0;
	for (i = 0; i < n; i++) {
		err = fold_stack(f, i, &t->ids, &ids, &nr, &w);
		if (err)
			return err;
		d = w - t->prev[i];
		t->prev[i] = w;
		if (!d)
			continue;
		t->total += d;
		err = top_stack(t, f, ids, nr, d);
		if (!err)
			err = top_copy(t, f, ids, nr, d);
		if (err)
			return err;
	}
	t->total_all += t->total;
	if (ensure_mem((void **)&t->order, &t->cap_order, sizeof(*t->order),
		       t->nr_rows ? t->nr_rows : 1))
		return -ENOMEM;
	for (i = 0; i < t->nr_rows; i++)
		t->order[i] = (u32)i;
	/* qsort_r (glibc, _GNU_SOURCE): tables of several threads at once. */
	if (t->nr_rows > 1)
		qsort_r(t->order, t->nr_rows, sizeof(*t->order), top_cmp, t);
	return 0;
}

PERFSPY_API size_t perfspy_top__nr_rows(const struct perfspy_top *t)
{
	return t ? t->nr_rows : 0;
}

PERFSPY_API int perfspy_top__row(const struct perfspy_top *t, size_t idx,
				 struct perfspy_top_row *row)
{
	const struct top_row *r;

	if (!t || !row || row->sz < offsetofend(struct perfspy_top_row, total_all))
		return -PERFSPY_E_OPTS;
	if (idx >= t->nr_rows)
		return -ENOENT;
	r = &t->rows[t->order[idx]];
	row->name = strset_str(&t->names, r->name);
	row->tid = r->tid;
	row->thread_name = r->thread_name == STRSET_NONE ? NULL :
			   strset_str(&t->names, r->thread_name);
	row->own = r->own;
	row->total = r->total;
	row->own_all = r->own_all;
	row->total_all = r->total_all;
	return 0;
}

PERFSPY_API int perfspy_top__stats(const struct perfspy_top *t,
				   struct perfspy_top_stats *st)
{
	if (!t || !st || st->sz < offsetofend(struct perfspy_top_stats, nr_threads))
		return -PERFSPY_E_OPTS;
	st->total = t->total;
	st->total_all = t->total_all;
	st->nr_threads = t->nr_threads;
	return 0;
}

PERFSPY_API const struct perfspy_folder *
perfspy_top__interval(const struct perfspy_top *t)
{
	return t ? t->iv : NULL;
}
