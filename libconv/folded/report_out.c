// SPDX-License-Identifier: GPL-2.0
/*
 * `perfspy report` output: the orderings every table is printed in (by
 * weight, ties by the name ranks report.c computes), and the share table
 * an engineer would otherwise build by hand with a Counter over py-spy
 * raw lines (see the seeds), as text or as one JSON object. Shares are of
 * all samples, so every number on the page can be compared with every
 * other. All lists come from
 * rp_group_by() groupings (weight, then name order) and all numbers are
 * printed in integer arithmetic (wout_fixed): same report, same bytes.
 */
#include "report.h"

#include <errno.h>
#include <stdlib.h>

#include "common/fold.h"
#include "common/opts.h"

/* ---- ordering ---- */

struct sort_ent {
	u32 key, other_rank, ent;
	u64 n;
};

static int cmp_sort_ent(const void *a, const void *b)
{
	const struct sort_ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	if (x->other_rank != y->other_rank)
		return x->other_rank < y->other_rank ? -1 : 1;
	return x->ent < y->ent ? -1 : x->ent > y->ent;
}

struct sort_group {
	struct rp_group g;
	u32 rank;
};

static int cmp_sort_group(const void *a, const void *b)
{
	const struct sort_group *x = a, *y = b;

	if (x->g.total != y->g.total)
		return x->g.total > y->g.total ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static u32 side_rank(const struct perfspy_report *r, u32 v, bool is_cat)
{
	return is_cat ? v : r->rank[v];
}

/* Groups from entries sorted by key, then sorted by total and name. */
static int rp_groups(const struct perfspy_report *r, struct rp_grouping *gr,
		     const struct sort_ent *se, size_t n, bool key_is_cat)
{
	struct sort_group *sg = xreallocarray(NULL, n + 1, sizeof(*sg));
	size_t i, ng = 0;

	gr->g = xreallocarray(NULL, n + 1, sizeof(*gr->g));
	if (!sg || !gr->g) {
		free(sg);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (!i || se[i].key != se[i - 1].key)
			sg[ng++] = (struct sort_group){
				{ se[i].key, 0, i, 0 }, side_rank(r, se[i].key, key_is_cat) };
		sg[ng - 1].g.total += se[i].n;
		sg[ng - 1].g.count++;
	}
	xqsort(sg, ng, sizeof(*sg), cmp_sort_group);
	for (i = 0; i < ng; i++)
		gr->g[i] = sg[i].g;
	gr->ng = ng;
	free(sg);
	return 0;
}

int rp_group_by(const struct perfspy_report *r, enum rp_rel_id rel, bool by_b,
		struct rp_grouping *out)
{
	const struct rp_rel *rl = &r->rel[rel];
	bool key_cat = rp_side_is_cat(rel, by_b), other_cat = rp_side_is_cat(rel, !by_b);
	struct sort_ent *se = xreallocarray(NULL, rl->nr + 1, sizeof(*se));
	size_t i;
	int err;

	memset(out, 0, sizeof(*out));
	out->rel = rl;
	out->by_b = by_b;
	out->ent = xreallocarray(NULL, rl->nr + 1, sizeof(*out->ent));
	if (!se || !out->ent) {
		free(se);
		rp_grouping_free(out);
		return -ENOMEM;
	}
	for (i = 0; i < rl->nr; i++) {
		u32 key = by_b ? rl->e[i].b : rl->e[i].a, other = by_b ? rl->e[i].a : rl->e[i].b;

		se[i] = (struct sort_ent){ key, side_rank(r, other, other_cat), (u32)i,
					   rl->e[i].n };
	}
	xqsort(se, rl->nr, sizeof(*se), cmp_sort_ent);
	for (i = 0; i < rl->nr; i++)
		out->ent[i] = se[i].ent;
	err = rp_groups(r, out, se, rl->nr, key_cat);
	free(se);
	if (err)
		rp_grouping_free(out);
	return err;
}

void rp_grouping_free(struct rp_grouping *gr)
{
	free(gr->ent);
	free(gr->g);
	memset(gr, 0, sizeof(*gr));
}

const struct rp_group *rp_find(const struct rp_grouping *gr, u32 key)
{
	size_t i;

	for (i = 0; i < gr->ng; i++)
		if (gr->g[i].key == key)
			return &gr->g[i];
	return NULL;
}

struct rp_out {
	const struct perfspy_report *r;
	struct wout w;
	unsigned top;
	/* Groupings used by the sections. */
	struct rp_grouping cat_py, cat_nat, cat_thr, cat_sys; /* by category */
	struct rp_grouping thr_cat, thr_py, py_cat, py_nat;   /* by thread/py */
	struct rp_grouping proc_cat, proc_py, tid_cat, tid_py; /* by process/TID */
};

static const char *const by_names[] = { "category", "thread", "python", "process",
					"tid" };

static u64 total_or_1(const struct perfspy_report *r)
{
	return r->total ? r->total : 1;
}

/* "  40.0%" right-aligned in 7 columns. */
static void put_pct(struct wout *w, const struct perfspy_report *r, u64 n)
{
	u64 tenths = (u64)(((unsigned __int128)n * 2000 + total_or_1(r)) /
			   ((unsigned __int128)total_or_1(r) * 2));
	char buf[32];

	snprintf(buf, sizeof(buf), "%5llu.%llu%%", (unsigned long long)(tenths / 10),
		 (unsigned long long)(tenths % 10));
	wout_str(w, buf);
}

/* The entries of one group: "    12.3%  NAME", the first @top of them,
 * then how many more there were and their share. */
static void text_list(struct rp_out *o, const struct rp_grouping *gr,
		      const struct rp_group *g, const char *what)
{
	const struct perfspy_report *r = o->r;
	bool other_cat = rp_side_is_cat((enum rp_rel_id)(gr->rel - r->rel), !gr->by_b);
	size_t i, len;
	u64 rest = 0;

	if (!g || !g->count)
		return;
	wout_fmt(&o->w, "  %s:\n", what);
	for (i = 0; i < g->count; i++) {
		const struct rp_ent *e = &gr->rel->e[gr->ent[g->first + i]];
		const char *s = rp_text(r, gr->by_b ? e->a : e->b, other_cat, &len);

		if (i >= o->top) {
			rest += e->n;
			continue;
		}
		wout_str(&o->w, "  ");
		put_pct(&o->w, r, e->n);
		wout_str(&o->w, "  ");
		wout_put(&o->w, s, len);
		wout_str(&o->w, "\n");
	}
	if (g->count > o->top) {
		wout_str(&o->w, "  ");
		put_pct(&o->w, r, rest);
		wout_fmt(&o->w, "  (%zu more)\n", g->count - o->top);
	}
}

static void text_row(struct rp_out *o, u64 n, const char *s, size_t len)
{
	char buf[32];

	put_pct(&o->w, o->r, n);
	snprintf(buf, sizeof(buf), " %9llu  ", (unsigned long long)n);
	wout_str(&o->w, buf);
	wout_put(&o->w, s, len);
	wout_str(&o->w, "\n");
}

static void text_head(struct rp_out *o, const char *s, size_t len, u64 n)
{
	wout_str(&o->w, "\n== ");
	wout_put(&o->w, s, len);
	wout_str(&o->w, ": ");
	wout_fixed(&o->w, n * 100, total_or_1(o->r), 1);
	wout_fmt(&o->w, "%% (%llu samples)\n", (unsigned long long)n);
}

static void text_by_category(struct rp_out *o)
{
	const struct perfspy_report *r = o->r;
	size_t i, len;
	const char *s;

	wout_str(&o->w, "  share   samples  category\n");
	for (i = 0; i < r->ncats; i++) {
		u32 c = r->cat_order[i];

		if (r->cat_total[c]) {
			s = rp_text(r, c, true, &len);
			text_row(o, r->cat_total[c], s, len);
		}
	}
	for (i = 0; i < r->ncats; i++) {
		u32 c = r->cat_order[i];

		if (!r->cat_total[c])
			continue;
		s = rp_text(r, c, true, &len);
		text_head(o, s, len, r->cat_total[c]);
		text_list(o, &o->cat_py, rp_find(&o->cat_py, c), "innermost Python frames");
		text_list(o, &o->cat_nat, rp_find(&o->cat_nat, c), "native leaves");
		if (r->has_threads)
			text_list(o, &o->cat_thr, rp_find(&o->cat_thr, c), "threads");
		text_list(o, &o->cat_sys, rp_find(&o->cat_sys, c), "kernel entries");
	}
}

/* Rows of @rows (a grouping by thread or Python frame), then one section
 * per shown row with its lists from @a and @b. */
static void text_by_rows(struct rp_out *o, const struct rp_grouping *rows,
			 const char *col, const struct rp_grouping *a,
			 const char *a_what, const struct rp_grouping *b,
			 const char *b_what)
{
	size_t i, len, n = rows->ng < o->top ? rows->ng : o->top;
	const char *s;
	u64 rest = 0;

	wout_fmt(&o->w, "  share   samples  %s\n", col);
	for (i = 0; i < rows->ng; i++) {
		if (i >= n) {
			rest += rows->g[i].total;
			continue;
		}
		s = rp_text(o->r, rows->g[i].key, false, &len);
		text_row(o, rows->g[i].total, s, len);
	}
	if (rows->ng > n) {
		put_pct(&o->w, o->r, rest);
		wout_fmt(&o->w, " %9llu  (%zu more)\n", (unsigned long long)rest,
			 rows->ng - n);
	}
	for (i = 0; i < n; i++) {
		s = rp_text(o->r, rows->g[i].key, false, &len);
		text_head(o, s, len, rows->g[i].total);
		text_list(o, a, rp_find(a, rows->g[i].key), a_what);
		text_list(o, b, rp_find(b, rows->g[i].key), b_what);
	}
}

static void put_text(struct rp_out *o, int by)
{
	const struct perfspy_report *r = o->r;

	wout_fmt(&o->w, "perfspy report: %llu samples", (unsigned long long)r->total);
	if (r->has_threads)
		wout_fmt(&o->w, ", %zu thread name%s", o->thr_cat.ng,
			 o->thr_cat.ng == 1 ? "" : "s");
	wout_fmt(&o->w, "; rows by %s; shares of all samples.\n"
		 "A stack's category is the first rule that matches a frame below its\n"
		 "innermost Python frame (perfspy report --print-rules).\n\n", by_names[by]);
	if (by == PERFSPY_REPORT_BY_THREAD)
		text_by_rows(o, &o->thr_cat, "thread", &o->thr_cat, "categories",
			     &o->thr_py, "innermost Python frames");
	else if (by == PERFSPY_REPORT_BY_PYTHON)
		text_by_rows(o, &o->py_cat, "innermost Python frame", &o->py_cat,
			     "categories", &o->py_nat, "native leaves");
	else if (by == PERFSPY_REPORT_BY_PROCESS)
		text_by_rows(o, &o->proc_cat, "process", &o->proc_cat, "categories",
			     &o->proc_py, "innermost Python frames");
	else if (by == PERFSPY_REPORT_BY_TID)
		text_by_rows(o, &o->tid_cat, "thread id", &o->tid_cat, "categories",
			     &o->tid_py, "innermost Python frames");
	else
		text_by_category(o);
}

/* ---- JSON ---- */

static void json_str(struct wout *w, const char *s, size_t len)
{
	wout_str(w, "\"");
	wout_json(w, s, len);
	wout_str(w, "\"");
}

static void json_named(struct rp_out *o, const char *s, size_t len, u64 n)
{
	wout_str(&o->w, "{\"name\":");
	json_str(&o->w, s, len);
	wout_fmt(&o->w, ",\"samples\":%llu,\"share\":", (unsigned long long)n);
	wout_fixed(&o->w, n, total_or_1(o->r), 4);
}

/* `,"KEY":[{"name","samples","share"}...]`, the first @top entries. */
static void json_list(struct rp_out *o, const char *key,
		      const struct rp_grouping *gr, const struct rp_group *g)
{
	const struct perfspy_report *r = o->r;
	bool other_cat = rp_side_is_cat((enum rp_rel_id)(gr->rel - r->rel), !gr->by_b);
	size_t i, len;

	wout_fmt(&o->w, ",\"%s\":[", key);
	for (i = 0; g && i < g->count && i < o->top; i++) {
		const struct rp_ent *e = &gr->rel->e[gr->ent[g->first + i]];
		const char *s = rp_text(r, gr->by_b ? e->a : e->b, other_cat, &len);

		if (i)
			wout_str(&o->w, ",");
		json_named(o, s, len, e->n);
		wout_str(&o->w, "}");
	}
	wout_str(&o->w, "]");
}

static void json_rows(struct rp_out *o, const char *key,
		      const struct rp_grouping *rows, const char *a_key,
		      const struct rp_grouping *a, const char *b_key,
		      const struct rp_grouping *b)
{
	size_t i, len;
	const char *s;

	wout_fmt(&o->w, ",\n\"%s\":[", key);
	for (i = 0; i < rows->ng && i < o->top; i++) {
		s = rp_text(o->r, rows->g[i].key, false, &len);
		wout_str(&o->w, i ? ",\n" : "\n");
		json_named(o, s, len, rows->g[i].total);
		json_list(o, a_key, a, rp_find(a, rows->g[i].key));
		json_list(o, b_key, b, rp_find(b, rows->g[i].key));
		wout_str(&o->w, "}");
	}
	wout_str(&o->w, "]");
}

static void put_json(struct rp_out *o, int by)
{
	const struct perfspy_report *r = o->r;
	size_t i, len;
	const char *s;

	wout_fmt(&o->w, "{\"samples\":%llu,\"by\":\"%s\",\"top\":%u,\"threads_named\":%s,\n"
		 "\"categories\":[", (unsigned long long)r->total, by_names[by],
		 o->top, r->has_threads ? "true" : "false");
	for (i = 0; i < r->ncats; i++) {
		u32 c = r->cat_order[i];

		s = rp_text(r, c, true, &len);
		wout_str(&o->w, i ? ",\n" : "\n");
		json_named(o, s, len, r->cat_total[c]);
		json_list(o, "python", &o->cat_py, rp_find(&o->cat_py, c));
		json_list(o, "native", &o->cat_nat, rp_find(&o->cat_nat, c));
		json_list(o, "threads", &o->cat_thr, rp_find(&o->cat_thr, c));
		json_list(o, "syscalls", &o->cat_sys, rp_find(&o->cat_sys, c));
		wout_str(&o->w, "}");
	}
	wout_str(&o->w, "]");
	json_rows(o, "threads", &o->thr_cat, "categories", &o->thr_cat, "python",
		  &o->thr_py);
	json_rows(o, "python", &o->py_cat, "categories", &o->py_cat, "native",
		  &o->py_nat);
	json_rows(o, "processes", &o->proc_cat, "categories", &o->proc_cat, "python",
		  &o->proc_py);
	json_rows(o, "tids", &o->tid_cat, "categories", &o->tid_cat, "python",
		  &o->tid_py);
	wout_str(&o->w, "}\n");
}

static int rp_out_group(struct rp_out *o)
{
	const struct perfspy_report *r = o->r;
	int err;

	err = rp_group_by(r, REL_CAT_PY, false, &o->cat_py);
	if (!err)
		err = rp_group_by(r, REL_CAT_NAT, false, &o->cat_nat);
	if (!err)
		err = rp_group_by(r, REL_CAT_THR, false, &o->cat_thr);
	if (!err)
		err = rp_group_by(r, REL_CAT_SYS, false, &o->cat_sys);
	if (!err)
		err = rp_group_by(r, REL_CAT_THR, true, &o->thr_cat);
	if (!err)
		err = rp_group_by(r, REL_THR_PY, false, &o->thr_py);
	if (!err)
		err = rp_group_by(r, REL_CAT_PY, true, &o->py_cat);
	if (!err)
		err = rp_group_by(r, REL_PY_NAT, false, &o->py_nat);
	if (!err)
		err = rp_group_by(r, REL_CAT_PROC, true, &o->proc_cat);
	if (!err)
		err = rp_group_by(r, REL_PROC_PY, false, &o->proc_py);
	if (!err)
		err = rp_group_by(r, REL_CAT_TID, true, &o->tid_cat);
	if (!err)
		err = rp_group_by(r, REL_TID_PY, false, &o->tid_py);
	return err;
}

PERFSPY_API int perfspy_report__write(const struct perfspy_report *r,
				      FILE *out,
				      const struct perfspy_report_write_opts *opts)
{
	struct rp_out o = { .r = r };
	int by, err;

	if (!OPTS_VALID(opts, perfspy_report_write_opts))
		return -PERFSPY_E_OPTS;
	by = OPTS_GET(opts, by, PERFSPY_REPORT_BY_CATEGORY);
	if (by < 0 || by > PERFSPY_REPORT_BY_TID)
		return -EINVAL;
	o.top = OPTS_GET(opts, top, 0);
	if (!o.top)
		o.top = 5;
	err = rp_out_group(&o);
	if (!err)
		err = wout_init(&o.w, out);
	if (!err) {
		if (OPTS_GET(opts, json, false))
			put_json(&o, by);
		else
			put_text(&o, by);
		err = wout_finish(&o.w);
	}
	rp_grouping_free(&o.cat_py);
	rp_grouping_free(&o.cat_nat);
	rp_grouping_free(&o.cat_thr);
	rp_grouping_free(&o.cat_sys);
	rp_grouping_free(&o.thr_cat);
	rp_grouping_free(&o.thr_py);
	rp_grouping_free(&o.py_cat);
	rp_grouping_free(&o.py_nat);
	rp_grouping_free(&o.proc_cat);
	rp_grouping_free(&o.proc_py);
	rp_grouping_free(&o.tid_cat);
	rp_grouping_free(&o.tid_py);
	return err;
}
