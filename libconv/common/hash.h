/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The library's one hash table and one string set (libbpf keeps one
 * hashmap.c and one strset.c the same way, docs/conventions.md §2).
 *
 * struct htab: open addressing with linear probing over a power-of-two
 * array of fixed-size entries, at most three quarters full. Each entry is the
 * caller's struct and must begin with a u64 hash word, which the table
 * owns: 0 marks a free slot, and a used one holds the hash with its top
 * bit set (htab_tag; slot indices take the low bits only). The table
 * keeps entries inline (one cache line per hit on the hot caches: the
 * callchain, frame and CFI caches) and regrows from the stored hash
 * words, never calling back into the caller. Keys are compared by an
 * equality function handed to the probe; the probe is an always-inline
 * function, so a static @eq is inlined into the loop (or called
 * directly), never through a pointer. There is no deletion: no user
 * needs it. Entry pointers stay valid until the next htab_reserve() that
 * grows. A zeroed struct htab has no entry size: htab_init() it first.
 *
 * Usage:
 *	if (htab_reserve(&t))              (only when an insert may follow)
 *		return -ENOMEM;
 *	e = htab_probe(&t, h, my_eq, &key);
 *	if (htab_used(e))
 *		return e;                  (found)
 *	... fill e's key and value ...
 *	htab_claim(&t, e, h);              (e is now in the table)
 *
 * struct strset: interned strings with dense ids 0..nr-1 in insertion
 * order, each copied once, NUL-terminated, into an arena that lives as
 * long as the set (the folder's frame names, the symbolizer's source
 * paths). Callers hang values off the ids in arrays of their own.
 */
#ifndef PERFSPY_HASH_H
#define PERFSPY_HASH_H

#include "util.h"

struct htab {
	u8 *ents;      /* cap entries of esz bytes */
	size_t cap;    /* 0 or a power of two */
	size_t nr;     /* used entries */
	size_t esz;    /* entry size, a multiple of 8 starting with u64 hash */
	size_t min_cap; /* first allocation, a power of two */
	size_t next;   /* htab_reserve() calls htab_grow() when nr reaches it */
	u8 *spare;     /* the next array (2 * cap entries, zeroed), or NULL */
	bool ents_mapped, spare_mapped; /* big_zalloc()'s word on each */
	struct big_warm spare_warm; /* faulting the spare in, if mapped */
};

/* @esz: sizeof the entry struct; @min_cap: the first allocation's slots
 * (rounded up to a power of two, at least 8). */
void htab_init(struct htab *t, size_t esz, size_t min_cap);
/* Frees the array (entries' own data is the caller's); the table stays
 * initialized, empty and usable. */
void htab_free(struct htab *t);

/* Slow path of htab_reserve(): double (or first allocate) the array
 * when it would be more than three quarters full; a large table's next
 * array is allocated (zeroed, untouched) earlier, at five eighths, so that the
 * pages are first touched off the hot path, not by the doubling: by
 * big_warm_start() where the array is a mapping of huge pages
 * (docs/design.md §6.9), else by the CLI's heap warmer if it runs
 * (§6.5). On
 * -ENOMEM the table is unchanged and still usable. */
int htab_grow(struct htab *t);

/* Make room for one more entry before a probe that may end in an insert.
 * Returns 0 or -ENOMEM. */
static inline int htab_reserve(struct htab *t)
{
	return t->nr >= t->next ? htab_grow(t) : 0;
}

#define HTAB_USED (1ULL << 63)

static inline u64 htab_tag(u64 h)
{
	return h | HTAB_USED;
}

static inline bool htab_used(const void *ent)
{
	return *(const u64 *)ent != 0;
}

typedef bool htab_eq_fn(const void *ent, const void *key);

/*
 * The entry of hash @h whose key @eq finds equal to @key, or else the
 * free entry where it would go (htab_used() false). The table must have
 * room (htab_reserve(), or htab_find() for a lookup only).
 */
static inline __attribute__((always_inline)) void *
htab_probe(const struct htab *t, u64 h, htab_eq_fn *eq, const void *key)
{
	size_t mask = t->cap - 1, i;
	u64 tag = htab_tag(h);

	for (i = (size_t)tag & mask;; i = (i + 1) & mask) {
		u64 *e = (u64 *)(t->ents + i * t->esz);

		if (!*e || (*e == tag && eq(e, key)))
			return e;
	}
}

/* Lookup only: the entry, or NULL (also on an empty table). */
static inline __attribute__((always_inline)) void *
htab_find(const struct htab *t, u64 h, htab_eq_fn *eq, const void *key)
{
	size_t mask = t->cap - 1, i;
	u64 tag = htab_tag(h);

	if (!t->cap)
		return NULL;
	for (i = (size_t)tag & mask;; i = (i + 1) & mask) {
		u64 *e = (u64 *)(t->ents + i * t->esz);

		if (*e == tag && eq(e, key))
			return e;
		if (!*e)
			return NULL;
	}
}

/* Take the free entry @e that htab_probe() returned for hash @h. */
static inline void htab_claim(struct htab *t, void *e, u64 h)
{
	*(u64 *)e = htab_tag(h);
	t->nr++;
}

/* Used entries in slot order (not insertion order: for freeing and
 * collecting, never for output). Start with *@pos = 0; NULL at the end. */
void *htab_next(const struct htab *t, size_t *pos);

/* ------------------------------------------------------------ strset */

#define STRSET_NONE UINT32_MAX

struct strset {
	struct htab tab; /* struct strset_ent: length and hash, text (hash.c) */
	struct arena arena;
	const char **strs; /* id -> text */
	u32 *lens;	   /* id -> length */
	size_t nr, cap_strs, cap_lens;
};

void strset_init(struct strset *s);
void strset_free(struct strset *s);

/* The id of the @len bytes at @str, copying them on first sight. Returns
 * 1 (added), 0 (already there) or -ENOMEM (also when ids run out). */
int strset_add(struct strset *s, const char *str, size_t len, u32 *id);

/* The id of @str (@len bytes), or STRSET_NONE. */
u32 strset_find(const struct strset *s, const char *str, size_t len);

static inline const char *strset_str(const struct strset *s, u32 id)
{
	return s->strs[id];
}

static inline u32 strset_len(const struct strset *s, u32 id)
{
	return s->lens[id];
}

static inline size_t strset_nr(const struct strset *s)
{
	return s->nr;
}

/* ------------------------------------------------------------- idmap */

/* Map u64 -> u64 (frame ids to indices, rules, rewritten ids). A zeroed
 * struct is an empty map. */
struct idmap {
	struct htab tab; /* struct idmap_ent */
};

void idmap_free(struct idmap *m);
/* Pointer to the value of @key, or NULL. */
u64 *idmap_get(const struct idmap *m, u64 key);
/* Pointer to the value of @key, inserted as 0 if absent; NULL on ENOMEM. */
u64 *idmap_put(struct idmap *m, u64 key);
/* The next entry from *@pos (0 to start), in table order; false at the
 * end. */
bool idmap_next(const struct idmap *m, size_t *pos, u64 *key, u64 *val);

#endif
