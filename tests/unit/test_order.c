// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for libconv/perfdata/order.c, the FINISHED_ROUND time
 * ordering, and for the session's use of it.
 *
 * Expected sequences are written out by hand from perf's rule
 * (tools/perf/util/ordered-events.c: at each round flush up to the
 * previous round's newest timestamp, then remember the newest seen;
 * docs/perf-data-format.md §1.7), or, for the random case, come
 * from a stable insertion sort done here on (time, arrival index). The
 * session-level cases watch what the ordering changes in the output:
 * which map a sample sees, and the count of records older than what was
 * already delivered (perfspy_stats.out_of_order).
 */
#include "perfdata/order.h"
#include "perfspy.h"
#include "recbuild.h"
#include "test.h"

#include <errno.h>

/* Records are perf_event_headers; the test only needs distinct ones,
 * each carrying its arrival index in misc so a pop can be identified. */
#define MAXREC 2048
static struct perf_event_header recs[MAXREC];

static struct rd_rec rec_of(unsigned i, bool volatile_)
{
	recs[i].type = 9;
	recs[i].misc = (u16)i;
	recs[i].size = sizeof(recs[i]);
	return (struct rd_rec){ .hdr = &recs[i], .offset = 1000 + 8 * (u64)i, .volatile_ = volatile_ };
}

static void push(struct order *o, unsigned i, u64 t)
{
	struct rd_rec r = rec_of(i, false);

	T_EQ_INT(ord_push(o, &r, t), 0);
}

/* Pop everything up to @limit; the arrival indexes into @got. */
static unsigned pop_all(struct order *o, u64 limit, unsigned *got, unsigned max)
{
	struct ord_ent e;
	unsigned n = 0;

	while (ord_pop(o, limit, &e) > 0) {
		if (n < max)
			got[n] = e.hdr->misc;
		n++;
		ord_done(o, &e);
	}
	return n;
}

static void expect_seq(const unsigned *got, unsigned n, const unsigned *want,
		       unsigned nwant)
{
	unsigned i;

	T_EQ_INT(n, nwant);
	for (i = 0; i < n && i < nwant; i++)
		T_EQ_INT(got[i], want[i]);
}

/* Out of order inside a round and across rounds. */
static void test_rounds(void)
{
	struct order o;
	unsigned got[16], n;

	ord_init(&o);
	/* Round 1: 30, 10, 20. perf flushes nothing at the first round
	 * (the previous round's newest is 0), and remembers 30. */
	push(&o, 0, 30);
	push(&o, 1, 10);
	push(&o, 2, 20);
	T_EQ_INT(ord_round(&o), 0);
	n = pop_all(&o, 0, got, 16);
	T_EQ_INT(n, 0);
	/* Round 2: 25 and 40 arrive; the flush goes up to 30 inclusive. */
	push(&o, 3, 25);
	push(&o, 4, 40);
	push(&o, 5, 30);
	T_EQ_INT(ord_round(&o), 30);
	n = pop_all(&o, 30, got, 16);
	{
		static const unsigned want[] = { 1, 2, 3, 0, 5 };

		expect_seq(got, n, want, 5);
	}
	T_EQ_INT(o.flushed_upto, 30);
	/* Round 3 brings nothing newer: the limit becomes 40. */
	T_EQ_INT(ord_round(&o), 40);
	n = pop_all(&o, 40, got, 16);
	T_EQ_INT(n, 1);
	T_EQ_INT(got[0], 4);
	T_EQ_INT(o.flushed_upto, 40);
	/* A record older than what was delivered still comes out (the
	 * session counts it as out of order, see test_session_late). */
	push(&o, 6, 35);
	T(35 < o.flushed_upto);
	T_EQ_INT(ord_round(&o), 40);
	n = pop_all(&o, 40, got, 16);
	T_EQ_INT(n, 1);
	T_EQ_INT(got[0], 6);
	/* flushed_upto is the newest delivered, it never goes back. */
	T_EQ_INT(o.flushed_upto, 40);
	T_EQ_INT(ord_queued(&o), 0);
	ord_free(&o);
}

