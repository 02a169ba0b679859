// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the aarch64 side of libconv/frames/unwind.c and arch.c,
 * on any host (the unwinder takes the recording's architecture, not the
 * host's: docs/arm64.md §1).
 *
 *  - CPython's aarch64 perf trampolines (docs/cpython-perf.md §1.6-1.7,
 *    docs/arm64.md §3): the machine code of Python/asm_trampoline.S,
 *    20 bytes (3.12, 3.13) and 28 bytes with branch protection (3.14+,
 *    `paciasp`/`autiasp` around the body), is run here by a tiny
 *    interpreter of exactly those instructions; the sample is taken
 *    before each instruction (the leaf case) and in a callee after its
 *    prologue (the return-address case), with registers and stack as
 *    the interpreter left them. The caller's frame record is laid out so
 *    that a wrong CFA, a wrong return address or a wrong x29 gives a
 *    different chain. `paciasp` puts a pointer-authentication code into
 *    x30's top bits, which the unwinder must drop.
 *  - Register masks: perf's 33-register mask, the 34-register one with
 *    VG (SVE CPUs), and the mask perf -g uses on arm64 (LR only).
 *  - The architecture tables against the arm64 perf_regs uapi numbers.
 */
#include "frames/unwind.h"
#include "test.h"

#include <elf.h>

/* arch/arm64/include/uapi/asm/perf_regs.h */
enum { PR_X0 = 0, PR_X29 = 29, PR_LR = 30, PR_SP = 31, PR_PC = 32, PR_VG = 46 };

/* Python/asm_trampoline.S, assembled (aarch64-linux-gnu-as, objdump -d). */
#define I_PACIASP 0xd503233fu /* hint #25 */
#define I_STP 0xa9bf7bfdu     /* stp x29, x30, [sp, #-16]! */
#define I_MOV 0x910003fdu     /* mov x29, sp */
#define I_BLR_X3 0xd63f0060u  /* blr x3 */
#define I_LDP 0xa8c17bfdu     /* ldp x29, x30, [sp], #16 */
#define I_AUTIASP 0xd50323bfu /* hint #29 */
#define I_RET 0xd65f03c0u     /* ret */

static const u32 tramp20[] = { I_STP, I_MOV, I_BLR_X3, I_LDP, I_RET };
static const u32 tramp28[] = { I_PACIASP, I_STP, I_MOV, I_BLR_X3, I_LDP,
			       I_AUTIASP, I_RET };
/* The callee's prologue (a frame-pointer function) */
static const u32 callee[] = { I_STP, I_MOV };

#define TRAMP 0xffff80010000ULL	  /* the trampoline (perf map entry) */
#define CALLEE 0xaaaa00003000ULL  /* _PyEval_EvalFrameDefault, say */
#define RA_CALLER 0xaaaa00002468ULL /* after the blr into the trampoline */
#define RA2 0xaaaa00001234ULL	  /* the caller's caller */
#define STK 0xfffff0000000ULL	  /* base of the stack image */
#define S0 (STK + 0x200)	  /* sp at the trampoline's entry */
#define CALLER_FP (S0 + 0x40)	  /* the caller's frame record */
#define PAC 0x002a000000000000ULL /* a code in x30's bits 48-54 */

/* ---- a machine for those instructions ---- */

struct cpu {
	u64 x[31], sp, pc;
	u64 mem[128]; /* STK .. STK + 1 KiB */
	bool pac_signed;
};

static u64 *word(struct cpu *c, u64 addr)
{
	if (addr < STK || addr >= STK + sizeof(c->mem) || addr % 8)
		abort();
	return &c->mem[(addr - STK) / 8];
}

/* Register 31 is sp in the address and add forms used here. */
static u64 rd_sp(struct cpu *c, unsigned r)
{
	return r == 31 ? c->sp : c->x[r];
}

/* Execute one instruction by its encoding fields (Arm ARM C6.2). */
static void exec1(struct cpu *c, u32 in)
{
	unsigned rt = in & 31, rn = (in >> 5) & 31, rt2 = (in >> 10) & 31;
	s64 imm7 = (s64)(((in >> 15) & 0x7f) ^ 0x40) - 0x40;

	if ((in & 0xffc00000u) == 0xa9800000u) { /* stp 64-bit pre-index */
		u64 a = rd_sp(c, rn) + (u64)(imm7 * 8);

		*word(c, a) = c->x[rt];
		*word(c, a + 8) = c->x[rt2];
		c->sp = a; /* rn is sp here */
		c->pc += 4;
	} else if ((in & 0xffc00000u) == 0xa8c00000u) { /* ldp 64-bit post-index */
		u64 a = rd_sp(c, rn);

		c->x[rt] = *word(c, a);
		c->x[rt2] = *word(c, a + 8);
		c->sp = a + (u64)(imm7 * 8);
		c->pc += 4;
	} else if ((in & 0xff800000u) == 0x91000000u) { /* add xd, xn|sp, #imm */
		c->x[rt] = rd_sp(c, rn) + ((in >> 10) & 0xfff);
		c->pc += 4;
	} else if ((in & 0xfffffc1fu) == 0xd63f0000u) { /* blr xn */
		c->x[30] = c->pc + 4;
		c->pc = c->x[rn];
	} else if (in == I_RET) {
		c->pc = c->x[30];
	} else if (in == I_PACIASP) {
		c->x[30] |= PAC;
		c->pc += 4;
	} else if (in == I_AUTIASP) {
		c->x[30] &= ~PAC;
		c->pc += 4;
	} else {
		abort();
	}
}

