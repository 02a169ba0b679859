// SPDX-License-Identifier: GPL-2.0
/*
 * The stepping loop of the DWARF unwinder (see unwind.h).
 *
 * State is a set of registers of the recording's architecture (arch.h),
 * indexed by DWARF number, each known or not. A step computes
 * the caller's CFA (its stack pointer), return address and callee-saved
 * registers from the current pc's rule, reading stack words only from
 * the dump perf took ([SP, SP + dyn_size) at sample time). A read past the
 * dump ends the walk as "cut" (the dump was too small), any other failure
 * as "lost". The stack pointer must grow at each step, so a walk always
 * ends.
 *
 * libdw decodes the CFI (dwarf_cfi_addrframe) but does not walk: its
 * dwfl_getthread_frames cannot step through CPython's trampolines, which
 * have no CFI (docs/cpython-perf.md §3), so the loop is ours
 * and the trampoline rules sit between DWARF steps.
 */
#include "unwind.h"
#include "common/hash.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>

/* The perf_regs bits, DWARF numbers and callee-saved registers of each
 * architecture are in arch.c; a step carries over the callee-saved ones
 * plus the return address column. */
struct regs {
	u64 r[ARCH_MAXREGS];
	u64 valid; /* bit per register */
};

struct mem {
	u64 sp0;
	const u8 *stack;
	u64 size;
	bool beyond; /* a read went past the end of the dump */
};

/*
 * A CFI row compiled to the forms that cover nearly all code: CFA =
 * register + offset, and each register undefined, unchanged, saved at
 * CFA + offset, or equal to CFA + offset. Rows using anything else (PLT
 * stubs' DWARF expressions) keep going through eval().
 */
enum { R_SAME, R_UNDEF, R_AT_CFA, R_VAL_CFA };

#define NSAVED (ARCH_MAXSAVED + 1) /* arch->saved[] plus the return address column */

struct rule {
	bool simple;
	u8 nsaved; /* used entries of reg[], the return address column last */
	u8 cfa_reg;
	s64 cfa_off;
	u8 reg[NSAVED];	 /* DWARF register numbers */
	u8 kind[NSAVED];
	s64 off[NSAVED];
};

/* Keyed by file offset, what frames carry, so that a hit costs one
 * probe and no trip through the DSO's segments (docs/design.md §6.3). */
struct fcache_ent {
	u64 hash;
	struct sym_dso *dso;
	u64 file_off;
	Dwarf_Frame *frame; /* NULL: no CFI covers this address */
	struct rule rule;
};

struct fcache_key {
	const struct sym_dso *dso;
	u64 file_off;
};

static bool fcache_eq(const void *ent, const void *key)
{
	const struct fcache_ent *e = ent;
	const struct fcache_key *k = key;

	return e->dso == k->dso && e->file_off == k->file_off;
}

/* Where each register of an architecture sits in a sample's regs[] for
 * one sample_regs_user mask; recomputed when the mask or arch changes
 * (one event, one mask: once per session in practice). */
struct reg_slots {
	const struct arch *arch; /* NULL: not computed */
	u64 mask;
	u8 idx[ARCH_MAXREGS];	 /* SLOT_NONE: not in the mask */
};
#define SLOT_NONE 0xff

struct unw_ctx {
	struct sym_ctx *sym;
	const struct arch *arch;
	struct htab tab; /* CFI cache: struct fcache_ent */
	struct unw_stats stats;
	struct reg_slots slots;
};

int unw_ctx_new(struct sym_ctx *sym, struct unw_ctx **out)
{
	struct unw_ctx *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->sym = sym;
	u->arch = arch_host();
	htab_init(&u->tab, sizeof(struct fcache_ent), 1024);
	*out = u;
	return 0;
}

void unw_ctx_free(struct unw_ctx *u)
{
	struct fcache_ent *e;
	size_t pos = 0;

	if (!u)
		return;
	while ((e = htab_next(&u->tab, &pos)))
		free(e->frame);
	htab_free(&u->tab);
	free(u);
}

void unw_ctx_stats(const struct unw_ctx *u, struct unw_stats *out)
{
	*out = u->stats;
}

