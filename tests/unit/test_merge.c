// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy_merge() (libconv/folded/merge.c, merge_out.c) on hand-written stacks:
 * line splitting with exact totals, largest-remainder rounding and its
 * carried remainders, suffix matches, recursion, co_name vs qualname,
 * full vs short file names, thread-aware matching and thread roots, the
 * native join for stacks without Python frames, --native refinement,
 * empty and disjoint captures, process command lines holding ';', and the
 * same output whatever order the perf stacks come in.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/fold.h"
#include "folded/merge.h"
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

static struct perfspy_folder *folder(const char *text)
{
	struct perfspy_folder *f;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__read_pyspy(f, NULL, text, strlen(text), NULL, NULL), 0);
	return f;
}

/* Merge @py into @perf with @o; the merged text (caller frees). The
 * merged total must equal the perf total, whatever the case. */
static char *merge_o(const char *perf, const char *py, const struct perfspy_merge_opts *o,
		     struct perfspy_merge_stats *st)
{
	struct perfspy_folder *p = folder(perf), *y = folder(py), *out;
	char *text;

	T_EQ_INT(perfspy_folder__new(&out), 0);
	T_EQ_INT(perfspy_merge(p, y, o, out, st), 0);
	T_EQ_INT(perfspy_folder__total(out), perfspy_folder__total(p));
	text = write_str(out);
	perfspy_folder__free(p);
	perfspy_folder__free(y);
	perfspy_folder__free(out);
	return text;
}

static void expect_o(const char *perf, const char *py, const struct perfspy_merge_opts *o,
		     const char *want)
{
	char *out = merge_o(perf, py, o, NULL);

	T_EQ_STR(out, want);
	free(out);
}

static void expect(const char *perf, const char *py, const char *want)
{
	expect_o(perf, py, NULL, want);
}

static void test_apportion(void)
{
	struct mg_var v[3] = { { .weight = 1 }, { .weight = 1 }, { .weight = 1 } };
	struct mg_var w[2] = { { .weight = 3 }, { .weight = 1 } };
	u64 out[3], sum[2] = { 0 };
	u32 scratch[3];
	int i;

	/* 10 over 1:1:1 is 4,3,3; the carried remainders move the extra
	 * sample to the next variant each time (cumulative 10,10,10). */
	T_EQ_INT(mg_apportion(10, v, 3, 3, out, scratch), 0);
	T(out[0] == 4 && out[1] == 3 && out[2] == 3);
	T_EQ_INT(mg_apportion(10, v, 3, 3, out, scratch), 0);
	T(out[0] == 3 && out[1] == 4 && out[2] == 3);
	T_EQ_INT(mg_apportion(10, v, 3, 3, out, scratch), 0);
	T(out[0] == 3 && out[1] == 3 && out[2] == 4);
	/* Count-1 stacks over 3:1: the minority line gets its share. */
	for (i = 0; i < 8; i++) {
		T_EQ_INT(mg_apportion(1, w, 2, 4, out, scratch), 0);
		T_EQ_INT(out[0] + out[1], 1);
		sum[0] += out[0];
		sum[1] += out[1];
	}
	T(sum[0] == 6 && sum[1] == 2);
	/* Huge counts and weights: exact, no overflow. */
	{
		struct mg_var h[3] = { { .weight = UINT64_MAX / 3 }, { .weight = 7 },
				       { .weight = UINT64_MAX / 5 } };
		u64 tot = UINT64_MAX / 3 + 7 + UINT64_MAX / 5;

		T_EQ_INT(mg_apportion(UINT64_MAX, h, 3, tot, out, scratch), 0);
		T(out[0] + out[1] + out[2] == UINT64_MAX);
		T(out[1] >= 12 && out[1] <= 14); /* 7 * (2^64 - 1) / tot */
	}
	T_EQ_INT(mg_apportion(5, v, 0, 3, out, scratch), -EINVAL);
}

/* Python mode: the perf count split over py-spy's lines (7.5/2.5 ->
 * 8/2, the tie to the first line), native frames kept in place. */
