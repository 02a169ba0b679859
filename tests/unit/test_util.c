// SPDX-License-Identifier: GPL-2.0
/*
 * xqsort (common/util.c): the same order as a stable sort on sorted,
 * nearly sorted (a few elements out of place, ties in any order) and
 * shuffled arrays, including the hand-over to qsort past the insertion
 * budget. Elements carry their input position, so a tie kept out of
 * input order shows. xsort_u64key (the symbol tables' radix sort): the
 * order a stable sort by its comparison gives, with 64-bit keys that
 * differ in low, middle and high bytes, ties on the key broken by a
 * second field, and ties on both kept in input order; the same order as
 * indices from xsort_u64key_order, also below xsort_u64key's radix size.
 * big_zalloc: zeroed memory either way; from one transparent huge page up a mapping that
 * starts on a huge page boundary, whose whole huge pages are marked
 * MADV_HUGEPAGE and whose shorter tail is not; calloc() below that,
 * without huge pages and under a sanitizer (docs/design.md §6.9).
 * big_warm: a mapping big_zalloc() gave is resident after
 * big_warm_start() and big_warm_wait() where there are two CPUs, and was
 * not before; its bytes are still zero.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"
#include "test.h"

struct el {
	u32 key;
	u32 pos; /* input position: not compared */
};

