// SPDX-License-Identifier: GPL-2.0
/*
 * The names log (frames/namer.c, docs/design.md §6.19) between two
 * threads: the reader gets exactly the frames the namer put for (sample,
 * DSO, key), in order and out of it, across chunk ends; records of
 * samples it passed are skipped; what the namer never put is NAMER_MISS,
 * at once when the namer is past that sample, has finished or is pausing,
 * and after waiting otherwise. The threaded case checks every answer
 * against the same pseudo-random script on both sides.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frames/namer.h"
#include "test.h"

static const char *dsos[] = { "/usr/lib/libc.so.6", "/usr/bin/cc1", "/usr/lib/libm.so.6" };
static const char *funcs[] = { "main", "memcpy", "parse_expr", "fold", "emit" };

/* The script both sides follow: sample @s names @count(s) addresses,
 * the k-th with key key(s, k), in DSO dso(s, k), with nr(s, k) frames. */
static u64 mix(u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static u32 count_of(u64 s)
{
	return (u32)(mix(s) % 4); /* 0-3 */
}

static u64 key_of(u64 s, u32 k)
{
	return (s << 8 | k) << 1 | (mix(s + k) & 1);
}

static const char *dso_of(u64 s, u32 k)
{
	return dsos[mix(s * 7 + k) % 3];
}

static u32 nr_of(u64 s, u32 k)
{
	return (u32)(mix(s * 13 + k) % (SYM_MAX_FRAMES + 1)); /* 0-16 */
}

static void frames_of(u64 s, u32 k, struct sym_frame *fr)
{
	u32 i, n = nr_of(s, k);

	for (i = 0; i < n; i++)
		fr[i] = (struct sym_frame){ funcs[(s + k + i) % 5], i & 1 ? NULL : dsos[i % 3],
					    (int)(s * 31 + k * 7 + i) };
}

static bool frames_ok(u64 s, u32 k, const struct sym_frame *got, int n)
{
	struct sym_frame want[SYM_MAX_FRAMES];
	int i;

	if (n != (int)nr_of(s, k))
		return false;
	frames_of(s, k, want);
	for (i = 0; i < n; i++)
		if (got[i].func != want[i].func || got[i].file != want[i].file ||
		    got[i].line != want[i].line)
			return false;
	return true;
}

/* One thread: puts, takes in order and out of order, skips, misses. */
static void test_basic(void)
{
	struct sym_frame fr[SYM_MAX_FRAMES], got[SYM_MAX_FRAMES];
	struct namer_stats st;
	struct namer *n;

	T(namer_new(&n) == 0);
	frames_of(1, 0, fr);
	T(namer_put(n, 1, dsos[0], key_of(1, 0), fr, nr_of(1, 0)) == 0);
	frames_of(1, 1, fr);
	T(namer_put(n, 1, dsos[1], key_of(1, 1), fr, nr_of(1, 1)) == 0);
	frames_of(3, 0, fr);
	T(namer_put(n, 3, dsos[2], key_of(3, 0), fr, nr_of(3, 0)) == 0);
	frames_of(5, 0, fr);
	T(namer_put(n, 5, dsos[0], key_of(5, 0), fr, nr_of(5, 0)) == 0);
	namer_through(n, 5);

	/* Sample 1's second address asked first: found without taking
	 * the first record, which is still there after. */
	T(frames_ok(1, 1, got, namer_take(n, 1, dsos[1], key_of(1, 1), got)));
	T(frames_ok(1, 0, got, namer_take(n, 1, dsos[0], key_of(1, 0), got)));
	/* Same key, other DSO: not the record. Sample 2 had none. */
	T_EQ_INT(namer_take(n, 3, dsos[0], key_of(3, 0), got), NAMER_MISS);
	T_EQ_INT(namer_take(n, 2, dsos[0], key_of(2, 0), got), NAMER_MISS);
	T(frames_ok(3, 0, got, namer_take(n, 3, dsos[2], key_of(3, 0), got)));
	/* Sample 5 asked for what sample 4 would have needed: sample 4's
	 * records (none) are passed, 5's record is not that key. */
	T_EQ_INT(namer_take(n, 5, dsos[0], key_of(4, 0), got), NAMER_MISS);
	T(frames_ok(5, 0, got, namer_take(n, 5, dsos[0], key_of(5, 0), got)));
	/* Past the namer's sample but it finished: no wait. */
	namer_finish(n);
	T_EQ_INT(namer_take(n, 9, dsos[0], key_of(9, 0), got), NAMER_MISS);
	namer_stats(n, &st);
	T_EQ_INT(st.put, 4);
	T_EQ_INT(st.taken, 4);
	T_EQ_INT(st.missed, 4);
	T_EQ_INT(st.waits, 0);
	namer_free(n);

	/* A namer pausing (too far ahead) is not waited for. */
	T(namer_new(&n) == 0);
	namer_pausing(n, true);
	T_EQ_INT(namer_take(n, 1, dsos[0], key_of(1, 0), got), NAMER_MISS);
	namer_pausing(n, false);
	namer_through(n, 1);
	T_EQ_INT(namer_take(n, 1, dsos[0], key_of(1, 0), got), NAMER_MISS);
	namer_free(n);

	/* Too many frames is refused. */
	T(namer_new(&n) == 0);
	T(namer_put(n, 1, dsos[0], 2, fr, SYM_MAX_FRAMES + 1) < 0);
	namer_free(n);
}

/* A namer that leaves hands its symbolizer over. */
static void test_leave(void)
{
	struct namer *n;
	int fake;

	T(namer_new(&n) == 0);
	T(namer_left(n) == NULL);
	namer_leave(n, (struct sym_ctx *)&fake);
	T(namer_left(n) == (struct sym_ctx *)&fake);
	namer_free(n);
}

#define SAMPLES 200000

struct writer {
	struct namer *n;
	u64 sleep_every; /* a pause now and then, so the reader waits */
};

static void *write_main(void *arg)
{
	struct writer *w = arg;
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct timespec ts = { 0, 50 * 1000 };
	u64 s;
	u32 k;

	for (s = 1; s <= SAMPLES; s++) {
		for (k = 0; k < count_of(s); k++) {
			frames_of(s, k, fr);
			if (namer_put(w->n, s, dso_of(s, k), key_of(s, k), fr, nr_of(s, k)))
				return NULL;
		}
		namer_through(w->n, s);
		if (w->sleep_every && s % w->sleep_every == 0)
			nanosleep(&ts, NULL);
	}
	namer_finish(w->n);
	return NULL;
}

/* The reader follows the script, but asks also for one address of every
 * 50th sample the namer never named (a frame the namer cannot find). */
static void test_threads(u64 sleep_every)
{
	struct sym_frame got[SYM_MAX_FRAMES];
	struct writer w = { NULL, sleep_every };
	struct namer_stats st;
	u64 s, bad = 0, missed = 0, expect = 0;
	pthread_t th;
	u32 k;

	T(namer_new(&w.n) == 0);
	T(pthread_create(&th, NULL, write_main, &w) == 0);
	for (s = 1; s <= SAMPLES; s++) {
		for (k = 0; k < count_of(s); k++) {
			if (s % 50 == 0 && k == 0) {
				missed += namer_take(w.n, s, "/nowhere", key_of(s, k), got) ==
					  NAMER_MISS;
				expect++;
			}
			if (!frames_ok(s, k, got,
				       namer_take(w.n, s, dso_of(s, k), key_of(s, k), got)))
				bad++;
		}
	}
	pthread_join(th, NULL);
	T_EQ_INT(bad, 0);
	T_EQ_INT(missed, expect);
	namer_stats(w.n, &st);
	T_EQ_INT(st.missed, expect);
	T_EQ_INT(st.taken, st.put);
	T(st.put > SAMPLES); /* 1.5 a sample: many chunks */
	if (sleep_every)
		T(st.waits > 0);
	namer_free(w.n);
}

int main(void)
{
	test_basic();
	test_leave();
	test_threads(0);
	test_threads(1000);
	TEST_MAIN_END();
}
