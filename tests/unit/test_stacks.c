// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the memo in front of the frame cache (push_callchain() in
 * libconv/frames/stacks.c, docs/design.md §6.8): an address repeated in
 * one callchain and across callchains is named from the maps its
 * process had at the sample's time, by its own process, and counted
 * once per frame in the statistics, whatever the memo already holds.
 * And the session's callchain cache in front of both, resting where
 * chains do not repeat (libconv/session.c, docs/design.md §6.10).
 *
 * The images are built with tests/lib/recbuild.c; the libraries named
 * in the maps do not exist, so every frame prints as `ADDR (lib)` (an
 * address outside any map as `ADDR (?)`), which the expected strings
 * spell out by hand.
 */
#include "perfspy.h"
#include "recbuild.h"
#include "test.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTX_USER ((uint64_t)-512)

/* Convert @d's records (freed), a file-mode image with rb_default_attr's
 * event, as rb_convert() does. */
static int convert_recs(struct rb *d, struct perfspy_stats *st, char **out)
{
	struct rb img = { 0 };
	struct perf_event_attr a;
	int err;

	rb_default_attr(&a);
	rb_file(&img, &a, sizeof(a) + 16, d, "h");
	rb_free(d);
	err = rb_convert(&img, st, out);
	rb_free(&img);
	return err;
}

/* Processes 100 ("p1") and 200 ("p2"), each with a 1 MB library at
 * 0x400000: @lib1 and @lib2. */
static void two_procs(struct rb *d, const char *lib1, const char *lib2)
{
	rb_comm(d, 100, 100, "p1", 1, 1);
	rb_comm(d, 200, 200, "p2", 1, 1);
	rb_mmap2(d, 100, 0x400000, 0x100000, 0, lib1, 2);
	rb_mmap2(d, 200, 0x400000, 0x100000, 0, lib2, 2);
}

/* Lines of @out (NULL: none). */
static unsigned count_lines(const char *out)
{
	const char *nl;
	unsigned n = 0;

	for (; out && *out; out = nl + 1) {
		n++;
		if (!(nl = strchr(out, '\n')))
			break;
	}
	return n;
}

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
	struct rb d = { 0 };
	char *out;

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
	T_EQ_INT(convert_recs(&d, &st, &out), 0);
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
	struct rb d = { 0 };
	uint64_t chain[DEPTH + 1];
	char *out;
	unsigned i, j, pid, bad = 0;

	two_procs(&d, "/nonexistent/one", "/nonexistent/two");
	chain[0] = CTX_USER;
	for (i = 0; i < NS; i++) {
		pid = i % 2 ? 200 : 100;
		for (j = 0; j < DEPTH; j++)
			chain[1 + j] = 0x400000 + 0x10 * (uint64_t)((i * 7 + j * 131) % 4099);
		rb_sample(&d, pid, pid, 10 + i, chain, DEPTH + 1, 1);
	}
	rb_round(&d);
	T_EQ_INT(convert_recs(&d, &st, &out), 0);
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
	T_EQ_INT(bad, 0);
	T_EQ_INT(count_lines(out), NS);
	T_EQ_INT(st.samples_kept, NS);
	free(out);
}

/*
 * The memo of runs (stacks.c's struct stk_blk, docs/design.md §6.34):
 * deep chains of three return addresses in ever new orders, so runs of
 * four repeat at every depth, in two processes whose libraries differ
 * at those addresses, one of them mapping another library there half
 * way. Each chain has a leaf of its own (so the session's callchain
 * cache never answers), and every eleventh an address in no map in its
 * middle (frames the memo does not keep, so no run holds it). Each
 * frame must name its own process's library of the sample's time.
 */
static bool line_in(const char *out, const char *line)
{
	const char *p;

	for (p = out; p && (p = strstr(p, line)); p++)
		if (p == out || p[-1] == '\n')
			return true;
	return false;
}

