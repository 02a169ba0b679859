// SPDX-License-Identifier: GPL-2.0
/*
 * The hash table, the string set and the id map (common/hash.h), and the
 * four-lane hashes of long keys (common/util.h): many
 * keys across growth, forced collisions, the free-slot/claim protocol,
 * iteration, and -ENOMEM leaving each structure intact and usable.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hash.h"
#include "test.h"

struct ent {
	u64 hash;
	u64 key;
	u64 val;
};

static bool ent_eq(const void *e, const void *key)
{
	return ((const struct ent *)e)->key == *(const u64 *)key;
}

/* Insert @key with hash @h and value @val; false on -ENOMEM. */
static bool put(struct htab *t, u64 h, u64 key, u64 val)
{
	struct ent *e;

	if (htab_reserve(t))
		return false;
	e = htab_probe(t, h, ent_eq, &key);
	if (!htab_used(e)) {
		e->key = key;
		htab_claim(t, e, h);
	}
	e->val = val;
	return true;
}

static const struct ent *get(const struct htab *t, u64 h, u64 key)
{
	return htab_find(t, h, ent_eq, &key);
}

/* 100000 keys through many doublings: every key found with its value,
 * absent keys not found, load kept at most 1/2. */
static void test_many(void)
{
	const u64 n = 100000;
	struct htab t;
	const struct ent *e;
	size_t pos = 0, seen = 0;
	u64 i, sum = 0, want = 0;
	bool ok = true;

	htab_init(&t, sizeof(struct ent), 4);
	T_EQ_INT(t.cap, 0);
	T(!get(&t, 1, 1)); /* empty: no array yet */
	for (i = 0; i < n && ok; i++)
		ok = put(&t, hash_mix(i * 3), i * 3, i);
	T(ok);
	T_EQ_INT(t.nr, n);
	/* At most three quarters full, and never below three eighths but
	 * in the first array. */
	T(t.cap / 4 * 3 >= n && (t.cap & (t.cap - 1)) == 0);
	T(t.cap * 3 <= 8 * n || t.cap == t.min_cap);
	for (i = 0; i < n; i++) {
		e = get(&t, hash_mix(i * 3), i * 3);
		if (!e || e->val != i) {
			T(!"key lost or wrong value");
			break;
		}
	}
	for (i = 0; i < 1000; i++)
		T(!get(&t, hash_mix(i * 3 + 1), i * 3 + 1));
	/* Overwriting a value does not add an entry. */
	T(put(&t, hash_mix(30), 30, 777));
	T_EQ_INT(t.nr, n);
	T(get(&t, hash_mix(30), 30) && get(&t, hash_mix(30), 30)->val == 777);
	/* Iteration visits each entry once. */
	while ((e = htab_next(&t, &pos))) {
		seen++;
		sum += e->key;
	}
	for (i = 0; i < n; i++)
		want += i * 3;
	T_EQ_INT(seen, n);
	T(sum == want);
	htab_free(&t);
	T_EQ_INT(t.cap, 0);
	T(!get(&t, hash_mix(3), 3));

	/* A small table (no early array) doubles at three quarters:
	 * 8 slots take 6 entries, the 7th doubles them. */
	htab_init(&t, sizeof(struct ent), 8);
	for (i = 0; i < 6; i++)
		T(put(&t, hash_mix(i), i, i));
	T_EQ_INT(t.cap, 8);
	T(put(&t, hash_mix(6), 6, 6));
	T_EQ_INT(t.cap, 16);
	htab_free(&t);
}

/* Every key with the same hash, and hashes 0 and 1 << 63 (stored alike,
 * with the top bit set): equality alone must tell them apart, across
 * growth, and hash 0 must not read as a free slot. */