static void test_basic(void)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	char *out;

	out = merge_o("main (app.py:1);work (app.py:10);compute (libx.c:5);inner (libx.c:9) 10\n"
		      "main (app.py:1);other (app.py:20) 3\n",
		      "main (app.py:30);work (app.py:12) 3\nmain (app.py:30);work (app.py:14) 1\n"
		      "main (app.py:31);other (app.py:22) 5\n", NULL, &st);
	T_EQ_STR(out, "main (app.py:30);work (app.py:12);compute (libx.c:5);inner (libx.c:9) 8\n"
		      "main (app.py:30);work (app.py:14);compute (libx.c:5);inner (libx.c:9) 2\n"
		      "main (app.py:31);other (app.py:22) 3\n");
	T_EQ_INT(st.total, 13);
	T_EQ_INT(st.exact, 13);
	T_EQ_INT(st.suffix + st.unmatched + st.no_python, 0);
	T_EQ_INT(st.pyspy_total, 9);
	T_EQ_INT(st.pyspy_python, 9);
	T(!st.thread_aware);
	free(out);
	/* py-spy --nolineno lines: nothing to put in, frames stay. */
	expect("main (app.py:1);work (app.py:10) 4\n", "main (app.py);work (app.py) 2\n",
	       "main (app.py:1);work (app.py:10) 4\n");
	/* perfspy --nolineno perf frames get py-spy's lines. */
	expect("main (app.py);work (app.py) 4\n", "main (app.py:3);work (app.py:11) 2\n",
	       "main (app.py:3);work (app.py:11) 4\n");
}

/* Empty capture, disjoint skeletons: perf stacks kept as they are and
 * reported as unmatched skeletons. */
static void test_unmatched(void)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	struct perfspy_folder *um;
	const char *perf = "thread (5): w;main (a.py:1);f (a.py:3);c_fn (c.c:2) 4\n"
			   "thread (5): w;c_only (c.c:9) 2\n";
	char *out;

	T_EQ_INT(perfspy_folder__new(&um), 0);
	{
		PERFSPY_OPTS(perfspy_merge_opts, o, .unmatched = um);

		out = merge_o(perf, "", &o, &st);
		T_EQ_STR(out, "thread (5): w;c_only (c.c:9) 2\n"
			      "thread (5): w;main (a.py:1);f (a.py:3);c_fn (c.c:2) 4\n");
		T_EQ_INT(st.unmatched, 4);
		T_EQ_INT(st.no_python, 2);
		T_EQ_INT(st.pyspy_total, 0);
		free(out);
		out = merge_o(perf, "x (b.py:1);y (b.py:2) 9\n", &o, &st);
		T_EQ_INT(st.unmatched, 4);
		T_EQ_INT(st.exact + st.suffix, 0);
		free(out);
	}
	out = write_str(um);
	T_EQ_STR(out, "main (a.py);f (a.py) 8\n");
	free(out);
	perfspy_folder__free(um);
}

/* Perf stacks cut short at the root, and shorter common suffixes. */
static void test_suffix(void)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	PERFSPY_OPTS(perfspy_merge_opts, o, .min_suffix = 2);
	const char *py = "a (m.py:5);b (m.py:15);c (m.py:25) 3\n";
	char *out;

	out = merge_o("b (m.py:10);c (m.py:20);leaf (x.c:1) 6\nz (m.py:1);c (m.py:20) 2\n",
		      py, NULL, &st);
	T_EQ_STR(out, "b (m.py:15);c (m.py:25);leaf (x.c:1) 6\nz (m.py:1);c (m.py:25) 2\n");
	T_EQ_INT(st.suffix, 8);
	T_EQ_INT(st.exact, 0);
	free(out);
	/* --min-suffix 2: `z;c` shares one frame only. */
	out = merge_o("z (m.py:1);c (m.py:20) 2\n", py, &o, &st);
	T_EQ_STR(out, "z (m.py:1);c (m.py:20) 2\n");
	T_EQ_INT(st.unmatched, 2);
	free(out);
}

/* Recursion: the skeleton's length tells the depths apart. */
static void test_recursion(void)
{
	expect("main (r.py:1);rec (r.py:3);rec (r.py:3);rec (r.py:3);spin (c.c:1) 5\n"
	       "main (r.py:1);rec (r.py:3);rec (r.py:3);spin (c.c:1) 2\n",
	       "main (r.py:20);rec (r.py:5);rec (r.py:5);rec (r.py:7) 1\n"
	       "main (r.py:20);rec (r.py:5);rec (r.py:6) 1\n",
	       "main (r.py:20);rec (r.py:5);rec (r.py:5);rec (r.py:7);spin (c.c:1) 5\n"
	       "main (r.py:20);rec (r.py:5);rec (r.py:6);spin (c.c:1) 2\n");
}

