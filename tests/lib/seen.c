// SPDX-License-Identifier: GPL-2.0
#include "seen.h"

#include <stdlib.h>
#include <unistd.h>

/* FNV-1a: order-sensitive, and enough to tell two records apart. */
static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *c++) * 1099511628211ULL;
	return h;
}

void seen_add(struct seen *s, const struct rd_rec *rec)
{
	if (s->nr == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->off = realloc(s->off, s->cap * sizeof(*s->off));
		s->sum = realloc(s->sum, s->cap * sizeof(*s->sum));
		if (!s->off || !s->sum)
			abort();
	}
	s->off[s->nr] = rec->offset;
	s->sum[s->nr++] = fnv(rec->hdr, rec->hdr->size);
}

void seen_free(struct seen *s)
{
	free(s->off);
	free(s->sum);
	s->off = s->sum = NULL;
	s->nr = s->cap = 0;
}

long pages_resident(int pm, const void *p, size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), first = (uintptr_t)p / pg;
	size_t np = ((uintptr_t)p + n) / pg - first, i;
	uint64_t *v = malloc(np * sizeof(*v) + 1);
	long r = 0;

	if (!v || pread(pm, v, np * sizeof(*v), (off_t)(first * sizeof(*v))) !=
			  (ssize_t)(np * sizeof(*v))) {
		free(v);
		return -1;
	}
	for (i = 0; i < np; i++)
		r += (long)(v[i] >> 63);
	free(v);
	return r;
}
