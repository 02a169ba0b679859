// SPDX-License-Identifier: GPL-2.0
/*
 * e2e workload: JIT code named by a perf map, as CPython -X perf writes
 * it (docs/cpython-perf.md §1.3), on a frame-pointer stack.
 * Two stubs are copied into one anonymous executable mapping and listed
 * in /tmp/perf-PID.map, one with a CPython name, one with another JIT's:
 *   main -> run_py  -> [py::jit_step:/nonexistent/jitmod.py] -> py_leaf
 *   main -> run_v8  -> [v8::LazyCompile]                      -> v8_leaf
 * Each stub is `push rbp; mov rbp,rsp; movabs rax,LEAF; call rax; pop
 * rbp; ret`, so frame-pointer walks pass through it. The map file is the
 * caller's to remove (its name: stdout's first line).
 * Usage: jitmap [seconds]
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common.h"

NOINLINE void py_leaf(void)
{
	SPIN_FRAME;
	for (int i = 0; i < 200000; i++)
		sink += (uint64_t)i * 7;
}

NOINLINE void v8_leaf(void)
{
	SPIN_FRAME;
	for (int i = 0; i < 100000; i++)
		sink ^= (uint64_t)i * 2654435761u;
}

#define STUB_SIZE 32

/* x86-64 machine code of the stub calling @leaf. */
static void write_stub(unsigned char *p, void (*leaf)(void))
{
	uint64_t a = (uint64_t)(uintptr_t)leaf;

	memset(p, 0xcc, STUB_SIZE);
	p[0] = 0x55;				/* push %rbp */
	p[1] = 0x48, p[2] = 0x89, p[3] = 0xe5;	/* mov %rsp,%rbp */
	p[4] = 0x48, p[5] = 0xb8;		/* movabs $leaf,%rax */
	memcpy(p + 6, &a, 8);
	p[14] = 0xff, p[15] = 0xd0;		/* call *%rax */
	p[16] = 0x5d;				/* pop %rbp */
	p[17] = 0xc3;				/* ret */
}

NOINLINE void run_py(void (*stub)(void))
{
	stub();
	sink++;
}

NOINLINE void run_v8(void (*stub)(void))
{
	stub();
	sink++;
}

int main(int argc, char **argv)
{
	double end = now_s() + run_time(argc, argv, 1.0);
	char path[64];
	unsigned char *code;
	FILE *f;

#if !defined(__x86_64__)
	fprintf(stderr, "jitmap: x86-64 only\n");
	return 77;
#endif
	/* Executable from the start: perf records a MMAP only for mappings
	 * created executable (mprotect makes none). */
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	write_stub(code, py_leaf);
	write_stub(code + STUB_SIZE, v8_leaf);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fprintf(f, "%lx %x py::jit_step:/nonexistent/jitmod.py\n",
		(unsigned long)(uintptr_t)code, STUB_SIZE);
	fprintf(f, "%lx %x v8::LazyCompile\n",
		(unsigned long)(uintptr_t)(code + STUB_SIZE), STUB_SIZE);
	if (fclose(f)) {
		perror(path);
		return 1;
	}
	printf("%s\n", path);
	fflush(stdout);
	while (now_s() < end) {
		run_py((void (*)(void))code);
		run_v8((void (*)(void))(code + STUB_SIZE));
	}
	return 0;
}