static void test_collisions(void)
{
	struct htab t;
	const struct ent *e;
	u64 i;
	bool ok = true;

	htab_init(&t, sizeof(struct ent), 8);
	for (i = 0; i < 300 && ok; i++)
		ok = put(&t, 42, i, i + 1000);
	for (i = 300; i < 310 && ok; i++)
		ok = put(&t, (i & 1) ? HTAB_USED : 0, i, i + 1000);
	T(ok);
	T_EQ_INT(t.nr, 310);
	for (i = 0; i < 310; i++) {
		e = get(&t, i < 300 ? 42 : (i & 1) ? HTAB_USED : 0, i);
		if (!e || e->val != i + 1000) {
			T(!"colliding key lost");
			break;
		}
	}
	T(!get(&t, 42, 300));
	T(!get(&t, 42, 301)); /* another hash's key */
	/* 0 and 1 << 63 share a tag: the same key under either is found;
	 * hash 1 is another tag. */
	T(get(&t, 0, 301) != NULL);
	T(get(&t, HTAB_USED, 300) != NULL);
	T(!get(&t, 1, 300));
	htab_free(&t);
}

/* Table of index entries pointing into an array of strings, the way
 * the folder and merge use it (hash word + index). */
struct ix {
	u64 hash;
	u32 idx;
};

struct ix_key {
	const char *const *v;
	const char *s;
};

static bool ix_eq(const void *e, const void *key)
{
	const struct ix_key *k = key;

	return !strcmp(k->v[((const struct ix *)e)->idx], k->s);
}

static void test_index_table(void)
{
	static const char *const words[] = { "alpha", "beta", "gamma", "delta", "beta" };
	const char *v[5];
	u32 ids[5], nr = 0, i;
	struct htab t;

	htab_init(&t, sizeof(struct ix), 2);
	T_EQ_INT(t.esz, 16);
	for (i = 0; i < 5; i++) {
		struct ix_key k = { v, words[i] };
		u64 h = hash_bytes(words[i], strlen(words[i]), 0);
		struct ix *e;

		T_EQ_INT(htab_reserve(&t), 0);
		e = htab_probe(&t, h, ix_eq, &k);
		if (!htab_used(e)) {
			v[nr] = words[i];
			e->idx = nr++;
			htab_claim(&t, e, h);
		}
		ids[i] = e->idx;
	}
	T_EQ_INT(nr, 4);
	T_EQ_INT(ids[1], 1);
	T_EQ_INT(ids[4], 1); /* the second "beta" is the first one */
	T_EQ_INT(ids[3], 3);
	htab_free(&t);
}

/* A failed grow leaves the table as it was. The size overflow makes
 * the allocation fail for sure; the rlimit test below fails real ones. */
static void test_grow_overflow(void)
{
	struct htab t;

	htab_init(&t, SIZE_MAX / 4, 8);
	T_EQ_INT(htab_reserve(&t), -ENOMEM);
	T_EQ_INT(t.cap, 0);
	T(t.ents == NULL);
	T(!htab_find(&t, 5, ent_eq, &(u64){ 5 }));
	htab_free(&t);
}

static void test_strset(void)
{
	struct strset s;
	char buf[32];
	u32 id, i;
	int r;

	strset_init(&s);
	T_EQ_INT(strset_find(&s, "x", 1), STRSET_NONE);
	T_EQ_INT(strset_add(&s, "main", 4, &id), 1);
	T_EQ_INT(id, 0);
	T_EQ_INT(strset_add(&s, "mainly", 4, &id), 0); /* first 4 bytes */
	T_EQ_INT(id, 0);
	T_EQ_INT(strset_add(&s, "", 0, &id), 1);
	T_EQ_INT(id, 1);
	T_EQ_STR(strset_str(&s, 1), "");
	/* Embedded NUL: length, not strlen, is the key. */
	T_EQ_INT(strset_add(&s, "a\0b", 3, &id), 1);
	T_EQ_INT(strset_len(&s, id), 3);
	T_EQ_INT(strset_find(&s, "a", 1), STRSET_NONE);
	for (i = 0; i < 20000; i++) {
		snprintf(buf, sizeof(buf), "f%u (x.py:%u)", i, i % 97);
		r = strset_add(&s, buf, strlen(buf), &id);
		if (r != 1 || id != i + 3) {
			T(!"strset add");
			break;
		}
	}
	T_EQ_INT(strset_nr(&s), 20003);
	T_EQ_INT(strset_find(&s, "f123 (x.py:26)", 14), 126);
	T_EQ_STR(strset_str(&s, 126), "f123 (x.py:26)");
	T_EQ_STR(strset_str(&s, 0), "main");
	/* Strings stay put as the set grows (arena, not realloc). */
	{
		const char *p = strset_str(&s, 0);

		for (i = 0; i < 5000; i++) {
			snprintf(buf, sizeof(buf), "g%u", i);
			strset_add(&s, buf, strlen(buf), &id);
		}
		T(p == strset_str(&s, 0));
	}
	strset_free(&s);
	T_EQ_INT(strset_nr(&s), 0);
}