/* The state at the trampoline's entry: called from RA_CALLER by a frame
 * whose record is at CALLER_FP (the caller's caller RA2, then 0). */
static void entry_state(struct cpu *c)
{
	memset(c, 0, sizeof(*c));
	c->pc = TRAMP;
	c->sp = S0;
	c->x[29] = CALLER_FP;
	c->x[30] = RA_CALLER;
	c->x[3] = CALLEE;
	for (unsigned i = 0; i < 29; i++)
		if (i != 3)
			c->x[i] = 0x1000 + i;
	*word(c, CALLER_FP) = 0;
	*word(c, CALLER_FP + 8) = RA2;
}

/* ---- samples ---- */

struct result {
	int n;
	enum unw_end end;
	struct unw_frame f[16];
};

static struct jit_entry jit;

static int find(void *ctx, u64 pc, struct unw_code *out)
{
	(void)ctx;
	memset(out, 0, sizeof(*out));
	if (pc >= jit.start && pc < jit.start + jit.size) {
		out->kind = UNW_CODE_JIT;
		out->jit = &jit;
	}
	return 0;
}

/* Sample @c with perf register mask @mask (values in ascending bit order,
 * perf_event_open(2)), the dump [sp, end of the image). */
static void sample(struct unw_ctx *u, struct cpu *c, u64 mask, struct result *r)
{
	struct rec_sample rs = { 0 };
	u64 vals[64], off = c->sp - STK;
	unsigned bit, n = 0;

	for (bit = 0; bit < 64; bit++) {
		if (!(mask & (1ULL << bit)))
			continue;
		vals[n++] = bit < 31 ? c->x[bit] : bit == PR_SP ? c->sp :
			bit == PR_PC ? c->pc : bit == PR_VG ? 4 : 0;
	}
	rs.regs_abi = PERF_SAMPLE_REGS_ABI_64;
	rs.nr_regs = n;
	rs.regs = (const u8 *)vals;
	rs.stack = (const u8 *)c->mem + off;
	rs.stack_size = rs.stack_dyn_size = sizeof(c->mem) - off;
	memset(r, 0, sizeof(*r));
	r->n = unw_sample(u, &rs, mask, find, NULL, r->f, ARRAY_SIZE(r->f), &r->end);
}

static void expect_(int line, const char *what, const struct result *r,
		    const u64 *want, int n)
{
	int i, bad = r->n != n || r->end != UNW_END_LOST;

	for (i = 0; !bad && i < n; i++)
		bad = r->f[i].pc != want[i] || r->f[i].is_return != (i > 0);
	test_checks++;
	if (!bad)
		return;
	test_failed_checks++;
	fprintf(stderr, "FAIL %s:%d: %s: %d frames, end %d:", __FILE__, line,
		what, r->n, (int)r->end);
	for (i = 0; i < r->n; i++)
		fprintf(stderr, " %#llx", (unsigned long long)r->f[i].pc);
	fprintf(stderr, "\n    want");
	for (i = 0; i < n; i++)
		fprintf(stderr, " %#llx", (unsigned long long)want[i]);
	fprintf(stderr, "\n");
}

#define ALL_REGS ((1ULL << 33) - 1)

