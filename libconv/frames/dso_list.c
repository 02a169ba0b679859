// SPDX-License-Identifier: GPL-2.0
/*
 * The DSOs the symbolizer has seen, as a list sorted by path (then build
 * id) for perfspy_session__dso() and perfspy_symbolizer__dso(): the pprof
 * writer's Mappings take their paths and build ids from it (issue 14).
 * The list is rebuilt when DSOs were added since the last call; its
 * strings live in the ctx's arena.
 */
#include "symbols_int.h"
#include "perfspy.h"

#include <errno.h>

static int cmp_info(const void *a, const void *b)
{
	const struct sym_dso_info *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	return strcmp(x->build_id ? x->build_id : "", y->build_id ? y->build_id : "");
}

static const char *hex_of(struct sym_ctx *ctx, const u8 *b, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char buf[2 * BUILD_ID_MAX + 1];
	size_t i;

	/* perf pads 20-byte ids to 24 bytes (dso_locate.c bid_hex). */
	while (n > 20 && !b[n - 1])
		n--;
	for (i = 0; i < n; i++) {
		buf[2 * i] = hex[b[i] >> 4];
		buf[2 * i + 1] = hex[b[i] & 15];
	}
	buf[2 * n] = '\0';
	return arena_strdup(&ctx->arena, buf);
}

int sym_dso_list(struct sym_ctx *ctx, const struct sym_dso_info **out, size_t *n)
{
	struct sym_dso_info *v;
	struct sym_dso *d;
	/* The DSOs sym_dso_get() named: not the ones made only to be
	 * opened ahead (dso_ahead.c). */
	size_t pos = 0, k = 0, nr = ctx->stats.dsos;

	if (ctx->dso_list && ctx->dso_list_n == nr) {
		*out = ctx->dso_list;
		*n = ctx->dso_list_n;
		return 0;
	}
	v = xreallocarray(NULL, nr + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	while (k < nr && (d = sym_dso_next(ctx, &pos))) {
		if (d->unseen)
			continue;
		v[k].path = d->name;
		v[k].build_id = NULL;
		if (d->bid_size && !(v[k].build_id = hex_of(ctx, d->bid, d->bid_size))) {
			free(v);
			return -ENOMEM;
		}
		k++;
	}
	qsort(v, k, sizeof(*v), cmp_info);
	free(ctx->dso_list);
	ctx->dso_list = v;
	ctx->dso_list_n = k;
	*out = v;
	*n = k;
	return 0;
}

int sym_dso_at(struct sym_ctx *ctx, u32 idx, struct perfspy_dso *d)
{
	struct perfspy_dso v = { 0 };
	const struct sym_dso_info *list;
	size_t n;
	int err;

	if (!d || d->sz < sizeof(size_t))
		return -PERFSPY_E_OPTS;
	err = sym_dso_list(ctx, &list, &n);
	if (err)
		return err;
	if (idx >= n)
		return -ENOENT;
	v.sz = d->sz < sizeof(v) ? d->sz : sizeof(v);
	v.path = list[idx].path;
	v.build_id = list[idx].build_id;
	memcpy(d, &v, v.sz);
	return 0;
}
