// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the public symbolizer (libconv/symbolizer.c), the API the
 * perf dlfilter plugin names frames with: each location kind, root-first
 * order, interpreter frames dropped only next to Python frames (and kept
 * with keep_interpreter), no_kernel and qualname taken from the convert
 * options, sized-struct checks. The DSO case symbolizes a function of this
 * very binary at the file offset the dynamic loader reports, so the
 * expected name comes from the running process, not from a symbolizer.
 */
#include "perfspy.h"
#include "test.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int probe_fn(int x);
__attribute__((noinline)) int probe_fn(int x)
{
	volatile int v = x;

	return v * 3 + 1;
}

struct find {
	uintptr_t addr;
	uint64_t off;
	int found;
};

/* File offset of f->addr in the main program: its PT_LOAD segment maps
 * p_offset at load bias + p_vaddr. */
static int find_off(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && f->addr >= start &&
		    f->addr < start + ph->p_memsz) {
			f->off = f->addr - start + ph->p_offset;
			f->found = 1;
			return 1;
		}
	}
	return 0;
}

static struct perfspy_location loc(int kind, const char *dso, uint64_t off,
				   uint64_t addr, const char *sym, bool ret)
{
	struct perfspy_location l = {
		.sz = sizeof(l), .kind = kind, .dso = dso, .offset = off,
		.addr = addr, .symbol = sym, .is_return = ret,
	};

	return l;
}

static struct perfspy_symbolizer *new_sym(const struct perfspy_convert_opts *co)
{
	/* "" disables kallsyms: kernel frames are addresses, whatever the
	 * machine running the test allows. */
	PERFSPY_OPTS(perfspy_open_opts, oo, .kallsyms = "");
	struct perfspy_symbolizer *s = NULL;

	T_EQ_INT(perfspy_symbolizer__new(&oo, co, &s), 0);
	return s;
}

static void test_kinds(void)
{
	struct perfspy_symbolizer *s = new_sym(NULL);
	struct perfspy_location l[4];
	const char *const *fr;
	size_t n = 99;

	if (!s)
		return;
	/* Leaf first in, root first out. */
	l[0] = loc(PERFSPY_LOC_KERNEL, NULL, 0, 0xffffffff81234567ull, NULL, false);
	l[1] = loc(PERFSPY_LOC_UNKNOWN, "//anon", 0, 0x7f0000001000ull, NULL, false);
	l[2] = loc(PERFSPY_LOC_UNKNOWN, NULL, 0, 0x1000, NULL, true);
	l[3] = loc(PERFSPY_LOC_SYMBOL, NULL, 0, 0x2000, "v8::Builtin", true);
	T_EQ_INT(perfspy_symbolizer__stack(s, l, 4, &fr, &n), 0);
	T_EQ_INT(n, 4);
	if (n == 4) {
		T_EQ_STR(fr[0], "v8::Builtin ([JIT])");
		T_EQ_STR(fr[1], "0x1000 (?)");
		T_EQ_STR(fr[2], "0x7f0000001000 (anon)");
		T_EQ_STR(fr[3], "0xffffffff81234567 ([kernel.kallsyms])");
	}
	/* An empty stack is a stack. */
	T_EQ_INT(perfspy_symbolizer__stack(s, NULL, 0, &fr, &n), 0);
	T_EQ_INT(n, 0);
	perfspy_symbolizer__free(s);
}

static void test_dso(void)
{
	struct perfspy_symbolizer *s = new_sym(NULL);
	struct find f = { .addr = (uintptr_t)&probe_fn };
	struct perfspy_location l;
	char exe[4096];
	const char *const *fr;
	ssize_t len;
	size_t n = 0;

	T_EQ_INT(probe_fn(2), 7);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	dl_iterate_phdr(find_off, &f);
	T(len > 0 && f.found);
	if (!s || len <= 0 || !f.found) {
		perfspy_symbolizer__free(s);
		return;
	}
	exe[len] = 0;
	l = loc(PERFSPY_LOC_DSO, exe, f.off, f.addr, NULL, false);
	T_EQ_INT(perfspy_symbolizer__stack(s, &l, 1, &fr, &n), 0);
	T_EQ_INT(n, 1);
	/* Built with -g: DWARF gives the file; the line is whatever the
	 * entry instruction has. */
	if (n == 1)
		T(!strncmp(fr[0], "probe_fn (test_symbolizer.c:", 28));
	perfspy_symbolizer__free(s);
}

