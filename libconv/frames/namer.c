// SPDX-License-Identifier: GPL-2.0
/*
 * The names log (namer.h, docs/design.md §6.19).
 *
 * Records go into chunks of NAMER_CHUNK bytes, one after the other. A
 * chunk's @used says how many bytes of it hold whole records (stored with
 * release by the namer after the record's bytes, loaded with acquire by
 * the reader); @next is set, with release, once the namer will write no
 * more into it. So the reader reads only what was published, the namer
 * never touches a chunk the reader may free (one with @next set), and
 * the reader frees a chunk once its cursor moved on to the next.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "namer.h"

#define NAMER_CHUNK (256u << 10)

struct namer_rec {
	u64 sample;
	u64 b;
	const char *dso;
	u32 nr;
	u32 size; /* bytes of the record with its frames, 8-aligned */
	struct sym_frame fr[];
};

struct namer_chunk {
	struct namer_chunk *next; /* atomic */
	size_t used;		  /* atomic */
	_Alignas(8) u8 data[NAMER_CHUNK];
};

struct namer {
	struct namer_chunk *wc;	 /* the namer's chunk */
	struct namer_chunk *rc;	 /* the reader's chunk, */
	size_t roff;		 /* and where in it */
	u64 through;		 /* atomic: samples done */
	bool done, pausing;	 /* atomic */
	struct sym_ctx *left;	 /* atomic: namer_leave()'s */
	struct namer_stats st;	 /* put: the namer's, the rest the reader's */
};

static size_t rec_size(u32 nr)
{
	return (sizeof(struct namer_rec) + nr * sizeof(struct sym_frame) + 7) & ~(size_t)7;
}

int namer_new(struct namer **out)
{
	struct namer *n = calloc(1, sizeof(*n));

	if (n && !(n->wc = calloc(1, sizeof(*n->wc)))) {
		free(n);
		n = NULL;
	}
	if (!n)
		return -ENOMEM;
	n->rc = n->wc;
	*out = n;
	return 0;
}

void namer_free(struct namer *n)
{
	struct namer_chunk *c, *next;

	if (!n)
		return;
	for (c = n->rc; c; c = next) {
		next = c->next;
		free(c);
	}
	free(n);
}

int namer_put(struct namer *n, u64 sample, const char *dso, u64 b,
	      const struct sym_frame *fr, u32 nr)
{
	size_t sz = rec_size(nr), used = n->wc->used;
	struct namer_rec *r;

	if (nr > SYM_MAX_FRAMES)
		return -EINVAL;
	if (used + sz > NAMER_CHUNK) {
		struct namer_chunk *c = calloc(1, sizeof(*c));

		if (!c)
			return -ENOMEM;
		/* The old chunk is the reader's from here on. */
		__atomic_store_n(&n->wc->next, c, __ATOMIC_RELEASE);
		n->wc = c;
		used = 0;
	}
	r = (struct namer_rec *)(n->wc->data + used);
	r->sample = sample;
	r->b = b;
	r->dso = dso;
	r->nr = nr;
	r->size = (u32)sz;
	if (nr)
		memcpy(r->fr, fr, nr * sizeof(*fr));
	__atomic_store_n(&n->wc->used, used + sz, __ATOMIC_RELEASE);
	n->st.put++;
	return 0;
}

u64 namer_count(const struct namer *n)
{
	return n->st.put;
}

void namer_through(struct namer *n, u64 sample)
{
	__atomic_store_n(&n->through, sample, __ATOMIC_RELEASE);
}

void namer_finish(struct namer *n)
{
	__atomic_store_n(&n->done, true, __ATOMIC_RELEASE);
}

void namer_leave(struct namer *n, struct sym_ctx *sym)
{
	namer_finish(n);
	__atomic_store_n(&n->left, sym, __ATOMIC_RELEASE);
}

struct sym_ctx *namer_left(const struct namer *n)
{
	return __atomic_load_n(&n->left, __ATOMIC_ACQUIRE);
}

void namer_pausing(struct namer *n, bool on)
{
	__atomic_store_n(&n->pausing, on, __ATOMIC_RELEASE);
}

/* The published record at (*@c, *@off), moving to the next chunk at a
 * chunk's end (freeing the one left when @consume); NULL when nothing
 * more is published yet. */
static const struct namer_rec *rec_at(struct namer_chunk **c, size_t *off, bool consume)
{
	for (;;) {
		struct namer_chunk *next;

		if (*off < __atomic_load_n(&(*c)->used, __ATOMIC_ACQUIRE))
			return (const struct namer_rec *)((*c)->data + *off);
		next = __atomic_load_n(&(*c)->next, __ATOMIC_ACQUIRE);
		if (!next)
			return NULL;
		/* @used was final before @next was set: look once more. */
		if (*off < __atomic_load_n(&(*c)->used, __ATOMIC_ACQUIRE))
			continue;
		if (consume)
			free(*c);
		*c = next;
		*off = 0;
	}
}

static void wait_a_little(unsigned round)
{
	struct timespec ts = { 0, 20 * 1000 };

	if (round < 64) {
		cpu_relax();
		return;
	}
	nanosleep(&ts, NULL);
}

int namer_take(struct namer *n, u64 sample, const char *dso, u64 b,
	       struct sym_frame *fr)
{
	const struct namer_rec *r;
	unsigned round = 0;

	for (;; round++) {
		/* Read before looking at the records: when it says the
		 * sample is done, every record of it is already there. */
		bool last = __atomic_load_n(&n->through, __ATOMIC_ACQUIRE) >= sample ||
			    __atomic_load_n(&n->done, __ATOMIC_ACQUIRE);
		struct namer_chunk *c;
		size_t off;

		while ((r = rec_at(&n->rc, &n->roff, true)) && r->sample < sample)
			n->roff += r->size;
		/* Within the sample the two sides ask in the same order, so
		 * the first record is the one; the rest are looked at only
		 * if they ever do not (then none is consumed). */
		for (c = n->rc, off = n->roff; (r = rec_at(&c, &off, false)) && r->sample == sample;
		     off += r->size) {
			if (r->b != b || strcmp(r->dso, dso))
				continue;
			if (r->nr)
				memcpy(fr, r->fr, r->nr * sizeof(*fr));
			if (c == n->rc && off == n->roff)
				n->roff += r->size;
			n->st.taken++;
			return (int)r->nr;
		}
		/* A record of a later sample: this one has no more. */
		if (r || last || __atomic_load_n(&n->pausing, __ATOMIC_ACQUIRE)) {
			n->st.missed++;
			return NAMER_MISS;
		}
		if (!round)
			n->st.waits++;
		wait_a_little(round);
	}
}

void namer_stats(const struct namer *n, struct namer_stats *out)
{
	*out = n->st; /* both sides are done (namer.h) */
}