void unw_ctx_set_arch(struct unw_ctx *u, const struct arch *a)
{
	struct fcache_ent *e;
	size_t pos = 0;

	if (!a || a == u->arch)
		return;
	/* Compiled rules name the old architecture's registers. */
	while ((e = htab_next(&u->tab, &pos)))
		free(e->frame);
	htab_free(&u->tab);
	htab_init(&u->tab, sizeof(struct fcache_ent), 1024);
	u->arch = a;
}

const struct arch *unw_ctx_arch(const struct unw_ctx *u)
{
	return u->arch;
}

static bool mem_read(struct mem *m, u64 addr, u64 *val)
{
	if (addr < m->sp0 || addr - m->sp0 > m->size ||
	    m->size - (addr - m->sp0) < 8) {
		if (addr >= m->sp0)
			m->beyond = true;
		return false;
	}
	*val = get_u64(m->stack + (addr - m->sp0));
	return true;
}

static bool reg_get(const struct regs *r, unsigned n, u64 *v)
{
	if (n >= ARCH_MAXREGS || !(r->valid & (1ULL << n)))
		return false;
	*v = r->r[n];
	return true;
}

static void reg_set(struct regs *r, unsigned n, u64 v)
{
	r->r[n] = v;
	r->valid |= 1ULL << n;
}

/* ------------------------------------------------ DWARF expressions */

#define EXPR_STACK 16

struct expr {
	u64 st[EXPR_STACK];
	int sp;
};

static bool push(struct expr *e, u64 v)
{
	if (e->sp >= EXPR_STACK)
		return false;
	e->st[e->sp++] = v;
	return true;
}

static bool pop(struct expr *e, u64 *v)
{
	if (e->sp <= 0)
		return false;
	*v = e->st[--e->sp];
	return true;
}

/* Binary operators of DWARF 5 §2.5.1.4. */
static bool binop(struct expr *e, u8 atom)
{
	u64 b, a;

	if (!pop(e, &b) || !pop(e, &a))
		return false;
	switch (atom) {
	case DW_OP_plus: return push(e, a + b);
	case DW_OP_minus: return push(e, a - b);
	case DW_OP_mul: return push(e, a * b);
	case DW_OP_and: return push(e, a & b);
	case DW_OP_or: return push(e, a | b);
	case DW_OP_xor: return push(e, a ^ b);
	case DW_OP_shl: return push(e, b < 64 ? a << b : 0);
	case DW_OP_shr: return push(e, b < 64 ? a >> b : 0);
	case DW_OP_shra: return push(e, (u64)((s64)a >> (b < 63 ? b : 63)));
	case DW_OP_lt: return push(e, (s64)a < (s64)b);
	case DW_OP_le: return push(e, (s64)a <= (s64)b);
	case DW_OP_gt: return push(e, (s64)a > (s64)b);
	case DW_OP_ge: return push(e, (s64)a >= (s64)b);
	case DW_OP_eq: return push(e, a == b);
	case DW_OP_ne: return push(e, a != b);
	default: return false;
	}
}

/*
 * Evaluate @ops (libdw's decoded form) with @cfa for
 * DW_OP_call_frame_cfa. On success *@val is the top of the stack and
 * *@is_value tells whether it is a value (DW_OP_stack_value) rather than
 * an address. A DW_OP_regN location yields that register's value.
 */
static bool eval(const Dwarf_Op *ops, size_t nops, const struct regs *r,
		 struct mem *m, u64 cfa, bool have_cfa, u64 *val, bool *is_value)
{
	struct expr e = { .sp = 0 };
	size_t i;
	u64 v, w;

