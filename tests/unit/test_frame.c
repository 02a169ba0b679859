// SPDX-License-Identifier: GPL-2.0
/*
 * The frame grammar (libconv/common/frame.c): each form of frame text the
 * folder holds, split into its parts and kind, including every py-spy
 * thread-root form (docs/pyspy-formats.md §1.5) and the projection
 * the py-spy side reads kinds through (pys_kind_of).
 */
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "folded/pyspy.h"
#include "test.h"

static struct frame_parts parse(const char *s)
{
	struct frame_parts p;

	frame_parse(s, strlen(s), &p);
	return p;
}

static bool part_is(const char *p, size_t n, const char *want)
{
	return p && strlen(want) == n && !memcmp(p, want, n);
}

/* Kind, name part, file part (NULL: none) and line of @s. */
static void check(const char *s, enum frame_kind kind, const char *func,
		  const char *file, long line)
{
	struct frame_parts p = parse(s);
	int failed = test_failed_checks;

	T_EQ_INT(p.kind, kind);
	T(part_is(p.func, p.func_len, func));
	if (file)
		T(part_is(p.file, p.file_len, file));
	else
		T(!p.file);
	T_EQ_INT(p.line, line);
	if (test_failed_checks != failed)
		fprintf(stderr, "  (frame: %s)\n", s);
}

static void test_python(void)
{
	check("forward (torch/nn/modules/linear.py:134)", FRAME_PYTHON,
	      "forward", "torch/nn/modules/linear.py", 134);
	check("<module> (train.py)", FRAME_PYTHON, "<module>", "train.py", 0);
	check("w (gui.pyw:3)", FRAME_PYTHON, "w", "gui.pyw", 3);
	check("_find_and_load (<frozen importlib._bootstrap>:1165)", FRAME_PYTHON,
	      "_find_and_load", "<frozen importlib._bootstrap>", 1165);
	check("<module> (<string>)", FRAME_PYTHON, "<module>", "<string>", 0);
	/* An unspliced perf-map name: Python, no file part. */
	check("py::main:/app/x.py", FRAME_PYTHON, "py::main:/app/x.py", NULL, 0);
	/* Balanced parentheses: a '(' inside the file, names with spaces. */
	check("f (a (1).py:3)", FRAME_PYTHON, "f", "a (1).py", 3);
	check("my func (a b.py:7)", FRAME_PYTHON, "my func", "a b.py", 7);
	/* py-spy's unknown line (§1.3). */
	check("neg (a.py:-1)", FRAME_PYTHON, "neg", "a.py", -1);
	/* A line number is digits after the last ':' only. */
	check("f (C:\\x.py)", FRAME_PYTHON, "f", "C:\\x.py", 0);
	/* A Python function called `thread` or `process` is no root. */
	check("thread (worker.py:3)", FRAME_PYTHON, "thread", "worker.py", 3);
	check("process (a.py:1)", FRAME_PYTHON, "process", "a.py", 1);
}

static void test_native_kernel(void)
{
	struct frame_parts p;

	check("main (chain.c:41)", FRAME_NATIVE, "main", "chain.c", 41);
	check("ns::Worker::operator() (app.cc:12)", FRAME_NATIVE,
	      "ns::Worker::operator()", "app.cc", 12);
	check("(anonymous namespace)::f (libx.so)", FRAME_NATIVE,
	      "(anonymous namespace)::f", "libx.so", 0);
	check("0x7f3c2a1b9e40 (libcuda.so.535.104.05)", FRAME_NATIVE,
	      "0x7f3c2a1b9e40", "libcuda.so.535.104.05", 0);
	check("0x7f1e2c3d4e5f (?)", FRAME_NATIVE, "0x7f1e2c3d4e5f", "?", 0);
	check("[unknown]", FRAME_NATIVE, "[unknown]", NULL, 0);
	check("", FRAME_NATIVE, "", NULL, 0);
	check("unbalanced )", FRAME_NATIVE, "unbalanced )", NULL, 0);
	check("f (a.c:12x)", FRAME_NATIVE, "f", "a.c:12x", 0);
	check("f (a.c:1234567890)", FRAME_NATIVE, "f", "a.c:1234567890", 0);
	check("do_syscall_64 ([kernel.kallsyms])", FRAME_KERNEL,
	      "do_syscall_64", "[kernel.kallsyms]", 0);
	check("do_syscall_64_[k]", FRAME_KERNEL, "do_syscall_64", NULL, 0);
	/* `:0` is split off but is no line. */
	p = parse("f (a.c:0)");
	T(p.has_line && p.line == 0 && part_is(p.file, p.file_len, "a.c"));
	p = parse("f (a.c)");
	T(!p.has_line);
}

