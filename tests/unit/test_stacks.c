// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the memo in front of the frame cache (push_memo() in
 * libconv/frames/stacks.c, docs/design.md §6.8): an address repeated in
 * one callchain and across callchains is named from the maps its
 * process had at the sample's time, by its own process, and counted
 * once per frame in the statistics, whatever the memo already holds.
 *
 * The images are built with tests/lib/recbuild.c; the libraries named
 * in the maps do not exist, so every frame prints as `ADDR (lib)` (an
 * address outside any map as `ADDR (?)`), which the expected strings
 * spell out by hand.
 */
#include "perfspy.h"
#include "recbuild.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

#define CTX_USER ((uint64_t)-512)

/*
 * One address four times in a chain (recursion): the first is where the
 * thread was interrupted, the rest return addresses. A new map over it
 * (t=20) renames it in the next sample of the same chain; another
 * process with another library at that address names it by its own.
 */
static void test_memo_maps(void)
{
	static const uint64_t rec[] = { CTX_USER, 0x400100, 0x400100, 0x400100, 0x400100 };
	static const uint64_t mixed[] = { CTX_USER, 0x400200, 0x400100, 0x400100, 0x9000 };
	struct perfspy_stats st = { .sz = sizeof(st) };
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	char *out;

	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_comm(&d, 200, 200, "other", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/a", 2);
	rb_mmap2(&d, 200, 0x400000, 0x1000, 0, "/nonexistent/c", 2);
	rb_sample(&d, 100, 100, 10, rec, 5, 1);
	rb_sample(&d, 100, 100, 11, mixed, 5, 1);
	rb_sample(&d, 200, 200, 12, rec, 5, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/b", 20);
	rb_sample(&d, 100, 100, 30, rec, 5, 1);
	rb_sample(&d, 100, 100, 31, mixed, 5, 1);
	rb_sample(&d, 200, 200, 32, mixed, 5, 1);
	rb_round(&d);
	rb_file(&img, &a, sizeof(a) + 16, &d, "h");
	T_EQ_INT(rb_convert(&img, &st, &out), 0);
	T_EQ_STR(out,
		 "0x400100 (a);0x400100 (a);0x400100 (a);0x400100 (a) 1\n"
		 "0x400100 (b);0x400100 (b);0x400100 (b);0x400100 (b) 1\n"
		 "0x400100 (c);0x400100 (c);0x400100 (c);0x400100 (c) 1\n"
		 "0x9000 (?);0x400100 (a);0x400100 (a);0x400200 (a) 1\n"
		 "0x9000 (?);0x400100 (b);0x400100 (b);0x400200 (b) 1\n"
		 "0x9000 (?);0x400100 (c);0x400100 (c);0x400200 (c) 1\n");
	/* Six samples of four frames; 0x9000 is in no map, in three. */
	T_EQ_INT(st.frames, 24);
	T_EQ_INT(st.frames_no_map, 3);
	T_EQ_INT(st.samples_kept, 6);
	free(out);
	rb_free(&d);
	rb_free(&img);
}

/*
 * More distinct addresses than the memo has slots, twice over, in
 * chains that never repeat (so the session's callchain cache never
 * answers): every slot is overwritten many times and each frame must
 * still be its own address's, in its own process.
 */
static void test_memo_churn(void)
{
	enum { NS = 3000, DEPTH = 6 };
	struct perfspy_stats st = { .sz = sizeof(st) };
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	uint64_t chain[DEPTH + 1];
	char *out, *line;
	unsigned i, j, pid, bad = 0, lines = 0;

	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "p1", 1, 1);
	rb_comm(&d, 200, 200, "p2", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x100000, 0, "/nonexistent/one", 2);
	rb_mmap2(&d, 200, 0x400000, 0x100000, 0, "/nonexistent/two", 2);
	chain[0] = CTX_USER;
	for (i = 0; i < NS; i++) {
		pid = i % 2 ? 200 : 100;
		for (j = 0; j < DEPTH; j++)
			chain[1 + j] = 0x400000 + 0x10 * (uint64_t)((i * 7 + j * 131) % 4099);
		rb_sample(&d, pid, pid, 10 + i, chain, DEPTH + 1, 1);
	}
	rb_round(&d);
	rb_file(&img, &a, sizeof(a) + 16, &d, "h");
	T_EQ_INT(rb_convert(&img, &st, &out), 0);
	T_EQ_INT(st.frames, (uint64_t)NS * DEPTH);
	T_EQ_INT(st.frames_no_map, 0);
	/* Each line's frames name the library of the process whose
	 * chains hold exactly those addresses: rebuild each sample's line
	 * root first and find its count (1: no two chains are alike). */
	for (i = 0; out && i < NS; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&buf, &len);

		if (!mf)
			abort();
		for (j = DEPTH; j-- > 0;)
			fprintf(mf, "%s0x%llx (%s)", j == DEPTH - 1 ? "" : ";",
				(unsigned long long)(0x400000 +
						     0x10 * (uint64_t)((i * 7 + j * 131) % 4099)),
				i % 2 ? "two" : "one");
		fprintf(mf, " 1\n");
		fclose(mf);
		if (!strstr(out, buf))
			bad++;
		free(buf);
	}
	for (line = out; line && *line; line = strchr(line, '\n') + 1)
		lines++;
	T_EQ_INT(bad, 0);
	T_EQ_INT(lines, NS);
	T_EQ_INT(st.samples_kept, NS);
	free(out);
	rb_free(&d);
	rb_free(&img);
}

int main(void)
{
	test_memo_maps();
	test_memo_churn();
	TEST_MAIN_END();
}