/* co_name vs co_qualname (py-spy 0.4.2 vs 0.4.3+, perfspy --qualname):
 * compared by the last component; perf's names are kept. */
static void test_names(void)
{
	expect("<module> (m.py:1);Outer.Inner.method (m.py:10);run.<locals>.<lambda> (m.py:30) 4\n",
	       "<module> (m.py:40);method (m.py:12);<lambda> (m.py:31) 1\n",
	       "<module> (m.py:40);Outer.Inner.method (m.py:12);run.<locals>.<lambda> (m.py:31) 4\n");
	expect("<module> (m.py:1);method (m.py:10) 4\n",
	       "<module> (m.py:40);Outer.Inner.method (m.py:12) 1\n",
	       "<module> (m.py:40);method (m.py:12) 4\n");
	/* Same name, other file: no match. */
	expect("f (a.py:1) 3\n", "f (b.py:2) 1\n", "f (a.py:1) 3\n");
	/* Names with spaces and parentheses (native). */
	expect("main (a.py:1);operator() (x.cc:3);(anonymous namespace)::g (x.cc:9) 3\n",
	       "main (a.py:5) 1\n",
	       "main (a.py:5);operator() (x.cc:3);(anonymous namespace)::g (x.cc:9) 3\n");
}

/* speedscope's full paths vs perfspy's short names: a py-spy file is
 * the perf file it is a path suffix of, when exactly one is. */
static void test_files(void)
{
	PERFSPY_OPTS(perfspy_read_opts, ro, .full_filenames = true);
	const char *py =
		"{\"shared\":{\"frames\":[{\"name\":\"<module>\",\"file\":\"/nonexistent/p/run.py\","
		"\"line\":3},{\"name\":\"fwd\",\"file\":\"/nonexistent/site-packages/a/mod.py\","
		"\"line\":12}]},\"profiles\":[{\"type\":\"sampled\",\"samples\":[[0,1]]}]}";
	const char *perf = "<module> (run.py:1);fwd (a/mod.py:10);k (c.c:1) 2\n"
			   "<module> (run.py:1);fwd (b/mod.py:10);k (c.c:1) 2\n";
	struct perfspy_folder *p = folder(perf), *y, *out;
	char *text;

	T_EQ_INT(perfspy_folder__new(&y), 0);
	T_EQ_INT(perfspy_folder__new(&out), 0);
	T_EQ_INT(perfspy_folder__read_pyspy(y, NULL, py, strlen(py), &ro, NULL), 0);
	T_EQ_INT(perfspy_merge(p, y, NULL, out, NULL), 0);
	text = write_str(out);
	T_EQ_STR(text, "<module> (run.py:1);fwd (b/mod.py:10);k (c.c:1) 2\n"
		       "<module> (run.py:3);fwd (a/mod.py:12);k (c.c:1) 2\n");
	free(text);
	perfspy_folder__free(p);
	perfspy_folder__free(y);
	perfspy_folder__free(out);
	/* Shortened to a bare `mod.py` (no __init__.py where py-spy ran):
	 * two perf files fit, so neither is taken. */
	expect(perf, "<module> (run.py:3);fwd (mod.py:12) 1\n", perf);
}

/* Two functions named forward in one file (Linear.forward at line 10,
 * Attention.forward at 30, perfspy's first lines): each py-spy line goes
 * to the definition enclosing it, never to the other one's perf samples
 * (a join on the name split both 3:1). */
