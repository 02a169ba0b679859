// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for libconv/frames/unwind.c on samples built here: a
 * register set plus a stack dump, as PERF_SAMPLE_REGS_USER and
 * PERF_SAMPLE_STACK_USER carry them (docs/perf-data-format.md §2.3).
 *
 *  - Frame-pointer chains written word by word: exact pcs, every dump
 *    size from 0 to the whole chain, garbage frame pointers, loops.
 *  - Every CPython trampoline variant of docs/cpython-perf.md
 *    §1.6-1.7 (x86-64 "sub" and "push", each with and without endbr64),
 *    the sample on each instruction (leaf) and returning into it
 *    (non-leaf), by the fixed rule and by jitdump CFI rows; stacks are
 *    laid out so that a wrong CFA or a wrong caller rbp leads to a
 *    different, known, chain.
 *  - DWARF CFI of a real ELF: tests/unit/fixtures/unwind/unwfix.c is
 *    compiled at test time (-O2 -fomit-frame-pointer; once with .eh_frame,
 *    once with .debug_frame only), loaded, and its innermost function
 *    takes a snapshot of its registers and stack the way perf does. The
 *    expected pcs are the return addresses the fixture's functions report
 *    with __builtin_return_address, and symbolized they must name the
 *    fixture's functions (docs/conventions.md §9.2's self-unwind test); the PLT stub
 *    case is found from the loaded machine code. Skipped (that part
 *    only) without a C compiler.
 *
 * Dumps are malloc'ed to their exact size, so under ASan a read past the
 * dump fails the test.
 */
#include "frames/unwind.h"
#include "test.h"

#ifndef __x86_64__
/* The unwinder and the fixture's snapshot are x86-64 only (unwind.h). */
int main(void)
{
	(void)test_checks;
	(void)test_failed_checks;
	fprintf(stderr, "skip: x86-64 only\n");
	return 77;
}
#else

#include "fixtures/unwind/unwfix.h"

#include <asm/perf_regs.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <unistd.h>

/* ---- samples ---- */

/* A sample under construction: registers by DWARF number, the dump as
 * words from SP. */
struct smp {
	u64 reg[UNW_NREGS];
	u32 have; /* bit per DWARF register */
	u8 *stack;
	u64 size;
};

/* The perf_regs bit of each DWARF register, from the kernel's uapi
 * header (not from the unwinder's table). */
static int perf_reg_of(unsigned dw)
{
	static const int map[UNW_NREGS] = {
		[UNW_RAX] = PERF_REG_X86_AX, [UNW_RDX] = PERF_REG_X86_DX,
		[UNW_RCX] = PERF_REG_X86_CX, [UNW_RBX] = PERF_REG_X86_BX,
		[UNW_RSI] = PERF_REG_X86_SI, [UNW_RDI] = PERF_REG_X86_DI,
		[UNW_RBP] = PERF_REG_X86_BP, [UNW_RSP] = PERF_REG_X86_SP,
		[UNW_R8] = PERF_REG_X86_R8, [UNW_R9] = PERF_REG_X86_R9,
		[UNW_R10] = PERF_REG_X86_R10, [UNW_R11] = PERF_REG_X86_R11,
		[UNW_R12] = PERF_REG_X86_R12, [UNW_R13] = PERF_REG_X86_R13,
		[UNW_R14] = PERF_REG_X86_R14, [UNW_R15] = PERF_REG_X86_R15,
		[UNW_RIP] = PERF_REG_X86_IP,
	};
	return map[dw];
}

static void set_reg(struct smp *s, unsigned dw, u64 v)
{
	s->reg[dw] = v;
	s->have |= 1u << dw;
}

/* The dump: [sp, sp + size) of a sparse word image. */
struct mem_img {
	u64 base; /* address of w[0] */
	u64 w[256];
};

static void mem_set(struct mem_img *m, u64 addr, u64 v)
{
	u64 i = (addr - m->base) / 8;

	if (addr < m->base || (addr - m->base) % 8 || i >= ARRAY_SIZE(m->w))
		abort();
	m->w[i] = v;
}

/* Take the dump [sp, sp + size) out of @m into s->stack (exact size). */
static void take_dump(struct smp *s, const struct mem_img *m, u64 sp, u64 size)
{
	free(s->stack);
	s->stack = malloc(size ? size : 1);
	if (!s->stack || sp < m->base || sp - m->base + size > sizeof(m->w))
		abort();
	memcpy(s->stack, (const u8 *)m->w + (sp - m->base), size);
	s->size = size;
}

struct result {
	int n;
	enum unw_end end;
	struct unw_frame f[64];
};

/*
 * Run @s through unw_sample with registers @mask_have (DWARF register
 * bits; the perf mask is built from them) and @nr_regs values present
 * (-1: all of them).
 */
static void run_regs(struct unw_ctx *u, const struct smp *s, u32 mask_have,
		     int nr_regs, unw_find_fn find, void *ctx, u32 max,
		     struct result *r)
{
	struct rec_sample rs = { 0 };
	u64 vals[UNW_NREGS], mask = 0;
	unsigned dw, bit, n = 0;

