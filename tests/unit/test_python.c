// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for libconv/frames/python.c: py:: names -> py-spy frame text, short
 * file names, first-line numbers, interpreter-frame filtering.
 *
 * The source scanner is checked against CPython itself:
 * tests/unit/fixtures/python/expected.tsv lists every code object of the
 * fixture files (qualname, co_name, co_firstlineno) as Python 3.12 compiled
 * them; gen_expected.py in that directory regenerates it. Every `def` row
 * must come out of py_scan_source() exactly, and nothing else may.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/pyscan.h"
#include "frames/python.h"
#include "test.h"

static char fixdir[PATH_MAX]; /* absolute .../fixtures/python */

static bool find_fixdir(void)
{
	const char *src = __FILE__, *env = getenv("PERFSPY_SRCDIR");
	const char *slash = strrchr(src, '/');
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "%.*s/fixtures/python",
		 slash ? (int)(slash - src) : 1, slash ? src : ".");
	if (realpath(rel, fixdir))
		return true;
	if (!env)
		return false;
	snprintf(rel, sizeof(rel), "%s/tests/unit/fixtures/python", env);
	return realpath(rel, fixdir) != NULL;
}

/* snprintf through a va_list: the test strings are short and fixed. */
static void sfmt(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void sfmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/* Render @name with @ctx; NULL when it is not a py:: name or on error. */
static const char *R(struct py_ctx *ctx, const char *name)
{
	const char *out = NULL;
	int ret = py_render(ctx, name, &out);

	return ret == 1 ? out : NULL;
}

/* "py::QUAL:FIXDIR/REL" */
static const char *fx(const char *qual, const char *rel)
{
	static char buf[PATH_MAX + 256];

	sfmt(buf, sizeof(buf), "py::%s:%s/%s", qual, fixdir, rel);
	return buf;
}

static struct py_ctx *ctx_new(struct py_opts o)
{
	struct py_ctx *ctx = NULL;

	T_EQ_INT(py_ctx_new(&o, &ctx), 0);
	return ctx;
}

/* ---- the scanner against CPython ---- */

struct row {
	char rel[128], qual[256], name[128], kind[8];
	int line;
};

static struct row rows[512];
static size_t nrows;

static bool load_expected(void)
{
	char path[PATH_MAX + 32], l[1024];
	FILE *f;

	sfmt(path, sizeof(path), "%s/expected.tsv", fixdir);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(l, sizeof(l), f) && nrows < sizeof(rows) / sizeof(rows[0])) {
		struct row *r = &rows[nrows];

		if (l[0] == '#')
			continue;
		if (sscanf(l, "%127[^\t]\t%255[^\t]\t%127[^\t]\t%d\t%7s", r->rel,
			   r->qual, r->name, &r->line, r->kind) == 5)
			nrows++;
	}
	fclose(f);
	return nrows > 0;
}

struct got {
	char s[64][300];
	size_t n;
};

