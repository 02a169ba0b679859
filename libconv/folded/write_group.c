// SPDX-License-Identifier: GPL-2.0
/*
 * Frame groups for the flame graph and speedscope writers
 * (docs/output.md §7.1): a native frame with a source line,
 * `__sin_fma (s_sin.c:123)`, is drawn as its function, `__sin_fma
 * (s_sin.c)`, so a function sampled at twenty lines is one box, not
 * twenty. The grammar (common/frame.c, frame_group_prefix) says which
 * frames group; this file numbers the groups. With
 * perfspy_write_opts.lineno every frame is its own group.
 *
 * Group ids are given in first-seen order; writers sort by text where
 * order matters, so output does not depend on it.
 */
#include "writers.h"

#include <errno.h>
#include <stdlib.h>

int fgroups_init(struct fgroups *g, const struct perfspy_folder *f, bool lineno)
{
	size_t i, nr = fold_nr_names(f);

	memset(g, 0, sizeof(*g));
	g->f = f;
	g->lineno = lineno;
	strset_init(&g->names);
	g->gid = xreallocarray(NULL, nr + 1, sizeof(*g->gid));
	if (!g->gid)
		return -ENOMEM;
	for (i = 0; i < nr; i++)
		g->gid[i] = FOLD_NO_ID;
	g->nr_ids = nr;
	return 0;
}

void fgroups_free(struct fgroups *g)
{
	strset_free(&g->names);
	free(g->gid);
	free(g->grouped);
	memset(g, 0, sizeof(*g));
}

int fgroups_of(struct fgroups *g, u32 id, u32 *out)
{
	const char *s = fold_name(g->f, id);
	size_t len = fold_name_len(g->f, id), pre = 0;
	struct frame_parts p;
	char buf[4096];
	u32 gid;
	int r;

	if (id < g->nr_ids && g->gid[id] != FOLD_NO_ID) {
		*out = g->gid[id];
		return 0;
	}
	if (!g->lineno) {
		frame_parse(s, len, &p);
		pre = frame_group_prefix(s, len, &p);
	}
	/* A name too long for the buffer stays its own group. */
	if (pre && pre < sizeof(buf)) {
		memcpy(buf, s, pre);
		buf[pre] = ')';
		r = strset_add(&g->names, buf, pre + 1, &gid);
	} else {
		pre = 0;
		r = strset_add(&g->names, s, len, &gid);
	}
	if (r < 0)
		return r;
	if (r > 0 && ensure_mem((void **)&g->grouped, &g->cap_grouped, 1, gid + 1))
		return -ENOMEM;
	if (r > 0)
		g->grouped[gid] = pre != 0;
	if (id < g->nr_ids)
		g->gid[id] = gid;
	*out = gid;
	return 0;
}