	*is_value = false;
	for (i = 0; i < nops; i++) {
		u8 atom = ops[i].atom;

		if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
			if (!push(&e, atom - DW_OP_lit0))
				return false;
		} else if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
			if (!reg_get(r, atom - DW_OP_breg0, &v) ||
			    !push(&e, v + ops[i].number))
				return false;
		} else if (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) {
			if (nops != 1 || !reg_get(r, atom - DW_OP_reg0, val))
				return false;
			*is_value = true;
			return true;
		} else {
			switch (atom) {
			case DW_OP_regx:
				if (nops != 1 || !reg_get(r, (unsigned)ops[i].number, val))
					return false;
				*is_value = true;
				return true;
			case DW_OP_bregx:
				if (!reg_get(r, (unsigned)ops[i].number, &v) ||
				    !push(&e, v + ops[i].number2))
					return false;
				break;
			case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u:
			case DW_OP_const8u: case DW_OP_constu: case DW_OP_const1s:
			case DW_OP_const2s: case DW_OP_const4s: case DW_OP_const8s:
			case DW_OP_consts: case DW_OP_addr:
				if (!push(&e, ops[i].number))
					return false;
				break;
			case DW_OP_call_frame_cfa:
				if (!have_cfa || !push(&e, cfa))
					return false;
				break;
			case DW_OP_plus_uconst:
				if (!pop(&e, &v) || !push(&e, v + ops[i].number))
					return false;
				break;
			case DW_OP_deref:
				if (!pop(&e, &v) || !mem_read(m, v, &w) || !push(&e, w))
					return false;
				break;
			case DW_OP_dup:
				if (!pop(&e, &v) || !push(&e, v) || !push(&e, v))
					return false;
				break;
			case DW_OP_drop:
				if (!pop(&e, &v))
					return false;
				break;
			case DW_OP_neg:
				if (!pop(&e, &v) || !push(&e, -v))
					return false;
				break;
			case DW_OP_not:
				if (!pop(&e, &v) || !push(&e, ~v))
					return false;
				break;
			case DW_OP_stack_value:
				*is_value = true;
				break;
			case DW_OP_nop:
				break;
			default:
				if (!binop(&e, atom))
					return false;
				break;
			}
		}
	}
	return pop(&e, val);
}

/* -------------------------------------------------------- CFI steps */

/* The decoded CFI row for (dso, vaddr), cached: libdw parses the FDE
 * once per address, and the loop only evaluates. */
static void compile_rule(const struct arch *a, Dwarf_Frame *fr, struct rule *r);

static int frame_for(struct unw_ctx *u, struct sym_dso *dso, u64 file_off,
		     Dwarf_Frame **out, const struct rule **rule)
{
	struct fcache_key key = { dso, file_off };
	u64 vaddr, h = hash_mix((u64)(uintptr_t)dso ^ hash_mix(file_off));
	Dwarf_CFI *eh, *dbg;
	struct fcache_ent *e;
	int err;

	*out = NULL;
	e = htab_find(&u->tab, h, fcache_eq, &key);
	if (e) {
		*out = e->frame;
		*rule = &e->rule;
		return 0;
	}
	err = sym_dso_unwind_info(u->sym, dso, file_off, &vaddr, &eh);
	if (err)
		return err == -ENOMEM ? err : 0;
	if ((err = htab_reserve(&u->tab)))
		return err;
	/* A miss above: the probe ends on a free entry. */
	e = htab_probe(&u->tab, h, fcache_eq, &key);
	htab_claim(&u->tab, e, h);
	e->dso = dso;
	e->file_off = file_off;
	e->frame = NULL;
	if (!eh || dwarf_cfi_addrframe(eh, vaddr, &e->frame) != 0) {
		e->frame = NULL;
		dbg = sym_dso_debug_cfi(dso);
		if (dbg && dwarf_cfi_addrframe(dbg, vaddr, &e->frame) != 0)
			e->frame = NULL;
	}
	if (e->frame)
		compile_rule(u->arch, e->frame, &e->rule);
	*out = e->frame;
	*rule = &e->rule;
	return 0;
}

enum step { STEP_OK, STEP_ROOT, STEP_FAIL };

/* The location forms libdw builds for DW_CFA_offset/val_offset
 * (dwarf_frame_register.c): DW_OP_call_frame_cfa, optionally
 * DW_OP_plus_uconst N, optionally DW_OP_stack_value. */