static void test_defs(void)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	char *out;

	out = merge_o("main (m.py:1);forward (m.py:10);lin (k.c:1) 6\n"
		      "main (m.py:1);forward (m.py:30);attn (k.c:2) 4\n",
		      "main (m.py:50);forward (m.py:12) 3\nmain (m.py:50);forward (m.py:33) 1\n",
		      NULL, &st);
	T_EQ_STR(out, "main (m.py:50);forward (m.py:12);lin (k.c:1) 6\n"
		      "main (m.py:50);forward (m.py:33);attn (k.c:2) 4\n");
	T_EQ_INT(st.exact, 10);
	free(out);
	/* A py-spy line above both definitions is in neither: no join. */
	out = merge_o("main (m.py:1);forward (m.py:10);lin (k.c:1) 6\n"
		      "main (m.py:1);forward (m.py:30);attn (k.c:2) 4\n",
		      "main (m.py:50);forward (m.py:5) 3\n", NULL, &st);
	T_EQ_INT(st.exact + st.suffix, 0);
	free(out);
	/* One definition of the name: joined whatever the line (as on names). */
	expect("main (m.py:1);forward (m.py:30);attn (k.c:2) 4\n",
	       "main (m.py:50);forward (m.py:12) 1\n",
	       "main (m.py:50);forward (m.py:12);attn (k.c:2) 4\n");
	/* Unnamed native code (LIB+0xOFF) anchors no native join. */
	expect("main (m.py:1);forward (m.py:10);libx.so+0x1d2f0 (libx.so) 2\n",
	       "main (m.py:50);forward (m.py:12);0x7f0000001d2f4 (libx.so) 1\n",
	       "main (m.py:50);forward (m.py:12);libx.so+0x1d2f0 (libx.so) 2\n");
}

/* Sources (perfspy_merge_opts.sources): a py-spy line in a definition perf
 * never saw (Conv.forward) joins nothing, where the perf definitions alone
 * would give it to the one above (Attention.forward, or the only one). */
static void test_sources(void)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	PERFSPY_OPTS(perfspy_merge_opts, o);
	char dir[] = "/tmp/perfspy-merge-XXXXXX", path[64];
	const char *srcs[3] = { dir, NULL, NULL };
	static const char perf[] = "main (mm.py:11);forward (mm.py:2);lin (k.c:1) 6\n"
				   "main (mm.py:11);forward (mm.py:6);attn (k.c:2) 4\n";
	static const char py[] = "main (mm.py:13) 1\nmain (mm.py:13);forward (mm.py:4) 3\n"
				 "main (mm.py:13);forward (mm.py:7) 1\n"
				 "main (mm.py:13);forward (mm.py:10) 4\n";
	FILE *f;
	char *out;

	T(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/mm.py", dir);
	f = fopen(path, "w");
	T(f != NULL);
	fputs("class Linear:\n"		/* 1 */
	      "    @staticmethod\n"	/* 2 */
	      "    def forward(h):\n"	/* 3 */
	      "        return lin(h)\n"	/* 4 */
	      "class Attention:\n"		/* 5 */
	      "    def forward(self, h):\n"	/* 6 */
	      "        return attn(h)\n"	/* 7 */
	      "class Conv:\n"			/* 8 */
	      "    def forward(self, h):\n"	/* 9 */
	      "        def inner(): sleep(1)\n" /* 10: forward is on a def line */
	      "def main():\n"			/* 11 */
	      "    def helper(): pass\n"	/* 12 */
	      "    run()\n", f);		/* 13 */
	fclose(f);
	/* The perf definitions alone: Conv's line 10 goes to Attention's. */
	out = merge_o(perf, py, NULL, &st);
	T(strstr(out, "forward (mm.py:10);attn (k.c:2)") != NULL);
	T_EQ_INT(st.name_only, 0);
	free(out);
	/* With the source, by directory and by file: never. */
	o.sources = srcs;
	for (int i = 0; i < 2; i++) {
		out = merge_o(perf, py, &o, &st);
		T_EQ_STR(out, "main (mm.py:13);forward (mm.py:4);lin (k.c:1) 6\n"
			      "main (mm.py:13);forward (mm.py:7);attn (k.c:2) 4\n");
		T_EQ_INT(st.exact, 10);
		free(out);
		srcs[0] = "/nonexistent";
		srcs[1] = path;
	}
	/* main executing the `def helper` line: helper's extent holds it, but
	 * the frame is main's (named so): the enclosing main. */
	out = merge_o("main (mm.py:11);x (k.c:9) 5\n", "main (mm.py:12) 1\n", &o, &st);
	T_EQ_STR(out, "main (mm.py:12);x (k.c:9) 5\n");
	free(out);
	/* One perf definition (Attention's): Linear's py-spy lines joined it
	 * whatever their line; with the source they do not. */
	out = merge_o("main (mm.py:11);forward (mm.py:6);attn (k.c:2) 4\n", py, NULL, &st);
	T(strstr(out, "forward (mm.py:4);attn (k.c:2)") != NULL);
	free(out);
	out = merge_o("main (mm.py:11);forward (mm.py:6);attn (k.c:2) 4\n", py, &o, &st);
	T_EQ_STR(out, "main (mm.py:13);forward (mm.py:7);attn (k.c:2) 4\n");
	free(out);
	/* Perf frames without lines (their source was unreadable): joined on
	 * names only, and counted. */
	out = merge_o("run (nn.py);forward (nn.py);attn (k.c:2) 4\n"
		      "main (mm.py:11);forward (mm.py:6);x (k.c:3) 2\n",
		      "run (nn.py:5);forward (nn.py:7) 1\nmain (mm.py:13);forward (mm.py:7) 1\n",
		      &o, &st);
	T_EQ_INT(st.exact, 6);
	T_EQ_INT(st.name_only, 4);
	free(out);
	unlink(path);
	rmdir(dir);
}

