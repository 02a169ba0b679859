// SPDX-License-Identifier: GPL-2.0
/*
 * Folder: interning, sanitizing, aggregation and the sorted raw writer.
 */
#include <stdlib.h>

#include "fold.h"
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
	 * an empty stack as " COUNT" (pyspy-formats.md §1.2). */
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
	TEST_MAIN_END();
}