static int collect(void *arg, const char *qual, int line)
{
	struct got *g = arg;

	if (g->n == 64)
		return -E2BIG;
	snprintf(g->s[g->n++], sizeof(g->s[0]), "%s %d", qual, line);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 16);

	*len = f && buf ? fread(buf, 1, 1 << 16, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

/* The scanner's definitions of @rel, as a sorted multiset of
 * "qualname line", must equal CPython's `def` rows. */
static void check_scan_file(const char *rel)
{
	static struct got got, want;
	char path[PATH_MAX + 128];
	size_t i, j, len;
	char *src;

	got.n = want.n = 0;
	for (i = 0; i < nrows; i++)
		if (!strcmp(rows[i].rel, rel) && !strcmp(rows[i].kind, "def"))
			collect(&want, rows[i].qual, rows[i].line);
	sfmt(path, sizeof(path), "%s/%s", fixdir, rel);
	src = slurp(path, &len);
	T(src != NULL);
	T_EQ_INT(py_scan_source(src, len, collect, &got), 0);
	free(src);
	qsort(got.s, got.n, sizeof(got.s[0]), cmp_str);
	qsort(want.s, want.n, sizeof(want.s[0]), cmp_str);
	/* Merge walk: name every entry only one side has. */
	for (i = j = 0; i < got.n || j < want.n;) {
		int c = i == got.n ? 1 : j == want.n ? -1 : strcmp(got.s[i], want.s[j]);

		test_checks++;
		if (c)
			test_failed_checks++;
		if (c < 0)
			fprintf(stderr, "FAIL %s: scanner extra \"%s\"\n", rel, got.s[i]);
		if (c > 0)
			fprintf(stderr, "FAIL %s: scanner missed \"%s\"\n", rel, want.s[j]);
		i += c <= 0;
		j += c >= 0;
	}
}

static void test_scan_vs_cpython(void)
{
	size_t i;

	for (i = 0; i < nrows; i++)
		if (!i || strcmp(rows[i].rel, rows[i - 1].rel))
			check_scan_file(rows[i].rel);
}

/* Every code object through py_render: the line is co_firstlineno for a
 * unique def, 1 for the module, none for <...> names and duplicates. */
static void test_render_vs_cpython(void)
{
	struct py_ctx *dflt = ctx_new((struct py_opts){ .full_filenames = true });
	struct py_ctx *qual = ctx_new((struct py_opts){ .full_filenames = true,
							.qualname = true });
	char want[PATH_MAX + 512];
	size_t i, j;

	for (i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		int line = r->line, dups = 0;

		if (!strcmp(r->kind, "bound"))
			continue;
		for (j = 0; j < nrows; j++)
			dups += !strcmp(rows[j].rel, r->rel) && !strcmp(rows[j].qual, r->qual);
		if (!strcmp(r->kind, "anon") || dups > 1)
			line = 0;
		if (line)
			sfmt(want, sizeof(want), "%s (%s/%s:%d)", r->name, fixdir, r->rel, line);
		else
			sfmt(want, sizeof(want), "%s (%s/%s)", r->name, fixdir, r->rel);
		T_EQ_STR(R(dflt, fx(r->qual, r->rel)), want);
		if (line)
			sfmt(want, sizeof(want), "%s (%s/%s:%d)", r->qual, fixdir, r->rel, line);
		else
			sfmt(want, sizeof(want), "%s (%s/%s)", r->qual, fixdir, r->rel);
		T_EQ_STR(R(qual, fx(r->qual, r->rel)), want);
	}
	py_ctx_free(dflt);
	py_ctx_free(qual);
}

/* ---- names and files ---- */

static void test_short_names(void)
{
	struct py_ctx *ctx = ctx_new((struct py_opts){ 0 });

	/* Source present: py-spy's __init__.py walk. */
	T_EQ_STR(R(ctx, fx("main", "app.py")), "main (app.py:5)");
	T_EQ_STR(R(ctx, fx("Engine.forward", "pkg/core.py")), "forward (pkg/core.py:14)");
	T_EQ_STR(R(ctx, fx("init_pkg", "pkg/__init__.py")), "init_pkg (pkg/__init__.py:4)");
	T_EQ_STR(R(ctx, fx("deep_fn.<locals>.Local.method", "pkg/sub/deep.py")),
		 "method (pkg/sub/deep.py:3)");
	T_EQ_STR(R(ctx, fx("ns_fn", "nspkg/mod.py")), "ns_fn (mod.py:2)");
	T_EQ_STR(R(ctx, fx("Runner", "app.py")), "Runner (app.py:16)");
	T_EQ_STR(R(ctx, fx("Runner.start.<locals>.<lambda>", "app.py")), "<lambda> (app.py)");
	T_EQ_STR(R(ctx, fx("no_such_function", "app.py")), "no_such_function (app.py)");

	/* Source absent: the fallbacks. */
	T_EQ_STR(R(ctx, "py::forward:/nonexistent/venv/lib/python3.10/site-packages/torch/nn/modules/module.py"),
		 "forward (torch/nn/modules/module.py)");
	T_EQ_STR(R(ctx, "py::f:/x/site-packages/a/site-packages/b/c.py"), "f (b/c.py)");
	T_EQ_STR(R(ctx, "py::f:/nonexistent/usr/lib/python3/dist-packages/numpy/core/numeric.py"),
		 "f (numpy/core/numeric.py)");
	T_EQ_STR(R(ctx, "py::raw_decode:/nonexistent/lib/python3.99/json/decoder.py"),
		 "raw_decode (json/decoder.py)");
	T_EQ_STR(R(ctx, "py::run:/nonexistent/lib64/python3.99t/threading.py"), "run (threading.py)");
	T_EQ_STR(R(ctx, "py::f:/nonexistent/lib/pythonista/x/y.py"), "f (y.py)");
	T_EQ_STR(R(ctx, "py::train:/home/u/nonexistent/train.py"), "train (train.py)");
	T_EQ_STR(R(ctx, "py::f:rel_nonexistent.py"), "f (rel_nonexistent.py)");
	T_EQ_STR(R(ctx, "py::<module>:/nonexistent/m.py"), "<module> (m.py:1)");

	/* Pseudo files stay; a module body is line 1 wherever it is. */
	T_EQ_STR(R(ctx, "py::_find_and_load:<frozen importlib._bootstrap>"),
		 "_find_and_load (<frozen importlib._bootstrap>)");
	T_EQ_STR(R(ctx, "py::<module>:<string>"), "<module> (<string>:1)");
	T_EQ_STR(R(ctx, "py::venv.<locals>.<genexpr>:<frozen site>"), "<genexpr> (<frozen site>)");
	T_EQ_STR(R(ctx, "py::K.sm.<locals>.<lambda>:/tmp/x/nested.py"), "<lambda> (nested.py)");
	T_EQ_STR(R(ctx, "py::__init__:<attrs generated init a.B>"),
		 "__init__ (<attrs generated init a.B>)");

	/* Odd shapes: the first ':' splits; no file; not a py:: name. */
	T_EQ_STR(R(ctx, "py::f:C:/odd:name.py"), "f (odd:name.py)");
	T_EQ_STR(R(ctx, "py::f:"), "f");
	T_EQ_STR(R(ctx, "py::lonely"), "lonely");
	T_EQ_STR(R(ctx, "py::a.b."), "a.b.");
	T_EQ_STR(R(ctx, "py::ns.<generic parameters of a.B>:x.py"),
		 "<generic parameters of a.B> (x.py)");
	T_EQ_STR(R(ctx, "py::f;g:/n/a;b.py"), "f;g (a;b.py)");
	{
		const char *out = "untouched";

		T_EQ_INT(py_render(ctx, "pyfoo", &out), 0);
		T_EQ_INT(py_render(ctx, "_PyEval_EvalFrameDefault", &out), 0);
		T_EQ_STR(out, "untouched");
	}
	/* Cached: the same input gives the same pointer. */
	T(R(ctx, fx("main", "app.py")) == R(ctx, fx("main", "app.py")));
	py_ctx_free(ctx);
}

static void test_opts(void)
{
	struct py_ctx *ctx;
	char root[PATH_MAX + 8];

	ctx = ctx_new((struct py_opts){ .no_lineno = true });
	T_EQ_STR(R(ctx, fx("main", "app.py")), "main (app.py)");
	T_EQ_STR(R(ctx, fx("<module>", "app.py")), "<module> (app.py)");
	T_EQ_STR(R(ctx, "py::<module>:<string>"), "<module> (<string>)");
	py_ctx_free(ctx);

	ctx = ctx_new((struct py_opts){ .qualname = true });
	T_EQ_STR(R(ctx, fx("run.<locals>.helper", "app.py")), "run.<locals>.helper (app.py:10)");
	T_EQ_STR(R(ctx, "py::K.sm.<locals>.<lambda>:/n/nested.py"),
		 "K.sm.<locals>.<lambda> (nested.py)");
	py_ctx_free(ctx);

	/* source_root: recorded paths are looked up under it; the package
	 * walk stays within the recorded path. */
	sfmt(root, sizeof(root), "%s//", fixdir);
	ctx = ctx_new((struct py_opts){ .source_root = root });
	T_EQ_STR(R(ctx, "py::deep_fn:/pkg/sub/deep.py"), "deep_fn (pkg/sub/deep.py:1)");
	T_EQ_STR(R(ctx, "py::compute:pkg/core.py"), "compute (pkg/core.py:4)");
	T_EQ_STR(R(ctx, "py::Engine:/core.py"), "Engine (core.py)");
	T_EQ_STR(R(ctx, "py::f:/nonexistent/site-packages/q/r.py"), "f (q/r.py)");
	T_EQ_STR(R(ctx, "py::f:<string>"), "f (<string>)");
	py_ctx_free(ctx);
	/* The source root itself inside a package: shown names must not
	 * climb into it. */
	sfmt(root, sizeof(root), "%s/pkg", fixdir);
	ctx = ctx_new((struct py_opts){ .source_root = root });
	T_EQ_STR(R(ctx, "py::deep_fn:/sub/deep.py"), "deep_fn (sub/deep.py:1)");
	py_ctx_free(ctx);

	ctx = ctx_new((struct py_opts){ .full_filenames = true });
	T_EQ_STR(R(ctx, "py::f:/nonexistent/site-packages/q/r.py"),
		 "f (/nonexistent/site-packages/q/r.py)");
	py_ctx_free(ctx);

	T_EQ_INT(py_ctx_new(NULL, &ctx), 0);
	T_EQ_STR(R(ctx, fx("Engine.sm", "pkg/core.py")), "sm (pkg/core.py:10)");
	py_ctx_free(ctx);
	py_ctx_free(NULL);
}

/* ---- sources that cost their line numbers ---- */

static int logged;

static void log_fn(void *c, int level, const char *msg)
{
	(void)c;
	(void)level;
	logged += strstr(msg, "big.py") != NULL;
}

static void test_big_source(void)
{
	struct log_sink log = { .fn = log_fn, .level = 3 };
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX], name[PATH_MAX + 32];
	struct py_ctx *ctx;
	FILE *f;
	int i;

	sfmt(path, sizeof(path), "%s/perfspy-test-python-%d-big.py",
		 tmp ? tmp : "/tmp", (int)getpid());
	f = fopen(path, "w");
	T(f != NULL);
	if (!f)
		return;
	fputs("def f():\n    pass\n", f);
	for (i = 0; i < (9 << 20) / 64; i++)
		fprintf(f, "# %061d\n", i);
	fclose(f);
	ctx = ctx_new((struct py_opts){ .log = &log, .full_filenames = true });
	sfmt(name, sizeof(name), "py::f:%s", path);
	T(R(ctx, name) && !strstr(R(ctx, name), ":1)"));
	T_EQ_INT(logged, 1);
	py_ctx_free(ctx);
	unlink(path);
}

