// SPDX-License-Identifier: GPL-2.0
/*
 * perfspy report (report.c, report_out.c): a hand-made folder whose
 * split by category is known by construction, the rule order that
 * decides between candidates in one stack, `leaf` rules, rules files and
 * their errors, the text and JSON outputs, determinism, empty input.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>

#include "perfspy.h"
#include "test.h"

#define PY_MAIN "main (train.py:10)"
#define PY_STEP "step (train.py:20)"

/* Each stack names the category it must land in (NULL: no check). */
static const struct {
	const char *cat;
	uint64_t n;
	const char *frames[10];
} stacks[] = {
	/* CUDA launch: the launch is not the leaf; the driver and the
	 * kernel below it still count as the launch. */
	{ "CUDA launch", 30, { "thread (10): MainThread", PY_MAIN, PY_STEP,
		"cudaLaunchKernel (libcudart.so.12)", "0x7f10 (libcuda.so.535.104.05)",
		"entry_SYSCALL_64 ([kernel.kallsyms])", "__x64_sys_ioctl ([kernel.kallsyms])" } },
	{ "CUDA launch", 10, { "thread (10): MainThread", PY_MAIN, PY_STEP,
		"cudaLaunchKernel (libcudart.so.12)" } },
	/* .item(): _local_scalar_dense wins over the async copy it issues. */
	{ "CUDA sync", 10, { "thread (10): MainThread", PY_MAIN, "item (train.py:30)",
		"at::native::_local_scalar_dense_cuda (libtorch_cuda.so)",
		"cudaMemcpyAsync (libcudart.so.12)", "0x7f20 (libcuda.so.535.104.05)" } },
	/* The caching allocator's cudaMalloc is the CUDA allocator, not a
	 * launch though it runs in libcuda. */
	{ "CUDA allocator", 5, { "thread (10): MainThread", PY_MAIN, PY_STEP,
		"c10::cuda::CUDACachingAllocator::Native::malloc (libc10_cuda.so)",
		"cudaMalloc (libcudart.so.12)", "0x7f30 (libcuda.so.535.104.05)" } },
	{ "host allocator", 10, { "thread (11): loader", "load (data.py:5)",
		"malloc (libc.so.6)", "_int_malloc (malloc.c:4000)" } },
	{ "host allocator", 5, { "thread (11): loader", "load (data.py:5)",
		"_PyObject_Malloc (libpython3.12.so.1.0)",
		"asm_exc_page_fault ([kernel.kallsyms])" } },
	{ "GIL", 5, { "thread (11): loader", "wait (threading.py:9)",
		"take_gil (ceval_gil.c:300)", "pthread_cond_timedwait (libc.so.6)",
		"do_syscall_64 ([kernel.kallsyms])", "__x64_sys_futex ([kernel.kallsyms])" } },
	/* The eval loop as the leaf under a Python frame is Python code
	 * running; the page fault below it does not make it kernel time. */
	{ "Python code", 4, { "thread (11): loader", "load (data.py:5)",
		"_PyEval_EvalFrameDefault (libpython3.12.so.1.0)" } },
	{ "Python code", 1, { "thread (11): loader", "load (data.py:5)",
		"_PyEval_EvalFrameDefault (libpython3.12.so.1.0)",
		"asm_exc_page_fault ([kernel.kallsyms])" } },
	/* ...but an interpreter frame above a native extension is not a
	 * leaf: other native. */
	{ "other native", 5, { "thread (11): loader", "load (data.py:5)",
		"_PyEval_EvalFrameDefault (libpython3.12.so.1.0)",
		"PyObject_Vectorcall (libpython3.12.so.1.0)", "crc32_update (ext.c:12)" } },
	{ "kernel", 5, { "thread (12)", "start_thread (libc.so.6)", "clock_nanosleep (libc.so.6)",
		"entry_SYSCALL_64 ([kernel.kallsyms])",
		"__x64_sys_clock_nanosleep ([kernel.kallsyms])" } },
	{ "Python code", 10, { "thread (10): MainThread", PY_MAIN, PY_STEP } },
};

static struct perfspy_folder *make(bool reversed, bool roots)
{
	struct perfspy_folder *f;
	size_t i, k, n;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (k = 0; k < sizeof(stacks) / sizeof(stacks[0]); k++) {
		i = reversed ? sizeof(stacks) / sizeof(stacks[0]) - 1 - k : k;
		for (n = 0; n < 10 && stacks[i].frames[n]; n++)
			;
		T_EQ_INT(perfspy_folder__add(f, stacks[i].frames + !roots, n - !roots,
					     stacks[i].n), 0);
	}
	return f;
}

