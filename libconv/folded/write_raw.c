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
	const u32 *prev;
	u32 prev_nr;
	/* fold_stack()'s room, in turns: the previous line's ids stay
	 * where they are while the next line's are written out. */
	struct fold_ids ids[2];
	unsigned turn;
};

static int write_stack(const struct perfspy_folder *f, size_t idx,
		       struct linebuf *lb, struct wout *w)
{
	const u32 *ids;
	u32 j = 0, n = 0, nr;
	u64 count;
	size_t len;

	if (fold_stack(f, idx, &lb->ids[lb->turn], &ids, &nr, &count))
		return -ENOMEM;
	lb->turn ^= 1;
	if (lb->prev) {
		n = lb->prev_nr < nr ? lb->prev_nr : nr;
		while (j < n && lb->prev[j] == ids[j])
			j++;
	}
	len = j ? lb->ends[j - 1] : 0;
	if (ensure_mem((void **)&lb->ends, &lb->cap_ends, sizeof(*lb->ends), nr + 1))
		return -ENOMEM;
	for (; j < nr; j++) {
		u32 id = ids[j], nl = fold_name_len(f, id);

		if (ensure_mem((void **)&lb->p, &lb->cap, 1, len + nl + 2))
			return -ENOMEM;
		if (j)
			lb->p[len++] = ';';
		memcpy(lb->p + len, fold_name(f, id), nl);
		len += nl;
		lb->ends[j] = len;
	}
	lb->len = len;
	lb->prev = ids;
	lb->prev_nr = nr;
	wout_put(w, lb->p, len);
	wout_put(w, " ", 1);
	wout_u64(w, count);
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
	fold_ids_free(&lb.ids[0]);
	fold_ids_free(&lb.ids[1]);
	return err ? err : werr;
}
