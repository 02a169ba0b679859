// SPDX-License-Identifier: GPL-2.0
/*
 * --idle's off-CPU stretches (offcpu.c, docs/top.md §3): a stretch weighs
 * its length in whole milliseconds, the remainder carried per thread (so
 * ten 0.3 ms waits make 3 ms, not 0), one stretch per thread at a time,
 * and a thread without an open stretch gives none.
 */
#include <stdlib.h>

#include "perfspy.h"
#include "test.h"
#include "offcpu.h"

static void test_stretches(void)
{
	static const u32 ids[] = { 3, 1, 4 };
	struct offcpu o = { 0 };
	struct offcpu_thread *t;
	u64 ms = 99, sum = 0;
	int i;

	t = offcpu_thread(&o, 100);
	T(t && t->tid == 100 && !t->open);
	T_EQ_INT(offcpu_in(&o, t, 1000, &ms), 0);
	T_EQ_INT(ms, 99); /* untouched: no stretch */
	T_EQ_INT(offcpu_out(&o, t, 1000000, ids, 3), 0);
	T(t->open && t->nr == 3 && t->ids[2] == 4);
	T_EQ_INT(offcpu_in(&o, t, 31500000, &ms), 1);
	T_EQ_INT(ms, 30);	       /* 30.5 ms */
	T_EQ_INT(t->carry_ns, 500000); /* the half carried */
	T(!t->open);
	T_EQ_INT(offcpu_in(&o, t, 40000000, &ms), 0);
	/* Ten waits of 0.3 ms: 3 ms in all, with the 0.5 ms carried: 3. */
	for (i = 0; i < 10; i++) {
		T_EQ_INT(offcpu_out(&o, t, 100000000ull + i * 1000000ull, ids, 3), 0);
		T_EQ_INT(offcpu_in(&o, t, 100000000ull + i * 1000000ull + 300000, &ms), 1);
		sum += ms;
	}
	T_EQ_INT(sum, 3);
	T_EQ_INT(t->carry_ns, 500000);
	/* On-CPU periods share the carry. */
	T_EQ_INT(offcpu_ms(t, 500000), 1);
	T_EQ_INT(t->carry_ns, 0);
	/* A switch-in before the switch-out's time weighs nothing. */
	T_EQ_INT(offcpu_out(&o, t, 5000000, ids, 3), 0);
	T_EQ_INT(offcpu_in(&o, t, 4000000, &ms), 1);
	T_EQ_INT(ms, 0);
	/* Threads are apart, and survive the table growing. */
	for (i = 0; i < 1000; i++)
		T(offcpu_thread(&o, 1000 + (u32)i) != NULL);
	t = offcpu_thread(&o, 100);
	T(t && t->tid == 100 && t->carry_ns == 0);
	T_EQ_INT(o.nr, 1001);
	T_EQ_INT(o.nr_open, 12);
	T_EQ_INT(o.nr_closed, 12);
	offcpu_free(&o);
	T_EQ_INT(o.nr, 0);
}

int main(void)
{
	test_stretches();
	TEST_MAIN_END();
}