static uint64_t cat_samples(const struct perfspy_report *r, const char *name)
{
	PERFSPY_OPTS(perfspy_report_row, row);
	uint32_t i;

	for (i = 0; !perfspy_report__category(r, i, &row); i++)
		if (!strcmp(row.name, name))
			return row.samples;
	return UINT64_MAX;
}

static char *out_str(const struct perfspy_report *r, int by, unsigned top, bool json)
{
	PERFSPY_OPTS(perfspy_report_write_opts, o, .by = by, .top = top, .json = json);
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);

	T_EQ_INT(perfspy_report__write(r, mf, &o), 0);
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

static char *write_str(struct perfspy_folder *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);

	T_EQ_INT(perfspy_folder__write(f, mf, NULL), 0);
	fclose(mf);
	return buf;
}

/* The split by construction: each category gets exactly the weights of
 * the stacks written for it. */
static void test_split(void)
{
	struct perfspy_folder *f = make(false, true);
	PERFSPY_OPTS(perfspy_report_row, row);
	struct perfspy_report *r;
	uint64_t want[16] = { 0 }, prev = UINT64_MAX;
	const char *names[16];
	size_t nn = 0, i, j;

	for (i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		for (j = 0; j < nn && strcmp(names[j], stacks[i].cat); j++)
			;
		if (j == nn)
			names[nn++] = stacks[i].cat;
		want[j] += stacks[i].n;
	}
	T_EQ_INT(perfspy_report__new(f, NULL, &r), 0);
	T_EQ_INT(perfspy_report__total(r), 100);
	for (j = 0; j < nn; j++) {
		T_EQ_INT(cat_samples(r, names[j]), want[j]);
		if (cat_samples(r, names[j]) != want[j])
			fprintf(stderr, "  category %s\n", names[j]);
	}
	T_EQ_INT(cat_samples(r, "CUDA launch"), 40);
	T_EQ_INT(cat_samples(r, "host allocator"), 15);
	T_EQ_INT(cat_samples(r, "CUDA allocator"), 5);
	T_EQ_INT(cat_samples(r, "Python code"), 15);
	T_EQ_INT(cat_samples(r, "allocator"), UINT64_MAX); /* split in two now */
	/* Rows come by weight, most first; every built-in category is one. */
	for (i = 0; !perfspy_report__category(r, (uint32_t)i, &row); i++) {
		T(row.samples <= prev);
		prev = row.samples;
	}
	T_EQ_INT(i, 18);
	T_EQ_INT(perfspy_report__category(r, 18, &row), -ENOENT);
	perfspy_report__free(r);
	perfspy_folder__free(f);
}

static void test_text(void)
{
	struct perfspy_folder *f = make(false, true), *g = make(true, true);
	struct perfspy_report *r, *r2;
	char *s, *s2;

	T_EQ_INT(perfspy_report__new(f, NULL, &r), 0);
	T_EQ_INT(perfspy_report__new(g, NULL, &r2), 0);
	s = out_str(r, PERFSPY_REPORT_BY_CATEGORY, 0, false);
	T(strstr(s, "perfspy report: 100 samples, 3 thread names; rows by category") != NULL);
	T(strstr(s, "   40.0%        40  CUDA launch\n") != NULL);
	T(strstr(s, "\n== CUDA launch: 40.0% (40 samples)\n"
		    "  innermost Python frames:\n"
		    "     40.0%  " PY_STEP "\n"
		    "  native leaves:\n"
		    "     30.0%  0x7f10 (libcuda.so.535.104.05)\n"
		    "     10.0%  cudaLaunchKernel (libcudart.so.12)\n"
		    "  threads:\n"
		    "     40.0%  MainThread\n"
		    "  kernel entries:\n"
		    "     30.0%  ioctl\n") != NULL);
	T(strstr(s, "      5.0%  futex\n") != NULL);
	T(strstr(s, "      5.0%  clock_nanosleep\n") != NULL);
	T(strstr(s, "      5.0%  page fault\n") != NULL);
	T(strstr(s, "      5.0%  (no Python frame)\n") != NULL);
	T(strstr(s, "      5.0%  thread (12)\n") != NULL);
	/* Same stacks added in another order: same bytes. */
	s2 = out_str(r2, PERFSPY_REPORT_BY_CATEGORY, 0, false);
	T_EQ_STR(s, s2);
	free(s);
	free(s2);
	s = out_str(r, PERFSPY_REPORT_BY_THREAD, 2, false);
	T(strstr(s, "   65.0%        65  MainThread\n"
		    "   30.0%        30  loader\n"
		    "    5.0%         5  (1 more)\n") != NULL);
	T(strstr(s, "\n== loader: 30.0% (30 samples)\n  categories:\n"
		    "     15.0%  host allocator\n      5.0%  GIL\n     10.0%  (2 more)\n") != NULL);
	free(s);
	s = out_str(r, PERFSPY_REPORT_BY_PYTHON, 0, false);
	T(strstr(s, "   55.0%        55  " PY_STEP "\n") != NULL);
	T(strstr(s, "\n== item (train.py:30): 10.0% (10 samples)\n  categories:\n"
		    "     10.0%  CUDA sync\n") != NULL);
	free(s);
	perfspy_report__free(r);
	perfspy_report__free(r2);
	perfspy_folder__free(f);
	perfspy_folder__free(g);
}