static void test_python(void)
{
	PERFSPY_OPTS(perfspy_convert_opts, keep, .keep_interpreter = true);
	PERFSPY_OPTS(perfspy_convert_opts, qual, .qualname = true, .no_kernel = true);
	struct perfspy_symbolizer *s = new_sym(NULL);
	struct perfspy_location l[3];
	struct perfspy_stats st = { .sz = sizeof(st) };
	const char *const *fr;
	size_t n = 0;

	if (!s)
		return;
	/* An interpreter binary that is not there: no symbol, still the
	 * interpreter's (py_is_interpreter_dso). */
	l[0] = loc(PERFSPY_LOC_SYMBOL, NULL, 0, 0x3000, "py::Outer.run:/nonexistent/app.py", false);
	l[1] = loc(PERFSPY_LOC_DSO, "/nonexistent/bin/python3.12", 0x1234, 0x401234, NULL, true);
	l[2] = loc(PERFSPY_LOC_KERNEL, NULL, 0, 0xffffffff81000000ull, NULL, true);
	T_EQ_INT(perfspy_symbolizer__stack(s, l, 2, &fr, &n), 0);
	T_EQ_INT(n, 1);
	if (n == 1)
		T_EQ_STR(fr[0], "run (app.py)");
	/* Without a Python frame the interpreter's frame stays. */
	T_EQ_INT(perfspy_symbolizer__stack(s, &l[1], 1, &fr, &n), 0);
	T_EQ_INT(n, 1);
	if (n == 1)
		T_EQ_STR(fr[0], "0x401234 (python3.12)");
	T_EQ_INT(perfspy_symbolizer__stats(s, &st), 0);
	T_EQ_INT(st.frames_python, 1);
	T_EQ_INT(st.frames_interpreter, 1);
	perfspy_symbolizer__free(s);

	s = new_sym(&keep);
	if (s) {
		T_EQ_INT(perfspy_symbolizer__stack(s, l, 2, &fr, &n), 0);
		T_EQ_INT(n, 2);
		if (n == 2) {
			T_EQ_STR(fr[0], "0x401234 (python3.12)");
			T_EQ_STR(fr[1], "run (app.py)");
		}
		perfspy_symbolizer__free(s);
	}
	s = new_sym(&qual);
	if (s) {
		T_EQ_INT(perfspy_symbolizer__stack(s, l, 3, &fr, &n), 0);
		T_EQ_INT(n, 1);
		if (n == 1)
			T_EQ_STR(fr[0], "Outer.run (app.py)");
		perfspy_symbolizer__free(s);
	}
}

static void test_errors(void)
{
	struct {
		struct perfspy_open_opts o;
		char tail[8];
	} big = { .o.sz = sizeof(big) };
	struct perfspy_symbolizer *s = NULL;
	struct perfspy_location l = loc(PERFSPY_LOC_KERNEL, NULL, 0, 1, NULL, false);
	const char *const *fr;
	size_t n;

	/* Unknown non-zero tail bytes are refused, zero ones accepted. */
	big.tail[3] = 1;
	T_EQ_INT(perfspy_symbolizer__new(&big.o, NULL, &s), -PERFSPY_E_OPTS);
	big.tail[3] = 0;
	T_EQ_INT(perfspy_symbolizer__new(&big.o, NULL, &s), 0);
	T_EQ_INT(perfspy_symbolizer__stack(s, NULL, 1, &fr, &n), -EINVAL);
	l.kind = 42;
	T_EQ_INT(perfspy_symbolizer__stack(s, &l, 1, &fr, &n), -EINVAL);
	l.kind = PERFSPY_LOC_DSO; /* no dso */
	T_EQ_INT(perfspy_symbolizer__stack(s, &l, 1, &fr, &n), -EINVAL);
	l.kind = PERFSPY_LOC_KERNEL;
	l.sz = 4;
	T_EQ_INT(perfspy_symbolizer__stack(s, &l, 1, &fr, &n), -PERFSPY_E_OPTS);
	perfspy_symbolizer__free(s);
	perfspy_symbolizer__free(NULL);
}

/*
 * Native frames' source files are shortened by py-spy's rule: up from
 * the file's directory while it holds an __init__.py, and the path
 * below the first that does not (docs/pyspy-formats.md §1.4), worked
 * out once per path (stacks.c short_file()). A library built here from
 * a file in a package pkg/sub/ (two functions: the second is named from
 * what the first worked out) and one in a plain directory.
 */