/* Equal timestamps come out in arrival order, however the arrivals
 * split into runs. */
static void test_equal_times(void)
{
	struct order o;
	unsigned got[64], want[64], n, i;

	ord_init(&o);
	/* Interleave two timestamps: 20 runs, each merge choosing
	 * between equal keys many times. */
	for (i = 0; i < 40; i++)
		push(&o, i, i % 2 ? 7 : 5);
	n = pop_all(&o, UINT64_MAX, got, 64);
	for (i = 0; i < 20; i++) {
		want[i] = 2 * i;	/* the 5s, in arrival order */
		want[20 + i] = 2 * i + 1; /* then the 7s */
	}
	expect_seq(got, n, want, 40);
	ord_free(&o);
}

/* The limit is inclusive and pop leaves newer records queued. */
static void test_limit(void)
{
	struct order o;
	struct ord_ent e;
	unsigned got[8], n;

	ord_init(&o);
	T_EQ_INT(ord_pop(&o, UINT64_MAX, &e), 0); /* empty */
	push(&o, 0, 100);
	push(&o, 1, 101);
	T_EQ_INT(ord_pop(&o, 99, &e), 0);
	n = pop_all(&o, 100, got, 8);
	T_EQ_INT(n, 1);
	T_EQ_INT(got[0], 0);
	T_EQ_INT(ord_queued(&o), 1);
	T_EQ_INT(o.ents[o.head].time, 101);
	/* Freed with a record still queued (ASan/valgrind see leaks). */
	ord_free(&o);
	T_EQ_INT(ord_queued(&o), 0);
	T(o.ents == NULL);
}

/* Volatile views are copied at push; owned_bytes follows the copies;
 * ord_min_offset ignores them (their pages may be released). */
static void test_volatile(void)
{
	struct order o;
	struct ord_ent e;
	struct rd_rec r;

	ord_init(&o);
	T_EQ_INT(ord_min_offset(&o), UINT64_MAX);
	r = rec_of(10, true);
	T_EQ_INT(ord_push(&o, &r, 50), 0);
	r = rec_of(11, false);
	T_EQ_INT(ord_push(&o, &r, 60), 0);
	r = rec_of(12, true);
	T_EQ_INT(ord_push(&o, &r, 40), 0);
	T_EQ_INT(o.owned_bytes, 2 * sizeof(struct perf_event_header));
	/* Only record 11 (offset 1000 + 88) is a view into the input. */
	T_EQ_INT(ord_min_offset(&o), 1088);
	/* The caller's buffer dies: the copies must not change. */
	recs[10].misc = 0xdead;
	recs[12].misc = 0xbeef;
	T_EQ_INT(ord_pop(&o, UINT64_MAX, &e), 1);
	T(e.owned);
	T(e.hdr != &recs[12]);
	T_EQ_INT(e.hdr->misc, 12);
	T_EQ_INT(e.offset, 1096);
	ord_done(&o, &e);
	T(!e.owned);
	T_EQ_INT(o.owned_bytes, sizeof(struct perf_event_header));
	T_EQ_INT(ord_pop(&o, UINT64_MAX, &e), 1);
	T_EQ_INT(e.hdr->misc, 10);
	ord_done(&o, &e);
	T_EQ_INT(o.owned_bytes, 0);
	T_EQ_INT(ord_pop(&o, UINT64_MAX, &e), 1);
	T(!e.owned);
	T(e.hdr == &recs[11]);
	ord_done(&o, &e);
	T_EQ_INT(ord_min_offset(&o), UINT64_MAX);
	/* An owned copy left in the queue is freed by ord_free. */
	r = rec_of(13, true);
	T_EQ_INT(ord_push(&o, &r, 1), 0);
	T_EQ_INT(ord_min_offset(&o), UINT64_MAX);
	ord_free(&o);
}

/* The reference for the random cases: the arrival indexes queued, in
 * (time, arrival) order, kept by a stable insertion sort. */
struct ref {
	u64 times[MAXREC];
	unsigned pending[MAXREC];
	unsigned n;
};

