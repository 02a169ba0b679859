// SPDX-License-Identifier: GPL-2.0
/*
 * Interning, stack aggregation and the writers' order (see fold.h). The
 * serializers live in folded/ (write_raw.c and the others); this file
 * knows none of them.
 */
#include "fold.h"
#include "opts.h"

#include <errno.h>
#include <stdlib.h>

struct fold_stack {
	u64 hash;
	u64 count;
	size_t off; /* into pool */
	u32 nr;
};

struct perfspy_folder {
	struct arena strs;
	const char **names; /* id -> text */
	u32 *name_lens;
	size_t nr_names, cap_names, cap_lens;
	u32 *name_slots; /* hash -> id + 1 */
	size_t name_slots_cap;

	u32 *pool;
	size_t pool_len, pool_cap;
	struct fold_stack *stacks;
	size_t nr_stacks, cap_stacks;
	u32 *stack_slots; /* hash -> stack index + 1 */
	size_t stack_slots_cap;
	u64 total;
};

PERFSPY_API int perfspy_folder__new(struct perfspy_folder **out)
{
	struct perfspy_folder *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	arena_init(&f->strs);
	*out = f;
	return 0;
}

PERFSPY_API void perfspy_folder__free(struct perfspy_folder *f)
{
	if (!f)
		return;
	arena_free(&f->strs);
	free(f->names);
	free(f->name_lens);
	free(f->name_slots);
	free(f->pool);
	free(f->stacks);
	free(f->stack_slots);
	free(f);
}

typedef u64 (*slot_hash_fn)(const struct perfspy_folder *f, u32 idx);

/* Grow a slot table of @cap (a power of two) holding index+1 values
 * once it is half full. */
static int rehash(u32 **slots, size_t *cap, size_t nr, slot_hash_fn hash_of,
		  const struct perfspy_folder *f)
{
	size_t ncap = *cap ? *cap * 2 : 1024, i, j;
	u32 *n;

	if ((nr + 1) * 2 <= *cap)
		return 0;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (i = 0; i < *cap; i++) {
		u32 v = (*slots)[i];

		if (!v)
			continue;
		j = hash_of(f, v - 1) & (ncap - 1);
		while (n[j])
			j = (j + 1) & (ncap - 1);
		n[j] = v;
	}
	free(*slots);
	*slots = n;
	*cap = ncap;
	return 0;
}

/* Names keep no stored hash: recomputed only when the table grows. */
static u64 name_hash_of(const struct perfspy_folder *f, u32 id)
{
	return hash_bytes(f->names[id], f->name_lens[id], 0);
}

static u64 stack_hash_of(const struct perfspy_folder *f, u32 idx)
{
	return f->stacks[idx].hash;
}

const char *fold_name(const struct perfspy_folder *f, u32 id)
{
	return id < f->nr_names ? f->names[id] : "";
}

static u32 intern_clean(struct perfspy_folder *f, const char *s, size_t len)
{
	u64 h = hash_bytes(s, len, 0);
	const char *copy;
	size_t i;
	u32 v;

	if (rehash(&f->name_slots, &f->name_slots_cap, f->nr_names,
		   name_hash_of, f))
		return FOLD_NO_ID;
	for (i = h & (f->name_slots_cap - 1); (v = f->name_slots[i]);
	     i = (i + 1) & (f->name_slots_cap - 1)) {
		if (f->name_lens[v - 1] == len && !memcmp(f->names[v - 1], s, len))
			return v - 1;
	}
	if (len > UINT32_MAX || f->nr_names >= UINT32_MAX - 1 ||
	    ensure_mem((void **)&f->names, &f->cap_names, sizeof(*f->names),
		       f->nr_names + 1) ||
	    ensure_mem((void **)&f->name_lens, &f->cap_lens,
		       sizeof(*f->name_lens), f->nr_names + 1))
		return FOLD_NO_ID;
	copy = arena_strndup(&f->strs, s, len);
	if (!copy)
		return FOLD_NO_ID;
	f->names[f->nr_names] = copy;
	f->name_lens[f->nr_names] = (u32)len;
	f->name_slots[i] = (u32)(++f->nr_names);
	return (u32)(f->nr_names - 1);
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

int fold_add_ids_idx(struct perfspy_folder *f, const u32 *ids, u32 nr,
		     u64 weight, u32 *idx)
{
	u64 h = nr ? hash_bytes(ids, (size_t)nr * sizeof(*ids), 0x5bd1e995) :
		hash_bytes("", 0, 0x5bd1e995);
	struct fold_stack *st;
	size_t i;
	u32 v;
	int err;

	err = rehash(&f->stack_slots, &f->stack_slots_cap, f->nr_stacks,
		     stack_hash_of, f);
	if (err)
		return err;
	for (i = h & (f->stack_slots_cap - 1); (v = f->stack_slots[i]);
	     i = (i + 1) & (f->stack_slots_cap - 1)) {
		st = &f->stacks[v - 1];
		if (st->hash == h && st->nr == nr &&
		    (!nr || !memcmp(f->pool + st->off, ids, (size_t)nr * sizeof(*ids)))) {
			st->count += weight;
			f->total += weight;
			*idx = v - 1;
			return 0;
		}
	}
	if (f->nr_stacks >= UINT32_MAX - 1)
		return -ENOMEM;
	err = ensure_mem((void **)&f->stacks, &f->cap_stacks, sizeof(*f->stacks),
			 f->nr_stacks + 1);
	/* At least one slot: an empty stack must not leave the pool NULL
	 * (pointer arithmetic on NULL is undefined even for 0 bytes). */
	if (!err)
		err = ensure_mem((void **)&f->pool, &f->pool_cap, sizeof(*f->pool),
				 f->pool_len + nr + 1);
	if (err)
		return err;
	st = &f->stacks[f->nr_stacks];
	st->hash = h;
	st->count = weight;
	st->off = f->pool_len;
	st->nr = nr;
	if (nr)
		memcpy(f->pool + f->pool_len, ids, (size_t)nr * sizeof(*ids));
	f->pool_len += nr;
	f->stack_slots[i] = (u32)(++f->nr_stacks);
	f->total += weight;
	*idx = (u32)(f->nr_stacks - 1);
	return 0;
}

PERFSPY_API int perfspy_folder__add(struct perfspy_folder *f,
				    const char *const *frames, size_t nr,
				    uint64_t weight)
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
	err = fold_add_ids(f, ids, (u32)nr, weight);
out:
	if (ids != stack_ids)
		free(ids);
	return err;
}