	for (dw = 0; dw < UNW_NREGS; dw++)
		if (mask_have & (1u << dw))
			mask |= 1ULL << perf_reg_of(dw);
	/* Values in ascending perf bit order (perf_event_open(2)). */
	for (bit = 0; bit < 64; bit++) {
		if (!(mask & (1ULL << bit)))
			continue;
		for (dw = 0; dw < UNW_NREGS; dw++)
			if (perf_reg_of(dw) == (int)bit)
				vals[n++] = s->reg[dw];
	}
	rs.regs_abi = PERF_SAMPLE_REGS_ABI_64;
	rs.nr_regs = nr_regs < 0 ? n : (u32)nr_regs;
	rs.regs = (const u8 *)vals;
	rs.stack = s->stack;
	rs.stack_size = s->size;
	rs.stack_dyn_size = s->size;
	memset(r, 0, sizeof(*r));
	r->end = (enum unw_end)-1;
	r->n = unw_sample(u, &rs, mask, find, ctx, r->f,
			  max ? max : ARRAY_SIZE(r->f), &r->end);
}

static void run(struct unw_ctx *u, const struct smp *s, unw_find_fn find,
		void *ctx, u32 max, struct result *r)
{
	run_regs(u, s, s->have, -1, find, ctx, max, r);
}

/* Check the walk gave exactly @want[0..@n) and ended with @end. */
static void expect_(int line, const struct result *r, const u64 *want, int n,
		    enum unw_end end)
{
	int i, bad = r->n != n || r->end != end;

	for (i = 0; !bad && i < n; i++)
		bad = r->f[i].pc != want[i] || r->f[i].is_return != (i > 0);
	test_checks++;
	if (!bad)
		return;
	test_failed_checks++;
	fprintf(stderr, "FAIL %s:%d: walk gave %d frames, end %d:", __FILE__,
		line, r->n, (int)r->end);
	for (i = 0; i < r->n && i < 64; i++)
		fprintf(stderr, " %#llx%s", (unsigned long long)r->f[i].pc,
			r->f[i].is_return == (i > 0) ? "" : "(!ret)");
	fprintf(stderr, "\n    want %d frames, end %d:", n, (int)end);
	for (i = 0; i < n; i++)
		fprintf(stderr, " %#llx", (unsigned long long)want[i]);
	fprintf(stderr, "\n");
}

#define EXPECT(r, end, ...)                                                  \
	do {                                                                 \
		static const u64 _w[] = { __VA_ARGS__ };                     \
		expect_(__LINE__, r, _w, (int)ARRAY_SIZE(_w), end);          \
	} while (0)
#define EXPECT_NONE(r, end) expect_(__LINE__, r, NULL, 0, end)

static int find_none(void *ctx, u64 pc, struct unw_code *out)
{
	(void)ctx;
	(void)pc;
	memset(out, 0, sizeof(*out));
	return 0;
}

/* ---- (a) frame-pointer chains ---- */

#define SP0 0x7ffd00001000ULL

static void fp_chain(struct mem_img *m)
{
	memset(m, 0, sizeof(*m));
	m->base = SP0;
	mem_set(m, SP0 + 0x20, SP0 + 0x60);
	mem_set(m, SP0 + 0x28, 0x402000);
	mem_set(m, SP0 + 0x60, SP0 + 0xa0);
	mem_set(m, SP0 + 0x68, 0x403000);
	mem_set(m, SP0 + 0xa0, 0); /* the outermost frame: rbp 0, ra 0 */
	mem_set(m, SP0 + 0xa8, 0);
}

