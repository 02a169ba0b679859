// SPDX-License-Identifier: GPL-2.0
/*
 * The hash table's slow paths and the string set (see hash.h).
 */
#include "hash.h"

#include <errno.h>
#include <stdlib.h>

void htab_init(struct htab *t, size_t esz, size_t min_cap)
{
	size_t c = 8;

	while (c < min_cap && c <= SIZE_MAX / 4)
		c *= 2;
	*t = (struct htab){ .esz = esz, .min_cap = c };
}

void htab_free(struct htab *t)
{
	big_warm_wait(&t->spare_warm);
	big_free(t->ents, t->cap * t->esz, t->ents_mapped);
	big_free(t->spare, t->cap * 2 * t->esz, t->spare_mapped);
	t->ents = t->spare = NULL;
	t->ents_mapped = t->spare_mapped = false;
	t->cap = t->nr = t->next = 0;
}

/* Tables whose next array is at least this big get it early (hash.h):
 * below it the array is a few pages, touched at once anyway. */
#define HTAB_SPARE_MIN (256u << 10)

/* The most a table holds before it doubles: three quarters. Linear
 * probing's longer runs there cost less than the misses of a table
 * twice the size: at half, the build profile's frame cache grew to 8 MB
 * for 70k entries of 32 bytes, and doubling and probing it were a
 * quarter of the builder's time (docs/design.md §6.27). */
static size_t htab_full(size_t cap)
{
	return cap / 4 * 3;
}

/* When htab_reserve() must call htab_grow() next: at five eighths for
 * the early allocation, else at htab_full(). */
static void htab_set_next(struct htab *t)
{
	t->next = t->cap * t->esz >= HTAB_SPARE_MIN / 2 ? t->cap / 8 * 5 : htab_full(t->cap);
}

int htab_grow(struct htab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : t->min_cap, mask = ncap - 1, i, j, bytes;
	bool mapped;
	u8 *n;

	/* Checked here, not left to calloc: a sanitizer's calloc aborts on
	 * an overflowing product instead of returning NULL. */
	if (ncap < t->cap || !t->esz || __builtin_mul_overflow(ncap, t->esz, &bytes))
		return -ENOMEM;
	if (t->nr + 1 <= htab_full(t->cap)) {
		/* Early: allocate the next array, grow at htab_full(). Zeroed
		 * memory, not malloc and memset: fresh memory is zero
		 * without a touch. Without memory the table still grows
		 * at half (or fails there). */
		if (!t->spare) {
			t->spare = big_zalloc(bytes, &t->spare_mapped);
			/* Huge pages are zeroed when first touched, 2 MB at
			 * a time: on another CPU while this table fills its
			 * last eighth (docs/design.md §6.9). */
			if (t->spare_mapped)
				big_warm_start(&t->spare_warm, t->spare, bytes);
		}
		t->next = htab_full(t->cap);
		return 0;
	}
	if (t->spare) {
		big_warm_wait(&t->spare_warm);
		n = t->spare;
		mapped = t->spare_mapped;
	} else if (!(n = big_zalloc(bytes, &mapped))) {
		return -ENOMEM;
	}
	t->spare = NULL;
	/* Re-place every entry by its stored hash word; insertion order
	 * among equal hashes is kept, which lookups do not depend on. */
	for (i = 0; i < t->cap; i++) {
		const u8 *e = t->ents + i * t->esz;
		u64 tag = *(const u64 *)e;

		if (!tag)
			continue;
		for (j = (size_t)tag & mask; *(u64 *)(n + j * t->esz); j = (j + 1) & mask)
			;
		memcpy(n + j * t->esz, e, t->esz);
	}
	big_free(t->ents, t->cap * t->esz, t->ents_mapped);
	t->ents = n;
	t->ents_mapped = mapped;
	t->cap = ncap;
	htab_set_next(t);
	return 0;
}

