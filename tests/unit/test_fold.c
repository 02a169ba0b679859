// SPDX-License-Identifier: GPL-2.0
/*
 * Folder: interning, sanitizing, aggregation and the sorted raw writer.
 */
#include <stdlib.h>

#include "common/fold.h"
#include "perfspy.h"
#include "test.h"

static char *write_str(struct perfspy_folder *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);

	T_EQ_INT(perfspy_folder__write(f, mf, NULL), 0);
	fclose(mf);
	return buf;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* @out, the raw writer's text of @f, must be every stack rendered on its
 * own (through fold_stack(), not the writer's reuse of the previous
 * line's prefix), sorted bytewise. */
static void check_rendered(struct perfspy_folder *f, const char *out)
{
	size_t n = perfspy_folder__nr_stacks(f), i, len = 0, k;
	char **lines = calloc(n + 1, sizeof(*lines)), *want;
	struct fold_ids buf = { 0 };

	for (i = 0; i < n; i++) {
		const u32 *ids;
		u32 nr, j;
		u64 count;
		char *p;
		size_t sz = 32;

		T_EQ_INT(fold_stack(f, i, &buf, &ids, &nr, &count), 0);
		for (j = 0; j < nr; j++)
			sz += fold_name_len(f, ids[j]) + 1;
		p = lines[i] = malloc(sz);
		for (j = 0; j < nr; j++) {
			memcpy(p, fold_name(f, ids[j]), fold_name_len(f, ids[j]));
			p += fold_name_len(f, ids[j]);
			if (j + 1 < nr)
				*p++ = ';';
		}
		p += sprintf(p, " %llu", (unsigned long long)count);
		len += (size_t)(p - lines[i]) + 1;
	}
	qsort(lines, n, sizeof(*lines), cmp_lines);
	want = malloc(len + 1);
	for (i = 0, k = 0; i < n; i++) {
		k += (size_t)sprintf(want + k, "%s\n", lines[i]);
		free(lines[i]);
	}
	want[k] = 0;
	T_EQ_INT(strlen(out), k);
	T(!strcmp(out, want)); /* not T_EQ_STR: megabytes of text */
	free(want);
	free(lines);
	fold_ids_free(&buf);
}

/* The raw writer compares a line's ids with the previous line's four at a
 * time: stacks that differ in one frame, at every position of a word
 * (and with one stack a prefix of another), must each come out whole. */
static void test_prefix_words(void)
{
	static const char *const base[13] = { "n0", "n1", "n2", "n3", "n4", "n5", "n6",
					      "n7", "n8", "n9", "n10", "n11", "n12" };
	struct perfspy_folder *f;
	const char *st[13];
	char *out;
	size_t k, n;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (n = 1; n <= 13; n++)
		T_EQ_INT(perfspy_folder__add(f, base, n, n), 0);
	for (k = 0; k < 13; k++) {
		memcpy(st, base, sizeof(st));
		st[k] = "x";
		T_EQ_INT(perfspy_folder__add(f, st, 13, 100 + k), 0);
		st[k] = "n";
		T_EQ_INT(perfspy_folder__add(f, st, 13, 200 + k), 0);
	}
	out = write_str(f);
	check_rendered(f, out);
	free(out);
	perfspy_folder__free(f);
}

/* The writer's order must be exactly a bytewise sort of its lines, also
 * for names that are prefixes of others followed by low bytes (' ', '!',
 * '(', digits), where a frame-by-frame comparison goes wrong. With
 * @spine, stacks start with up to 60 frames of one deep path and then
 * part: the long shared prefixes the sort's shared-item counts skip.
 * @stacks adds: from 16,384 distinct stacks the sort's halves are sorted
 * on two threads and merged (fold.c sort_top). */
static void test_order_random(unsigned seed, bool spine, int stacks)
{
	static const char *const names[] = {
		"foo", "foo z", "foo (a.c:1)", "foo!", "foo 1", "foo 12", "fo",
		"f", "foo:", "bar", "\xc3\xa9", "a", "a b", "a 9", "a!",
	};
	struct perfspy_folder *f;
	char *out, *line, *save, **lines;
	size_t n = 0, i;
	int k;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	srand(seed);
	for (k = 0; k < stacks; k++) {
		const char *st[66];
		size_t p = spine ? (size_t)rand() % 61 : 0;
		size_t d = p + (size_t)rand() % 6 + (spine && p ? 0 : 1), j;

		for (j = 0; j < p; j++)
			st[j] = names[j % 3 ? 0 : 2];
		for (; j < d; j++)
			st[j] = names[(size_t)rand() % ARRAY_SIZE(names)];
		perfspy_folder__add(f, st, d, 1 + (uint64_t)(rand() % 20));
	}
	if (stacks > 16384)
		T(perfspy_folder__nr_stacks(f) > 16384); /* two threads sort */
	out = write_str(f);
	check_rendered(f, out);
	lines = calloc(perfspy_folder__nr_stacks(f) + 1, sizeof(*lines));
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		lines[n++] = line;
	T_EQ_INT(n, perfspy_folder__nr_stacks(f));
	for (i = 1; i < n; i++) {
		/* strcmp on the lines with their '\n' cut: the cut can only
		 * make a line compare smaller, as '\n' would. */
		T(cmp_lines(&lines[i - 1], &lines[i]) < 0);
	}
	free(lines);
	free(out);
	perfspy_folder__free(f);
}

/*
 * Stacks of 16-bit and 32-bit ids (fold.c struct fold_stack): a folder
 * whose names run past 65,535 keeps a stack with any such id wide, the
 * rest narrow. Half the names are interned before 70,000 others and half
 * after, so stacks mix both kinds, also along shared prefixes. Checks:
 * the lines are in bytewise order, a stack added again is found (narrow
 * against wide ids of the same length and the same low bits as well),
 * and fold_merge() moves every stack, both kinds, to the same bytes.
 */
static const char *const wide_names[] = {
	"foo", "foo z", "foo (a.c:1)", "foo!", "foo 1", "foo 12", "fo",
	"f", "foo:", "bar", "\xc3\xa9", "a", "a b", "a 9", "a!",
};

/* 4,000 stacks drawn from @seed: shared prefixes, then random names. */
static void add_wide(struct perfspy_folder *f, unsigned seed)
{
	int k;

	srand(seed);
	for (k = 0; k < 4000; k++) {
		const char *st[66];
		size_t p = (size_t)rand() % 61;
		size_t d = p + (size_t)rand() % 6 + (p ? 0 : 1), j;

		for (j = 0; j < p; j++)
			st[j] = wide_names[j % 3 ? 0 : 2];
		for (; j < d; j++)
			st[j] = wide_names[(size_t)rand() % ARRAY_SIZE(wide_names)];
		T_EQ_INT(perfspy_folder__add(f, st, d, 1 + (uint64_t)(rand() % 20)), 0);
	}
}

static void test_wide(unsigned seed)
{
	const char *const *names = wide_names;
	struct perfspy_folder *f, *g;
	char *out, *out2, *line, *save, **lines, name[32];
	size_t n = 0, i, before;
	u32 *map, lo, hi;
	u64 total;
	int k;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (i = 0; i < ARRAY_SIZE(wide_names) / 2; i++)
		T(fold_intern_str(f, names[i]) < 65536);
	for (k = 0; k < 70000; k++) {
		snprintf(name, sizeof(name), "z%06d", k);
		T(fold_intern_str(f, name) != FOLD_NO_ID);
	}
	for (; i < ARRAY_SIZE(wide_names); i++)
		T(fold_intern_str(f, names[i]) >= 65536);
	add_wide(f, seed);
	/* Found again: the same stacks, and none new. */
	before = perfspy_folder__nr_stacks(f);
	total = perfspy_folder__total(f);
	add_wide(f, seed);
	T_EQ_INT(perfspy_folder__nr_stacks(f), before);
	T_EQ_INT(perfspy_folder__total(f), 2 * total);
	/* A narrow stack and a wide one whose ids agree in their low 16
	 * bits: "z%06d" 65,536 apart. */
	lo = fold_intern_str(f, "z000100");
	hi = fold_intern_str(f, "z065636");
	T_EQ_INT(hi - lo, 65536);
	T_EQ_INT(fold_add_ids(f, &lo, 1, 1), 0);
	T_EQ_INT(fold_add_ids(f, &hi, 1, 2), 0);
	T_EQ_INT(fold_add_ids(f, &lo, 1, 4), 0);
	T_EQ_INT(perfspy_folder__nr_stacks(f), before + 2);
	out = write_str(f);
	check_rendered(f, out);
	T(strstr(out, "\nz000100 5\n") != NULL);
	T(strstr(out, "\nz065636 2\n") != NULL);
	lines = calloc(perfspy_folder__nr_stacks(f) + 1, sizeof(*lines));
	out2 = strdup(out);
	for (line = strtok_r(out2, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		lines[n++] = line;
	T_EQ_INT(n, perfspy_folder__nr_stacks(f));
	for (i = 1; i < n; i++)
		T(cmp_lines(&lines[i - 1], &lines[i]) < 0);
	free(lines);
	free(out2);
	/* Moved into an empty folder: the same lines. */
	T_EQ_INT(perfspy_folder__new(&g), 0);
	T_EQ_INT(fold_merge(g, f, &map), 0);
	T_EQ_INT(perfspy_folder__nr_stacks(f), 0);
	out2 = write_str(g);
	T_EQ_STR(out2, out);
	free(map);
	free(out2);
	free(out);
	perfspy_folder__free(g);
	perfspy_folder__free(f);
}

/* Sorting ahead (fold.c fold_sort_ahead(), docs/design.md §6.23): the
 * same bytes as a folder that sorts at the end, for stacks added before
 * it began, several batches, a write between adds (the thread stops and
 * starts again), and counts that grow after their batch went where the
 * order reads them: "foo" ending a stack against "foo 1..." going on
 * sorts by the count's digits, so a run made with the old count is out
 * of order and must be sorted again. */
static void add_both(struct perfspy_folder *a, struct perfspy_folder *b,
		     const char *const *st, size_t n, uint64_t w)
{
	T_EQ_INT(perfspy_folder__add(a, st, n, w), 0);
	T_EQ_INT(perfspy_folder__add(b, st, n, w), 0);
}

static void add_random(struct perfspy_folder *a, struct perfspy_folder *b, int stacks,
		       bool digits)
{
	/* With @digits, names that are others followed by a space and a
	 * digit ("foo 1" after "foo"), whose order reads the count. */
	static const char *const names[] = {
		"foo", "foo z", "foo (a.c:1)", "foo!", "fo", "f", "foo:", "bar",
		"\xc3\xa9", "a", "a b", "a!", "foo 1", "foo 12", "a 9",
	};
	size_t nn = ARRAY_SIZE(names) - (digits ? 0 : 3);
	int k;

	for (k = 0; k < stacks; k++) {
		const char *st[66];
		size_t p = (size_t)rand() % 61;
		size_t d = p + (size_t)rand() % 6 + (p ? 0 : 1), j;

		for (j = 0; j < p; j++)
			st[j] = names[j % 3 ? 0 : 2];
		for (; j < d; j++)
			st[j] = names[(size_t)rand() % nn];
		add_both(a, b, st, d, 1 + (uint64_t)(rand() % 20));
	}
}

static void test_sort_ahead(void)
{
	const char *ends[] = { "root", "foo" };       /* ends with "foo" */
	const char *goes[] = { "root", "foo 1", "x" }; /* "foo 1;" goes on */
	struct perfspy_folder *a, *b;
	size_t taken, again;
	char *oa, *ob;
	int i;

	T_EQ_INT(perfspy_folder__new(&a), 0);
	T_EQ_INT(perfspy_folder__new(&b), 0);
	srand(23);
	add_random(a, b, 1000, true); /* before the sorting ahead began */
	T_EQ_INT(fold_sort_ahead(b), 0);
	/* " 3\n" sorts after " 1;": the run puts "foo" after "foo 1". */
	add_both(a, b, ends, 2, 3);
	add_both(a, b, goes, 3, 1);
	add_random(a, b, 20000, false);
	/* Now " 12\n" sorts before " 1;x": the run is out of order. */
	add_both(a, b, ends, 2, 9);
	oa = write_str(a);
	ob = write_str(b);
	T_EQ_STR(ob, oa);
	fold_sort_ahead_stats(b, &taken, &again);
	if (online_cpus() >= 2) {
		T(taken >= 2); /* several runs came from the thread */
		T(again >= 1); /* and the one that read a count did not */
	}
	free(oa);
	free(ob);
	/* More after a write: the thread starts again. */
	for (i = 0; i < 3; i++) {
		add_random(a, b, 9000, i == 1);
		oa = write_str(a);
		ob = write_str(b);
		T_EQ_STR(ob, oa);
		free(oa);
		free(ob);
	}
	fold_sort_ahead_stats(b, &taken, &again);
	if (online_cpus() >= 2)
		T(taken >= 6);
	perfspy_folder__free(a);
	perfspy_folder__free(b);
}

int main(void)
{
	const char *a[] = { "main (a.c:3)", "work (a.c:9)" };
	const char *b[] = { "main (a.c:3)" };
	const char *semi[] = { "process 1:\"sh -c a; b\"", "x\ny" };
	const char *utf[] = { "\xc3\xa9t\xc3\xa9 (u.py:1)" };
	struct perfspy_folder *f;
	char *out;
	u32 id1, id2;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__add(f, a, 2, 2), 0);
	T_EQ_INT(perfspy_folder__add(f, b, 1, 1), 0);
	T_EQ_INT(perfspy_folder__add(f, a, 2, 5), 0);
	T_EQ_INT(perfspy_folder__add(f, semi, 2, 1), 0);
	T_EQ_INT(perfspy_folder__add(f, utf, 1, 1), 0);
	T_EQ_INT(perfspy_folder__add(f, NULL, 0, 4), 0); /* empty stack */
	T_EQ_INT(perfspy_folder__nr_stacks(f), 5);
	T_EQ_INT(perfspy_folder__total(f), 14);
	/* Bytewise order (UTF-8 after ASCII), ';' and newlines replaced,
	 * an empty stack as " COUNT" (docs/pyspy-formats.md §1.2). */
	out = write_str(f);
	T_EQ_STR(out, " 4\n"
		      "main (a.c:3) 1\n"
		      "main (a.c:3);work (a.c:9) 7\n"
		      "process 1:\"sh -c a: b\";x y 1\n"
		      "\xc3\xa9t\xc3\xa9 (u.py:1) 1\n");
	free(out);
	/* Interning: same text, same id; sanitized text equals its twin. */
	id1 = fold_intern_str(f, "a;b");
	id2 = fold_intern_str(f, "a:b");
	T_EQ_INT(id1, id2);
	T_EQ_STR(fold_name(f, id1), "a:b");
	/* Many stacks: table growth keeps counts. */
	{
		char name[32];
		const char *one[1] = { name };
		int i;

		for (i = 0; i < 20000; i++) {
			snprintf(name, sizeof(name), "f%05d", i % 5000);
			T(perfspy_folder__add(f, one, 1, 1) == 0);
		}
		T_EQ_INT(perfspy_folder__nr_stacks(f), 5 + 5000);
		T_EQ_INT(perfspy_folder__total(f), 14 + 20000);
	}
	perfspy_folder__free(f);
	perfspy_folder__free(NULL);
	test_order_random(7, false, 3000);
	test_order_random(11, true, 3000);
	test_prefix_words();
	test_order_random(13, true, 60000);
	test_order_random(17, false, 60000);
	test_order_random(12, true, 3000);
	test_wide(19);
	test_sort_ahead();
	/* A folder holding only the empty stack (py-spy's " 7" line). */
	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__add(f, NULL, 0, 7), 0);
	T_EQ_INT(perfspy_folder__add(f, NULL, 0, 1), 0);
	out = write_str(f);
	T_EQ_STR(out, " 8\n");
	free(out);
	perfspy_folder__free(f);
	TEST_MAIN_END();
}