/* ---- the scanner on its own ---- */

static int stop_at_two(void *arg, const char *qual, int line)
{
	(void)qual;
	(void)line;
	return ++*(int *)arg == 2 ? 42 : 0;
}

static void test_scan_edges(void)
{
	static struct got g;
	const char *src;
	char *deep;
	int calls = 0;
	size_t i;

	g.n = 0;
	T_EQ_INT(py_scan_source("", 0, collect, &g), 0);
	T_EQ_INT(g.n, 0);
	/* Unterminated strings end at the newline (single) or the file. */
	src = "x = 'abc\ndef a(): pass\ns = '''\ndef b(): pass\n";
	T_EQ_INT(py_scan_source(src, strlen(src), collect, &g), 0);
	T_EQ_INT(g.n, 1);
	T_EQ_STR(g.s[0], "a 2");
	/* Old Mac newlines, BOM, no final newline, stray closers. */
	g.n = 0;
	src = "\xef\xbb\xbf)]}\rclass A:\r    def m(self): pass\r\r\rdef z(): pass";
	T_EQ_INT(py_scan_source(src, strlen(src), collect, &g), 0);
	T_EQ_INT(g.n, 3);
	T_EQ_STR(g.s[1], "A.m 3");
	T_EQ_STR(g.s[2], "z 6");
	/* The callback can stop the scan. */
	src = "def a(): pass\ndef b(): pass\ndef c(): pass\n";
	T_EQ_INT(py_scan_source(src, strlen(src), stop_at_two, &calls), 42);
	T_EQ_INT(calls, 2);
	/* Pathological nesting is refused, not recursed into. */
	deep = malloc(4096 * 4 + 1);
	for (i = 0; i < 4096; i++)
		memcpy(deep + 4 * i, "f'{", 3), deep[4 * i + 3] = ' ';
	g.n = 0;
	T_EQ_INT(py_scan_source(deep, 4096 * 4, collect, &g), -EINVAL);
	free(deep);
}