static void test_fp(void)
{
	struct unw_ctx *u;
	struct unw_stats st;
	struct mem_img m;
	struct smp s = { 0 };
	struct result r;
	u64 size;

	T_EQ_INT(unw_ctx_new(NULL, &u), 0);
	fp_chain(&m);
	set_reg(&s, UNW_RIP, 0x401000);
	set_reg(&s, UNW_RSP, SP0);
	set_reg(&s, UNW_RBP, SP0 + 0x20);
	set_reg(&s, UNW_RBX, 0x1111);
	take_dump(&s, &m, SP0, 0xb0);
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_ROOT, 0x401000, 0x402000, 0x403000);
	T_EQ_INT(r.f[0].code.kind, UNW_CODE_NONE);
	unw_ctx_stats(u, &st);
	T_EQ_INT(st.samples, 1);
	T_EQ_INT(st.frames, 3);
	T_EQ_INT(st.steps_fp, 3);
	T_EQ_INT(st.steps_cfi + st.steps_jit, 0);
	T_EQ_INT(st.end_root, 1);

	/* Every dump size, to the byte: a return address slot counts once
	 * all its 8 bytes are in the dump (slots at 0x28, 0x68, 0xa8). */
	for (size = 0; size <= 0xb0; size++) {
		int want = 1 + (size >= 0x30) + (size >= 0x70);

		take_dump(&s, &m, SP0, size);
		run(u, &s, find_none, NULL, 0, &r);
		T_EQ_INT(r.n, want);
		T_EQ_INT(r.end, size >= 0xb0 ? UNW_END_ROOT : UNW_END_CUT);
		if (r.n >= 2)
			T_EQ_INT(r.f[1].pc, 0x402000);
		if (r.n >= 3)
			T_EQ_INT(r.f[2].pc, 0x403000);
	}
	take_dump(&s, &m, SP0, 0xb0);

	/* The frame limit. */
	run(u, &s, find_none, NULL, 2, &r);
	EXPECT(&r, UNW_END_MAX, 0x401000, 0x402000);
	run(u, &s, find_none, NULL, 1, &r);
	EXPECT(&r, UNW_END_MAX, 0x401000);

	/* Missing registers: no SP or no IP gives no frames at all; no
	 * regs_abi (the thread was in the kernel) neither. Values cut
	 * short of the mask count as missing. */
	run_regs(u, &s, s.have & ~(1u << UNW_RSP), -1, find_none, NULL, 0, &r);
	T_EQ_INT(r.n, 0);
	run_regs(u, &s, s.have & ~(1u << UNW_RIP), -1, find_none, NULL, 0, &r);
	T_EQ_INT(r.n, 0);
	/* Perf order BX(1) BP(6) SP(7) IP(8): 3 values lose IP. */
	run_regs(u, &s, s.have, 3, find_none, NULL, 0, &r);
	T_EQ_INT(r.n, 0);
	/* Without rbp: one frame, lost. */
	run_regs(u, &s, s.have & ~(1u << UNW_RBP), -1, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_LOST, 0x401000);
	{
		struct rec_sample rs = { 0 };
		struct unw_frame f[4];
		enum unw_end end;

		T_EQ_INT(unw_sample(u, &rs, 0x1c0, find_none, NULL, f, 4, &end), 0);
		T_EQ_INT(unw_sample(u, &rs, 0x1c0, find_none, NULL, f, 0, &end), 0);
	}

	/* No dump at all. */
	free(s.stack);
	s.stack = NULL;
	s.size = 0;
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_CUT, 0x401000);

	/* Garbage frame pointers. Below SP: lost. */
	take_dump(&s, &m, SP0, 0xb0);
	set_reg(&s, UNW_RBP, SP0 - 16);
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_LOST, 0x401000);
	/* Far above the dump: the frame lies beyond it, "cut". */
	set_reg(&s, UNW_RBP, 0xdeadbeefdeadbeefULL);
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_CUT, 0x401000);
	/* rbp + 8 wraps around to 0. */
	set_reg(&s, UNW_RBP, UINT64_MAX - 7);
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_LOST, 0x401000);
	/* Misaligned, straddling the end of the dump. */
	set_reg(&s, UNW_RBP, SP0 + 0xa4);
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_CUT, 0x401000);
	set_reg(&s, UNW_RBP, SP0 + 0x20);

	/* A frame pointing at itself, and one pointing back down: the
	 * stack pointer must grow, so both stop. */
	mem_set(&m, SP0 + 0x20, SP0 + 0x20);
	take_dump(&s, &m, SP0, 0xb0);
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_LOST, 0x401000, 0x402000);
	fp_chain(&m);
	mem_set(&m, SP0 + 0x60, SP0 + 0x20);
	take_dump(&s, &m, SP0, 0xb0);
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_LOST, 0x401000, 0x402000, 0x403000);

	/* A return address of garbage that is not 0: kept as a frame, the
	 * walk goes on by frame pointer. */
	fp_chain(&m);
	mem_set(&m, SP0 + 0x28, 0xffffffffffffff00ULL);
	take_dump(&s, &m, SP0, 0xb0);
	run(u, &s, find_none, NULL, 0, &r);
	EXPECT(&r, UNW_END_ROOT, 0x401000, 0xffffffffffffff00ULL, 0x403000);

	free(s.stack);
	unw_ctx_free(u);
}

/* ---- (c) CPython trampolines ---- */

#define TRAMP 0x7f0000010000ULL	 /* start of the trampoline entry */
#define RA_NATIVE 0x555500001000ULL /* its caller (no code known) */
#define FINAL 0x555500002000ULL	 /* the caller's caller */
#define DECOY_PC 0x666600000000ULL	 /* reached only by a wrong rbp */
#define LEAF_PC 0x555500003000ULL	 /* a callee of the trampoline */
#define TB 0x7ffe00000000ULL	 /* base of the trampoline stacks */

struct variant {
	const char *name;
	u64 size;
	bool push, cet;
};

static const struct variant variants[] = {
	{ "sub (3.12, 3.13.0-3.13.5)", 11, false, false },
	{ "sub + endbr64", 15, false, true },
	{ "push (3.13.6+, 3.14)", 8, true, false },
	{ "push + endbr64", 12, true, true },
};

struct jit_find {
	const struct jit_entry *e;
};

static int find_jit(void *ctx, u64 pc, struct unw_code *out)
{
	struct jit_find *j = ctx;

	memset(out, 0, sizeof(*out));
	if (pc >= j->e->start && pc < j->e->start + j->e->size) {
		out->kind = UNW_CODE_JIT;
		out->jit = j->e;
	}
	return 0;
}

/*
 * The native frames around the trampoline: CR is the caller's rbp, a
 * frame record leading to FINAL and then to the end; DECOY is a frame
 * record leading to DECOY_PC, placed where a wrong rule would take rbp
 * from. S is the stack pointer at the trampoline's entry ([S] = its
 * return address).
 */
#define S_LEAF (TB + 0x100)
#define CR(S) ((S) + 0x40)
#define CR2(S) ((S) + 0x80)
#define DECOY(S) ((S) + 0xc0)

static void native_frames(struct mem_img *m, u64 S)
{
	mem_set(m, S, RA_NATIVE);
	mem_set(m, CR(S), CR2(S));
	mem_set(m, CR(S) + 8, FINAL);
	mem_set(m, CR2(S), 0);
	mem_set(m, CR2(S) + 8, 0);
	mem_set(m, DECOY(S), 0);
	mem_set(m, DECOY(S) + 8, DECOY_PC);
}

