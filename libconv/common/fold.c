// SPDX-License-Identifier: GPL-2.0
/*
 * Interning, stack aggregation and the writers' order (see fold.h). The
 * serializers live in folded/ (write_raw.c and the others); this file
 * knows none of them.
 */
#include "fold.h"
#include "hash.h"
#include "opts.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * A stack's frame ids, root first, in a pool block: 16 bits each when
 * every id of the stack is below 65,536, else 32 bits (@wide). Most
 * stacks name frames interned early, so most are narrow: the pool was
 * 61% of a deep-stack conversion's heap at its peak, and each new huge
 * page of it is zeroed by the kernel on the thread that adds the stack
 * (docs/design.md §6.30). fold_stack() gives every stack as 32-bit ids.
 */
struct fold_stack {
	u64 count;
	const void *ids; /* u16s, or u32s when wide */
	u32 nr;
	bool wide;
};

static inline u32 st_id(const struct fold_stack *st, u32 i)
{
	return st->wide ? ((const u32 *)st->ids)[i] : ((const u16 *)st->ids)[i];
}

/*
 * The stacks' ids live in blocks of at least POOL_BLK 32-bit words, each
 * stack in one block, appended in the order stacks are added (a narrow
 * stack takes half a word an id, rounded up). Blocks never move: a pool
 * that doubled by realloc copied itself at every step and kept up to half
 * of itself as slack, which the heap warmer then touched (docs/design.md
 * §6.5); a deep-stack conversion's 16 MB pool spent 5% of its time
 * copying.
 */
#define POOL_BLK (1u << 18)

struct pool_blk {
	struct pool_blk *prev; /* the block filled before */
	size_t len, cap;       /* words */
	u32 words[];
};

/* Stack table entry: hash word, index into stacks. */
struct stack_ent {
	u64 hash;
	u32 idx;
};

struct perfspy_folder {
	struct strset names; /* frame id -> text */

	struct pool_blk *pool; /* the block being filled; NULL before one */
	struct fold_stack *stacks;
	size_t nr_stacks, cap_stacks;
	struct htab stack_tab; /* struct stack_ent */
	u64 total;

	/* The timeline (fold.h, fold_timeline_add): one entry per sample
	 * while tl_on, dropped for good (tl_bad) when a sample had no
	 * time. */
	struct fold_tl *tl;
	size_t nr_tl, cap_tl;
	bool tl_on, tl_bad;

	/* Stacks sorted ahead on a thread of their own (struct
	 * fold_presort below), or NULL. */
	struct fold_presort *ps;
};

/* Free the pool's last block (its stacks are gone or going). */
static void pool_pop(struct perfspy_folder *f)
{
	struct pool_blk *b = f->pool;

	f->pool = b->prev;
	free(b);
}

PERFSPY_API int perfspy_folder__new(struct perfspy_folder **out)
{
	struct perfspy_folder *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	strset_init(&f->names);
	/* 1024 slots to start, as the folder always had. */
	htab_init(&f->stack_tab, sizeof(struct stack_ent), 1024);
	*out = f;
	return 0;
}

static void presort_free(struct fold_presort *ps);

PERFSPY_API void perfspy_folder__free(struct perfspy_folder *f)
{
	if (!f)
		return;
	presort_free(f->ps);
	strset_free(&f->names);
	while (f->pool)
		pool_pop(f);
	free(f->stacks);
	htab_free(&f->stack_tab);
	free(f->tl);
	free(f);
}

const char *fold_name(const struct perfspy_folder *f, u32 id)
{
	return id < strset_nr(&f->names) ? strset_str(&f->names, id) : "";
}

size_t fold_nr_names(const struct perfspy_folder *f)
{
	return strset_nr(&f->names);
}

static u32 intern_clean(struct perfspy_folder *f, const char *s, size_t len)
{
	u32 id;

	return strset_add(&f->names, s, len, &id) < 0 ? FOLD_NO_ID : id;
}

u32 fold_intern(struct perfspy_folder *f, const char *s, size_t len)
{
	char *clean;
	size_t k;
	u32 id;

	if (!memchr(s, ';', len) && !memchr(s, '\n', len) && !memchr(s, '\r', len))
		return intern_clean(f, s, len);
	/* Folded text has no escaping: ';' separates frames and '\n' ends
	 * lines, so they cannot stay in a name (stackcollapse-perf.pl also
	 * turns ';' into ':'). */
	clean = malloc(len ? len : 1);
	if (!clean)
		return FOLD_NO_ID;
	for (k = 0; k < len; k++)
		clean[k] = s[k] == ';' ? ':' :
			(s[k] == '\n' || s[k] == '\r') ? ' ' : s[k];
	id = intern_clean(f, clean, len);
	free(clean);
	return id;
}

int fold_add_ids(struct perfspy_folder *f, const u32 *ids, u32 nr, u64 weight)
{
	u32 idx;

	return fold_add_ids_idx(f, ids, nr, weight, &idx);
}