static void test_runs(void)
{
	enum { NS = 3000, REMAP = NS / 2 };
	struct perfspy_stats st = { .sz = sizeof(st) };
	struct rb d = { 0 };
	uint64_t chain[32], frames = 0, nomap = 0;
	char *out;
	unsigned i, j, depth, bad = 0;

	two_procs(&d, "/nonexistent/a", "/nonexistent/c");
	for (i = 0; i < NS; i++) {
		if (i == REMAP)
			rb_mmap2(&d, 100, 0x400000, 0x100000, 0, "/nonexistent/b", 10 + i);
		depth = 12 + i % 9;
		chain[0] = CTX_USER;
		chain[1] = 0x4a0000 + 0x10 * (uint64_t)i;
		for (j = 1; j < depth; j++)
			chain[1 + j] = i % 11 == 0 && j == 5 ? 0x9000 :
				0x400100 + 0x100 * (uint64_t)((i / 7 + j * j) % 3);
		rb_sample(&d, i % 2 ? 200 : 100, i % 2 ? 200 : 100, 10 + i, chain, depth + 1, 1);
		frames += depth;
		nomap += i % 11 == 0;
	}
	rb_round(&d);
	T_EQ_INT(convert_recs(&d, &st, &out), 0);
	T_EQ_INT(st.frames, frames);
	T_EQ_INT(st.frames_no_map, nomap);
	T_EQ_INT(st.samples_kept, NS);
	for (i = 0; out && i < NS; i++) {
		const char *lib = i % 2 ? "c" : i < REMAP ? "a" : "b";
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&buf, &len);

		if (!mf)
			abort();
		depth = 12 + i % 9;
		for (j = depth; j-- > 1;) {
			if (i % 11 == 0 && j == 5)
				fprintf(mf, "0x9000 (?);");
			else
				fprintf(mf, "0x%llx (%s);",
					(unsigned long long)(0x400100 +
							     0x100 * (uint64_t)((i / 7 + j * j) % 3)),
					lib);
		}
		fprintf(mf, "0x%llx (%s) 1\n", (unsigned long long)(0x4a0000 + 0x10 * (uint64_t)i),
			lib);
		fclose(mf);
		if (!line_in(out, buf)) {
			if (!bad)
				fprintf(stderr, "runs: sample %u: no line %s", i, buf);
			bad++;
		}
		free(buf);
	}
	T_EQ_INT(bad, 0);
	T_EQ_INT(count_lines(out), NS);
	free(out);
}

/*
 * A library with no symbols, mapped at two addresses by two processes:
 * one offset is one frame cache entry, named by the address of the
 * sample that resolved it, and the other process's address gets a frame
 * of its own (kept beside the entry, stacks.c's raw_ips).
 */