/* Thread-aware when both sides carry decimal thread ids (§1.5). */
static void test_threads(void)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	const char *perf = "thread (10): w0;run (t.py:1);disp (t.py:5);spin (c.c:1) 4\n"
			   "thread (11): w1;run (t.py:1);disp (t.py:5);spin (c.c:1) 4\n"
			   "thread (12): w2;run (t.py:1);disp (t.py:5);spin (c.c:1) 2\n";
	const char *py = "thread (10): A;run (t.py:9);disp (t.py:7) 30\n"
			 "thread (11): B;run (t.py:9);disp (t.py:8) 10\n";
	char *out;

	out = merge_o(perf, py, NULL, &st);
	/* Thread 12 has no py-spy stacks: it takes all threads' (3:1). */
	T_EQ_STR(out, "thread (10): w0;run (t.py:9);disp (t.py:7);spin (c.c:1) 4\n"
		      "thread (11): w1;run (t.py:9);disp (t.py:8);spin (c.c:1) 4\n"
		      "thread (12): w2;run (t.py:9);disp (t.py:7);spin (c.c:1) 2\n");
	T(st.thread_aware);
	T_EQ_INT(st.other_thread, 2);
	T_EQ_INT(st.exact, 10);
	free(out);
	{
		PERFSPY_OPTS(perfspy_merge_opts, o, .ignore_threads = true);

		out = merge_o(perf, py, &o, &st);
		T(!st.thread_aware);
		T(strstr(out, "thread (10): w0;run (t.py:9);disp (t.py:7);spin (c.c:1) 3\n"));
		T(strstr(out, "thread (10): w0;run (t.py:9);disp (t.py:8);spin (c.c:1) 1\n"));
		free(out);
	}
	/* Thread roots: kept, dropped, or kept only if py-spy has some. */
	{
		PERFSPY_OPTS(perfspy_merge_opts, like, .thread_roots = PERFSPY_MERGE_ROOTS_LIKE_PYSPY);
		PERFSPY_OPTS(perfspy_merge_opts, drop, .thread_roots = PERFSPY_MERGE_ROOTS_DROP);
		const char *p1 = "thread (10): w0;run (t.py:1) 3\n";

		expect_o(p1, "run (t.py:4) 1\n", &like, "run (t.py:4) 3\n");
		expect_o(p1, "thread (10): x;run (t.py:4) 1\n", &like,
			 "thread (10): w0;run (t.py:4) 3\n");
		expect_o(p1, "thread (10): x;run (t.py:4) 1\n", &drop, "run (t.py:4) 3\n");
		expect(p1, "run (t.py:4) 1\n", "thread (10): w0;run (t.py:4) 3\n");
	}
	/* Hex pthread ids (old Pythons, --nonblocking) never equal perf's
	 * decimal tids: matched across threads. */
	out = merge_o(perf, "thread (0x7F00);run (t.py:9);disp (t.py:6) 1\n", NULL, &st);
	T(!st.thread_aware);
	T_EQ_INT(st.exact, 10);
	free(out);
	/* Process frames (command line with ';') are not part of skeletons. */
	expect("main (a.py:1);f (a.py:8);c_fn (c.c:1) 5\n",
	       "process 1:\"sh -c a; b\";main (a.py:3);f (a.py:9) 2\n",
	       "main (a.py:3);f (a.py:9);c_fn (c.c:1) 5\n");
}