static int el_cmp(const void *a, const void *b)
{
	const struct el *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* The stable order by key, built by counting (keys are small). */
static void stable_ref(const struct el *in, struct el *out, size_t n, u32 maxkey)
{
	size_t *start = calloc(maxkey + 2, sizeof(*start)), i;

	T(start != NULL);
	for (i = 0; i < n; i++)
		start[in[i].key + 1]++;
	for (i = 1; i <= maxkey + 1; i++)
		start[i] += start[i - 1];
	for (i = 0; i < n; i++)
		out[start[in[i].key]++] = in[i];
	free(start);
}

/* @swaps random adjacent-ish displacements of a sorted array with ties. */
static void check(size_t n, u32 maxkey, size_t swaps, unsigned seed)
{
	struct el *v = calloc(n, sizeof(*v)), *ref = calloc(n, sizeof(*ref));
	size_t i;

	T(v && ref);
	srand(seed);
	for (i = 0; i < n; i++)
		v[i].key = (u32)((u64)i * maxkey / n);
	for (i = 0; i < swaps && n > 1; i++) {
		size_t a = (size_t)rand() % n, b = (size_t)rand() % n;
		struct el t = v[a];

		if (swaps < n) /* nearly sorted: move within a short reach */
			b = a + (size_t)rand() % 8 < n ? a + (size_t)rand() % 8 : a;
		v[a] = v[b];
		v[b] = t;
	}
	for (i = 0; i < n; i++)
		v[i].pos = (u32)i;
	stable_ref(v, ref, n, maxkey);
	xqsort(v, n, sizeof(*v), el_cmp);
	T(!memcmp(v, ref, n * sizeof(*v)));
	free(v);
	free(ref);
}

struct sym {
	u64 addr;
	u32 rank; /* second key */
	u32 pos;  /* input position: not compared */
};

static int sym_cmp2(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static void check_u64key(size_t n, u64 spread, unsigned seed)
{
	struct sym *v = calloc(n, sizeof(*v)), *ref = calloc(n, sizeof(*ref));
	size_t i, *order;

	T(v && ref);
	srand(seed);
	for (i = 0; i < n; i++) {
		/* a shared high part, as one binary's addresses have */
		v[i].addr = 0x7f0000000000ULL + ((u64)rand() << 16 ^ (u64)rand()) % spread;
		v[i].rank = (u32)rand() % 3;
		v[i].pos = (u32)i;
	}
	memcpy(ref, v, n * sizeof(*v));
	qsort(ref, n, sizeof(*ref), sym_cmp2); /* glibc's: a stable merge sort */
	/* The order alone, the elements left in place: any n. */
	order = xsort_u64key_order(v, n, sizeof(*v), offsetof(struct sym, addr), sym_cmp2);
	T(order != NULL);
	for (i = 0; order && i < n && !memcmp(&v[order[i]], &ref[i], sizeof(*v)); i++)
		;
	T_EQ_INT(i, n);
	free(order);
	xsort_u64key(v, n, sizeof(*v), offsetof(struct sym, addr), sym_cmp2);
	T(!memcmp(v, ref, n * sizeof(*v)));
	free(v);
	free(ref);
}


#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BIG_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define BIG_SANITIZED 1
#endif
#endif
#ifndef BIG_SANITIZED
#define BIG_SANITIZED 0
#endif

/* The huge page size where MADV_HUGEPAGE is honoured, read here from
 * sysfs on its own, else 0. */
static size_t thp_bytes(void)
{
	char buf[128] = "";
	unsigned long v = 0;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	if (!strchr(buf, '[') || strstr(buf, "[never]"))
		return 0;
	f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Whether the mapping that holds @p has the huge page flag ("hg" in
 * /proc/self/smaps's VmFlags, proc(5)): 1, 0, or -1 when not found. */
static int vma_hugepage(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long s, e;
	bool in = false;
	int r = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* A mapping's first line; no field name is hex then '-'. */
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			in = (uintptr_t)p >= s && (uintptr_t)p < e;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			r = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return r;
}

static void test_big(void)
{
	size_t hp = thp_bytes(), n, i;
	bool mapped = true;
	unsigned char *p;

	/* Small: calloc, zeroed. */
	p = big_zalloc(100000, &mapped);
	T(p != NULL);
	T(!mapped);
	for (i = 0; p && i < 100000 && !p[i]; i++)
		;
	T_EQ_INT(i, 100000);
	big_free(p, 100000, mapped);
	big_free(NULL, 1, true);

	/* Three huge pages and a tail of one page and a bit. */
	n = (hp ? hp : 2u << 20) * 3 + 5000;
	p = big_zalloc(n, &mapped);
	T(p != NULL);
	if (!p)
		return;
	T_EQ_INT(mapped, hp && !BIG_SANITIZED);
	for (i = 0; i < n && !p[i]; i++)
		p[i] = 0xa5; /* writable all through */
	T_EQ_INT(i, n);
	if (mapped) {
		T_EQ_INT((uintptr_t)p % hp, 0);
		T_EQ_INT(vma_hugepage(p), 1);
		T_EQ_INT(vma_hugepage(p + 3 * hp - 1), 1);
		T_EQ_INT(vma_hugepage(p + 3 * hp), 0); /* the tail */
	}
	big_free(p, n, mapped);
}

/* How many of the pages of [@p, @p + @n) are resident (mincore(2)). */
static size_t resident(const void *p, size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), np = (n + pg - 1) / pg, i, r = 0;
	unsigned char *vec = calloc(np, 1);

	if (!vec || mincore((void *)p, n, vec)) {
		free(vec);
		return (size_t)-1;
	}
	for (i = 0; i < np; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
}

static void test_warm(void)
{
	size_t hp = thp_bytes(), n, pg = (size_t)sysconf(_SC_PAGESIZE), i;
	struct big_warm w = { 0 };
	bool mapped;
	unsigned char *p;

	n = (hp ? hp : 2u << 20) * 2 + 3 * pg;
	p = big_zalloc(n, &mapped);
	T(p != NULL);
	if (!p)
		return;
	big_warm_wait(&w); /* nothing started: returns */
	if (mapped) {
		/* A fresh mapping: nothing there yet. */
		T_EQ_INT(resident(p, n), 0);
		big_warm_start(&w, p, n);
		T_EQ_INT(w.on, sysconf(_SC_NPROCESSORS_ONLN) >= 2);
		big_warm_start(&w, p, n); /* one at a time: no second thread */
		big_warm_wait(&w);
		T(!w.on);
		if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
			T_EQ_INT(resident(p, n), (n + pg - 1) / pg);
	} else {
		/* calloc()'s memory is not handed to a thread. */
		T(!w.on);
	}
	for (i = 0; i < n && !p[i]; i++)
		;
	T_EQ_INT(i, n);
	big_free(p, n, mapped);
}

int main(void)
{
	xqsort(NULL, 0, sizeof(struct el), el_cmp);
	check(1, 1, 0, 1);
	check(1000, 1000, 0, 1);       /* sorted */
	check(1000, 100, 0, 2);        /* sorted, ties */
	check(5000, 700, 40, 3);       /* nearly sorted: insertion only */
	check(5000, 700, 2000, 4);     /* past the budget: qsort after moves */
	check(5000, 50, 20000, 5);     /* shuffled, many ties */
	check(100000, 90000, 300, 6);  /* a kallsyms-sized table */
	xsort_u64key(NULL, 0, sizeof(struct sym), 0, sym_cmp2);
	check_u64key(100, 50, 7);        /* short: xqsort */
	check_u64key(5000, 1000, 8);     /* many ties on the key */
	check_u64key(100000, 1u << 30, 9); /* a big symbol table */
	check_u64key(3000, 1, 10);       /* one key: the second field only */
	test_big();
	test_warm();
	TEST_MAIN_END();
}