static void test_package(void)
{
	static const char *const want[] = { "pkg_a (pkg/sub/nat.c:", "pkg_b (pkg/sub/nat.c:",
					     "plain_c (other.c:", "pkg_a (pkg/sub/nat.c:" };
	static const char *const fns[] = { "pkg_a", "pkg_b", "plain_c", "pkg_a" };
	const char *t = getenv("TMPDIR");
	char dir[512], so[600], cmd[4096];
	struct perfspy_symbolizer *s;
	void *h;
	size_t i;

	snprintf(dir, sizeof(dir), "%s/perfspy-pkg-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir)) {
		T(false);
		return;
	}
	snprintf(so, sizeof(so), "%s/libpkg.so", dir);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && mkdir -p pkg/sub plain && touch pkg/__init__.py pkg/sub/__init__.py && "
		 "printf '__attribute__((noinline)) int pkg_a(int x) { volatile int v = x; return v + 1; }\n"
		 "__attribute__((noinline)) int pkg_b(int x) { volatile int v = x; return v + 2; }\n' "
		 ">pkg/sub/nat.c && "
		 "printf '__attribute__((noinline)) int plain_c(int x) { volatile int v = x; return v + 3; }\n' "
		 ">plain/other.c && "
		 "${CC:-cc} -O1 -g -shared -fPIC -o %s %s/pkg/sub/nat.c %s/plain/other.c",
		 dir, so, dir, dir);
	T_EQ_INT(system(cmd), 0);
	h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	T(h != NULL);
	s = h ? new_sym(NULL) : NULL;
	for (i = 0; s && i < sizeof(fns) / sizeof(fns[0]); i++) {
		struct find f = { .addr = (uintptr_t)dlsym(h, fns[i]) };
		struct perfspy_location l;
		const char *const *fr;
		size_t n = 0;

		dl_iterate_phdr(find_off, &f);
		T(f.addr && f.found);
		if (!f.addr || !f.found)
			continue;
		l = loc(PERFSPY_LOC_DSO, so, f.off, f.addr, NULL, false);
		T_EQ_INT(perfspy_symbolizer__stack(s, &l, 1, &fr, &n), 0);
		T_EQ_INT(n, 1);
		if (n == 1 && strncmp(fr[0], want[i], strlen(want[i]))) {
			fprintf(stderr, "test_package: %s, want %s...\n", fr[0], want[i]);
			T(false);
		}
	}
	perfspy_symbolizer__free(s);
	if (h)
		dlclose(h);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	T_EQ_INT(system(cmd), 0);
}

/* perfspy_symbolizer__program(): per stack the outermost binary that is
 * no shared library; the one of most stacks, ties to byte order. */
static void test_program(void)
{
	struct perfspy_symbolizer *s = new_sym(NULL);
	const char *const *fr;
	struct perfspy_location l[4];
	size_t n;

	T(perfspy_symbolizer__program(s) == NULL);
	/* A thread: libc leaf, the program's thread function, libc's
	 * clone3 outermost. */
	l[0] = loc(PERFSPY_LOC_DSO, "/nonexistent/lib/libc.so.6", 0x100, 0x7f0100, NULL, false);
	l[1] = loc(PERFSPY_LOC_DSO, "/nonexistent/b/tool", 0x200, 0x400200, NULL, true);
	l[2] = loc(PERFSPY_LOC_DSO, "/nonexistent/lib/libc.so.6", 0x300, 0x7f0300, NULL, true);
	T_EQ_INT(perfspy_symbolizer__stack(s, l, 3, &fr, &n), 0);
	T_EQ_STR(perfspy_symbolizer__program(s), "/nonexistent/b/tool");
	/* Two stacks of a, through an extension module and the vdso:
	 * neither is a program. */
	l[0] = loc(PERFSPY_LOC_DSO, "[vdso]", 0x10, 0x7ff010, NULL, false);
	l[1] = loc(PERFSPY_LOC_DSO, "/nonexistent/a/a", 0x20, 0x400020, NULL, true);
	l[2] = loc(PERFSPY_LOC_DSO, "/nonexistent/m/x.cpython-312-x86_64-linux-gnu.so",
		   0x30, 0x7e0030, NULL, true);
	l[3] = loc(PERFSPY_LOC_DSO, "/nonexistent/lib/libold.so (deleted)", 0x40, 0x7d0040,
		   NULL, true);
	T_EQ_INT(perfspy_symbolizer__stack(s, l, 4, &fr, &n), 0);
	T_EQ_STR(perfspy_symbolizer__program(s), "/nonexistent/a/a"); /* a tie: byte order */
	T_EQ_INT(perfspy_symbolizer__stack(s, l, 4, &fr, &n), 0);
	T_EQ_STR(perfspy_symbolizer__program(s), "/nonexistent/a/a");
	l[1] = loc(PERFSPY_LOC_DSO, "/nonexistent/b/tool", 0x200, 0x400200, NULL, true);
	T_EQ_INT(perfspy_symbolizer__stack(s, l, 2, &fr, &n), 0);
	T_EQ_INT(perfspy_symbolizer__stack(s, l, 2, &fr, &n), 0);
	T_EQ_STR(perfspy_symbolizer__program(s), "/nonexistent/b/tool"); /* 3 against 2 */
	perfspy_symbolizer__free(s);
	/* Two programs in one stack: the outermost is the one that ran. */
	s = new_sym(NULL);
	l[0] = loc(PERFSPY_LOC_DSO, "/nonexistent/b/tool", 0x200, 0x400200, NULL, false);
	l[1] = loc(PERFSPY_LOC_DSO, "/nonexistent/c/zed", 0x20, 0x500020, NULL, true);
	T_EQ_INT(perfspy_symbolizer__stack(s, l, 2, &fr, &n), 0);
	T_EQ_STR(perfspy_symbolizer__program(s), "/nonexistent/c/zed");
	perfspy_symbolizer__free(s);
	T(perfspy_symbolizer__program(NULL) == NULL);
}

int main(void)
{
	test_kinds();
	test_dso();
	test_package();
	test_python();
	test_errors();
	test_program();
	TEST_MAIN_END();
}
