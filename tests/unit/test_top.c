// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy top's table (top.c, docs/top.md §1): rows of a hand-made folder
 * whose own and total counts are known by construction, the interval as
 * the difference between two updates of a growing folder, the per-thread
 * rows, the native-only and Python-only modes, and the interval folder.
 */
#include <errno.h>
#include <stdlib.h>

#include "perfspy.h"
#include "test.h"

#define THR_A "thread (10): MainThread"
#define THR_B "thread (11): loader"
#define MOD "<module> (train.py:1)"
#define FWD "forward (model.py:40)"
#define LOAD "load (data.py:5)"

static void add(struct perfspy_folder *f, uint64_t n, const char *const *frames)
{
	size_t nr = 0;

	while (frames[nr])
		nr++;
	T_EQ_INT(perfspy_folder__add(f, frames, nr, n), 0);
}

/* The row named @name (and @tid, with threads), or all zero. */
static struct perfspy_top_row find(const struct perfspy_top *t, const char *name, int tid)
{
	PERFSPY_OPTS(perfspy_top_row, r);
	size_t i;

	for (i = 0; i < perfspy_top__nr_rows(t); i++) {
		r.sz = sizeof(r);
		T_EQ_INT(perfspy_top__row(t, i, &r), 0);
		if (!strcmp(r.name, name) && r.tid == tid)
			return r;
	}
	memset(&r, 0, sizeof(r));
	return r;
}

static void fill(struct perfspy_folder *f)
{
	/* 30: forward -> cudaLaunchKernel (a stripped driver and the kernel
	 * below: the named frame is the row). */
	add(f, 30, (const char *const[]){ THR_A, MOD, FWD, "cudaLaunchKernel (libcudart.so.12)",
		"0x7f10 (libcuda.so.1)", "do_syscall_64 ([kernel.kallsyms])", NULL });
	/* 10: forward itself (no native frame under it). */
	add(f, 10, (const char *const[]){ THR_A, MOD, FWD, NULL });
	/* 5: recursion: forward twice on the stack counts once in total. */
	add(f, 5, (const char *const[]){ THR_A, MOD, FWD, FWD, "memcpy (libc.so.6)", NULL });
	/* 15: another thread, only kernel frames under its Python frame. */
	add(f, 15, (const char *const[]){ THR_B, LOAD, "read_pages ([kernel.kallsyms])", NULL });
	/* 40: a native thread, no Python frame. */
	add(f, 40, (const char *const[]){ "thread (12): worker", "start_thread (libc.so.6)",
		"spin (libx.so)", NULL });
}