static void test_json(void)
{
	struct perfspy_folder *f = make(false, true), *g = make(true, true);
	struct perfspy_report *r, *r2;
	char *s, *s2;

	T_EQ_INT(perfspy_report__new(f, NULL, &r), 0);
	T_EQ_INT(perfspy_report__new(g, NULL, &r2), 0);
	s = out_str(r, PERFSPY_REPORT_BY_CATEGORY, 0, true);
	s2 = out_str(r2, PERFSPY_REPORT_BY_CATEGORY, 0, true);
	T_EQ_STR(s, s2);
	T(!strncmp(s, "{\"samples\":100,\"by\":\"category\",\"top\":5,", 39));
	T(strstr(s, "\n{\"name\":\"CUDA launch\",\"samples\":40,\"share\":0.4000,"
		    "\"python\":[{\"name\":\"" PY_STEP "\",\"samples\":40,\"share\":0.4000}],"
		    "\"native\":[{\"name\":\"0x7f10 (libcuda.so.535.104.05)\",\"samples\":30,"
		    "\"share\":0.3000},{\"name\":\"cudaLaunchKernel (libcudart.so.12)\","
		    "\"samples\":10,\"share\":0.1000}],"
		    "\"threads\":[{\"name\":\"MainThread\",\"samples\":40,\"share\":0.4000}],"
		    "\"syscalls\":[{\"name\":\"ioctl\",\"samples\":30,\"share\":0.3000}]}") != NULL);
	T(strstr(s, "{\"name\":\"GIL\",\"samples\":5,") != NULL);
	T(strstr(s, "\"threads\":[\n{\"name\":\"MainThread\",\"samples\":65,") != NULL);
	T(strstr(s, "\"python\":[\n{\"name\":\"" PY_STEP "\",\"samples\":55,") != NULL);
	T(s[strlen(s) - 2] == '}');
	free(s);
	free(s2);
	perfspy_report__free(r);
	perfspy_report__free(r2);
	perfspy_folder__free(f);
	perfspy_folder__free(g);
}

struct logbuf {
	char text[1024];
};

static void log_fn(void *ctx, int level, const char *msg)
{
	struct logbuf *b = ctx;

	(void)level;
	snprintf(b->text, sizeof(b->text), "%s", msg);
}

static int with_rules(const struct perfspy_folder *f, const char *rules,
		      struct logbuf *lb, struct perfspy_report **r)
{
	PERFSPY_OPTS(perfspy_report_opts, o, .rules = rules, .rules_name = "my.rules",
		     .log_fn = log_fn, .log_ctx = lb);

	lb->text[0] = 0;
	return perfspy_report__new(f, &o, r);
}