PERFSPY_API size_t perfspy_folder__nr_stacks(const struct perfspy_folder *f)
{
	return f->nr_stacks;
}

PERFSPY_API uint64_t perfspy_folder__total(const struct perfspy_folder *f)
{
	return f->total;
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
struct item {
	const char *name;
	u32 len;
	bool end;
	char num[24]; /* " COUNT\n" for ending items */
	u32 nlen;
};

static void item_of(const struct perfspy_folder *f, const struct fold_stack *st,
		    u32 depth, struct item *it)
{
	u32 id = f->pool[st->off + depth];

	it->name = f->names[id];
	it->len = f->name_lens[id];
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

static int cmp_items(const struct perfspy_folder *f, const struct fold_stack *x,
		     const struct fold_stack *y, u32 depth)
{
	u32 a = f->pool[x->off + depth], b = f->pool[y->off + depth], i, n;
	struct item ix, iy;
	int c;

	if (a == b) {
		bool ex = depth + 1 == x->nr, ey = depth + 1 == y->nr;

		/* ' ' (ends here) sorts before ';' (goes on). */
		return ex == ey ? 0 : ex ? -1 : 1;
	}
	n = f->name_lens[a] < f->name_lens[b] ? f->name_lens[a] : f->name_lens[b];
	c = memcmp(f->names[a], f->names[b], n);
	if (c)
		return c;
	/* One name is a prefix of the other: compare what follows. */
	item_of(f, x, depth, &ix);
	item_of(f, y, depth, &iy);
	for (i = n;; i++) {
		int cx = item_char(&ix, i), cy = item_char(&iy, i);

		if (cx != cy)
			return cx < cy ? -1 : 1;
		if (cx < 0)
			return 0;
	}
}

/* Two stacks in line order: walk the common frames, then compare the
 * items where they part. */
static int cmp_stacks(const struct perfspy_folder *f, const struct fold_stack *x,
		      const struct fold_stack *y)
{
	u32 i, n = x->nr < y->nr ? x->nr : y->nr;
	const u32 *px = f->pool + x->off, *py = f->pool + y->off;

	for (i = 0; i < n; i++)
		if (px[i] != py[i])
			return cmp_items(f, x, y, i);
	if (x->nr == y->nr)
		return 0;
	/* The shorter stack's line goes on with ' ', the longer one's with
	 * ';' (and the empty stack's line is " COUNT"). */
	return x->nr < y->nr ? -1 : 1;
}

/* Merge sort of stack indices (stable; O(n log n) worst case). */
static void sort_idx(const struct perfspy_folder *f, u32 *v, u32 *tmp, size_t n)
{
	size_t m, i, j, k;

	if (n < 2)
		return;
	m = n / 2;
	sort_idx(f, v, tmp, m);
	sort_idx(f, v + m, tmp, n - m);
	if (cmp_stacks(f, &f->stacks[v[m - 1]], &f->stacks[v[m]]) <= 0)
		return; /* the halves are already in order */
	for (i = 0, j = m, k = 0; i < m && j < n;)
		tmp[k++] = cmp_stacks(f, &f->stacks[v[j]], &f->stacks[v[i]]) < 0 ?
			v[j++] : v[i++];
	while (i < m)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof(*v));
}

u32 fold_name_len(const struct perfspy_folder *f, u32 id)
{
	return id < f->nr_names ? f->name_lens[id] : 0;
}

void fold_stack(const struct perfspy_folder *f, size_t idx, const u32 **ids,
		u32 *nr, u64 *count)
{
	const struct fold_stack *st = &f->stacks[idx];

	*ids = f->pool + st->off;
	*nr = st->nr;
	*count = st->count;
}

int fold_sorted(const struct perfspy_folder *f, u32 **out)
{
	u32 *idx, *tmp;
	size_t i;

	idx = xreallocarray(NULL, f->nr_stacks + 1, sizeof(*idx));
	tmp = xreallocarray(NULL, f->nr_stacks + 1, sizeof(*tmp));
	if (!idx || !tmp) {
		free(idx);
		free(tmp);
		return -ENOMEM;
	}
	for (i = 0; i < f->nr_stacks; i++)
		idx[i] = (u32)i;
	sort_idx(f, idx, tmp, f->nr_stacks);
	free(tmp);
	*out = idx;
	return 0;
}