static bool simple_loc(const Dwarf_Op *ops, size_t nops, u8 *kind, s64 *off)
{
	size_t i = 1;

	if (!nops || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	*off = 0;
	if (i < nops && ops[i].atom == DW_OP_plus_uconst)
		*off = (s64)ops[i++].number;
	*kind = R_AT_CFA;
	if (i < nops && ops[i].atom == DW_OP_stack_value) {
		*kind = R_VAL_CFA;
		i++;
	}
	return i == nops;
}

static void compile_rule(const struct arch *a, Dwarf_Frame *fr, struct rule *r)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops, k;
	int ra;

	memset(r, 0, sizeof(*r));
	ra = dwarf_frame_info(fr, NULL, NULL, NULL);
	if (ra < 0 || ra >= a->nregs || dwarf_frame_cfa(fr, &ops, &nops) || nops != 1)
		return;
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		r->cfa_reg = ops[0].atom - DW_OP_breg0;
		r->cfa_off = (s64)ops[0].number;
	} else if (ops[0].atom == DW_OP_bregx) {
		r->cfa_reg = (u8)ops[0].number;
		r->cfa_off = (s64)ops[0].number2;
	} else {
		return;
	}
	r->nsaved = (u8)(a->nsaved + 1);
	for (k = 0; k < r->nsaved; k++) {
		r->reg[k] = k < a->nsaved ? a->saved[k] : (u8)ra;
		if (dwarf_frame_register(fr, r->reg[k], ops_mem, &ops, &nops))
			return;
		if (!nops)
			r->kind[k] = ops ? R_UNDEF : R_SAME;
		else if (!simple_loc(ops, nops, &r->kind[k], &r->off[k]))
			return;
	}
	r->simple = r->cfa_reg < a->nregs;
}

/* step_cfi() for a compiled rule: the same result without evaluating
 * DWARF operations (most of the unwinder's time before). */
static enum step step_rule(const struct arch *a, const struct rule *r,
			   const struct regs *cur, struct regs *next, struct mem *m)
{
	u64 cfa, v;
	size_t k;

	if (!reg_get(cur, r->cfa_reg, &cfa))
		return STEP_FAIL;
	cfa += (u64)r->cfa_off;
	next->valid = 0;
	for (k = r->nsaved; k-- > 0;) {
		unsigned reg = r->reg[k];
		bool is_ra = k == r->nsaved - 1u;

		switch (r->kind[k]) {
		case R_SAME:
			if (!reg_get(cur, reg, &v)) {
				if (is_ra)
					return STEP_FAIL;
				continue;
			}
			break;
		case R_UNDEF:
			if (is_ra)
				return STEP_ROOT;
			continue;
		case R_AT_CFA:
			if (!mem_read(m, cfa + (u64)r->off[k], &v)) {
				if (is_ra)
					return STEP_FAIL;
				continue;
			}
			break;
		default:
			v = cfa + (u64)r->off[k];
			break;
		}
		if (is_ra)
			reg_set(next, a->pc, v & a->addr_mask);
		else
			reg_set(next, reg, v);
	}
	reg_set(next, a->sp, cfa);
	return STEP_OK;
}

static enum step step_cfi(const struct arch *a, Dwarf_Frame *fr,
			  const struct regs *cur, struct regs *next, struct mem *m)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops, k;
	bool is_value;
	u64 cfa, v;
	int ra;

	ra = dwarf_frame_info(fr, NULL, NULL, NULL);
	if (ra < 0 || ra >= a->nregs)
		return STEP_FAIL;
	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || !nops ||
	    !eval(ops, nops, cur, m, 0, false, &cfa, &is_value))
		return STEP_FAIL;
	next->valid = 0;
	/* The return address: undefined marks the outermost frame
	 * (glibc's _start and clone3 say so in their CFI). */
	if (dwarf_frame_register(fr, ra, ops_mem, &ops, &nops) != 0)
		return STEP_FAIL;
	if (!nops && ops)
		return STEP_ROOT;
	if (!nops) {
		/* same_value: still in its register (aarch64's x30 before
		 * the prologue saves it). */
		if (!reg_get(cur, (unsigned)ra, &v))
			return STEP_FAIL;
	} else if (!eval(ops, nops, cur, m, cfa, true, &v, &is_value) ||
		   (!is_value && !mem_read(m, v, &v))) {
		return STEP_FAIL;
	}
	reg_set(next, a->pc, v & a->addr_mask);
	reg_set(next, a->sp, cfa);
	for (k = 0; k < a->nsaved; k++) {
		unsigned reg = a->saved[k];

		if (dwarf_frame_register(fr, (int)reg, ops_mem, &ops, &nops) != 0)
			continue;
		if (!nops) {
			/* same_value keeps it; undefined loses it. */
			if (!ops && reg_get(cur, reg, &v))
				reg_set(next, reg, v);
			continue;
		}
		if (eval(ops, nops, cur, m, cfa, true, &v, &is_value) &&
		    (is_value || mem_read(m, v, &v)))
			reg_set(next, reg, v);
	}
	return STEP_OK;
}