static void ref_push(struct order *o, struct ref *r, unsigned i, u64 t)
{
	unsigned k;

	push(o, i, t);
	r->times[i] = t;
	for (k = r->n; k > 0 && r->times[r->pending[k - 1]] > t; k--)
		r->pending[k] = r->pending[k - 1];
	r->pending[k] = i;
	r->n++;
}

/* Pop up to @limit, checking each record against the reference's order;
 * returns how many came out. */
static unsigned ref_pop(struct order *o, struct ref *r, u64 limit)
{
	static unsigned got[MAXREC];
	unsigned n, k, j;

	n = pop_all(o, limit, got, MAXREC);
	for (k = 0; k < r->n && r->times[r->pending[k]] <= limit; k++)
		;
	T_EQ_INT(n, k);
	for (j = 0; j < n && j < k; j++)
		if (got[j] != r->pending[j]) {
			T_EQ_INT(got[j], r->pending[j]);
			break;
		}
	memmove(r->pending, r->pending + k, (r->n - k) * sizeof(*r->pending));
	r->n -= k;
	T_EQ_INT(ord_queued(o), r->n);
	return n;
}

/* Random times over many rounds, checked against the reference over
 * what each round may release. */
static void test_random(void)
{
	static struct ref r;
	unsigned i, j, total = 0, round;
	u64 lcg = 12345, limit, newest = 0;
	struct order o;

	ord_init(&o);
	for (round = 0, i = 0; i < MAXREC; round++) {
		unsigned burst = 1 + (unsigned)((lcg >> 33) % 200);

		/* Times drawn around a slowly rising clock with jitter, so
		 * records cross round boundaries as perf's per-CPU buffers
		 * make them do; few distinct values, so ties are common. */
		for (j = 0; j < burst && i < MAXREC; j++, i++) {
			lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
			ref_push(&o, &r, i, round * 10 + (lcg >> 59));
		}
		limit = newest;
		for (j = 0; j < r.n; j++)
			if (r.times[r.pending[j]] > newest)
				newest = r.times[r.pending[j]];
		T_EQ_INT(ord_round(&o), limit);
		total += ref_pop(&o, &r, limit);
	}
	total += ref_pop(&o, &r, UINT64_MAX);
	T_EQ_INT(total, MAXREC);
	ord_free(&o);
}

/*
 * Pushes and pops in any mix, as a flush over budget makes them: pops
 * stop at a limit mid-queue, arrivals then land before, among and after
 * what is queued (the merge from the back, the queue moved to the
 * front), and runs of every length (one record each: times falling).
 * Checked against the reference.
 */
static void test_interleaved(void)
{
	static struct ref r;
	unsigned i = 0, j, step, total = 0;
	u64 lcg = 99;
	struct order o;

	ord_init(&o);
	for (step = 0; i < MAXREC; step++) {
		unsigned burst = (unsigned)((lcg >> 40) % 64);
		bool falling = step % 7 == 3;

		for (j = 0; j < burst && i < MAXREC; j++, i++) {
			lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
			ref_push(&o, &r, i, falling ? 1000 - j : step + (lcg >> 60));
		}
		lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
		total += ref_pop(&o, &r, step + (lcg >> 61));
	}
	total += ref_pop(&o, &r, UINT64_MAX);
	T_EQ_INT(total, MAXREC);
	ord_free(&o);
}

/* Copies over the budget: the limit is halfway from the oldest queued
 * record, wherever it arrived, to the newest. */
static void test_over_budget(void)
{
	struct order o;
	struct rd_rec r;
	unsigned got[8], n;
	u64 limit = 0;

	ord_init(&o);
	o.max_owned = 3 * sizeof(struct perf_event_header);
	r = rec_of(20, true);
	T_EQ_INT(ord_push(&o, &r, 500), 0);
	r = rec_of(21, true);
	T_EQ_INT(ord_push(&o, &r, 100), 0);
	r = rec_of(22, false); /* a view: not counted */
	T_EQ_INT(ord_push(&o, &r, 50), 0);
	T_EQ_INT(ord_over_budget(&o, &limit), 0);
	r = rec_of(23, true);
	T_EQ_INT(ord_push(&o, &r, 300), 0);
	T_EQ_INT(ord_over_budget(&o, &limit), 0);
	r = rec_of(24, true);
	T_EQ_INT(ord_push(&o, &r, 200), 0);
	T_EQ_INT(ord_over_budget(&o, &limit), 1);
	T_EQ_INT(limit, 50 + (500 - 50) / 2);
	n = pop_all(&o, limit, got, 8);
	{
		static const unsigned want[] = { 22, 21, 24 };

		expect_seq(got, n, want, 3);
	}
	T_EQ_INT(o.owned_bytes, 2 * sizeof(struct perf_event_header));
	T_EQ_INT(ord_over_budget(&o, &limit), 0);
	ord_free(&o);
}