/* CFI rows for @v, as CPython's jitdump writes them (reference §1.7):
 * "sub" [0,4) rsp+8, [4,10) rsp+16, [10,11) rsp+8; "push" [0,1) rsp+8,
 * [1,4) rsp+16 rbp at -16, [4,7) rbp+16 rbp at -16, [7,8) rsp+8; with
 * endbr64 the first row also covers it and the rest move by 4. */
static u32 rows_for(const struct variant *v, struct jit_cfi_row *rows)
{
	static const struct { u32 s, e; u8 reg; s32 off; bool fp; } sub[] = {
		{ 0, 4, UNW_RSP, 8, false }, { 4, 10, UNW_RSP, 16, false },
		{ 10, 11, UNW_RSP, 8, false },
	}, push[] = {
		{ 0, 1, UNW_RSP, 8, false }, { 1, 4, UNW_RSP, 16, true },
		{ 4, 7, UNW_RBP, 16, true }, { 7, 8, UNW_RSP, 8, false },
	};
	u32 n = v->push ? 4 : 3, i, shift = v->cet ? 4 : 0;

	for (i = 0; i < n; i++) {
		u32 s = v->push ? push[i].s : sub[i].s;

		rows[i].start = s ? s + shift : 0;
		rows[i].end = (v->push ? push[i].e : sub[i].e) + shift;
		rows[i].cfa_reg = v->push ? push[i].reg : sub[i].reg;
		rows[i].cfa_off = v->push ? push[i].off : sub[i].off;
		rows[i].ra_off = -8;
		rows[i].fp_saved = v->push ? push[i].fp : sub[i].fp;
		rows[i].fp_off = -16;
	}
	return n;
}

/*
 * A sample interrupted at body offset @body (the instruction after
 * endbr64 when there is one) of a trampoline of variant @v, with the
 * registers and stack that instruction sees.
 */
static void leaf_state(const struct variant *v, u64 body, bool on_endbr,
		       struct smp *s, struct mem_img *m)
{
	const u64 S = S_LEAF;
	u64 sp = S, rbp = CR(S);

	memset(m, 0, sizeof(*m));
	m->base = TB;
	native_frames(m, S);
	if (!v->push) {
		/* sub $8,%rsp (0) call (4) add $8,%rsp (6) ret (10): the
		 * padding word holds a decoy, rbp is the caller's. */
		mem_set(m, S - 8, DECOY(S));
		if (!on_endbr && body >= 4 && body < 10)
			sp = S - 8;
	} else {
		/* push %rbp (0) mov %rsp,%rbp (1) call (4) pop %rbp (6)
		 * ret (7). */
		mem_set(m, S - 8, CR(S));
		if (!on_endbr && body >= 1 && body < 7)
			sp = S - 8;
		if (!on_endbr && body >= 4 && body < 7)
			rbp = S - 8;
	}
	memset(s->reg, 0, sizeof(s->reg));
	s->have = 0;
	set_reg(s, UNW_RIP, TRAMP + (on_endbr ? 0 : body + (v->cet ? 4 : 0)));
	set_reg(s, UNW_RSP, sp);
	set_reg(s, UNW_RBP, rbp);
	take_dump(s, m, sp, DECOY(S) + 16 - sp);
}