/* Scripts without .py are Python files only when a glob says so. */
static void test_globs(void)
{
	static const char *const globs[] = { "*/bin/tool", "tool", NULL };
	struct frame_parts p;

	frame_parse_globs("main (tool:3)", 13, NULL, &p);
	T_EQ_INT(p.kind, FRAME_NATIVE);
	frame_parse_globs("main (tool:3)", 13, globs, &p);
	T(p.kind == FRAME_PYTHON && p.line == 3);
	frame_parse_globs("main (/usr/bin/tool)", 20, globs, &p);
	T_EQ_INT(p.kind, FRAME_PYTHON);
	frame_parse_globs("k ([kernel.kallsyms])", 21, globs, &p);
	T_EQ_INT(p.kind, FRAME_KERNEL);
}

/* Thread root @s: its id, its name (NULL: unnamed) and its decimal id
 * (0: not decimal). */
static void check_thread(const char *s, const char *tid, const char *name, u64 dec)
{
	struct frame_parts p = parse(s);
	int failed = test_failed_checks;
	u64 v = 0;

	T_EQ_INT(p.kind, FRAME_THREAD);
	T(part_is(p.func, p.func_len, s)); /* a root's name part is all of it */
	T(!p.file);
	T(part_is(p.tid, p.tid_len, tid));
	if (name)
		T(part_is(p.thread_name, p.thread_name_len, name));
	else
		T(!p.thread_name);
	T(frame_tid_decimal(&p, &v) == (dec != 0));
	T(v == dec);
	/* The unnamed form every reader names the thread by. */
	{
		char buf[64];
		size_t n = frame_thread_text_len(&p);

		T(n < sizeof(buf) - 1);
		frame_thread_text(&p, buf);
		buf[n] = 0;
		T(!strncmp(buf, "thread (", 8) && !strncmp(buf + 8, tid, strlen(tid)) &&
		  !strcmp(buf + 8 + strlen(tid), ")"));
	}
	if (test_failed_checks != failed)
		fprintf(stderr, "  (frame: %s)\n", s);
}

static void test_threads(void)
{
	/* 0.4.0+: named. */
	check_thread("thread (48213): MainThread", "48213", "MainThread", 48213);
	check_thread("thread (7): Thread-1 (_pin_memory_loop)", "7",
		     "Thread-1 (_pin_memory_loop)", 7);
	check_thread("thread (7): ", "7", "", 7);
	/* 0.3.4+: unnamed, decimal OS id or 0x-hex pthread id. */
	check_thread("thread (48213)", "48213", NULL, 48213);
	check_thread("thread (0x7F3A2B1C0700)", "0x7F3A2B1C0700", NULL, 0);
	/* 0.3.0-0.3.3: no parentheses (the form the report once missed). */
	check_thread("thread 1234", "1234", NULL, 1234);
	check_thread("thread 0x7F3A", "0x7F3A", NULL, 0);
	/* 0.2.x: every frame had ` (FILE)`, an empty one here. */
	check_thread("thread 1234 ()", "1234", NULL, 1234);
	check_thread("thread 0x7F3A ()", "0x7F3A", NULL, 0);
	/* Not roots. */
	check("thread abc", FRAME_NATIVE, "thread abc", NULL, 0);
	check("thread ", FRAME_NATIVE, "thread ", NULL, 0);
	check("thread 12 (x)", FRAME_NATIVE, "thread 12", "x", 0);
	check("thread (12)x", FRAME_NATIVE, "thread (12)x", NULL, 0);
	check("thread (12):x", FRAME_NATIVE, "thread (12):x", NULL, 0);
	check("thread (0x)", FRAME_NATIVE, "thread", "0x", 0);
	check("thread ()", FRAME_NATIVE, "thread", "", 0);
	T(parse("thread (12)x").thread_name == NULL);
}

static void test_process(void)
{
	const char *s = "process 48213:\"python train.py\"";

	check(s, FRAME_PROCESS, s, NULL, 0);
	check("process 12:\"sh -c a: b\"", FRAME_PROCESS, "process 12:\"sh -c a: b\"", NULL, 0);
	/* Quotes are part of the form (§1.6). */
	T(parse("process 12:\"").kind != FRAME_PROCESS);
	T(parse("process 12:cmd").kind != FRAME_PROCESS);
	T(parse("process :\"x\"").kind != FRAME_PROCESS);
	T_EQ_INT(frame_process_head(s, strlen(s)), 15);
	T_EQ_INT(frame_process_head("process 1:\"", 11), 11);
	T_EQ_INT(frame_process_head("process 1:", 10), 0);
	T_EQ_INT(frame_process_head("processes 1:\"", 13), 0);
}

/* What the py-spy readers and the merge count: kernel frames and
 * file-less Python frames as native, the rest as the grammar says. */