/* ------------------------------------------------- trampoline steps */

/* CPython's trampoline variants by their size in the perf map
 * (docs/cpython-perf.md §1.6): x86-64 "sub" 11 (15 with
 * endbr64) and "push" 8 (12 with endbr64). */
static enum step step_trampoline_x86(const struct jit_entry *j, u64 pc, bool leaf,
				     const struct regs *cur, struct regs *next,
				     struct mem *m)
{
	bool push = j->size == 8 || j->size == 12;
	bool cet = j->size == 15 || j->size == 12;
	u64 sp, bp, cfa, off = pc - j->start, v;
	bool fp_saved;

	if (!push && j->size != 11 && j->size != 15)
		return STEP_FAIL;
	if (!reg_get(cur, UNW_RSP, &sp))
		return STEP_FAIL;
	if (cet) /* endbr64 comes first */
		off = off >= 4 ? off - 4 : 0;
	if (!leaf) {
		/* A return address: after the call, where every variant
		 * has CFA = SP + 16 and "push" saved rbp at CFA - 16. */
		cfa = sp + 16;
		fp_saved = push;
	} else if (push) {
		/* push %rbp (0) mov %rsp,%rbp (1-3) call (4-5) pop (6) ret (7) */
		if (off == 0 || off >= 7) {
			cfa = sp + 8;
			fp_saved = false;
		} else if (off < 4) {
			cfa = sp + 16;
			fp_saved = true;
		} else {
			if (!reg_get(cur, UNW_RBP, &bp))
				return STEP_FAIL;
			cfa = bp + 16;
			fp_saved = true;
		}
	} else {
		/* sub $8,%rsp (0-3) call (4-5) add $8,%rsp (6-9) ret (10) */
		cfa = off < 4 || off >= 10 ? sp + 8 : sp + 16;
		fp_saved = false;
	}
	if (!mem_read(m, cfa - 8, &v))
		return STEP_FAIL;
	memcpy(next->r, cur->r, sizeof(next->r));
	next->valid = cur->valid;
	reg_set(next, UNW_RIP, v);
	reg_set(next, UNW_RSP, cfa);
	if (fp_saved) {
		if (mem_read(m, cfa - 16, &v))
			reg_set(next, UNW_RBP, v);
		else
			next->valid &= ~(1ULL << UNW_RBP);
	}
	return STEP_OK;
}

/*
 * aarch64 (docs/cpython-perf.md §1.6-1.7, docs/arm64.md §3): 20 bytes
 * `stp x29,x30,[sp,#-16]!` (0) `mov x29,sp` (4) `blr x3` (8)
 * `ldp x29,x30,[sp],#16` (12) `ret` (16); 28 bytes with branch
 * protection, `paciasp` first and `autiasp` before the `ret`. Between
 * the stp and the ldp (and at the return address, stp + 12) CFA = SP +
 * 16 with x29 at [CFA - 16] and x30 at [CFA - 8]; before the stp and
 * after the ldp the return address is still in x30 and CFA = SP. PAC
 * bits of a signed x30 are dropped (arch.addr_mask).
 */
static enum step step_trampoline_arm64(const struct arch *a, const struct jit_entry *j,
				       u64 pc, bool leaf, const struct regs *cur,
				       struct regs *next, struct mem *m)
{
	u64 stp = j->size == 28 ? 4 : 0, off = pc - j->start, sp, cfa, ra, fp;
	bool saved;