void *htab_next(const struct htab *t, size_t *pos)
{
	for (; *pos < t->cap; (*pos)++) {
		u8 *e = t->ents + *pos * t->esz;

		if (htab_used(e)) {
			(*pos)++;
			return e;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ strset */

/*
 * An entry holds the string's address, and its tag word the string's
 * length beside 32 bits of its hash, so that a probe compares lengths
 * without a load and a hit costs one more cache line, the string's own:
 * the id is the 4 bytes before the text (strset_add() puts it there).
 * Looking up through the id (the strs and lens arrays) cost three more
 * lines a hit, a third of the folder's interning time (issue 16).
 */
struct strset_ent {
	u64 tag; /* htab's hash word: STRSET_HASH() */
	const char *str;
};

/* Lengths from 2^31 on share one value: strset_eq() then asks lens[]. */
#define STRSET_LEN_BIG 0x7fffffffu
#define STRSET_HASH(h, len) \
	((u32)(h) | (u64)((len) < STRSET_LEN_BIG ? (len) : STRSET_LEN_BIG) << 32)

struct strset_key {
	const struct strset *s;
	const char *str;
	size_t len;
};

static u32 strset_ent_id(const struct strset_ent *e)
{
	u32 id;

	memcpy(&id, e->str - sizeof(id), sizeof(id));
	return id;
}

/* Same tag: the same length below STRSET_LEN_BIG (htab_probe()). */
static bool strset_eq(const void *ent, const void *key)
{
	const struct strset_ent *e = ent;
	const struct strset_key *k = key;

	if (k->len >= STRSET_LEN_BIG && k->s->lens[strset_ent_id(e)] != k->len)
		return false;
	return !memcmp(e->str, k->str, k->len);
}

void strset_init(struct strset *s)
{
	memset(s, 0, sizeof(*s));
	/* 1024 slots: what the folder's name table always started with. */
	htab_init(&s->tab, sizeof(struct strset_ent), 1024);
	arena_init(&s->arena);
}

void strset_free(struct strset *s)
{
	htab_free(&s->tab);
	arena_free(&s->arena);
	free(s->strs);
	free(s->lens);
	s->strs = NULL;
	s->lens = NULL;
	s->nr = s->cap_strs = s->cap_lens = 0;
}

u32 strset_find(const struct strset *s, const char *str, size_t len)
{
	struct strset_key k = { s, str, len };
	const struct strset_ent *e;

	e = htab_find(&s->tab, STRSET_HASH(hash_bytes(str, len, 0), len), strset_eq, &k);
	return e ? strset_ent_id(e) : STRSET_NONE;
}

int strset_add(struct strset *s, const char *str, size_t len, u32 *id)
{
	struct strset_key k = { s, str, len };
	u64 h = STRSET_HASH(hash_bytes(str, len, 0), len);
	struct strset_ent *e;
	char *copy;
	u32 nid;

	if (htab_reserve(&s->tab))
		return -ENOMEM;
	e = htab_probe(&s->tab, h, strset_eq, &k);
	if (htab_used(e)) {
		*id = strset_ent_id(e);
		return 0;
	}
	/* Ids stay below STRSET_NONE; lengths fit the u32 length array. */
	if (len > UINT32_MAX || len > SIZE_MAX - sizeof(nid) - 1 || s->nr >= STRSET_NONE - 1 ||
	    ensure_mem((void **)&s->strs, &s->cap_strs, sizeof(*s->strs), s->nr + 1) ||
	    ensure_mem((void **)&s->lens, &s->cap_lens, sizeof(*s->lens), s->nr + 1))
		return -ENOMEM;
	/* The id, then the text and its NUL. */
	copy = arena_alloc(&s->arena, sizeof(nid) + len + 1);
	if (!copy)
		return -ENOMEM;
	nid = (u32)s->nr;
	memcpy(copy, &nid, sizeof(nid));
	copy += sizeof(nid);
	memcpy(copy, str, len);
	copy[len] = '\0';
	s->strs[s->nr] = copy;
	s->lens[s->nr] = (u32)len;
	e->str = copy;
	htab_claim(&s->tab, e, h);
	*id = (u32)s->nr++;
	return 1;
}

/* ------------------------------------------------------------- idmap */

struct idmap_ent {
	u64 hash;
	u64 key;
	u64 val;
};

static bool idmap_eq(const void *ent, const void *key)
{
	return ((const struct idmap_ent *)ent)->key == *(const u64 *)key;
}

static u64 idmap_hash(u64 key)
{
	return hash_mix(key + 1);
}

void idmap_free(struct idmap *m)
{
	htab_free(&m->tab);
}

u64 *idmap_get(const struct idmap *m, u64 key)
{
	struct idmap_ent *e = htab_find(&m->tab, idmap_hash(key), idmap_eq, &key);

	return e ? &e->val : NULL;
}

bool idmap_next(const struct idmap *m, size_t *pos, u64 *key, u64 *val)
{
	const struct idmap_ent *e = m->tab.esz ? htab_next(&m->tab, pos) : NULL;

	if (!e)
		return false;
	*key = e->key;
	*val = e->val;
	return true;
}

u64 *idmap_put(struct idmap *m, u64 key)
{
	u64 h = idmap_hash(key);
	struct idmap_ent *e;

	if (!m->tab.esz) /* zeroed: 256 slots first, as idmap always had */
		htab_init(&m->tab, sizeof(struct idmap_ent), 256);
	if (htab_reserve(&m->tab))
		return NULL;
	e = htab_probe(&m->tab, h, idmap_eq, &key);
	if (!htab_used(e)) {
		e->key = key;
		e->val = 0;
		htab_claim(&m->tab, e, h);
	}
	return &e->val;
}