static void test_rules(void)
{
	struct perfspy_folder *f = make(false, true);
	struct perfspy_report *r = NULL;
	struct logbuf lb;

	/* Custom rules replace the built-in ones: first match wins, `leaf`
	 * looks at the innermost user-space frame only, `lib` at the file
	 * without its line, `kernel` at kernel frames. */
	T_EQ_INT(with_rules(f,
			    "# comment\n\n"
			    "  ext : lib ext.c  \n"
			    "driver: leaf lib libcuda.so*\n"
			    "launch: func cudaLaunch*\n"
			    "sys: kernel\n"
			    "mem: frame malloc (libc.so.6)\n", &lb, &r), 0);
	T_EQ_INT(cat_samples(r, "ext"), 5);
	/* driver (leaf) matches the 0x7f10 leaf of the first launch stack
	 * (30), the .item() stack (10) and the cudaMalloc stack (5). */
	T_EQ_INT(cat_samples(r, "driver"), 45);
	T_EQ_INT(cat_samples(r, "launch"), 10);
	T_EQ_INT(cat_samples(r, "sys"), 5 + 1 + 5 + 5);
	T_EQ_INT(cat_samples(r, "mem"), 10);
	T_EQ_INT(cat_samples(r, "Python code"), 10);
	T_EQ_INT(cat_samples(r, "other native"), 100 - 5 - 45 - 10 - 16 - 10 - 10);
	T_EQ_INT(cat_samples(r, "CUDA launch"), UINT64_MAX); /* not a category now */
	perfspy_report__free(r);
	/* Trailing comments (issue 15): the same rules with `# notes` after
	 * them give the same counts; a '#' inside a pattern stays in it. */
	T_EQ_INT(with_rules(f,
			    "  ext : lib ext.c  # the extension\n"
			    "driver: leaf lib libcuda.so*\t# leaf only\n"
			    "launch: func cudaLaunch* #\n"
			    "sys: kernel    # any kernel frame\n"
			    "mem: frame malloc (libc.so.6) # whole frame\n"
			    "never: func x#y\n", &lb, &r), 0);
	T_EQ_INT(cat_samples(r, "ext"), 5);
	T_EQ_INT(cat_samples(r, "driver"), 45);
	T_EQ_INT(cat_samples(r, "launch"), 10);
	T_EQ_INT(cat_samples(r, "sys"), 5 + 1 + 5 + 5);
	T_EQ_INT(cat_samples(r, "mem"), 10);
	T_EQ_INT(cat_samples(r, "never"), 0);
	perfspy_report__free(r);
	/* A '#' with a blank before it is a comment even after `kernel`. */
	T_EQ_INT(with_rules(f, "a: func x # b: kernel\n", &lb, &r), 0);
	T_EQ_INT(cat_samples(r, "b"), UINT64_MAX);
	perfspy_report__free(r);
	/* No rules at all: only the two implicit categories. */
	T_EQ_INT(with_rules(f, "", &lb, &r), 0);
	T_EQ_INT(cat_samples(r, "other native"), 90);
	T_EQ_INT(cat_samples(r, "Python code"), 10);
	perfspy_report__free(r);
	/* Errors name the file and the line. */
	r = NULL;
	T_EQ_INT(with_rules(f, "a: func x\nno colon here\n", &lb, &r), -PERFSPY_E_RULES);
	T(r == NULL);
	T(strstr(lb.text, "my.rules:2: expected") != NULL);
	T_EQ_INT(with_rules(f, "a: bogus x\n", &lb, &r), -PERFSPY_E_RULES);
	T(strstr(lb.text, "my.rules:1: unknown match kind") != NULL);
	T_EQ_INT(with_rules(f, "a: kernel x\n", &lb, &r), -PERFSPY_E_RULES);
	T(strstr(lb.text, "'kernel' takes no pattern") != NULL);
	T_EQ_INT(with_rules(f, "\n\na: func   \n", &lb, &r), -PERFSPY_E_RULES);
	T(strstr(lb.text, "my.rules:3: missing pattern") != NULL);
	T_EQ_INT(with_rules(f, " : func x\n", &lb, &r), -PERFSPY_E_RULES);
	T(strstr(lb.text, "empty category") != NULL);
	T_EQ_INT(with_rules(f, "a: leaf\n", &lb, &r), -PERFSPY_E_RULES);
	/* The built-in rules parse, and say what they are. */
	T(strstr(perfspy_report_default_rules(), "CUDA launch: func cudaLaunch*\n") != NULL);
	perfspy_folder__free(f);
}

/* Stacks without thread roots: one "(all threads)" row, no thread
 * count in the header. Same categories as with roots. */
static void test_no_roots_and_empty(void)
{
	struct perfspy_folder *f = make(false, false), *e;
	struct perfspy_report *r;
	struct {
		struct perfspy_report_write_opts o;
		char tail[8];
	} big = { .o = { .sz = sizeof(big) } };
	char *s;

	T_EQ_INT(perfspy_report__new(f, NULL, &r), 0);
	T_EQ_INT(cat_samples(r, "CUDA launch"), 40);
	T_EQ_INT(cat_samples(r, "kernel"), 5);
	s = out_str(r, PERFSPY_REPORT_BY_THREAD, 0, false);
	T(strstr(s, "perfspy report: 100 samples; rows by thread") != NULL);
	T(strstr(s, "  100.0%       100  (all threads)\n") != NULL);
	free(s);
	big.tail[1] = 1;
	T_EQ_INT(perfspy_report__write(r, stderr, &big.o), -PERFSPY_E_OPTS);
	perfspy_report__free(r);
	perfspy_folder__free(f);

	T_EQ_INT(perfspy_folder__new(&e), 0);
	T_EQ_INT(perfspy_report__new(e, NULL, &r), 0);
	T_EQ_INT(perfspy_report__total(r), 0);
	s = out_str(r, PERFSPY_REPORT_BY_CATEGORY, 0, true);
	T(!strncmp(s, "{\"samples\":0,", 13));
	T(strstr(s, "{\"name\":\"CUDA launch\",\"samples\":0,\"share\":0.0000,") != NULL);
	free(s);
	s = out_str(r, PERFSPY_REPORT_BY_PYTHON, 0, false);
	T(strstr(s, "perfspy report: 0 samples") != NULL);
	free(s);
	perfspy_report__free(r);
	perfspy_report__free(NULL);
	perfspy_folder__free(e);
}