void fold_add_to(struct perfspy_folder *f, u32 idx, u64 weight)
{
	f->stacks[idx].count += weight;
	f->total += weight;
}

/* Room for @nr words in the pool, or NULL on ENOMEM. A stack longer
 * than a block gets a block of its own size. */
static u32 *pool_take(struct perfspy_folder *f, u32 nr)
{
	static u32 none[1]; /* the ids of an empty stack: never NULL */
	struct pool_blk *b = f->pool;

	if (!nr)
		return none;
	if (!b || b->cap - b->len < nr) {
		size_t cap = nr > POOL_BLK ? nr : POOL_BLK;

		if (cap > (SIZE_MAX - sizeof(*b)) / sizeof(u32) ||
		    !(b = malloc(sizeof(*b) + cap * sizeof(u32))))
			return NULL;
		b->prev = f->pool;
		b->len = 0;
		b->cap = cap;
		f->pool = b;
	}
	b->len += nr;
	return b->words + b->len - nr;
}

struct stack_key {
	const struct perfspy_folder *f;
	const u32 *ids;
	u32 nr;
};

/* Narrow ids @a against @b, 16 at a time without a branch (a loop
 * that leaves at the first difference is not vectorized). */
static bool ids_eq16(const u16 *a, const u32 *b, u32 nr)
{
	u32 i = 0, j, d;

	for (; i + 16 <= nr; i += 16) {
		for (d = 0, j = 0; j < 16; j++)
			d |= a[i + j] ^ b[i + j];
		if (d)
			return false;
	}
	for (; i < nr; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static bool stack_eq(const void *ent, const void *key)
{
	const struct stack_key *k = key;
	const struct fold_stack *st = &k->f->stacks[((const struct stack_ent *)ent)->idx];

	if (st->nr != k->nr || !k->nr)
		return st->nr == k->nr;
	/* A narrow stack has no id of 65,536 or more, so it equals only
	 * ids that have none either. */
	return st->wide ? !memcmp(st->ids, k->ids, (size_t)k->nr * sizeof(*k->ids)) :
			  ids_eq16(st->ids, k->ids, k->nr);
}

static void presort_more(struct perfspy_folder *f);

int fold_add_ids_idx(struct perfspy_folder *f, const u32 *ids, u32 nr,
		     u64 weight, u32 *idx)
{
	u64 h = hash_wide(ids, (size_t)nr * sizeof(*ids), 0x5bd1e995);
	struct stack_key key = { f, ids, nr };
	struct stack_ent *e;
	struct fold_stack *st;
	u32 *dst, hi = 0, i;
	bool wide;
	int err;

	err = htab_reserve(&f->stack_tab);
	if (err)
		return err;
	e = htab_probe(&f->stack_tab, h, stack_eq, &key);
	if (htab_used(e)) {
		f->stacks[e->idx].count += weight;
		f->total += weight;
		*idx = e->idx;
		return 0;
	}
	if (f->nr_stacks >= UINT32_MAX - 1)
		return -ENOMEM;
	err = ensure_mem((void **)&f->stacks, &f->cap_stacks, sizeof(*f->stacks),
			 f->nr_stacks + 1);
	if (err)
		return err;
	for (i = 0; i < nr; i++)
		hi |= ids[i];
	wide = hi > UINT16_MAX;
	if (!(dst = pool_take(f, wide ? nr : nr / 2 + nr % 2)))
		return -ENOMEM;
	st = &f->stacks[f->nr_stacks];
	st->count = weight;
	st->ids = dst;
	st->nr = nr;
	st->wide = wide;
	if (wide) {
		memcpy(dst, ids, (size_t)nr * sizeof(*ids));
	} else {
		u16 *d16 = (u16 *)dst;

		for (i = 0; i < nr; i++)
			d16[i] = (u16)ids[i];
	}
	e->idx = (u32)f->nr_stacks;
	htab_claim(&f->stack_tab, e, h);
	f->total += weight;
	*idx = (u32)(f->nr_stacks++);
	if (f->ps)
		presort_more(f);
	return 0;
}

static int add_frames(struct perfspy_folder *f, const char *const *frames,
		      size_t nr, uint64_t weight, u32 *idx)
{
	u32 stack_ids[64], *ids = stack_ids;
	size_t i;
	int err;

	if (nr > UINT32_MAX)
		return -EINVAL;
	if (nr > ARRAY_SIZE(stack_ids)) {
		ids = xreallocarray(NULL, nr, sizeof(*ids));
		if (!ids)
			return -ENOMEM;
	}
	for (i = 0; i < nr; i++) {
		ids[i] = fold_intern_str(f, frames[i]);
		if (ids[i] == FOLD_NO_ID) {
			err = -ENOMEM;
			goto out;
		}
	}
	err = fold_add_ids_idx(f, ids, (u32)nr, weight, idx);
out:
	if (ids != stack_ids)
		free(ids);
	return err;
}

PERFSPY_API int perfspy_folder__add(struct perfspy_folder *f,
				    const char *const *frames, size_t nr,
				    uint64_t weight)
{
	u32 idx;

	return add_frames(f, frames, nr, weight, &idx);
}

PERFSPY_API int perfspy_folder__add_sample(struct perfspy_folder *f,
					   const char *const *frames, size_t nr,
					   uint64_t weight, uint64_t time, uint32_t tid)
{
	u32 idx;
	int err = add_frames(f, frames, nr, weight, &idx);

	/* docs/output.md §8: the speedscope writer's time order. */
	return err ? err : fold_timeline_add(f, time, true, tid, idx);
}

PERFSPY_API int perfspy_folder__keep_timeline(struct perfspy_folder *f, bool on)
{
	if (!f)
		return -EINVAL;
	f->tl_on = on;
	return 0;
}

bool fold_timeline_on(const struct perfspy_folder *f)
{
	return f->tl_on && !f->tl_bad;
}

int fold_timeline_add(struct perfspy_folder *f, u64 time, bool has_time,
		      u32 tid, u32 idx)
{
	if (!fold_timeline_on(f))
		return 0;
	if (!has_time) {
		/* A timeline with holes would misplace every later sample:
		 * none at all, and the writers fall back to counts. */
		f->tl_bad = true;
		free(f->tl);
		f->tl = NULL;
		f->nr_tl = f->cap_tl = 0;
		return 0;
	}
	if (ensure_mem((void **)&f->tl, &f->cap_tl, sizeof(*f->tl), f->nr_tl + 1))
		return -ENOMEM;
	f->tl[f->nr_tl++] = (struct fold_tl){ time, tid, idx };
	return 0;
}

const struct fold_tl *fold_timeline(const struct perfspy_folder *f, size_t *nr)
{
	*nr = fold_timeline_on(f) ? f->nr_tl : 0;
	return *nr ? f->tl : NULL;
}

PERFSPY_API size_t perfspy_folder__nr_stacks(const struct perfspy_folder *f)
{
	return f->nr_stacks;
}

PERFSPY_API uint64_t perfspy_folder__total(const struct perfspy_folder *f)
{
	return f->total;
}

PERFSPY_API const char *perfspy_folder__frame(const struct perfspy_folder *f, uint32_t idx,
					      size_t *len)
{
	if (!f || idx >= strset_nr(&f->names))
		return NULL;
	if (len)
		*len = strset_len(&f->names, idx);
	return strset_str(&f->names, idx);
}

void fold_prefetch(const struct perfspy_folder *f, size_t idx, bool ids)
{
	const struct fold_stack *st = &f->stacks[idx];

	if (!ids) {
		__builtin_prefetch(st);
	} else if (st->nr) {
		size_t bytes = (size_t)st->nr * (st->wide ? 4 : 2), off;

		/* The writer compares every id with the previous line's
		 * (deep stacks: 168 ids, six lines): all the lines, up to
		 * eight. */
		if (bytes > 512)
			bytes = 512;
		for (off = 0; off < bytes; off += 64)
			__builtin_prefetch((const char *)st->ids + off);
	}
}

/*
 * Writer order: lines sorted bytewise, without rendering them. A line is
 * the frames joined by ';', then ' ', the count and '\n'. Two stacks
 * compare equal up to their first differing frame; there each is an
 * item: the frame name followed by ';' when the stack goes on, or by
 * " COUNT\n" when it ends there, and the items compare as strings. When
 * one name is a prefix of the other, the byte after it decides: ';', or
 * ' ' and then the count's digits (a frame "foo" ending a stack sorts
 * after "foo (a.c:1)" but before "foo z"). Names hold no ';' or '\n'
 * (fold_intern), so the comparison always ends inside the items.
 */
/* What the order reads: the names and the stacks. The folder's own
 * (fold_view_of()), or a snapshot a sorting thread keeps of them
 * (struct fold_presort). @count_used: a comparison read a count. */
struct fold_view {
	const char *const *strs;
	const u32 *lens;
	const struct fold_stack *stacks;
	bool count_used;
};

static struct fold_view fold_view_of(const struct perfspy_folder *f)
{
	return (struct fold_view){ f->names.strs, f->names.lens, f->stacks, false };
}

struct item {
	const char *name;
	u32 len;
	bool end;
	char num[24]; /* " COUNT\n" for ending items */
	u32 nlen;
};

static void item_of(const struct fold_view *fv, const struct fold_stack *st,
		    u32 depth, struct item *it)
{
	u32 id = st_id(st, depth);

	it->name = fv->strs[id];
	it->len = fv->lens[id];
	it->end = depth + 1 == st->nr;
	it->nlen = 0;
	if (it->end)
		it->nlen = (u32)snprintf(it->num, sizeof(it->num), " %llu\n",
					 (unsigned long long)st->count);
}

static int item_char(const struct item *it, u32 i)
{
	if (i < it->len)
		return (unsigned char)it->name[i];
	if (!it->end)
		return i == it->len ? ';' : -1;
	i -= it->len;
	return i < it->nlen ? (unsigned char)it->num[i] : -1;
}

static int cmp_items(struct fold_view *fv, const struct fold_stack *x,
		     const struct fold_stack *y, u32 depth)
{
	u32 a = st_id(x, depth), b = st_id(y, depth), i, n, la, lb;
	struct item ix, iy;
	int c;

	if (a == b) {
		bool ex = depth + 1 == x->nr, ey = depth + 1 == y->nr;

		/* ' ' (ends here) sorts before ';' (goes on). */
		return ex == ey ? 0 : ex ? -1 : 1;
	}
	la = fv->lens[a];
	lb = fv->lens[b];
	n = la < lb ? la : lb;
	c = memcmp(fv->strs[a], fv->strs[b], n);
	if (c)
		return c;
	/* One name is a prefix of the other: compare what follows. */
	item_of(fv, x, depth, &ix);
	item_of(fv, y, depth, &iy);
	for (i = n;; i++) {
		int cx = item_char(&ix, i), cy = item_char(&iy, i);

		/* The first digit of an ending item's count against a
		 * digit: the order may change as the count grows (struct
		 * fold_presort). Against anything else every count orders
		 * the same, since the digits are contiguous in ASCII. */
		if ((ix.end && i == ix.len + 1 && cy >= '0' && cy <= '9') ||
		    (iy.end && i == iy.len + 1 && cx >= '0' && cx <= '9'))
			fv->count_used = true;

		if (cx != cy)
			return cx < cy ? -1 : 1;
		if (cx < 0)
			return 0;
	}
}

/*
 * Two stacks in line order, knowing their first @from frames are equal
 * (and go on in both). *@lcp gets how many leading items the lines
 * share: the equal frames, less the shorter stack's last one when one
 * stack is a prefix of the other (there one line ends, the other goes on).
 */
static int cmp_stacks_from(struct fold_view *fv, const struct fold_stack *x,
			   const struct fold_stack *y, u32 from, u32 *lcp)
{
	u32 i = from, n = x->nr < y->nr ? x->nr : y->nr;

	if (!x->wide && !y->wide) {
		const u16 *px = x->ids, *py = y->ids;

		while (i < n && px[i] == py[i])
			i++;
	} else if (x->wide && y->wide) {
		const u32 *px = x->ids, *py = y->ids;

		while (i < n && px[i] == py[i])
			i++;
	} else {
		while (i < n && st_id(x, i) == st_id(y, i))
			i++;
	}
	if (i < n) {
		*lcp = i;
		return cmp_items(fv, x, y, i);
	}
	if (x->nr == y->nr) {
		*lcp = n;
		return 0;
	}
	*lcp = n ? n - 1 : 0;
	/* The shorter stack's line goes on with ' ', the longer one's with
	 * ';' (and the empty stack's line is " COUNT"). */
	return x->nr < y->nr ? -1 : 1;
}

/*
 * Merge sort of stack indices that carries, for each sorted index, how
 * many leading items its line shares with the line before it (@h), so a
 * comparison starts where the lines may differ instead of walking their
 * common frames again: deep stacks share long prefixes, and walking them
 * cost about 4% of a system-wide conversion's instructions (issue 16).
 * The merge rule is the LCP-aware merge (Ng and Kakehi; Bingmann and
 * Sanders): both heads sort after the last line taken; the one that shares
 * more items with it is the smaller, and only on equal counts are the
 * lines compared. Lines compare as strings of items (cmp_items), so the
 * rule holds; distinct stacks never compare equal, so the order is the one
 * any sort gives.
 */
/* The merge of v[0, m) and v[m, n), each sorted with its counts in @h,
 * through the scratch @tv and @th. */
static void merge_idx(struct fold_view *fv, u32 *v, u32 *h,
		      u32 *tv, u32 *th, size_t n, size_t m)
{
	size_t i, j, k;
	u32 ha = 0, hb = 0, l; /* each half's first line: none before it */

	for (i = 0, j = m, k = 0; i < m && j < n; k++) {
		bool take_a;

		if (ha != hb) {
			take_a = ha > hb;
		} else {
			take_a = cmp_stacks_from(fv, &fv->stacks[v[i]], &fv->stacks[v[j]],
						 ha, &l) <= 0;
			/* The head not taken shares l items with the one taken. */
			if (take_a)
				hb = l;
			else
				ha = l;
		}
		if (take_a) {
			tv[k] = v[i];
			th[k] = ha;
			if (++i < m)
				ha = h[i];
		} else {
			tv[k] = v[j];
			th[k] = hb;
			if (++j < n)
				hb = h[j];
		}
	}
	for (; i < m; i++, k++) {
		tv[k] = v[i];
		th[k] = ha;
		ha = i + 1 < m ? h[i + 1] : 0;
	}
	for (; j < n; j++, k++) {
		tv[k] = v[j];
		th[k] = hb;
		hb = j + 1 < n ? h[j + 1] : 0;
	}
	memcpy(v, tv, n * sizeof(*v));
	memcpy(h, th, n * sizeof(*h));
}

static void sort_idx(struct fold_view *fv, u32 *v, u32 *h,
		     u32 *tv, u32 *th, size_t n)
{
	size_t m;

	if (n < 2) {
		if (n)
			h[0] = 0;
		return;
	}
	m = n / 2;
	sort_idx(fv, v, h, tv, th, m);
	sort_idx(fv, v + m, h + m, tv, th, n - m);
	merge_idx(fv, v, h, tv, th, n, m);
}

/*
 * The sort on two threads: the second half sorted on a thread of its
 * own (with its own part of the scratch), then one merge. The sort ends
 * the conversion, when the other CPU has nothing else to do; it was 8% of
 * the converting thread's samples on the deep-stack bench file
 * (docs/design.md §6.13). Below SORT_PAR_MIN stacks, or with one CPU,
 * or without a thread, one thread sorts. The same merges run either way,
 * so the order is the same.
 */
#define SORT_PAR_MIN 16384

struct sort_half {
	struct fold_view fv;
	u32 *v, *h, *tv, *th;
	size_t n;
};

static void *sort_half_main(void *arg)
{
	struct sort_half *a = arg;

	sort_idx(&a->fv, a->v, a->h, a->tv, a->th, a->n);
	return NULL;
}

static void sort_top(const struct perfspy_folder *f, u32 *v, u32 *h, u32 *tv,
		     u32 *th, size_t n)
{
	struct fold_view fv = fold_view_of(f);
	size_t m = n / 2;
	struct sort_half a = { fv, v + m, h + m, tv + m, th + m, n - m };
	pthread_t t;

	if (n < SORT_PAR_MIN || online_cpus() < 2 ||
	    pthread_create(&t, NULL, sort_half_main, &a)) {
		sort_idx(&fv, v, h, tv, th, n);
		return;
	}
	sort_idx(&fv, v, h, tv, th, m);
	pthread_join(t, NULL);
	merge_idx(&fv, v, h, tv, th, n, m);
}

/*
 * Stacks sorted ahead (docs/design.md §6.23). The sort at the end was
 * 12 ms of the system-wide bench file's conversion and 16 ms of the
 * build recording's, on both CPUs, after the last sample and before the
 * first line. But a stack never changes once added (its ids; only its
 * count grows), and in the middle of a frame-pointer conversion the
 * second CPU is mostly idle (the system-wide file), or idle for the last
 * third (the build recording, once the namer is done). So every
 * PRESORT_BATCH new stacks are handed to a thread, at the lowest
 * priority so it takes only a CPU nobody else wants, which sorts them
 * into a run; at the end the runs and the stacks added since are merged
 * by the same LCP merges as before. The thread reads snapshots: the
 * batch's entries and the names added since the last batch, copied when
 * handed, since the folder's arrays move as they grow. A count that
 * decided a comparison may have grown since: only where one name is
 * the other followed by a space and a digit, and the stack with the
 * shorter one ends there (fold_view.count_used); such a run is sorted
 * again at the end. The order is the one a single sort gives, since
 * distinct stacks never compare equal.
 */
#define PRESORT_BATCH 4096

struct presort_batch {
	struct presort_batch *next;	/* the thread's queue */
	size_t base, n;			/* stacks [base, base + n) */
	struct fold_stack *snap;	/* their entries as handed */
	const char **nstrs;		/* the names added before them: ids */
	u32 *nlens;			/* [names_from, names_to) */
	size_t names_from, names_to;
	u32 *idx, *h;			/* the run: indices and shared items */
	bool ok;			/* a run, and no count decided it (read
					 * after the thread is joined) */
};

struct fold_presort {
	pthread_t th;
	bool th_live;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct presort_batch *head, *tail; /* queued for the thread (mu) */
	bool stop;			   /* no more batches (mu) */
	struct presort_batch **all;	   /* every batch, in order */
	size_t nr_all, cap_all;
	size_t handed, names_handed;
	bool off;			   /* a failure: sort at the end only */
	size_t runs_taken, runs_again;	   /* fold_sort_ahead_stats() */
	/* The thread's own: the names, the scratch. */
	const char **strs;
	u32 *lens;
	size_t cap_strs, cap_lens;
	u32 *scratch;
	size_t cap_scratch;
};

static void batch_free(struct presort_batch *b)
{
	if (!b)
		return;
	free(b->snap);
	free(b->nstrs);
	free(b->nlens);
	free(b->idx);
	free(b->h);
	free(b);
}

/* The thread's part of batch @b: the names it adds, then the run. */
static bool presort_batch(struct fold_presort *ps, struct presort_batch *b)
{
	size_t k, add = b->names_to - b->names_from;
	struct fold_view fv;

	if (ensure_mem((void **)&ps->strs, &ps->cap_strs, sizeof(*ps->strs), b->names_to) ||
	    ensure_mem((void **)&ps->lens, &ps->cap_lens, sizeof(*ps->lens), b->names_to) ||
	    ensure_mem((void **)&ps->scratch, &ps->cap_scratch, sizeof(*ps->scratch),
		       2 * b->n) ||
	    !(b->idx = xreallocarray(NULL, b->n, sizeof(*b->idx))) ||
	    !(b->h = xreallocarray(NULL, b->n, sizeof(*b->h))))
		return false;
	if (add) {
		memcpy(ps->strs + b->names_from, b->nstrs, add * sizeof(*ps->strs));
		memcpy(ps->lens + b->names_from, b->nlens, add * sizeof(*ps->lens));
	}
	fv = (struct fold_view){ ps->strs, ps->lens, b->snap, false };
	for (k = 0; k < b->n; k++)
		b->idx[k] = (u32)k;
	sort_idx(&fv, b->idx, b->h, ps->scratch, ps->scratch + b->n, b->n);
	for (k = 0; k < b->n; k++)
		b->idx[k] += (u32)b->base;
	return !fv.count_used;
}

static void *presort_main(void *arg)
{
	struct fold_presort *ps = arg;
	struct presort_batch *b;

	/* Only a CPU nobody else wants (Linux: a thread's own niceness;
	 * raising it needs no privilege). Refused, it runs as it is. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	for (;;) {
		pthread_mutex_lock(&ps->mu);
		while (!ps->head && !ps->stop)
			pthread_cond_wait(&ps->cv, &ps->mu);
		b = ps->head;
		if (b && !(ps->head = b->next))
			ps->tail = NULL;
		pthread_mutex_unlock(&ps->mu);
		if (!b)
			return NULL;
		b->ok = presort_batch(ps, b);
		/* What the run was made from: not needed again (a run
		 * sorted again at the end reads the folder). */
		free(b->snap);
		free(b->nstrs);
		free(b->nlens);
		b->snap = NULL;
		b->nstrs = NULL;
		b->nlens = NULL;
	}
}

/* No more batches: the thread finishes the queued ones and ends. */
static void presort_stop(struct fold_presort *ps)
{
	if (!ps->th_live)
		return;
	pthread_mutex_lock(&ps->mu);
	ps->stop = true;
	pthread_cond_signal(&ps->cv);
	pthread_mutex_unlock(&ps->mu);
	pthread_join(ps->th, NULL);
	ps->th_live = false;
	ps->stop = false; /* a later batch starts a thread again */
}

static void presort_free(struct fold_presort *ps)
{
	size_t i;

	if (!ps)
		return;
	presort_stop(ps);
	for (i = 0; i < ps->nr_all; i++)
		batch_free(ps->all[i]);
	free(ps->all);
	free(ps->strs);
	free(ps->lens);
	free(ps->scratch);
	pthread_mutex_destroy(&ps->mu);
	pthread_cond_destroy(&ps->cv);
	free(ps);
}

void fold_sort_ahead_stats(const struct perfspy_folder *f, size_t *taken, size_t *again)
{
	*taken = f->ps ? f->ps->runs_taken : 0;
	*again = f->ps ? f->ps->runs_again : 0;
}

int fold_sort_ahead(struct perfspy_folder *f)
{
	struct fold_presort *ps;

	if (f->ps || online_cpus() < 2)
		return 0;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	if (pthread_mutex_init(&ps->mu, NULL)) {
		free(ps);
		return 0;
	}
	if (pthread_cond_init(&ps->cv, NULL)) {
		pthread_mutex_destroy(&ps->mu);
		free(ps);
		return 0;
	}
	ps->handed = f->nr_stacks;
	ps->names_handed = 0;
	f->ps = ps;
	return 0;
}

/* After a new stack: a batch to the thread when PRESORT_BATCH have
 * come since the last. Any failure turns the sorting ahead off (the end
 * sorts what no run holds), never the conversion. */
static void presort_more(struct perfspy_folder *f)
{
	struct fold_presort *ps = f->ps;
	size_t n = f->nr_stacks - ps->handed, nn = strset_nr(&f->names), add;
	struct presort_batch *b;

	if (ps->off || n < PRESORT_BATCH)
		return;
	add = nn - ps->names_handed;
	b = calloc(1, sizeof(*b));
	if (!b || ensure_mem((void **)&ps->all, &ps->cap_all, sizeof(*ps->all), ps->nr_all + 1) ||
	    !(b->snap = xreallocarray(NULL, n, sizeof(*b->snap))) ||
	    (add && (!(b->nstrs = xreallocarray(NULL, add, sizeof(*b->nstrs))) ||
		     !(b->nlens = xreallocarray(NULL, add, sizeof(*b->nlens)))))) {
		batch_free(b);
		ps->off = true;
		return;
	}
	b->base = ps->handed;
	b->n = n;
	memcpy(b->snap, f->stacks + ps->handed, n * sizeof(*b->snap));
	b->names_from = ps->names_handed;
	b->names_to = nn;
	if (add) {
		memcpy(b->nstrs, f->names.strs + ps->names_handed, add * sizeof(*b->nstrs));
		memcpy(b->nlens, f->names.lens + ps->names_handed, add * sizeof(*b->nlens));
	}
	if (!ps->th_live) {
		if (pthread_create(&ps->th, NULL, presort_main, ps)) {
			batch_free(b);
			ps->off = true;
			return;
		}
		ps->th_live = true;
	}
	ps->all[ps->nr_all++] = b;
	ps->handed += n;
	ps->names_handed = nn;
	pthread_mutex_lock(&ps->mu);
	if (ps->tail)
		ps->tail->next = b;
	else
		ps->head = b;
	ps->tail = b;
	pthread_cond_signal(&ps->cv);
	pthread_mutex_unlock(&ps->mu);
}

/* Runs [@bound[i], @bound[i + 1]) of @v, i < @nb, merged pairwise,
 * neighbours first, into one. */
static void merge_runs(struct fold_view *fv, u32 *v, u32 *h, u32 *tv, u32 *th,
		       const size_t *bound, size_t nb)
{
	size_t i, step, base = bound[0];

	for (step = 1; step < nb; step *= 2)
		for (i = 0; i + step < nb; i += 2 * step) {
			size_t lo = bound[i], mid = bound[i + step];
			size_t hi = bound[i + 2 * step < nb ? i + 2 * step : nb];

			merge_idx(fv, v + lo - base, h + lo - base, tv, th, hi - lo, mid - lo);
		}
}

struct merge_half {
	struct fold_view fv;
	u32 *v, *h, *tv, *th;
	const size_t *bound;
	size_t nb;
};

static void *merge_half_main(void *arg)
{
	struct merge_half *a = arg;

	merge_runs(&a->fv, a->v, a->h, a->tv, a->th, a->bound, a->nb);
	return NULL;
}

/* merge_runs() with the second half of the runs on a thread of its own
 * (as sort_top() sorts), then one merge of the two. */
static void merge_top(struct fold_view *fv, u32 *v, u32 *h, u32 *tv, u32 *th,
		      const size_t *bound, size_t nb)
{
	size_t m = nb / 2, mid = bound[m];
	struct merge_half a = { *fv, v + mid, h + mid, tv + mid, th + mid, bound + m, nb - m };
	pthread_t t;

	if (nb < 4 || pthread_create(&t, NULL, merge_half_main, &a)) {
		merge_runs(fv, v, h, tv, th, bound, nb);
		return;
	}
	merge_runs(fv, v, h, tv, th, bound, m);
	pthread_join(t, NULL);
	merge_idx(fv, v, h, tv, th, bound[nb], mid);
}

/*
 * The whole order from the runs sorted ahead (fold_presort) and the
 * stacks added since: each run taken as it is, or sorted here again
 * (the thread failed, or read a count), the rest sorted here, then the
 * runs merged pairwise, neighbours first. Returns false, having done
 * nothing, when there are no runs to take.
 */
/* Stacks [@from, @to) sorted into v and h at the same places. */
static void sort_stretch(struct fold_view *fv, u32 *v, u32 *h, u32 *tv, u32 *th,
			 size_t from, size_t to)
{
	size_t k;

	for (k = from; k < to; k++)
		v[k] = (u32)k;
	sort_idx(fv, v + from, h + from, tv, th, to - from);
}

static bool sort_with_runs(const struct perfspy_folder *f, u32 *v, u32 *h, u32 *tv,
			   u32 *th, size_t n)
{
	struct fold_presort *ps = f->ps;
	struct fold_view fv = fold_view_of(f);
	size_t *bound, nb = 0, i, pos = 0;

	if (!ps)
		return false;
	presort_stop(ps);
	if (!ps->nr_all || ps->handed > n)
		return false;
	/* Runs, and the stretches between them (stacks added before the
	 * sorting ahead began, and since the last batch). */
	bound = xreallocarray(NULL, 2 * ps->nr_all + 2, sizeof(*bound));
	if (!bound)
		return false;
	for (i = 0; i <= ps->nr_all; i++) {
		struct presort_batch *b = i < ps->nr_all ? ps->all[i] : NULL;
		size_t end = b ? b->base : n;

		if (pos < end) {
			bound[nb++] = pos;
			sort_stretch(&fv, v, h, tv, th, pos, end);
		}
		if (!b)
			break;
		bound[nb++] = b->base;
		if (b->ok) { /* the thread is joined: presort_stop() */
			memcpy(v + b->base, b->idx, b->n * sizeof(*v));
			memcpy(h + b->base, b->h, b->n * sizeof(*h));
			ps->runs_taken++;
		} else {
			ps->runs_again++;
			sort_stretch(&fv, v, h, tv, th, b->base, b->base + b->n);
		}
		pos = b->base + b->n;
	}
	bound[nb] = n;
	merge_top(&fv, v, h, tv, th, bound, nb);
	free(bound);
	return true;
}

u32 fold_name_len(const struct perfspy_folder *f, u32 id)
{
	return id < strset_nr(&f->names) ? strset_len(&f->names, id) : 0;
}

int fold_stack(const struct perfspy_folder *f, size_t idx, struct fold_ids *buf,
	       const u32 **ids, u32 *nr, u64 *count)
{
	const struct fold_stack *st = &f->stacks[idx];
	const u16 *s16 = st->ids;
	u32 i;

	*nr = st->nr;
	*count = st->count;
	if (st->wide || !st->nr) {
		*ids = st->ids;
		return 0;
	}
	if (ensure_mem((void **)&buf->v, &buf->cap, sizeof(*buf->v), st->nr))
		return -ENOMEM;
	for (i = 0; i < st->nr; i++)
		buf->v[i] = s16[i];
	*ids = buf->v;
	return 0;
}

void fold_stack_raw(const struct perfspy_folder *f, size_t idx, struct fold_raw *out)
{
	const struct fold_stack *st = &f->stacks[idx];

	out->ids = st->ids;
	out->count = st->count;
	out->nr = st->nr;
	out->wide = st->wide;
}

u64 fold_stack_count(const struct perfspy_folder *f, size_t idx)
{
	return f->stacks[idx].count;
}

void fold_ids_free(struct fold_ids *buf)
{
	free(buf->v);
	buf->v = NULL;
	buf->cap = 0;
}

int fold_sorted(const struct perfspy_folder *f, u32 **out)
{
	u32 *idx, *tmp;
	size_t i, n = f->nr_stacks;

	idx = xreallocarray(NULL, n + 1, sizeof(*idx));
	/* The indices' scratch, their shared-item counts and theirs. */
	tmp = n + 1 <= SIZE_MAX / 3 ? xreallocarray(NULL, (n + 1) * 3, sizeof(*tmp)) : NULL;
	if (!idx || !tmp) {
		free(idx);
		free(tmp);
		return -ENOMEM;
	}
	if (!sort_with_runs(f, idx, tmp, tmp + n + 1, tmp + 2 * (n + 1), n)) {
		for (i = 0; i < n; i++)
			idx[i] = (u32)i;
		sort_top(f, idx, tmp, tmp + n + 1, tmp + 2 * (n + 1), n);
	}
	free(tmp);
	*out = idx;
	return 0;
}

/*
 * Move every stack of @src into @dst (issue 16: the folders of -j N worker
 * sessions, docs/design.md §6.4), leaving @src empty. The writers order
 * stacks by their text (fold_sorted), not by id or insertion, so the
 * merged folder writes the bytes of one that saw every sample itself.
 * Stacks go last first, and @src's pool blocks are freed behind them, so
 * the move costs about one pool, not two, at its peak. *@map gets, per frame id
 * of @src, its id in @dst (the caller frees it).
 */
int fold_merge(struct perfspy_folder *dst, struct perfspy_folder *src, u32 **map)
{
	size_t i, n = fold_nr_names(src), cap = 0;
	u32 *m, *ids = NULL, k;
	int err = 0;

	m = xreallocarray(NULL, n ? n : 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if ((m[i] = fold_intern(dst, fold_name(src, (u32)i),
					fold_name_len(src, (u32)i))) == FOLD_NO_ID) {
			free(m);
			return -ENOMEM;
		}
	for (i = src->nr_stacks; !err && i-- > 0;) {
		const struct fold_stack *st = &src->stacks[i];

		/* Each id mapped where it lies, 16 or 32 bits: no
		 * fold_stack() copy in between. */
		if ((err = ensure_mem((void **)&ids, &cap, sizeof(*ids), (size_t)st->nr + 1)))
			break;
		for (k = 0; k < st->nr; k++)
			ids[k] = m[st_id(st, k)];
		err = fold_add_ids(dst, ids, st->nr, st->count);
		/* The first stack of the last block moved: the block goes. */
		if (!err && src->pool && st->ids == src->pool->words) {
			pool_pop(src);
			src->nr_stacks = i;
		}
	}
	free(ids);
	if (err) {
		free(m);
		return err;
	}
	src->nr_stacks = 0;
	while (src->pool)
		pool_pop(src);
	htab_free(&src->stack_tab);
	*map = m;
	return 0;
}