static void test_pys_kind(void)
{
	struct frame_parts p;

	p = parse("do_syscall_64 ([kernel.kallsyms])");
	T_EQ_INT(pys_kind_of(&p), FRAME_NATIVE);
	p = parse("py::main:/app/x.py");
	T_EQ_INT(pys_kind_of(&p), FRAME_NATIVE);
	p = parse("main (a.py:1)");
	T_EQ_INT(pys_kind_of(&p), FRAME_PYTHON);
	p = parse("thread 1234");
	T_EQ_INT(pys_kind_of(&p), FRAME_THREAD);
	p = parse("process 1:\"x\"");
	T_EQ_INT(pys_kind_of(&p), FRAME_PROCESS);
	T_EQ_INT(frame_kind_of("malloc (libc.so.6)", 18), FRAME_NATIVE);
	T(frame_is_root(FRAME_THREAD) && frame_is_root(FRAME_PROCESS) &&
	  !frame_is_root(FRAME_PYTHON));
}

/* docs/output.md §7.1: which frames group, and the group's text. */
static size_t group(const char *s)
{
	struct frame_parts p = parse(s);

	return frame_group_prefix(s, strlen(s), &p);
}

static void test_group(void)
{
	T_EQ_INT(group("__sin_fma (s_sin.c:123)"), strlen("__sin_fma (s_sin.c"));
	T_EQ_INT(group("ns::f<int (*)(int)> (a.hpp:7)"), strlen("ns::f<int (*)(int)> (a.hpp"));
	T_EQ_INT(group("main (m.c:0)"), strlen("main (m.c"));
	T_EQ_INT(group("malloc (libc.so.6)"), 0);	  /* no line */
	T_EQ_INT(group("forward (model.py:12)"), 0);	  /* Python keeps its line */
	T_EQ_INT(group("<module> (<string>:1)"), 0);
	T_EQ_INT(group("do_syscall_64 ([kernel.kallsyms])"), 0);
	T_EQ_INT(group("thread (12): main"), 0);
	T_EQ_INT(group("[unknown]"), 0);
}

/* docs/output.md §7.2: library families, first match wins. */
static void test_lib(void)
{
	static const struct { const char *lib; enum frame_lib want; } t[] = {
		{ "libtorch_cuda.so", FLIB_TORCH },
		{ "/opt/venv/lib/python3.12/site-packages/torch/lib/libc10.so", FLIB_TORCH },
		{ "libc10_cuda.so", FLIB_TORCH },
		{ "libcudart.so.12", FLIB_CUDA },
		{ "libcuda.so.535.104.05", FLIB_CUDA },
		{ "libcublasLt.so.12", FLIB_CUDA },
		{ "libnccl.so.2", FLIB_CUDA },
		{ "libnvrtc.so.12", FLIB_CUDA },
		{ "libc.so.6", FLIB_CRT },
		{ "libc-2.31.so", FLIB_CRT },
		{ "libm.so.6", FLIB_CRT },
		{ "ld-linux-x86-64.so.2", FLIB_CRT },
		{ "libstdc++.so.6", FLIB_CRT },
		{ "libpython3.12.so.1.0", FLIB_PYTHON },
		{ "python3.12", FLIB_PYTHON },
		{ "libopenblas64_p-r0-0cf96a72.3.23.dev.so", FLIB_MATH },
		{ "libgomp.so.1", FLIB_MATH },
		{ "_multiarray_umath.cpython-312-x86_64-linux-gnu.so", FLIB_MATH },
		{ "libcrypto.so.3", FLIB_OTHER }, /* libc... but not libc. or libc- */
		{ "libmagic.so.1", FLIB_OTHER },  /* libm... likewise */
		{ "report_split", FLIB_OTHER },
		{ "?", FLIB_UNKNOWN },
	};
	struct frame_parts p;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		T_EQ_INT(frame_lib_of(t[i].lib, strlen(t[i].lib)), t[i].want);
		if (frame_lib_of(t[i].lib, strlen(t[i].lib)) != t[i].want)
			fprintf(stderr, "  (library: %s)\n", t[i].lib);
	}
	p = parse("read (libc.so.6)");
	T_EQ_INT(frame_lib_family(&p), FLIB_CRT);
	p = parse("schedule ([kernel.kallsyms])");
	T_EQ_INT(frame_lib_family(&p), FLIB_KERNEL);
	p = parse("[unknown]");
	T_EQ_INT(frame_lib_family(&p), FLIB_UNKNOWN);
	p = parse("0x7f1e2c3d4e5f (?)");
	T_EQ_INT(frame_lib_family(&p), FLIB_UNKNOWN);
	p = parse("sin (s_sin.c:12)"); /* a source file: not known from text */
	T_EQ_INT(frame_lib_family(&p), FLIB_OTHER);
}

int main(void)
{
	test_group();
	test_lib();
	test_python();
	test_native_kernel();
	test_globs();
	test_threads();
	test_process();
	test_pys_kind();
	TEST_MAIN_END();
}