/* ---- through the session ---- */

#define CTX_USER ((uint64_t)-512)

static char *convert(const struct rb *img, struct perfspy_stats *st)
{
	char *out;

	T_EQ_INT(rb_convert(img, st, &out), 0);
	return out;
}

/*
 * Which map a sample sees depends on time, not file position: the map
 * of /a (t=15) is written after the sample at t=20 of the same round
 * and applies to it; the map of /b (t=25) is written before the sample
 * at t=21 and must not apply to it.
 */
static void test_session_maps(void)
{
	static const uint64_t at_a[] = { CTX_USER, 0x400100 };
	static const uint64_t at_b[] = { CTX_USER, 0x500100 };
	struct perfspy_stats st = { .sz = sizeof(st) };
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	char *out;

	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_sample(&d, 100, 100, 20, at_a, 2, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/a", 15);
	rb_mmap2(&d, 100, 0x500000, 0x1000, 0, "/nonexistent/b", 25);
	rb_sample(&d, 100, 100, 21, at_b, 2, 1);
	rb_round(&d);
	rb_sample(&d, 100, 100, 30, at_b, 2, 1);
	rb_round(&d);
	rb_file(&img, &a, sizeof(a) + 16, &d, "h");
	out = convert(&img, &st);
	T_EQ_STR(out, "0x400100 (a) 1\n0x500100 (?) 1\n0x500100 (b) 1\n");
	T_EQ_INT(st.out_of_order, 0);
	free(out);
	rb_free(&d);
	rb_free(&img);
}

/*
 * A record older than what the previous round already delivered is
 * counted and still used: after round 2 flushed up to t=30, a sample at
 * t=12 arrives (and one at t=30: equal is not older).
 */
static void test_session_late(void)
{
	static const uint64_t c1[] = { CTX_USER, 0x400100 };
	static const uint64_t c2[] = { CTX_USER, 0x400200 };
	struct perfspy_stats st = { .sz = sizeof(st) };
	struct rb d = { 0 }, img = { 0 };
	struct perf_event_attr a;
	char *out;

	rb_default_attr(&a);
	rb_comm(&d, 100, 100, "prog", 1, 1);
	rb_mmap2(&d, 100, 0x400000, 0x1000, 0, "/nonexistent/a", 2);
	rb_sample(&d, 100, 100, 30, c1, 2, 1);
	rb_sample(&d, 100, 100, 10, c1, 2, 1);
	rb_round(&d); /* flushes nothing, next limit 30 */
	rb_sample(&d, 100, 100, 40, c1, 2, 1);
	rb_round(&d); /* flushes 10 and 30 */
	rb_sample(&d, 100, 100, 12, c2, 2, 1);
	rb_sample(&d, 100, 100, 30, c2, 2, 1);
	rb_sample(&d, 100, 100, 29, c2, 2, 1);
	rb_round(&d);
	rb_file(&img, &a, sizeof(a) + 16, &d, "h");
	out = convert(&img, &st);
	T_EQ_STR(out, "0x400100 (a) 3\n0x400200 (a) 3\n");
	T_EQ_INT(st.out_of_order, 2);
	free(out);
	rb_free(&d);
	rb_free(&img);
}

int main(void)
{
	test_rounds();
	test_equal_times();
	test_limit();
	test_volatile();
	test_random();
	test_interleaved();
	test_over_budget();
	test_session_maps();
	test_session_late();
	TEST_MAIN_END();
}