static void test_idmap(void)
{
	struct idmap m = { 0 };
	u64 i, *v;

	T(!idmap_get(&m, 0)); /* zeroed is empty */
	for (i = 0; i < 5000; i++) {
		v = idmap_put(&m, i * 7);
		T(v != NULL);
		if (v) {
			T_EQ_INT(*v, 0); /* new entries read 0 */
			*v = i;
		}
	}
	T_EQ_INT(m.tab.nr, 5000);
	T(idmap_get(&m, 7 * 4999) && *idmap_get(&m, 7 * 4999) == 4999);
	T(!idmap_get(&m, 3));
	/* Every u64 is a key, extremes included. */
	T((v = idmap_put(&m, UINT64_MAX)) && (*v = 9));
	T((v = idmap_put(&m, UINT32_MAX)) && (*v = 8));
	T(idmap_get(&m, UINT64_MAX) && *idmap_get(&m, UINT64_MAX) == 9);
	T(idmap_get(&m, UINT32_MAX) && *idmap_get(&m, UINT32_MAX) == 8);
	T(*idmap_put(&m, 14) == 2); /* existing: value kept */
	idmap_free(&m);
	T(!idmap_get(&m, 0));
}

/*
 * Real allocation failures: a child process under a small address-space
 * limit inserts until -ENOMEM, then checks that everything inserted
 * before is still there and that the table works again once memory is
 * freed. Not under AddressSanitizer, whose shadow memory needs a huge
 * address space.
 */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_RLIMIT_TEST 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_RLIMIT_TEST 0
#endif
#endif
#ifndef HAVE_RLIMIT_TEST
#define HAVE_RLIMIT_TEST 1
#endif

static int enomem_child(void)
{
	struct rlimit rl = { 64u << 20, 64u << 20 };
	struct htab t;
	struct strset s;
	u64 i, n;
	u32 id;
	int r = 0;

	if (setrlimit(RLIMIT_AS, &rl))
		return 77;
	htab_init(&t, sizeof(struct ent), 8);
	for (n = 0; n < (1u << 26); n++)
		if (!put(&t, hash_mix(n), n, n))
			break;
	if (n == 1u << 26)
		return 2; /* never failed */
	for (i = 0; i < n; i++) {
		const struct ent *e = get(&t, hash_mix(i), i);

		if (!e || e->val != i)
			return 3;
	}
	htab_free(&t);
	/* The set: fails on the table, the id arrays or the arena. */
	strset_init(&s);
	for (n = 0;; n++) {
		char buf[64];
		int k = snprintf(buf, sizeof(buf), "%060llu", (unsigned long long)n);

		r = strset_add(&s, buf, (size_t)k, &id);
		if (r < 0)
			break;
	}
	if (r != -ENOMEM || strset_nr(&s) != n)
		return 4;
	if (strset_find(&s, "000000000000000000000000000000000000000000000000000000000007", 60) != 7)
		return 5;
	strset_free(&s);
	strset_init(&s);
	if (strset_add(&s, "again", 5, &id) != 1 || id != 0)
		return 6;
	strset_free(&s);
	return 0;
}

static void test_enomem(void)
{
	pid_t pid;
	int st;

	if (!HAVE_RLIMIT_TEST)
		return;
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(enomem_child());
	T(pid > 0);
	if (pid <= 0)
		return;
	T(waitpid(pid, &st, 0) == pid);
	T(WIFEXITED(st));
	if (WIFEXITED(st) && WEXITSTATUS(st) != 77)
		T_EQ_INT(WEXITSTATUS(st), 0);
}