static void test_trampolines(void)
{
	static const u64 sub_insns[] = { 0, 4, 6, 10 }, push_insns[] = { 0, 1, 4, 6, 7 };
	struct jit_cfi_row rows[8];
	struct unw_ctx *u;
	struct unw_stats st0, st1;
	struct mem_img m;
	struct smp s = { 0 };
	struct result r;
	size_t vi, k;
	int use_rows;

	T_EQ_INT(unw_ctx_new(NULL, &u), 0);
	for (vi = 0; vi < ARRAY_SIZE(variants); vi++) {
		const struct variant *v = &variants[vi];
		const u64 *insns = v->push ? push_insns : sub_insns;
		size_t ninsns = v->push ? ARRAY_SIZE(push_insns) : ARRAY_SIZE(sub_insns);
		u64 ret = TRAMP + 6 + (v->cet ? 4 : 0);

		for (use_rows = 0; use_rows < 2; use_rows++) {
			struct jit_entry e = { TRAMP, v->size, "py::f:/x.py", NULL, 0 };
			struct jit_find jf = { &e };

			if (use_rows) {
				e.nr_cfi = rows_for(v, rows);
				e.cfi = rows;
			}
			/* Leaf: the sample on each instruction (and on the
			 * endbr64). Then RA_NATIVE by the trampoline rule,
			 * FINAL by the caller's rbp, then the end. */
			for (k = 0; k <= ninsns; k++) {
				bool endbr = k == ninsns;
				u64 pc;

				if (endbr && !v->cet)
					break;
				leaf_state(v, endbr ? 0 : insns[k], endbr, &s, &m);
				pc = s.reg[UNW_RIP];
				unw_ctx_stats(u, &st0);
				run(u, &s, find_jit, &jf, 0, &r);
				unw_ctx_stats(u, &st1);
				expect_(__LINE__, &r, (const u64[]){ pc, RA_NATIVE, FINAL }, 3,
					UNW_END_ROOT);
				if (r.n != 3)
					fprintf(stderr, "    (%s, %s, pc +%llu)\n", v->name,
						use_rows ? "rows" : "rule",
						(unsigned long long)(pc - TRAMP));
				T_EQ_INT(r.f[0].code.kind, UNW_CODE_JIT);
				T(r.f[0].code.jit == &e);
				T_EQ_INT(st1.steps_jit - st0.steps_jit, 1);
			}

			/*
			 * Non-leaf: a callee (no code known) at LEAF_PC with a
			 * frame record, its return address into the
			 * trampoline. The trampoline's SP is T; the callee
			 * saved the trampoline's rbp at T-16: the caller's rbp
			 * for "sub", T itself for "push" (mov %rsp,%rbp).
			 */
			{
				const u64 T = TB + 0x100;

				memset(&m, 0, sizeof(m));
				m.base = TB;
				native_frames(&m, T + 8);
				mem_set(&m, T - 8, ret);
				if (v->push) {
					mem_set(&m, T - 16, T);
					mem_set(&m, T, CR(T + 8));
				} else {
					mem_set(&m, T - 16, CR(T + 8));
					mem_set(&m, T, DECOY(T + 8));
				}
				memset(s.reg, 0, sizeof(s.reg));
				s.have = 0;
				set_reg(&s, UNW_RIP, LEAF_PC);
				set_reg(&s, UNW_RSP, T - 0x30);
				set_reg(&s, UNW_RBP, T - 16);
				take_dump(&s, &m, T - 0x30, DECOY(T + 8) + 16 - (T - 0x30));
				run(u, &s, find_jit, &jf, 0, &r);
				expect_(__LINE__, &r,
					(const u64[]){ LEAF_PC, ret, RA_NATIVE, FINAL }, 4,
					UNW_END_ROOT);
				if (r.n != 4)
					fprintf(stderr, "    (%s, %s, non-leaf)\n", v->name,
						use_rows ? "rows" : "rule");
				T_EQ_INT(r.f[1].code.kind, UNW_CODE_JIT);
				/* The dump ends before the trampoline's return
				 * address slot: cut there. */
				take_dump(&s, &m, T - 0x30, 0x30 + 8 + 4);
				run(u, &s, find_jit, &jf, 0, &r);
				expect_(__LINE__, &r, (const u64[]){ LEAF_PC, ret }, 2,
					UNW_END_CUT);
			}
		}
	}

	/* A size that is no known variant (aarch64's 20): no rule, one
	 * frame-pointer step from the sample's rbp instead. */
	{
		struct jit_entry e = { TRAMP, 20, "py::g:/x.py", NULL, 0 };
		struct jit_find jf = { &e };

		leaf_state(&variants[0], 0, false, &s, &m);
		unw_ctx_stats(u, &st0);
		run(u, &s, find_jit, &jf, 0, &r);
		unw_ctx_stats(u, &st1);
		EXPECT(&r, UNW_END_ROOT, TRAMP, FINAL);
		T_EQ_INT(st1.steps_jit - st0.steps_jit, 0);
		T_EQ_INT(st1.steps_fp - st0.steps_fp, 2);
	}
	/* CFI rows that do not cover the pc: the same fallback. */
	{
		struct jit_cfi_row row = { 0, 2, UNW_RSP, 8, -8, false, 0 };
		struct jit_entry e = { TRAMP, 11, "py::h:/x.py", &row, 1 };
		struct jit_find jf = { &e };

		leaf_state(&variants[0], 4, false, &s, &m);
		run(u, &s, find_jit, &jf, 0, &r);
		/* rbp is the caller's: CR -> FINAL. */
		EXPECT(&r, UNW_END_ROOT, TRAMP + 4, FINAL);
	}
	/*
	 * A jitdump entry (any JIT, not only CPython's) whose last
	 * instruction is a call: the return address is the entry's end, and
	 * the row to use is the call's (DWARF 5 §6.4.4: a return address
	 * is looked up as the call site, as for ELF code). Rows: [0,4)
	 * rsp+8, [4,6) rsp+16; a callee at LEAF_PC returns to the end.
	 */
	{
		const u64 T = TB + 0x100;
		struct jit_cfi_row r2[2] = {
			{ 0, 4, UNW_RSP, 8, -8, false, 0 },
			{ 4, 6, UNW_RSP, 16, -8, false, 0 },
		};
		struct jit_entry e = { TRAMP, 6, "jit::noreturn", r2, 2 };
		struct jit_find jf = { &e };

		memset(&m, 0, sizeof(m));
		m.base = TB;
		native_frames(&m, T + 8);
		mem_set(&m, T - 16, CR(T + 8));
		mem_set(&m, T - 8, TRAMP + 6);
		mem_set(&m, T, DECOY(T + 8));
		memset(s.reg, 0, sizeof(s.reg));
		s.have = 0;
		set_reg(&s, UNW_RIP, LEAF_PC);
		set_reg(&s, UNW_RSP, T - 0x30);
		set_reg(&s, UNW_RBP, T - 16);
		take_dump(&s, &m, T - 0x30, DECOY(T + 8) + 16 - (T - 0x30));
		run(u, &s, find_jit, &jf, 0, &r);
		EXPECT(&r, UNW_END_ROOT, LEAF_PC, TRAMP + 6, RA_NATIVE, FINAL);
		T_EQ_INT(r.f[1].code.kind, UNW_CODE_JIT);
	}
	free(s.stack);
	unw_ctx_free(u);
}

/* ---- (b) DWARF CFI of a compiled fixture ---- */

static char tmpdir[256];

static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

struct fix {
	char path[512];
	void *handle;
	struct sym_ctx *sym;
	struct sym_dso *dso;
	u64 load;		 /* dlpi_addr */
	u64 seg_vaddr[8], seg_off[8], seg_len[8];
	int nseg;
	unwfix_entry_fn entry;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct fix *fx = arg;
	int i;