/*
 * py-spy 0.3.0-0.3.3's thread root `thread 1234` (docs/pyspy-formats.md §1.5)
 * is thread 1234 to the report as it is to the merge (issue 12: the
 * report once filed it under "(all threads)"). The folder is filled with
 * perfspy_folder__add so the old form reaches both as it is, not
 * rewritten by the py-spy reader.
 */
static void test_old_thread_root(void)
{
	static const char *const old[] = { "thread 1234", "main (a.py:1)",
					   "malloc (libc.so.6)" };
	static const char *const other[] = { "thread (99): B", "main (a.py:1)",
					     "malloc (libc.so.6)" };
	static const char text[] = "thread 1234;main (a.py:1);malloc (libc.so.6) 10\n"
				   "thread (99): B;main (a.py:1);malloc (libc.so.6) 5\n";
	PERFSPY_OPTS(perfspy_merge_stats, st);
	struct perfspy_folder *f, *g, *py, *out;
	struct perfspy_report *r, *r2;
	char *s, *s2;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__add(f, old, 3, 10), 0);
	T_EQ_INT(perfspy_folder__add(f, other, 3, 5), 0);
	T_EQ_INT(perfspy_report__new(f, NULL, &r), 0);
	s = out_str(r, PERFSPY_REPORT_BY_THREAD, 0, false);
	T(strstr(s, "perfspy report: 15 samples, 2 thread names; rows by thread") != NULL);
	T(strstr(s, "== thread (1234): 66.7%") != NULL);
	T(strstr(s, "(all threads)") == NULL);

	/* The same stacks as text, read back by the py-spy reader (which
	 * writes the root `thread (1234)`): the same report, byte for byte. */
	T_EQ_INT(perfspy_folder__new(&g), 0);
	T_EQ_INT(perfspy_folder__read_pyspy(g, NULL, text, strlen(text), NULL, NULL), 0);
	T_EQ_INT(perfspy_report__new(g, NULL, &r2), 0);
	s2 = out_str(r2, PERFSPY_REPORT_BY_THREAD, 0, false);
	T_EQ_STR(s2, s);
	free(s);
	free(s2);
	s = out_str(r, PERFSPY_REPORT_BY_CATEGORY, 0, true);
	s2 = out_str(r2, PERFSPY_REPORT_BY_CATEGORY, 0, true);
	T_EQ_STR(s2, s);
	free(s);
	free(s2);

	/* The merge reads the same root as thread 1234: it matches per
	 * thread, each perf stack on its own thread's py-spy line (line 7
	 * for 1234, line 9 for 99), none on another thread's. */
	py = folder("thread (1234): A;main (a.py:7) 3\nthread (99): B;main (a.py:9) 1\n");
	T_EQ_INT(perfspy_folder__new(&out), 0);
	T_EQ_INT(perfspy_merge(f, py, NULL, out, &st), 0);
	T(st.thread_aware);
	T_EQ_INT(st.other_thread, 0);
	s = write_str(out);
	T_EQ_STR(s, "thread (99): B;main (a.py:9);malloc (libc.so.6) 5\n"
		    "thread 1234;main (a.py:7);malloc (libc.so.6) 10\n");
	free(s);
	perfspy_report__free(r);
	perfspy_report__free(r2);
	perfspy_folder__free(f);
	perfspy_folder__free(g);
	perfspy_folder__free(py);
	perfspy_folder__free(out);
}

/* ML stacks (shapes seen on a PyTorch CPU run and CPython's test suite):
 * each lands in the category its comment says, by the built-in rules. */