/* Native join (no perf trampolines): the py-spy --native path under the
 * last Python frame anchors the perf stack; its deeper frames stay. */
static void test_native_join(void)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	const char *perf =
		"thread (7): py;_start (python3.11);main (python.c:15);Py_RunMain (main.c:3);"
		"_PyEval_EvalFrameDefault (ceval.c:100);PyCFuncPtr_call (_ctypes.c:4167);"
		"0x7f0000001234 (libffi.so.8);ffi_call (libffi.so.8);spin (lib.c:3);"
		"do_syscall_64 ([kernel.kallsyms]) 6\n"
		"thread (7): py;_start (python3.11);main (python.c:15);"
		"_PyEval_EvalFrameDefault (ceval.c:100);_PyObject_Malloc (obmalloc.c:9) 3\n";
	const char *py =
		"thread (7): MainThread;<module> (w.py:20);run (w.py:8);PyCFuncPtr_call (_ctypes.c:4170);"
		"ffi_call (libffi.so.8);0x7f0000009999 (libffi.so.8);spin (lib.c:5) 4\n"
		"thread (7): MainThread;<module> (w.py:20);other (w.py:30);"
		"PyCFuncPtr_call (_ctypes.c:4170);ffi_call (libffi.so.8);other_c (lib.c:9) 2\n"
		"thread (7): MainThread;<module> (w.py:21) 5\n";
	char *out;

	out = merge_o(perf, py, NULL, &st);
	T_EQ_STR(out,
		 "thread (7): py;<module> (w.py:20);run (w.py:8);PyCFuncPtr_call (_ctypes.c:4167);"
		 "0x7f0000001234 (libffi.so.8);ffi_call (libffi.so.8);spin (lib.c:3);"
		 "do_syscall_64 ([kernel.kallsyms]) 6\n"
		 "thread (7): py;_start (python3.11);main (python.c:15);"
		 "_PyEval_EvalFrameDefault (ceval.c:100);_PyObject_Malloc (obmalloc.c:9) 3\n");
	T_EQ_INT(st.no_python, 9);
	T_EQ_INT(st.native_matched, 6);
	T_EQ_INT(st.pyspy_native, 6);
	T_EQ_INT(st.exact + st.suffix + st.unmatched, 0);
	free(out);
	/* No native frames in the capture: nothing to join on. */
	out = merge_o(perf, "<module> (w.py:20);run (w.py:8) 4\n", NULL, &st);
	T_EQ_INT(st.native_matched, 0);
	T_EQ_INT(st.pyspy_native, 0);
	T_EQ_INT(st.no_python, 9);
	free(out);
	{
		PERFSPY_OPTS(perfspy_merge_opts, o, .no_native_join = true);

		out = merge_o(perf, py, &o, &st);
		T_EQ_INT(st.native_matched, 0);
		free(out);
	}
}

/* A py-spy --native capture tells which line called which C function:
 * an exact match is narrowed to the stacks with the same native path. */
static void test_refine(void)
{
	PERFSPY_OPTS(perfspy_merge_stats, st);
	const char *perf = "main (a.py:1);work (a.py:4);alpha (x.c:2) 8\n"
			   "main (a.py:1);work (a.py:4) 4\n";
	char *out;

	out = merge_o(perf,
		      "main (a.py:9);work (a.py:5);alpha (x.c:1) 3\n"
		      "main (a.py:9);work (a.py:6);beta (x.c:1) 1\n", NULL, &st);
	T_EQ_STR(out, "main (a.py:9);work (a.py:5) 3\n"
		      "main (a.py:9);work (a.py:5);alpha (x.c:2) 8\n"
		      "main (a.py:9);work (a.py:6) 1\n");
	T_EQ_INT(st.refined, 8);
	free(out);
	/* Without native frames the lines split 3:1. */
	expect(perf, "main (a.py:9);work (a.py:5) 3\nmain (a.py:9);work (a.py:6) 1\n",
	       "main (a.py:9);work (a.py:5) 3\n"
	       "main (a.py:9);work (a.py:5);alpha (x.c:2) 6\n"
	       "main (a.py:9);work (a.py:6) 1\n"
	       "main (a.py:9);work (a.py:6);alpha (x.c:2) 2\n");
}