static void test_raw_addresses(void)
{
	static const uint64_t at4[] = { CTX_USER, 0x400100 };
	static const uint64_t at5[] = { CTX_USER, 0x500100 };
	struct perfspy_stats st = { .sz = sizeof(st) };
	struct rb d = { 0 };
	char *out;

	rb_comm(&d, 100, 100, "p1", 1, 1);
	rb_comm(&d, 200, 200, "p2", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/x", 2);
	rb_mmap2(&d, 200, 0x500000, 0x1000, 0, "/nonexistent/x", 2);
	rb_sample(&d, 100, 100, 10, at4, 2, 1);
	rb_sample(&d, 200, 200, 11, at5, 2, 1);
	rb_sample(&d, 100, 100, 12, at4, 2, 1);
	rb_sample(&d, 200, 200, 13, at5, 2, 1);
	rb_sample(&d, 200, 200, 14, at5, 2, 1);
	rb_round(&d);
	T_EQ_INT(convert_recs(&d, &st, &out), 0);
	T_EQ_STR(out, "0x400100 (x) 2\n0x500100 (x) 3\n");
	T_EQ_INT(st.frames_unknown, 2);
	free(out);
}

/* session.c's callchain cache policy: a window of CHAIN_WIN lookups
 * with fewer than a quarter found makes it rest CHAIN_REST samples. */
#define CHAIN_WIN 4096
#define CHAIN_REST (8 * CHAIN_WIN)

/*
 * The callchain cache at rest and back (session.c, issue 16). NA chains
 * never seen twice: the first CHAIN_WIN lookups all miss, so the cache
 * rests for CHAIN_REST samples, the last NA - CHAIN_WIN of these and
 * most of what follows: NB samples over NREP chains. Every stack is
 * built while it rests, and once it looks again each repeated chain is
 * built once more and then found. The frame count (frames are counted
 * as a stack is built, not when the cache gives one) tells which
 * samples were built; the output is the same whichever way a sample
 * went: each distinct chain once, each repeated one NB / NREP times.
 */
static void test_chain_rest(void)
{
	enum { NA = 5000, NB = 40000, NREP = 8, DEPTH = 3 };
	struct perfspy_stats st = { .sz = sizeof(st) };
	struct rb d = { 0 };
	uint64_t chain[DEPTH + 1] = { CTX_USER, 0, 0x400008, 0x400008 };
	unsigned i, ones = 0, reps = 0, lines = 0;
	char *out, *line, want[32];
	uint64_t built;

	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x100000, 0, "/nonexistent/lib", 2);
	for (i = 0; i < NA; i++) {
		chain[1] = 0x400010 + 0x10 * (uint64_t)i;
		rb_sample(&d, 100, 100, 10 + i, chain, DEPTH + 1, 1);
	}
	for (i = 0; i < NB; i++) {
		chain[1] = 0x4f0000 + 0x10 * (uint64_t)(i % NREP);
		rb_sample(&d, 100, 100, 10 + NA + i, chain, DEPTH + 1, 1);
	}
	rb_round(&d);
	T_EQ_INT(convert_recs(&d, &st, &out), 0);
	T_EQ_INT(st.samples_kept, NA + NB);
	/* All of NA, the repeated ones while the cache rests, then each
	 * repeated chain once more. */
	built = NA + (CHAIN_REST - (NA - CHAIN_WIN)) + NREP;
	T_EQ_INT(st.frames, built * DEPTH);
	snprintf(want, sizeof(want), " %u\n", NB / NREP);
	for (line = out; line && *line; line = strchr(line, '\n') + 1) {
		size_t n = strcspn(line, "\n");

		lines++;
		ones += n > 2 && !strncmp(line + n - 2, " 1", 2);
		reps += n > strlen(want) - 1 &&
			!strncmp(line + n - (strlen(want) - 1), want, strlen(want) - 1) &&
			!strncmp(line, "0x400008 (lib);0x400008 (lib);0x4f", 34);
	}
	T_EQ_INT(lines, NA + NREP);
	T_EQ_INT(ones, NA);
	T_EQ_INT(reps, NREP);
	free(out);
}

/*
 * Return addresses at the edges of an anonymous executable map (JIT code
 * without a perf map, docs/design.md §6.21): a return address is looked
 * up at its byte before (the call), then, outside any ELF file, its map
 * is that of the address itself. At the map's start (the byte before in
 * no map) the frame is the map's; at its end (the byte before its last)
 * in no map; past a gap, in no map.
 */
static void test_anon_edges(void)
{
	static const uint64_t at_start[] = { CTX_USER, 0x400100, 0x500000 };
	static const uint64_t at_end[] = { CTX_USER, 0x400100, 0x501000 };
	static const uint64_t inside[] = { CTX_USER, 0x400100, 0x500800 };
	static const uint64_t gap[] = { CTX_USER, 0x400100, 0x4ff000 };
	struct perfspy_stats st = { .sz = sizeof(st) };
	struct rb d = { 0 };
	char *out;

	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/a", 2);
	rb_mmap2(&d, 100, 0x500000, 0x1000, 0, "//anon", 3);
	rb_sample(&d, 100, 100, 10, at_start, 3, 1);
	rb_sample(&d, 100, 100, 11, at_end, 3, 1);
	rb_sample(&d, 100, 100, 12, inside, 3, 1);
	rb_sample(&d, 100, 100, 13, gap, 3, 1);
	rb_round(&d);
	T_EQ_INT(convert_recs(&d, &st, &out), 0);
	T_EQ_STR(out,
		 "0x4ff000 (?);0x400100 (a) 1\n"
		 "0x500000 (anon);0x400100 (a) 1\n"
		 "0x500800 (anon);0x400100 (a) 1\n"
		 "0x501000 (?);0x400100 (a) 1\n");
	T_EQ_INT(st.frames_no_map, 2);
	free(out);
}

int main(void)
{
	test_anon_edges();
	test_memo_maps();
	test_memo_churn();
	test_runs();
	test_raw_addresses();
	test_chain_rest();
	TEST_MAIN_END();
}