/* Extents (common/pyscan.h py_tab_enclosing()): the innermost definition
 * holding a line, decorators included, up to the line before the next
 * statement indented no deeper; module level is 0. */
static void test_scan_enclosing(void)
{
	static const char src[] =
		"import x\n"			/* 1 */
		"class Linear:\n"		/* 2 */
		"    @staticmethod\n"		/* 3 */
		"    def forward(h):\n"	/* 4 */
		"        def inner():\n"	/* 5 */
		"            return (1,\n"	/* 6 */
		"2)\n"				/* 7: inside brackets */
		"\n"				/* 8 */
		"# a comment at column 0\n"	/* 9 */
		"        return inner()\n"	/* 10 */
		"    x = 1\n"			/* 11 */
		"y = 2\n"			/* 12 */
		"def last():\n"			/* 13 */
		"    pass";			/* 14: no final newline */
	static const struct { int line, first; const char *q; } want[] = {
		{ 1, 0, NULL }, { 2, 2, "Linear" }, { 3, 3, "Linear.forward" },
		{ 4, 3, "Linear.forward" }, { 6, 5, "Linear.forward.<locals>.inner" },
		{ 7, 5, "Linear.forward.<locals>.inner" },
		{ 9, 5, "Linear.forward.<locals>.inner" }, { 10, 3, "Linear.forward" },
		{ 11, 2, "Linear" }, { 12, 0, NULL }, { 14, 13, "last" }, { 99, 13, "last" },
	};
	struct deftab *t = NULL;
	char *buf = malloc(sizeof(src) + PY_PAD);
	const char *q;
	size_t i, pos;

	T(buf != NULL);
	memcpy(buf, src, sizeof(src));
	T_EQ_INT(py_scan_buffer(buf, sizeof(src) - 1, &t), 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		q = NULL;
		pos = SIZE_MAX;
		T_EQ_INT(py_tab_enclosing(t, want[i].line, &pos, &q), want[i].first);
		if (want[i].q)
			T_EQ_STR(q, want[i].q);
	}
	/* Outward, one per call: inner, Linear.forward, Linear, then none. */
	pos = SIZE_MAX;
	T_EQ_INT(py_tab_enclosing(t, 6, &pos, &q), 5);
	T_EQ_INT(py_tab_enclosing(t, 6, &pos, &q), 3);
	T_EQ_STR(q, "Linear.forward");
	T_EQ_INT(py_tab_enclosing(t, 6, &pos, &q), 2);
	T_EQ_STR(q, "Linear");
	T_EQ_INT(py_tab_enclosing(t, 6, &pos, &q), 0);
	T_EQ_INT(py_tab_enclosing(t, 6, &pos, &q), 0);
	py_tab_free(t);
	free(buf);
}