static void test_api(void)
{
	static const char *const pats[] = { "tool", NULL };
	PERFSPY_OPTS(perfspy_merge_opts, o, .python_files = pats);
	struct perfspy_folder *a, *b;
	char *x, *y;

	T_EQ_INT(perfspy_folder__new(&a), 0);
	T_EQ_INT(perfspy_folder__new(&b), 0);
	T_EQ_INT(perfspy_merge(a, b, NULL, a, NULL), -EINVAL);
	T_EQ_INT(perfspy_merge(a, b, NULL, NULL, NULL), -EINVAL);
	T_EQ_INT(perfspy_merge(NULL, b, NULL, a, NULL), -EINVAL);
	{
		PERFSPY_OPTS(perfspy_merge_opts, bad, .thread_roots = 7);
		struct perfspy_folder *c;

		T_EQ_INT(perfspy_folder__new(&c), 0);
		T_EQ_INT(perfspy_merge(a, b, &bad, c, NULL), -PERFSPY_E_OPTS);
		bad.thread_roots = 0;
		bad.unmatched = c;
		T_EQ_INT(perfspy_merge(a, b, &bad, c, NULL), -EINVAL);
		perfspy_folder__free(c);
	}
	perfspy_folder__free(a);
	perfspy_folder__free(b);
	/* A script without .py is Python with a pattern. */
	expect_o("main (tool:1);c (c.c:1) 2\n", "main (tool:7) 1\n", &o,
		 "main (tool:7);c (c.c:1) 2\n");
	expect("main (tool:1);c (c.c:1) 2\n", "main (tool:7) 1\n", "main (tool:1);c (c.c:1) 2\n");
	/* Deterministic: the same inputs give the same bytes. */
	x = merge_o("a (a.py:1);b (a.py:2);c (c.c:1) 7\na (a.py:1);b (a.py:2);d (c.c:2) 5\n",
		    "a (a.py:3);b (a.py:4) 1\na (a.py:3);b (a.py:5) 1\na (a.py:3);b (a.py:6) 1\n",
		    NULL, NULL);
	y = merge_o("a (a.py:1);b (a.py:2);c (c.c:1) 7\na (a.py:1);b (a.py:2);d (c.c:2) 5\n",
		    "a (a.py:3);b (a.py:4) 1\na (a.py:3);b (a.py:5) 1\na (a.py:3);b (a.py:6) 1\n",
		    NULL, NULL);
	T_EQ_STR(x, y);
	free(x);
	free(y);
}

/* The carried remainders make the order of the perf stacks decide ties,
 * so the merge takes them in the order of their text: the same stacks
 * read in another order (a folded file's lines against a perf.data
 * file's samples) give the same bytes. Here two count-1 stacks of one
 * key meet two py-spy lines of equal counts: each line gets one, and
 * which gets the native leaf may not depend on the input's order. */
static void test_order(void)
{
	static const char *a = "main (app.py:1);wait (app.py:10);lock (libx.c:5) 1\n"
			       "main (app.py:1);wait (app.py:10) 1\n";
	static const char *b = "main (app.py:1);wait (app.py:10) 1\n"
			       "main (app.py:1);wait (app.py:10);lock (libx.c:5) 1\n";
	static const char *py = "main (app.py:30);wait (app.py:12) 1\n"
				"main (app.py:30);wait (app.py:14) 1\n";
	char *x = merge_o(a, py, NULL, NULL), *y = merge_o(b, py, NULL, NULL);

	T_EQ_STR(x, y);
	T(strstr(x, "wait (app.py:12)") && strstr(x, "wait (app.py:14)"));
	T(strstr(x, "lock (libx.c:5) 1\n") != NULL);
	free(x);
	free(y);
}

int main(void)
{
	test_apportion();
	test_basic();
	test_unmatched();
	test_suffix();
	test_recursion();
	test_names();
	test_files();
	test_defs();
	test_sources();
	test_threads();
	test_native_join();
	test_refine();
	test_api();
	test_order();
	TEST_MAIN_END();
}