	(void)size;
	if (!info->dlpi_name || strcmp(info->dlpi_name, fx->path))
		return 0;
	fx->load = info->dlpi_addr;
	for (i = 0; i < info->dlpi_phnum && fx->nseg < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		fx->seg_vaddr[fx->nseg] = ph->p_vaddr;
		fx->seg_off[fx->nseg] = ph->p_offset;
		fx->seg_len[fx->nseg] = ph->p_memsz;
		fx->nseg++;
	}
	return 1;
}

/* The fixture's code, as the machine model would describe it: DSO and
 * file offset (pc - map start + pgoff, which is pc - load - p_vaddr +
 * p_offset). Anything else is unknown. */
static int find_fix(void *ctx, u64 pc, struct unw_code *out)
{
	struct fix *fx = ctx;
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < fx->nseg; i++) {
		u64 va = fx->load + fx->seg_vaddr[i];

		if (pc >= va && pc - va < fx->seg_len[i]) {
			out->kind = UNW_CODE_DSO;
			out->dso = fx->dso;
			out->file_off = pc - va + fx->seg_off[i];
			return 0;
		}
	}
	return 0;
}

static bool fix_open(struct fix *fx, const char *name, const char *flags)
{
	struct sym_opts so = { .kallsyms = "" };
	const char *src = getenv("PERFSPY_SRCDIR");
	char srcpath[512];
	const char *slash = strrchr(__FILE__, '/');

	memset(fx, 0, sizeof(*fx));
	if (src)
		snprintf(srcpath, sizeof(srcpath), "%s/tests/unit/fixtures/unwind/unwfix.c", src);
	else
		snprintf(srcpath, sizeof(srcpath), "%.*s/fixtures/unwind/unwfix.c",
			 slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	snprintf(fx->path, sizeof(fx->path), "%s/%s.so", tmpdir, name);
	if (sh("cc -O2 -fomit-frame-pointer -fPIC -shared %s -o %s %s", flags,
	       fx->path, srcpath)) {
		fprintf(stderr, "FAIL: could not build the fixture %s\n", name);
		test_failed_checks++;
		return false;
	}
	fx->handle = dlopen(fx->path, RTLD_NOW | RTLD_LOCAL);
	T(fx->handle != NULL);
	if (!fx->handle)
		return false;
	fx->entry = (unwfix_entry_fn)dlsym(fx->handle, "unwfix_entry");
	T(fx->entry != NULL);
	dl_iterate_phdr(phdr_cb, fx);
	T(fx->nseg > 0);
	T_EQ_INT(sym_ctx_new(&so, &fx->sym), 0);
	T_EQ_INT(sym_dso_get(fx->sym, fx->path, NULL, 0, &fx->dso), 0);
	return fx->entry && fx->nseg > 0;
}

static void fix_close(struct fix *fx)
{
	if (fx->sym)
		sym_ctx_free(fx->sym);
	if (fx->handle)
		dlclose(fx->handle);
}

/* Take the snapshot: the dump reaches up to this frame's frame address
 * (on the real stack even under ASan, whose locals may live elsewhere). */
static __attribute__((noinline)) void snap_take(struct fix *fx, struct unwfix_snap *sn)
{
	fx->entry(sn, __builtin_frame_address(0));
	__asm__ volatile("" : : : "memory");
}

static void snap_sample(const struct unwfix_snap *sn, struct smp *s, u64 size)
{
	memset(s->reg, 0, sizeof(s->reg));
	s->have = 0;
	set_reg(s, UNW_RIP, sn->rip);
	set_reg(s, UNW_RSP, sn->rsp);
	set_reg(s, UNW_RBP, sn->rbp);
	set_reg(s, UNW_RBX, sn->rbx);
	set_reg(s, UNW_R12, sn->r12);
	set_reg(s, UNW_R13, sn->r13);
	set_reg(s, UNW_R14, sn->r14);
	set_reg(s, UNW_R15, sn->r15);
	free(s->stack);
	s->stack = malloc(size ? size : 1);
	if (!s->stack)
		abort();
	memcpy(s->stack, sn->stack, size);
	s->size = size;
}

/* Offset in the dump of the first 8-aligned word equal to @v at or
 * after @from; -1 if none. */
static long find_word(const struct unwfix_snap *sn, u64 v, long from)
{
	long o;
	u64 w;

	for (o = from < 0 ? 0 : from; o + 8 <= (long)sn->size; o += 8) {
		memcpy(&w, sn->stack + o, 8);
		if (w == v)
			return o;
	}
	return -1;
}

static void test_dwarf_one(const char *name, const char *flags, bool plt)
{
	struct unwfix_snap *sn = calloc(1, sizeof(*sn));
	struct unw_stats st0, st1;
	struct unw_ctx *u = NULL;
	struct smp s = { 0 };
	struct result r;
	struct fix fx;
	long slot[3], fpslot;
	u64 size;
	int k;

	if (!sn)
		abort();
	if (!fix_open(&fx, name, flags))
		goto out;
	snap_take(&fx, sn);
	T(sn->size > 64 && sn->size < sizeof(sn->stack));
	/* The fixture clobbered rbp in mid: the sample's rbp is no frame
	 * pointer, only the CFI can get past mid and top. */
	T_EQ_INT(sn->rbp, 0x1234);
	T_EQ_INT(unw_ctx_new(fx.sym, &u), 0);

	snap_sample(sn, &s, sn->size);
	unw_ctx_stats(u, &st0);
	run(u, &s, find_fix, &fx, 0, &r);
	unw_ctx_stats(u, &st1);
	expect_(__LINE__, &r, (const u64[]){ sn->rip, sn->ra[0], sn->ra[1], sn->ra[2] },
		4, UNW_END_ROOT);
	T_EQ_INT(st1.steps_cfi - st0.steps_cfi, 4);
	T_EQ_INT(st1.steps_fp - st0.steps_fp, 0);
	/* Symbolized, the walk reads as the fixture's call chain. */
	for (k = 0; k < r.n; k++) {
		static const char *const names[] = { "unwfix_leaf", "unwfix_mid",
						     "unwfix_top", "unwfix_entry" };
		struct sym_frame sf[SYM_MAX_FRAMES];
		int nf;

		T_EQ_INT(r.f[k].code.kind, UNW_CODE_DSO);
		T(r.f[k].code.dso == fx.dso);
		nf = sym_resolve(fx.sym, r.f[k].code.dso, r.f[k].code.file_off,
				 r.f[k].is_return, sf);
		T(nf > 0);
		if (nf > 0 && k < 4)
			T_EQ_STR(sf[nf - 1].func, names[k]);
	}
	/* Again: the cached CFI rows give the same walk. */
	run(u, &s, find_fix, &fx, 0, &r);
	expect_(__LINE__, &r, (const u64[]){ sn->rip, sn->ra[0], sn->ra[1], sn->ra[2] },
		4, UNW_END_ROOT);

	/* Where the return addresses sit, found by value: each above the
	 * previous one. top's rbp is saved by mid below mid's slot. */
	slot[0] = find_word(sn, sn->ra[0], 0);
	slot[1] = find_word(sn, sn->ra[1], slot[0] + 8);
	slot[2] = find_word(sn, sn->ra[2], slot[1] + 8);
	fpslot = find_word(sn, sn->top_fp, slot[0] + 8);
	T(slot[0] >= 0 && slot[1] > slot[0] && slot[2] > slot[1]);
	T(fpslot > slot[0] && fpslot < slot[1]);
	if (slot[0] < 0 || slot[1] < 0 || slot[2] < 0 || fpslot < 0)
		goto out;

	/* Every dump size: frame k + 1 exists once slot k is whole in the
	 * dump; short of the whole dump the end is "cut". */
	for (size = 0; size <= (u64)slot[2] + 8; size++) {
		int want = 1 + (size >= (u64)slot[0] + 8) + (size >= (u64)slot[1] + 8) +
			   (size >= (u64)slot[2] + 8);

		snap_sample(sn, &s, size);
		run(u, &s, find_fix, &fx, 0, &r);
		T_EQ_INT(r.n, want);
		T_EQ_INT(r.end, want == 4 ? UNW_END_ROOT : UNW_END_CUT);
		for (k = 1; k < r.n && k < 4; k++)
			T_EQ_INT(r.f[k].pc, sn->ra[k - 1]);
	}

	/* mid's saved rbp of garbage: top's CFA (rbp + 16) then lies below
	 * the dump (lost) or far above it (cut), after three frames. */
	snap_sample(sn, &s, sn->size);
	{
		u64 bad = sn->rsp - 0x1000;

		memcpy(s.stack + fpslot, &bad, 8);
		run(u, &s, find_fix, &fx, 0, &r);
		expect_(__LINE__, &r, (const u64[]){ sn->rip, sn->ra[0], sn->ra[1] }, 3,
			UNW_END_LOST);
		bad = sn->rsp + 0x100000;
		memcpy(s.stack + fpslot, &bad, 8);
		run(u, &s, find_fix, &fx, 0, &r);
		expect_(__LINE__, &r, (const u64[]){ sn->rip, sn->ra[0], sn->ra[1] }, 3,
			UNW_END_CUT);
		/* Inside the dump but below top's own SP: the stack would
		 * shrink, so the walk stops there. */
		bad = sn->rsp;
		memcpy(s.stack + fpslot, &bad, 8);
		run(u, &s, find_fix, &fx, 0, &r);
		expect_(__LINE__, &r, (const u64[]){ sn->rip, sn->ra[0], sn->ra[1] }, 3,
			UNW_END_LOST);
	}
	/* Garbage in the registers the CFI restores from the stack changes
	 * nothing. */
	snap_sample(sn, &s, sn->size);
	set_reg(&s, UNW_RBP, 0xdeadbeefdeadbeefULL);
	set_reg(&s, UNW_RBX, 1);
	set_reg(&s, UNW_R12, 2);
	run(u, &s, find_fix, &fx, 0, &r);
	expect_(__LINE__, &r, (const u64[]){ sn->rip, sn->ra[0], sn->ra[1], sn->ra[2] },
		4, UNW_END_ROOT);
	/* A return address of garbage in leaf's slot: a frame of its own
	 * (unknown code), then a frame-pointer step from the rbp mid set
	 * (0x1234, below the stack): lost. */
	snap_sample(sn, &s, sn->size);
	{
		u64 bad = 0x10;

		memcpy(s.stack + slot[0], &bad, 8);
		run(u, &s, find_fix, &fx, 0, &r);
		expect_(__LINE__, &r, (const u64[]){ sn->rip, 0x10 }, 2, UNW_END_LOST);
		T_EQ_INT(r.f[1].code.kind, UNW_CODE_NONE);
	}

	/*
	 * Random stacks: words that point into the dump, at the fixture's
	 * code, or anywhere, with registers of the same kinds. Every walk
	 * must end by itself within the frame limit (the stack pointer grows
	 * at each step) and, under ASan, never read outside the dump.
	 */
	{
		u64 lcg = 0x9e3779b97f4a7c15ULL, words = 96, i, w;
		int iter, reg;

		for (iter = 0; iter < 3000; iter++) {
			u64 sp = sn->rsp - 0x40 * (u64)(iter % 3);
			u64 pick[6];

			free(s.stack);
			s.size = 8 * words - (u64)(iter % 8);
			s.stack = malloc(s.size);
			if (!s.stack)
				abort();
			for (i = 0; i < words; i++) {
				lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
				pick[0] = sp + 8 * ((lcg >> 20) % (words + 8));
				pick[1] = sn->ra[(lcg >> 30) % 3] - (lcg >> 40) % 4;
				pick[2] = sn->rip;
				pick[3] = 0;
				pick[4] = lcg;
				pick[5] = sp - 8 * ((lcg >> 20) % 8);
				w = pick[(lcg >> 61) % 6];
				memcpy(s.stack + 8 * i, &w, 8 * i + 8 <= s.size ? 8 : s.size - 8 * i);
			}
			memset(s.reg, 0, sizeof(s.reg));
			s.have = 0;
			for (reg = 0; reg < UNW_NREGS; reg++) {
				lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
				set_reg(&s, (unsigned)reg, (lcg >> 62) == 0 ? lcg :
					sp + 8 * ((lcg >> 20) % words));
			}
			set_reg(&s, UNW_RSP, sp);
			set_reg(&s, UNW_RIP, iter % 2 ? sn->rip : sn->ra[iter % 3] - 1);
			run(u, &s, find_fix, &fx, 0, &r);
			T(r.n >= 1 && r.n <= 64);
			T(r.end == UNW_END_ROOT || r.end == UNW_END_CUT ||
			  r.end == UNW_END_LOST || r.end == UNW_END_MAX);
			for (k = 1; k < r.n; k++)
				T(r.f[k].is_return);
		}
	}

	/*
	 * The PLT (its CFA is a DWARF expression, evaluated without the
	 * compiled-rule shortcut): mid calls leaf through a stub, so a
	 * sample on the stub's first instruction has leaf's entry state:
	 * the same SP and stack as the snapshot. On the stub's third
	 * instruction (jmp to PLT0, after push $n), SP is 8 lower.
	 */
	if (plt && slot[0] != 0) {
		fprintf(stderr, "note: leaf moved its SP before the snapshot; PLT case skipped\n");
	} else if (plt) {
		const u8 *call = (const u8 *)(uintptr_t)(sn->ra[0] - 5);
		s32 rel;
		u64 stub, leaf = (u64)(uintptr_t)dlsym(fx.handle, "unwfix_leaf");
		const u8 *sb;

		memcpy(&rel, call + 1, 4);
		stub = sn->ra[0] + (u64)(s64)rel;
		sb = (const u8 *)(uintptr_t)stub;
		if (call[0] != 0xe8 || stub == leaf || sb[0] != 0xff || sb[1] != 0x25 ||
		    sb[6] != 0x68 || sb[11] != 0xe9) {
			fprintf(stderr, "note: no lazy PLT stub between mid and leaf; PLT case skipped\n");
		} else {
			snap_sample(sn, &s, sn->size);
			set_reg(&s, UNW_RIP, stub);
			run(u, &s, find_fix, &fx, 0, &r);
			expect_(__LINE__, &r,
				(const u64[]){ stub, sn->ra[0], sn->ra[1], sn->ra[2] }, 4,
				UNW_END_ROOT);
			/* Sample after push $n: a word more below. */
			free(s.stack);
			s.stack = malloc(sn->size + 8);
			if (!s.stack)
				abort();
			memset(s.stack, 0x5a, 8);
			memcpy(s.stack + 8, sn->stack, sn->size);
			s.size = sn->size + 8;
			set_reg(&s, UNW_RIP, stub + 11);
			set_reg(&s, UNW_RSP, sn->rsp - 8);
			run(u, &s, find_fix, &fx, 0, &r);
			expect_(__LINE__, &r,
				(const u64[]){ stub + 11, sn->ra[0], sn->ra[1], sn->ra[2] },
				4, UNW_END_ROOT);
		}
	}
out:
	free(s.stack);
	unw_ctx_free(u);
	fix_close(&fx);
	free(sn);
}

static void test_dwarf(void)
{
	const char *t = getenv("TMPDIR");
	char tmpl[256];

	if (sh("cc --version >/dev/null 2>&1")) {
		fprintf(stderr, "skip: no C compiler, DWARF cases not run\n");
		return;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/perfspy-tunw-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "FAIL: mkdtemp\n");
		test_failed_checks++;
		return;
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
	test_dwarf_one("eh", "", true);
	/* CFI in .debug_frame only (no .eh_frame entries for our code). */
	test_dwarf_one("dbg", "-g -fno-asynchronous-unwind-tables", false);
	sh("rm -rf '%s'", tmpdir);
}

int main(void)
{
	test_fp();
	test_trampolines();
	test_dwarf();
	TEST_MAIN_END();
}
#endif