/* ---- interpreter frames ---- */

static void test_interpreter(void)
{
	static const char *const yes_dso[] = { "/usr/bin/python3.12", "python3",
		"/usr/local/bin/python", "/opt/py/bin/python3.13t", "/usr/bin/python3.12d",
		"/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0", "libpython3.so",
		"/x/libpython3.13t.so", "/usr/bin/python3.12 (deleted)" };
	static const char *const no_dso[] = { "/usr/bin/python-config", "/usr/bin/pythonw",
		"/lib/libc.so.6", "/x/libpython.so", "/x/libpythonista3.so",
		"/usr/bin/python3.12x", "/x/python3.12/lib.so", "libpython3.12.sox", "" };
	size_t i;

	for (i = 0; i < sizeof(yes_dso) / sizeof(yes_dso[0]); i++)
		T(py_is_interpreter_dso(yes_dso[i]));
	for (i = 0; i < sizeof(no_dso) / sizeof(no_dso[0]); i++)
		T(!py_is_interpreter_dso(no_dso[i]));
	T(!py_is_interpreter_dso(NULL));

	/* Interpreter internals go, whitelisted builtins stay. */
	T(py_is_interpreter_frame("_PyEval_EvalFrameDefault", "/usr/bin/python3.12"));
	T(py_is_interpreter_frame("_PyEval_EvalFrameDefault.cold.12", "/usr/bin/python3.12"));
	T(py_is_interpreter_frame("cfunction_call", "/usr/bin/python3.12"));
	T(py_is_interpreter_frame("main", "/usr/bin/python3.12"));
	T(py_is_interpreter_frame("_start", "/usr/bin/python3.12"));
	T(py_is_interpreter_frame("take_gil", "libpython3.12.so.1.0"));
	T(py_is_interpreter_frame("PyUnicode_New", "libpython3.12.so.1.0"));
	T(py_is_interpreter_frame("timer_x", "/usr/bin/python3.12"));
	T(py_is_interpreter_frame(NULL, "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("time_sleep", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("time_sleep.cold", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("lock_PyThread_acquire_lock", "libpython3.12.so.1.0"));
	T(!py_is_interpreter_frame("PyThread_acquire_lock_timed", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("PyGilState_Ensure", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("_sre_SRE_Pattern_match", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("os_stat_impl", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("gc_collect_main", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("sys_exit", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("unicode_decode_utf8", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("thread_run", "/usr/bin/python3.12"));
	T(py_is_interpreter_frame("_io_StringIO_write", "/usr/bin/python3.12"));
	T(!py_is_interpreter_frame("stringio_write", "/usr/bin/python3.12"));

	/* Root frames in libc go; the same names elsewhere stay. */
	T(py_is_interpreter_frame("__libc_start_main", "/lib/x86_64-linux-gnu/libc.so.6"));
	T(py_is_interpreter_frame("__libc_start_call_main", "/lib/x86_64-linux-gnu/libc.so.6"));
	T(py_is_interpreter_frame("__clone3", "/lib/x86_64-linux-gnu/libc.so.6"));
	T(py_is_interpreter_frame("__GI___clone3", "/lib/x86_64-linux-gnu/libc.so.6"));
	T(py_is_interpreter_frame("__clone", "/lib64/libc-2.17.so"));
	/* DWARF's names of the same entry points (clone3.S). */
	T(py_is_interpreter_frame("clone3", "/lib/x86_64-linux-gnu/libc.so.6"));
	T(py_is_interpreter_frame("clone", "/lib/x86_64-linux-gnu/libc.so.6"));
	T(!py_is_interpreter_frame("clone3", "/usr/bin/myprog"));
	T(py_is_interpreter_frame("start_thread", "/lib/x86_64-linux-gnu/libc.so.6"));
	T(py_is_interpreter_frame("start_thread", "/lib64/libpthread.so.0"));
	T(py_is_interpreter_frame("_start", "/lib64/ld-linux-x86-64.so.2"));
	T(!py_is_interpreter_frame("_start", "/usr/bin/myapp"));
	T(!py_is_interpreter_frame("start_thread", "/x/libcuda.so.1"));
	T(!py_is_interpreter_frame("__clone3", "/x/libc++.so.1"));
	T(!py_is_interpreter_frame("read", "/lib/x86_64-linux-gnu/libc.so.6"));
	T(!py_is_interpreter_frame("cudaLaunchKernel", "/x/libcudart.so.12"));
	T(!py_is_interpreter_frame(NULL, "/lib/x86_64-linux-gnu/libc.so.6"));
	T(!py_is_interpreter_frame("main", NULL));
	T(!py_is_interpreter_frame(NULL, NULL));
}

int main(void)
{
	if (!find_fixdir() || !load_expected()) {
		fprintf(stderr, "test_python: fixtures/python/expected.tsv not found, skipping\n");
		return 77;
	}
	test_scan_vs_cpython();
	test_render_vs_cpython();
	test_short_names();
	test_opts();
	test_big_source();
	test_scan_edges();
	test_scan_enclosing();
	test_interpreter();
	TEST_MAIN_END();
}