	if (j->size != 20 && j->size != 28)
		return STEP_FAIL;
	if (!reg_get(cur, a->sp, &sp))
		return STEP_FAIL;
	saved = !leaf || (off >= stp + 4 && off < stp + 16);
	memcpy(next->r, cur->r, sizeof(next->r));
	next->valid = cur->valid;
	if (saved) {
		cfa = sp + 16;
		if (!mem_read(m, cfa - 8, &ra) || !mem_read(m, cfa - 16, &fp))
			return STEP_FAIL;
		reg_set(next, a->fp, fp);
	} else {
		cfa = sp;
		if (!reg_get(cur, a->lr, &ra))
			return STEP_FAIL;
	}
	/* The caller's x30 is whatever its own call left: unknown. */
	next->valid &= ~(1ULL << a->lr);
	reg_set(next, a->pc, ra & a->addr_mask);
	reg_set(next, a->sp, cfa);
	return STEP_OK;
}

static enum step step_trampoline(const struct arch *a, const struct jit_entry *j,
				 u64 pc, bool leaf, const struct regs *cur,
				 struct regs *next, struct mem *m)
{
	if (a->id == ARCH_ARM64)
		return step_trampoline_arm64(a, j, pc, leaf, cur, next, m);
	return step_trampoline_x86(j, pc, leaf, cur, next, m);
}

/* A jitdump entry with CFI rows (decoded from its .eh_frame). */
static enum step step_jit_rows(const struct arch *a, const struct jit_entry *j,
			       u64 pc, const struct regs *cur, struct regs *next,
			       struct mem *m)
{
	u64 off = pc - j->start, base, v;
	const struct jit_cfi_row *row = NULL;
	u32 i;

	for (i = 0; i < j->nr_cfi; i++)
		if (off >= j->cfi[i].start && off < j->cfi[i].end)
			row = &j->cfi[i];
	if (!row || !reg_get(cur, row->cfa_reg, &base))
		return STEP_FAIL;
	memcpy(next->r, cur->r, sizeof(next->r));
	next->valid = cur->valid;
	base += (u64)(s64)row->cfa_off;
	if (!mem_read(m, base + (u64)(s64)row->ra_off, &v))
		return STEP_FAIL;
	reg_set(next, a->pc, v & a->addr_mask);
	reg_set(next, a->sp, base);
	if (row->fp_saved) {
		if (mem_read(m, base + (u64)(s64)row->fp_off, &v))
			reg_set(next, a->fp, v);
		else
			next->valid &= ~(1ULL << a->fp);
	}
	return STEP_OK;
}

/* One frame-pointer step: the last resort for code without CFI. The
 * frame record is [fp] = the caller's fp, [fp + 8] = the return address
 * on x86-64 (push rbp after the call) and aarch64 (stp x29, x30), and
 * the caller's SP is at least fp + 16 (docs/arm64.md §2). */
static enum step step_fp(const struct arch *a, const struct regs *cur,
			 struct regs *next, struct mem *m)
{
	u64 bp, sp, ra, nbp;

	if (!reg_get(cur, a->fp, &bp) || !reg_get(cur, a->sp, &sp) || bp < sp ||
	    !mem_read(m, bp + 8, &ra) || !mem_read(m, bp, &nbp))
		return STEP_FAIL;
	memcpy(next->r, cur->r, sizeof(next->r));
	next->valid = cur->valid;
	if (a->lr != ARCH_NOREG)
		next->valid &= ~(1ULL << a->lr);
	reg_set(next, a->pc, ra & a->addr_mask);
	reg_set(next, a->sp, bp + 16);
	reg_set(next, a->fp, nbp);
	return STEP_OK;
}

/* ------------------------------------------------------------- walk */

/* Any mask works, perf's own or one with more registers (VG on SVE
 * CPUs, bit 33 of aarch64): only the bits the architecture names are
 * read. */