static const struct {
	const char *cat;
	uint64_t n;
	const char *frames[8];
} ml[] = {
	/* .item() on a CPU tensor: no CUDA anywhere, so not CUDA sync. */
	{ "math kernels", 3, { "process 7:\"train\"", "thread (7): python3", PY_STEP,
		"at::_ops::_local_scalar_dense::call (libtorch_cpu.so.1.13)",
		"at::native::_local_scalar_dense_cpu (libtorch_cpu.so.1.13)" } },
	/* An LTO-private clone matches the plain name's rule. */
	{ "GIL", 5, { "process 7:\"train\"", "thread (7): python3", PY_STEP,
		"take_gil.lto_priv.0 (ceval_gil.c:300)",
		"pthread_cond_timedwait (libc.so.6)", "futex_wait ([kernel.kallsyms])" } },
	/* An idle OpenMP worker: spinning in unnamed libgomp code. */
	{ "OpenMP/thread-pool wait", 40, { "process 7:\"train\"", "thread (8): python3",
		"start_thread (libc.so.6)", "libgomp.so.1.0.0+0x1d2f0 (libgomp.so.1.0.0)",
		"libgomp.so.1.0.0+0x1b7a0 (libgomp.so.1.0.0)" } },
	/* ...and one running a GEMM under the same libgomp frames. */
	{ "math kernels", 20, { "process 7:\"train\"", "thread (8): python3",
		"start_thread (libc.so.6)", "libgomp.so.1.0.0+0x1d2f0 (libgomp.so.1.0.0)",
		"sgemm_ (libblas.so.3)", "sgemm_kernel_HASWELL (libblas.so.3)" } },
	{ "math kernels", 6, { "process 7:\"train\"", "thread (7): python3", PY_STEP,
		"at::native::addmm_out (libtorch_cpu.so.1.13)",
		"dnnl::impl::cpu::x64::jit_avx2_gemm (libdnnl.so.2)" } },
	{ "host allocator", 4, { "process 7:\"train\"", "thread (7): python3", PY_STEP,
		"at::native::empty_cpu (libtorch_cpu.so.1.13)",
		"c10::alloc_cpu (libc10.so.1.13)", "posix_memalign (libc.so.6)",
		"_int_memalign.constprop.0 (libc.so.6)" } },
	{ "CUDA allocator", 2, { "process 9:\"gpu\"", "thread (9): python3", PY_STEP,
		"c10::cuda::CUDACachingAllocator::Native::malloc (libc10_cuda.so)" } },
	{ "PyTorch dispatch/autograd", 5, { "process 7:\"train\"", "thread (7): python3",
		PY_STEP, "c10::Dispatcher::call (libtorch_cpu.so.1.13)",
		"c10::impl::OperatorEntry::lookup (libtorch_cpu.so.1.13)" } },
	{ "communication", 1, { "process 9:\"gpu\"", "thread (9): python3", PY_STEP,
		"ncclAllReduce (libnccl.so.2)" } },
	{ "GC", 3, { "process 7:\"train\"", "thread (7): python3", PY_STEP,
		"_Py_RunGC (libpython3.12.so.1.0)", "gc_collect_main (gcmodule.c:1200)",
		"_PyObject_Free (obmalloc.c:10)" } },
	{ "import", 1, { "process 7:\"train\"", "thread (7): python3",
		"PyImport_ImportModuleLevelObject (libpython3.11.so.1.0)",
		"_PyEval_EvalFrameDefault (libpython3.11.so.1.0)" } },
	/* The eval loop without a Python frame above: which code is unknown. */
	{ "Python interpreter", 10, { "process 7:\"train\"", "thread (7): python3",
		"Py_RunMain (libpython3.11.so.1.0)",
		"_PyEval_EvalFrameDefault (libpython3.11.so.1.0)" } },
};