static void test_mixed(void)
{
	PERFSPY_OPTS(perfspy_top_opts, o);
	PERFSPY_OPTS(perfspy_top_stats, st);
	struct perfspy_folder *f = NULL;
	struct perfspy_top *t = NULL;
	struct perfspy_top_row r;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_top__new(&o, &t), 0);
	fill(f);
	T_EQ_INT(perfspy_top__update(t, f), 0);
	T_EQ_INT(perfspy_top__stats(t, &st), 0);
	T_EQ_INT(st.total, 100);
	T_EQ_INT(st.nr_threads, 3);
	r = find(t, FWD " -> cudaLaunchKernel", 0);
	T_EQ_INT(r.own, 30);
	T_EQ_INT(r.total, 30);
	r = find(t, FWD, 0);
	T_EQ_INT(r.own, 10);
	T_EQ_INT(r.total, 45); /* 30 + 10 + 5, the recursive stack once */
	r = find(t, FWD " -> memcpy", 0);
	T_EQ_INT(r.own, 5);
	r = find(t, MOD, 0);
	T_EQ_INT(r.own, 0);
	T_EQ_INT(r.total, 45);
	r = find(t, LOAD " -> read_pages [k]", 0);
	T_EQ_INT(r.own, 15);
	r = find(t, "spin (libx.so)", 0);
	T_EQ_INT(r.own, 40);
	r = find(t, "start_thread (libc.so.6)", 0);
	T_EQ_INT(r.own, 0);
	T_EQ_INT(r.total, 40);
	/* Ordered by own: the native thread's 40 first, then the launch. */
	r.sz = sizeof(r);
	T_EQ_INT(perfspy_top__row(t, 0, &r), 0);
	T_EQ_STR(r.name, "spin (libx.so)");
	T_EQ_INT(perfspy_top__row(t, 1, &r), 0);
	T_EQ_STR(r.name, FWD " -> cudaLaunchKernel");
	T_EQ_INT(perfspy_top__row(t, perfspy_top__nr_rows(t), &r), -ENOENT);
	T_EQ_INT(perfspy_folder__total(perfspy_top__interval(t)), 100);

	/* The second interval: only what the folder gained. */
	add(f, 7, (const char *const[]){ THR_A, MOD, FWD, NULL });
	T_EQ_INT(perfspy_top__update(t, f), 0);
	T_EQ_INT(perfspy_top__stats(t, &st), 0);
	T_EQ_INT(st.total, 7);
	T_EQ_INT(st.total_all, 107);
	T_EQ_INT(st.nr_threads, 1);
	r = find(t, FWD, 0);
	T_EQ_INT(r.own, 7);
	T_EQ_INT(r.own_all, 17);
	T_EQ_INT(r.total_all, 52);
	r = find(t, "spin (libx.so)", 0);
	T_EQ_INT(r.own, 0);
	T_EQ_INT(r.own_all, 40);
	T_EQ_INT(perfspy_folder__total(perfspy_top__interval(t)), 7);
	T_EQ_INT(perfspy_folder__nr_stacks(perfspy_top__interval(t)), 1);
	r.sz = sizeof(r);
	T_EQ_INT(perfspy_top__row(t, 0, &r), 0);
	T_EQ_STR(r.name, FWD);
	perfspy_top__free(t);
	perfspy_folder__free(f);
}

static void test_modes(void)
{
	PERFSPY_OPTS(perfspy_top_opts, o, .threads = true);
	struct perfspy_folder *f = NULL;
	struct perfspy_top *t = NULL;
	struct perfspy_top_row r;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	fill(f);
	T_EQ_INT(perfspy_top__new(&o, &t), 0);
	T_EQ_INT(perfspy_top__update(t, f), 0);
	r = find(t, LOAD " -> read_pages [k]", 11);
	T_EQ_INT(r.own, 15);
	T(r.thread_name && !strcmp(r.thread_name, "loader"));
	T_EQ_INT(find(t, LOAD " -> read_pages [k]", 0).own, 0);
	perfspy_top__free(t);

	o.threads = false;
	o.mode = PERFSPY_TOP_NATIVE;
	T_EQ_INT(perfspy_top__new(&o, &t), 0);
	T_EQ_INT(perfspy_top__update(t, f), 0);
	T_EQ_INT(find(t, "cudaLaunchKernel (libcudart.so.12)", 0).total, 30);
	T_EQ_INT(find(t, "0x7f10 (libcuda.so.1)", 0).total, 30);
	T_EQ_INT(find(t, "cudaLaunchKernel (libcudart.so.12)", 0).own, 30);
	T_EQ_INT(find(t, FWD, 0).total, 0);
	/* The Python frame's own time has no native frame: its thread root
	 * is all there is. */
	T_EQ_INT(find(t, "read_pages ([kernel.kallsyms])", 0).own, 15);
	perfspy_top__free(t);

	o.mode = PERFSPY_TOP_PYTHON;
	T_EQ_INT(perfspy_top__new(&o, &t), 0);
	T_EQ_INT(perfspy_top__update(t, f), 0);
	T_EQ_INT(find(t, FWD, 0).own, 45);
	T_EQ_INT(find(t, LOAD, 0).own, 15);
	T_EQ_INT(find(t, "(no Python frame)", 0).own, 40);
	T_EQ_INT(find(t, "spin (libx.so)", 0).total, 0);
	perfspy_top__free(t);

	o.mode = 7;
	T_EQ_INT(perfspy_top__new(&o, &t), -EINVAL);
	T_EQ_INT(perfspy_top__update(NULL, f), -EINVAL);
	perfspy_folder__free(f);
}

int main(void)
{
	test_mixed();
	test_modes();
	TEST_MAIN_END();
}