static void load_regs(struct reg_slots *sl, const struct arch *a,
		      const struct rec_sample *s, u64 mask, struct regs *r)
{
	unsigned reg, bit;

	if (sl->arch != a || sl->mask != mask) {
		sl->arch = a;
		sl->mask = mask;
		for (reg = 0; reg < a->nregs; reg++) {
			bit = a->perf_bit[reg];
			/* regs[] holds the set bits of the mask in
			 * ascending order. */
			sl->idx[reg] = bit >= 64 || !(mask & (1ULL << bit)) ? SLOT_NONE :
				(u8)__builtin_popcountll(mask & ((1ULL << bit) - 1));
		}
	}
	memset(r, 0, sizeof(*r));
	for (reg = 0; reg < a->nregs; reg++)
		if (sl->idx[reg] != SLOT_NONE && sl->idx[reg] < s->nr_regs)
			reg_set(r, reg, get_u64(s->regs + 8 * (u64)sl->idx[reg]));
}

/* The return address still in the link register, CFA = SP: every other
 * register unchanged but the link register, which the caller's own call
 * overwrote. */
static enum step step_lr(const struct arch *a, const struct regs *cur,
			 struct regs *next)
{
	u64 lr, sp;

	if (a->lr == ARCH_NOREG || !reg_get(cur, a->lr, &lr) || !reg_get(cur, a->sp, &sp))
		return STEP_FAIL;
	memcpy(next->r, cur->r, sizeof(next->r));
	next->valid = cur->valid & ~(1ULL << a->lr);
	reg_set(next, a->pc, lr & a->addr_mask);
	reg_set(next, a->sp, sp);
	return STEP_OK;
}

static enum step step_one(struct unw_ctx *u, const struct unw_frame *f,
			  const struct regs *cur, struct regs *next, struct mem *m)
{
	const struct rule *rule = NULL;
	Dwarf_Frame *fr = NULL;
	enum step st = STEP_FAIL;

	if (f->code.kind == UNW_CODE_DSO) {
		/* Return addresses are looked up at pc - 1: the call may be
		 * the last instruction of its function. */
		if (frame_for(u, f->code.dso, f->code.file_off - f->is_return,
			      &fr, &rule) < 0)
			return STEP_FAIL;
		if (fr) {
			st = rule->simple ? step_rule(u->arch, rule, cur, next, m) :
				step_cfi(u->arch, fr, cur, next, m);
			if (st != STEP_FAIL) {
				u->stats.steps_cfi++;
				return st;
			}
		}
	} else if (f->code.kind == UNW_CODE_JIT) {
		/* Rows too apply to a return address at pc - 1: a call
		 * ending its code or its row returns past both. */
		st = f->code.jit->nr_cfi ?
			step_jit_rows(u->arch, f->code.jit, f->pc - f->is_return, cur, next, m) :
			step_trampoline(u->arch, f->code.jit, f->pc, !f->is_return, cur,
					next, m);
		if (st == STEP_OK) {
			u->stats.steps_jit++;
			return st;
		}
	}
	/* An aarch64 leaf in a DSO without CFI for it (PLT stubs: they touch
	 * neither SP nor x30) returns to x30 with CFA = SP, as libdw's
	 * aarch64 fallback takes it (docs/arm64.md §2.2). */
	if (f->code.kind == UNW_CODE_DSO && !fr && !f->is_return &&
	    step_lr(u->arch, cur, next) == STEP_OK) {
		u->stats.steps_fp++;
		return STEP_OK;
	}
	st = step_fp(u->arch, cur, next, m);
	if (st == STEP_OK)
		u->stats.steps_fp++;
	return st;
}