static int u64_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* The four-lane hashes (util.c): the same bytes give the same values,
 * every length and every one-bit change gives new ones (tails of 1-7
 * bytes, the words of each lane, words swapped between lanes), the two
 * values of hash_bytes128 differ, and 200,000 stack-like keys do not
 * collide in 64 bits. */
static void test_wide(void)
{
	enum { N = 200000, LEN = 72 };
	u8 buf[80];
	u64 *hs = malloc(N * sizeof(*hs) * 3), h1, h2, g1, g2, w, x = 0x2545f4914f6cdd1dull;
	size_t n, i, bit, dup = 0;

	T(hs != NULL);
	if (!hs)
		return;
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (u8)(i * 37 + 11);
	/* Lengths: each of 0..80 bytes, as a prefix of the same buffer. */
	for (n = 0; n <= sizeof(buf); n++) {
		hash_bytes128(buf, n, 7, &h1, &h2);
		/* hash_wide() is hash_bytes128()'s first value. */
		hs[2 * n] = hash_wide(buf, n, 7);
		hs[2 * n + 1] = h2;
		hash_bytes128(buf, n, 7, &g1, &g2);
		T(g1 == h1 && g2 == h2 && h1 == hs[2 * n]);
	}
	qsort(hs, 2 * (sizeof(buf) + 1), sizeof(*hs), u64_cmp);
	for (i = 1; i < 2 * (sizeof(buf) + 1); i++)
		dup += hs[i] == hs[i - 1];
	T_EQ_INT((long long)dup, 0);
	/* One bit flipped anywhere in a 71-byte key (two whole rounds of
	 * four lanes, a word, a 7-byte tail); a different seed. */
	hash_bytes128(buf, 71, 0, &h1, &h2);
	w = hash_wide(buf, 71, 0);
	for (bit = 0; bit < 71 * 8; bit++) {
		buf[bit / 8] ^= (u8)(1u << (bit % 8));
		hash_bytes128(buf, 71, 0, &g1, &g2);
		T(g1 != h1 && g2 != h2 && hash_wide(buf, 71, 0) != w);
		buf[bit / 8] ^= (u8)(1u << (bit % 8));
	}
	hash_bytes128(buf, 71, 1, &g1, &g2);
	T(g1 != h1 && g2 != h2 && hash_wide(buf, 71, 1) != w);
	/* Words of two lanes swapped. */
	memcpy(buf + 64, buf, 8);
	hash_bytes128(buf, 72, 0, &h1, &h2);
	w = hash_wide(buf, 72, 0);
	for (i = 0; i < 8; i++) {
		u8 t = buf[i];

		buf[i] = buf[8 + i];
		buf[8 + i] = t;
	}
	hash_bytes128(buf, 72, 0, &g1, &g2);
	T(g1 != h1 && g2 != h2 && hash_wide(buf, 72, 0) != w);
	/* Random keys: no 64-bit collision in any of the three values. */
	for (i = 0; i < N; i++) {
		u64 k[LEN / 8];
		size_t j;

		for (j = 0; j < LEN / 8; j++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			k[j] = x & 0xffffffffull; /* frame ids: small words */
		}
		hs[i] = hash_wide(k, LEN, 0);
		hash_bytes128(k, LEN, 0, &hs[N + i], &hs[2 * N + i]);
	}
	for (n = 0; n < 3; n++) {
		qsort(hs + n * N, N, sizeof(*hs), u64_cmp);
		for (dup = 0, i = 1; i < N; i++)
			dup += hs[n * N + i] == hs[n * N + i - 1];
		T_EQ_INT((long long)dup, 0);
	}
	free(hs);
}

int main(void)
{
	test_many();
	test_collisions();
	test_index_table();
	test_grow_overflow();
	test_strset();
	test_idmap();
	test_enomem();
	test_wide();
	TEST_MAIN_END();
}