static void test_trampoline(const u32 *code, u32 ninsn, u64 mask, const char *what)
{
	struct unw_ctx *u;
	struct result r;
	struct cpu c;
	u32 k;

	T_EQ_INT(unw_ctx_new(NULL, &u), 0);
	unw_ctx_set_arch(u, arch_arm64());
	jit = (struct jit_entry){ .start = TRAMP, .size = ninsn * 4, .name = "py::f:x.py" };

	/* Leaf: the sample before each instruction of the trampoline
	 * (after the blr the pc is in the callee: the next case). */
	entry_state(&c);
	for (k = 0; k < ninsn; k++) {
		u64 want[] = { TRAMP + 4 * k, RA_CALLER, RA2 };

		if (c.pc != TRAMP + 4 * k)
			abort();
		sample(u, &c, mask, &r);
		expect_(__LINE__, what, &r, want, 3);
		if (code[k] == I_BLR_X3) {
			/* the callee returns at once: resume after it */
			c.pc += 4;
			continue;
		}
		exec1(&c, code[k]);
	}
	T(c.pc == RA_CALLER && c.sp == S0 && c.x[29] == CALLER_FP);

	/* Return address: inside the callee after its prologue, the
	 * trampoline frame is found by the callee's frame record. */
	entry_state(&c);
	while (c.pc != CALLEE)
		exec1(&c, code[(c.pc - TRAMP) / 4]);
	for (k = 0; k < ARRAY_SIZE(callee); k++)
		exec1(&c, callee[k]);
	{
		u64 ret = TRAMP + (ninsn == 7 ? 16 : 12);
		u64 want[] = { CALLEE + 8, ret, RA_CALLER, RA2 };

		T(c.x[30] == ret);
		sample(u, &c, mask, &r);
		expect_(__LINE__, what, &r, want, 4);
		T(r.f[1].code.kind == UNW_CODE_JIT);
	}
	unw_ctx_free(u);
}

/* A size that is no aarch64 variant: no trampoline rule. */
static void test_other_size(void)
{
	struct unw_ctx *u;
	struct result r;
	struct cpu c;

	T_EQ_INT(unw_ctx_new(NULL, &u), 0);
	unw_ctx_set_arch(u, arch_arm64());
	jit = (struct jit_entry){ .start = TRAMP, .size = 24, .name = "py::f:x.py" };
	entry_state(&c);
	exec1(&c, I_STP);
	exec1(&c, I_MOV);
	sample(u, &c, ALL_REGS, &r);
	/* The frame-pointer fallback still reads the trampoline's record,
	 * so the chain is the same, through steps_fp. */
	{
		u64 want[] = { TRAMP + 8, RA_CALLER, RA2 };
		struct unw_stats st;

		expect_(__LINE__, "size 24", &r, want, 3);
		unw_ctx_stats(u, &st);
		T_EQ_INT(st.steps_jit, 0);
	}
	unw_ctx_free(u);
}

/* An x86-64 recording keeps x86-64 registers on the same context. */
static void test_switch_back(void)
{
	struct unw_ctx *u;

	T_EQ_INT(unw_ctx_new(NULL, &u), 0);
	unw_ctx_set_arch(u, arch_arm64());
	T(unw_ctx_arch(u) == arch_arm64());
	unw_ctx_set_arch(u, arch_x86_64());
	T(unw_ctx_arch(u) == arch_x86_64());
	unw_ctx_set_arch(u, NULL); /* unknown: unchanged */
	T(unw_ctx_arch(u) == arch_x86_64());
	unw_ctx_free(u);
}

static void test_tables(void)
{
	const struct arch *a = arch_arm64();
	unsigned i;

	T(arch_by_name("aarch64") == a);
	T(arch_by_name("arm64") == a);
	T(arch_by_name("x86_64") == arch_x86_64());
	T(arch_by_name("riscv64") == NULL);
	T(arch_by_name(NULL) == NULL);
	T(arch_by_machine(EM_AARCH64) == a);
	T(arch_by_machine(EM_X86_64) == arch_x86_64());
	/* DWARF x0-x30 and sp have the perf bits of X0..LR, SP; the pc
	 * slot has PC. */
	for (i = 0; i <= 30; i++)
		T_EQ_INT(a->perf_bit[i], PR_X0 + i);
	T_EQ_INT(a->perf_bit[a->sp], PR_SP);
	T_EQ_INT(a->perf_bit[a->pc], PR_PC);
	T_EQ_INT(a->perf_bit[a->fp], PR_X29);
	T_EQ_INT(a->perf_bit[a->lr], PR_LR);
	T(a->regs_user == ((1ULL << (PR_PC + 1)) - 1));
	T(((RA_CALLER | PAC) & a->addr_mask) == RA_CALLER);
}

int main(void)
{
	test_tables();
	test_trampoline(tramp20, ARRAY_SIZE(tramp20), ALL_REGS, "20 bytes");
	test_trampoline(tramp28, ARRAY_SIZE(tramp28), ALL_REGS, "28 bytes");
	/* SVE CPUs: VG (bit 46) follows PC in the sampled values (perf 6.1: 0x4001ffffffff) */
	test_trampoline(tramp20, ARRAY_SIZE(tramp20), ALL_REGS | 1ULL << PR_VG,
			"20 bytes, VG");
	test_trampoline(tramp28, ARRAY_SIZE(tramp28), ALL_REGS | 1ULL << PR_VG,
			"28 bytes, VG");
	test_other_size();
	test_switch_back();
	TEST_MAIN_END();
}