static void test_ml(void)
{
	PERFSPY_OPTS(perfspy_report_row, row);
	struct perfspy_folder *f;
	struct perfspy_report *r;
	uint64_t sum;
	size_t i, j, n;
	char *s;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (i = 0; i < sizeof(ml) / sizeof(ml[0]); i++) {
		for (n = 0; n < 8 && ml[i].frames[n]; n++)
			;
		T_EQ_INT(perfspy_folder__add(f, ml[i].frames, n, ml[i].n), 0);
	}
	T_EQ_INT(perfspy_report__new(f, NULL, &r), 0);
	T_EQ_INT(perfspy_report__total(r), 100);
	for (i = 0; i < sizeof(ml) / sizeof(ml[0]); i++) {
		for (sum = 0, j = 0; j < sizeof(ml) / sizeof(ml[0]); j++)
			if (!strcmp(ml[i].cat, ml[j].cat))
				sum += ml[j].n;
		T_EQ_INT(cat_samples(r, ml[i].cat), sum);
		if (cat_samples(r, ml[i].cat) != sum)
			fprintf(stderr, "  category %s\n", ml[i].cat);
	}
	T_EQ_INT(cat_samples(r, "CUDA sync"), 0);
	T_EQ_INT(cat_samples(r, "other native"), 0);
	/* Leaves are shown without clone suffixes. */
	s = out_str(r, PERFSPY_REPORT_BY_CATEGORY, 0, false);
	T(strstr(s, "\n== GIL: 5.0% (5 samples)\n  innermost Python frames:\n"
		    "      5.0%  " PY_STEP "\n  native leaves:\n"
		    "      5.0%  pthread_cond_timedwait (libc.so.6)\n") != NULL);
	T(strstr(s, "      4.0%  _int_memalign (libc.so.6)\n") != NULL);
	T(strstr(s, "lto_priv") == NULL && strstr(s, "constprop") == NULL);
	free(s);
	/* One row per process and one per thread id (two threads share the
	 * name python3: --by thread has one row for them). */
	s = out_str(r, PERFSPY_REPORT_BY_PROCESS, 0, false);
	T(strstr(s, "; rows by process;") != NULL);
	T(strstr(s, "   97.0%        97  process 7:\"train\"\n"
		    "    3.0%         3  process 9:\"gpu\"\n") != NULL);
	T(strstr(s, "\n== process 9:\"gpu\": 3.0% (3 samples)\n  categories:\n"
		    "      2.0%  CUDA allocator\n      1.0%  communication\n") != NULL);
	free(s);
	s = out_str(r, PERFSPY_REPORT_BY_TID, 0, false);
	T(strstr(s, "   60.0%        60  thread (8)\n"
		    "   37.0%        37  thread (7)\n"
		    "    3.0%         3  thread (9)\n") != NULL);
	free(s);
	s = out_str(r, PERFSPY_REPORT_BY_THREAD, 0, false);
	T(strstr(s, "  100.0%       100  python3\n") != NULL);
	free(s);
	s = out_str(r, PERFSPY_REPORT_BY_TID, 0, true);
	T(strstr(s, "\"by\":\"tid\"") != NULL);
	T(strstr(s, "\"processes\":[\n{\"name\":\"process 7:\\\"train\\\"\",\"samples\":97,") != NULL);
	T(strstr(s, "\"tids\":[\n{\"name\":\"thread (8)\",\"samples\":60,") != NULL);
	free(s);
	T_EQ_INT(perfspy_report__category(r, 0, &row), 0);
	T_EQ_STR(row.name, "OpenMP/thread-pool wait");
	perfspy_report__free(r);
	perfspy_folder__free(f);
}

/* Clone suffixes, alone and stacked; names that only look like one. */
static void test_strip(void)
{
	static const struct {
		const char *in, *out;
	} c[] = {
		{ "take_gil.lto_priv.0", "take_gil" },
		{ "f.constprop.12", "f" },
		{ "f.isra.0.cold", "f" },
		{ "f.part.3", "f" },
		{ "f.cold", "f" },
		{ "f.cold.1", "f" },
		{ "f.llvm.1234567", "f" },
		{ "f.isra.0.constprop.1", "f" },
		{ "f", "f" },
		{ ".cold", ".cold" },
		{ "f.2", "f.2" },
		{ "coldf", "coldf" },
		{ "f.partial", "f.partial" },
		{ "fisra.0", "fisra.0" },
		{ "", "" },
	};
	PERFSPY_OPTS(perfspy_report_opts, o, .rules = "x: func f\n");
	struct perfspy_folder *f;
	struct perfspy_report *r;
	char frame[64];
	size_t i;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *fr = frame;

		snprintf(frame, sizeof(frame), "%s (a.so)", c[i].in);
		T_EQ_INT(perfspy_folder__add(f, &fr, 1, 1), 0);
	}
	T_EQ_INT(perfspy_report__new(f, &o, &r), 0);
	/* The rule `func f` matches exactly the inputs stripped to "f". */
	T_EQ_INT(cat_samples(r, "x"), 8);
	perfspy_report__free(r);
	perfspy_folder__free(f);
}

/* issue 10: off-CPU stacks (--idle) by kernel path, before the GIL rule;
 * an on-CPU sample after a switch-in is not a wait; `: ` in a category. */