int unw_sample(struct unw_ctx *u, const struct rec_sample *s, u64 regs_mask,
	       unw_find_fn find, void *find_ctx, struct unw_frame *frames,
	       u32 max, enum unw_end *end)
{
	const struct arch *a = u->arch;
	struct mem m = { 0 };
	/* Two register sets used in turn: every step writes next->valid
	 * and reg_get() reads valid registers only, so nothing is copied
	 * from one frame to the next. */
	struct regs rb[2], *cur = &rb[0], *next = &rb[1], *t;
	u32 n = 0;
	u64 pc, sp;
	int err;

	*end = UNW_END_LOST;
	if (!s->regs_abi || !s->regs || !max)
		return 0;
	u->stats.samples++;
	load_regs(&u->slots, a, s, regs_mask, cur);
	if (!reg_get(cur, a->pc, &pc) || !reg_get(cur, a->sp, &sp))
		return 0;
	m.sp0 = sp;
	m.stack = s->stack;
	m.size = s->stack ? s->stack_dyn_size : 0;
	for (;;) {
		struct unw_frame *f = &frames[n];
		enum step st;

		f->pc = pc;
		f->is_return = n > 0;
		err = find(find_ctx, pc - f->is_return, &f->code);
		if (err)
			return err;
		if (f->code.kind == UNW_CODE_DSO)
			f->code.file_off += f->is_return; /* the pc itself */
		n++;
		if (n == max) {
			*end = UNW_END_MAX;
			break;
		}
		st = step_one(u, f, cur, next, &m);
		if (st == STEP_ROOT) {
			*end = UNW_END_ROOT;
			break;
		}
		/* The stack pointer grows at each step, except from a leaf
		 * whose return address is still in the link register: its
		 * CFA can be its SP (docs/arm64.md §2.2). */
		if (st == STEP_FAIL || !reg_get(next, a->pc, &pc) ||
		    !reg_get(next, a->sp, &sp) || !pc ||
		    (sp <= cur->r[a->sp] &&
		     !(sp == cur->r[a->sp] && n == 1 && a->lr != ARCH_NOREG))) {
			*end = m.beyond ? UNW_END_CUT : pc == 0 && st == STEP_OK ?
				UNW_END_ROOT : UNW_END_LOST;
			break;
		}
		t = cur;
		cur = next;
		next = t;
	}
	u->stats.frames += n;
	switch (*end) {
	case UNW_END_ROOT: u->stats.end_root++; break;
	case UNW_END_CUT: u->stats.end_cut++; break;
	case UNW_END_LOST: u->stats.end_lost++; break;
	case UNW_END_MAX: u->stats.end_max++; break;
	}
	return (int)n;
}

/* Whether @fr's CFA is register @reg plus an offset. */
static bool cfa_on(Dwarf_Frame *fr, unsigned reg)
{
	Dwarf_Op *ops;
	size_t nops;

	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1)
		return false;
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31)
		return (unsigned)(ops[0].atom - DW_OP_breg0) == reg;
	return ops[0].atom == DW_OP_bregx && ops[0].number == reg;
}

int unw_leaf_caller(struct unw_ctx *u, const struct rec_sample *s, u64 regs_mask,
		    const struct unw_code *leaf, u64 *caller)
{
	const struct arch *a = u->arch;
	Dwarf_Op ops_mem[3], *ops;
	const struct rule *rule;
	Dwarf_CFI *eh;
	Dwarf_Frame *fr;
	struct regs r;
	size_t nops;
	u64 vaddr;
	int err, ra;

	if (a->lr == ARCH_NOREG || !s->regs_abi || !s->regs ||
	    leaf->kind != UNW_CODE_DSO)
		return 0;
	load_regs(&u->slots, a, s, regs_mask, &r);
	if (!reg_get(&r, a->lr, caller))
		return 0;
	/* A DSO whose file is not found: perf has no module to unwind. */
	err = sym_dso_unwind_info(u->sym, leaf->dso, leaf->file_off, &vaddr, &eh);
	if (err)
		return err == -ENOMEM ? err : 0;
	err = frame_for(u, leaf->dso, leaf->file_off, &fr, &rule);
	if (err < 0)
		return err;
	/* perf unwinds the leaf with libdw from pc, LR and SP = 0 only.
	 * No CFI for the pc, or a CFA on a register it lacks (x29 in
	 * glibc's big functions): libdw's aarch64 fallback (elfutils
	 * backends/aarch64_unwind.c) takes LR as the return address, so perf
	 * adds it. A CFA on SP: LR only when the return address is still in
	 * it (same_value: no operations, not undefined); saved on the stack,
	 * it cannot be read without a stack dump and perf adds nothing. */
	if (fr && cfa_on(fr, a->sp)) {
		ra = dwarf_frame_info(fr, NULL, NULL, NULL);
		if (ra != a->lr || dwarf_frame_register(fr, ra, ops_mem, &ops, &nops) ||
		    nops || ops)
			return 0;
	}
	*caller &= a->addr_mask;
	return *caller ? 1 : 0;
}
