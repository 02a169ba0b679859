// SPDX-License-Identifier: GPL-2.0
/*
 * The py-spy raw writer: `frame;...;frame COUNT\n`, root first, one space
 * before the count, lines in fold_sorted() order (docs/output.md).
 */
#include "writers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Raw lines. In writer order consecutive stacks share long prefixes, so
 * the previous line stays rendered in @lb and only the frames after the
 * common prefix are rendered again; each line then goes out in one copy
 * through write.h's buffer (deep stacks make hundreds of MB of text).
 */
struct linebuf {
	char *p;
	size_t len, cap;
	size_t *ends; /* ends[j]: length of the text through frame j */
	size_t cap_ends;
	struct fold_raw prev; /* the previous line's ids, where they lie */
	bool have_prev;
};

/* How many ids @a and @b share from the root. Stacks in writer order
 * share most of theirs (168 frames a line on the deep-stack bench file),
 * so two narrow ones are compared four ids a word, where they lie: no
 * copy into 32 bits first (fold_stack()), which with the comparison was
 * 40% of the deep file's writing. */
static u32 common_prefix(const struct fold_raw *a, const struct fold_raw *b)
{
	u32 n = a->nr < b->nr ? a->nr : b->nr, j = 0;

	if (!a->wide && !b->wide) {
		const u16 *x = a->ids, *y = b->ids;

		for (; j + 4 <= n; j += 4) {
			u64 p, q;

			memcpy(&p, x + j, sizeof(p));
			memcpy(&q, y + j, sizeof(q));
			if (p != q)
				break;
		}
	}
	while (j < n && fold_raw_id(a, j) == fold_raw_id(b, j))
		j++;
	return j;
}

/* Frames @j.. of @s after the first @len bytes of the line. */
static inline __attribute__((always_inline)) int
render_from(const struct perfspy_folder *f, struct linebuf *lb, const struct fold_raw *s,
	    bool wide, u32 j, size_t *lenp)
{
	size_t len = *lenp;

	for (; j < s->nr; j++) {
		u32 id = wide ? ((const u32 *)s->ids)[j] : ((const u16 *)s->ids)[j];
		u32 nl = fold_name_len(f, id);

		if (ensure_mem((void **)&lb->p, &lb->cap, 1, len + nl + 2))
			return -ENOMEM;
		if (j)
			lb->p[len++] = ';';
		memcpy(lb->p + len, fold_name(f, id), nl);
		len += nl;
		lb->ends[j] = len;
	}
	*lenp = len;
	return 0;
}

static int write_stack(const struct perfspy_folder *f, size_t idx,
		       struct linebuf *lb, struct wout *w)
{
	struct fold_raw s;
	u32 j = 0;
	size_t len;
	int err;

	fold_stack_raw(f, idx, &s);
	if (lb->have_prev)
		j = common_prefix(&lb->prev, &s);
	len = j ? lb->ends[j - 1] : 0;
	if (ensure_mem((void **)&lb->ends, &lb->cap_ends, sizeof(*lb->ends), s.nr + 1))
		return -ENOMEM;
	err = s.wide ? render_from(f, lb, &s, true, j, &len) : render_from(f, lb, &s, false, j, &len);
	if (err)
		return err;
	lb->len = len;
	lb->prev = s;
	lb->have_prev = true;
	wout_put(w, lb->p, len);
	wout_put(w, " ", 1);
	wout_u64(w, s.count);
	wout_put(w, "\n", 1);
	return 0;
}

#define PF_FAR 16
#define PF_NEAR 8

int write_raw(const struct perfspy_folder *f, FILE *out)
{
	struct linebuf lb = { 0 };
	struct wout w;
	u32 *idx = NULL;
	size_t i, nr = perfspy_folder__nr_stacks(f);
	int err, werr;

	err = wout_init(&w, out);
	if (err)
		return err;
	err = fold_sorted(f, &idx);
	/* The sorted order jumps around the stacks' entries and ids:
	 * 5% of the converting thread waited on those loads on the build
	 * recording (issue 16). Each entry is asked for PF_FAR lines ahead,
	 * its ids PF_NEAR lines ahead, so the loads overlap the writing. */
	for (i = 0; !err && !w.err && i < nr; i++) {
		if (i + PF_FAR < nr)
			fold_prefetch(f, idx[i + PF_FAR], false);
		if (i + PF_NEAR < nr)
			fold_prefetch(f, idx[i + PF_NEAR], true);
		err = write_stack(f, idx[i], &lb, &w);
	}
	werr = wout_finish(&w);
	free(idx);
	free(lb.p);
	free(lb.ends);
	return err ? err : werr;
}