static void test_waiting(void)
{
	static const char *const gil[] = { "thread (1): a", "run (x.py:1)",
		"take_gil (ceval_gil.c:300)", "pthread_cond_timedwait (libc.so.6)",
		"__x64_sys_futex ([kernel.kallsyms])", "futex_do_wait ([kernel.kallsyms])",
		"schedule ([kernel.kallsyms])" };
	static const char *const nap[] = { "thread (1): a", "nap (x.py:5)",
		"clock_nanosleep (libc.so.6)", "hrtimer_nanosleep ([kernel.kallsyms])",
		"do_nanosleep ([kernel.kallsyms])", "__schedule ([kernel.kallsyms])" };
	static const char *const pipe[] = { "thread (1): a", "read (x.py:9)",
		"read (libc.so.6)", "pipe_read ([kernel.kallsyms])",
		"schedule ([kernel.kallsyms])" };
	static const char *const back[] = { "thread (1): a", "burn (x.py:3)",
		"burn (libwork.so)", "exit_to_user_mode_loop ([kernel.kallsyms])",
		"schedule ([kernel.kallsyms])", "__schedule ([kernel.kallsyms])",
		"finish_task_switch.isra.0 ([kernel.kallsyms])" };
	PERFSPY_OPTS(perfspy_report_opts, ro,
		.rules = "waiting: long: name: func nap\nx: y: lib libc*\n");
	struct perfspy_folder *f = NULL;
	struct perfspy_report *r = NULL;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	T_EQ_INT(perfspy_folder__add(f, gil, 7, 30), 0);
	T_EQ_INT(perfspy_folder__add(f, nap, 6, 40), 0);
	T_EQ_INT(perfspy_folder__add(f, pipe, 5, 20), 0);
	T_EQ_INT(perfspy_folder__add(f, back, 7, 10), 0);
	T_EQ_INT(perfspy_report__new(f, NULL, &r), 0);
	T_EQ_INT(cat_samples(r, "waiting: futex"), 30);
	T_EQ_INT(cat_samples(r, "waiting: sleep"), 40);
	T_EQ_INT(cat_samples(r, "waiting: I/O"), 20);
	T_EQ_INT(cat_samples(r, "GIL"), 0);
	T_EQ_INT(cat_samples(r, "kernel"), 10);
	perfspy_report__free(r);
	/* The category runs to the first colon a rule body follows. */
	T_EQ_INT(perfspy_report__new(f, &ro, &r), 0);
	T_EQ_INT(cat_samples(r, "waiting: long: name"), 0);
	T_EQ_INT(cat_samples(r, "x: y"), 90);
	perfspy_report__free(r);
	perfspy_folder__free(f);
}

/*
 * Rules are matched with fnmatch(), behind a filter on the glob's plain
 * text (rule_lit() in report.c): a frame whose text lacks that text, or
 * does not start with it when the glob does, is never passed to
 * fnmatch(). The filter must turn away only frames fnmatch() would: for
 * each glob and part, the category holds exactly the frames fnmatch()
 * itself matches here.
 */
static void test_globs(void)
{
	static const char *const funcs[] = { "foo_bar", "foo", "bar", "xfoo", "*xy",
		"fao_bar", "foobar", "f", "ab", "oo_barr", "a?b", "a[b]c", "barfoo",
		"foo_bar_foo", "fo", "zz*zz", "o_b" };
	static const char *const globs[] = { "*", "foo*", "*bar", "*o_b*", "f?o*",
		"*[ab]r", "\\*x*", "foo", "*oo*ar*", "x*", "?", "*?", "a\\?b",
		"a[[]b]c", "*foo*foo*", "bar*foo", "*z\\*z*", "fo*o", "*_*_*",
		"lib*", "*.so", "*o_b (lib*", "o_b (libo_b.so)", "* (lib?o*" };
	static const char *const kinds[] = { "func", "lib", "frame" };
	struct perfspy_folder *f;
	struct perfspy_report *r;
	struct logbuf lb;
	char text[64][64], rules[128];
	const char *one[1];
	size_t i, g, k;

	T_EQ_INT(perfspy_folder__new(&f), 0);
	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		snprintf(text[i], sizeof(text[i]), "%s (lib%s.so)", funcs[i], funcs[i]);
		one[0] = text[i];
		T_EQ_INT(perfspy_folder__add(f, one, 1, 1), 0);
	}
	for (k = 0; k < 3; k++) {
		for (g = 0; g < sizeof(globs) / sizeof(globs[0]); g++) {
			uint64_t want = 0, got;
			const char *part;
			char lib[64];

			for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
				snprintf(lib, sizeof(lib), "lib%s.so", funcs[i]);
				part = k == 0 ? funcs[i] : k == 1 ? lib : text[i];
				want += !fnmatch(globs[g], part, 0);
			}
			snprintf(rules, sizeof(rules), "m: %s %s\n", kinds[k], globs[g]);
			r = NULL;
			T_EQ_INT(with_rules(f, rules, &lb, &r), 0);
			got = cat_samples(r, "m");
			T_EQ_INT(got == UINT64_MAX ? 0 : got, want);
			if ((got == UINT64_MAX ? 0 : got) != want)
				fprintf(stderr, "  rule %s", rules);
			perfspy_report__free(r);
		}
	}
	perfspy_folder__free(f);
}

int main(void)
{
	test_waiting();
	test_split();
	test_text();
	test_json();
	test_rules();
	test_globs();
	test_no_roots_and_empty();
	test_old_thread_root();
	test_ml();
	test_strip();
	TEST_MAIN_END();
}
