// SPDX-License-Identifier: GPL-2.0
/*
 * A small DWARF call-frame interpreter for jitdump unwinding info: the
 * .eh_frame CPython puts in JIT_CODE_UNWINDING_INFO (one CIE and one FDE
 * per trampoline, docs/cpython-perf.md §2) becomes a table of
 * struct jit_cfi_row. The CFA model is DWARF 5 §6.4, the pointer encodings
 * LSB 3.0 "Exception Frames".
 *
 * Invariants: every read from the .eh_frame goes through struct cur or an
 * explicit bound check. Only rules the row format can express are decoded
 * (CFA = register + offset, RA and frame pointer saved at CFA + offset or
 * unchanged); anything else fails the whole decode, never approximated.
 */
#include "jit_cfi.h"

#include <errno.h>
#include <string.h>

/* ---- DWARF readers (DWARF 5 §7.6 LEB128; LSB 3.0 DW_EH_PE_*) ---- */

/* LEB128 (DWARF 5 §7.6); bits past 64 are dropped, the walk is bounded
 * by the cursor. */
static u64 cur_leb(struct cur *c, bool sign)
{
	u64 v = 0;
	unsigned shift = 0;
	u8 b;

	do {
		b = cur_u8(c);
		if (c->bad)
			return 0;
		if (shift < 64) {
			v |= (u64)(b & 0x7f) << shift;
			shift += 7;
		}
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~(u64)0 << shift;
	return v;
}

#define cur_uleb(c) cur_leb(c, false)
#define cur_sleb(c) ((s64)cur_leb(c, true))

/*
 * Skip or read an encoded pointer (LSB 3.0 "DWARF Exception Header
 * Encoding"), format bits only: the only one used, pc_range, takes no
 * application, and pc_begin is not needed because the FDE describes the
 * CODE_LOAD that follows it. CPython uses pcrel|sdata4 (0x1b).
 */
static bool read_enc(struct cur *c, u8 enc, u64 *out)
{
	switch (enc & 0x0f) {
	case 0x00: /* absptr: 8 bytes on x86-64 and aarch64 */
	case 0x04: /* udata8 */
	case 0x0c: *out = cur_u64(c); break; /* sdata8 */
	case 0x01: *out = cur_uleb(c); break;
	case 0x02: *out = cur_u16(c); break;
	case 0x03: *out = cur_u32(c); break;
	case 0x09: *out = (u64)cur_sleb(c); break;
	case 0x0a: *out = (u64)(s64)(int16_t)cur_u16(c); break;
	case 0x0b: *out = (u64)(s64)(s32)cur_u32(c); break;
	default: return false;
	}
	return enc != 0xff && !c->bad; /* DW_EH_PE_omit: no address at all */
}

/* ---- .eh_frame: one CIE and the first FDE ---- */

struct cie {
	u64 code_align;
	s64 data_align;
	u64 ra_reg;
	u8 fde_enc; /* 'R' augmentation; absptr without it */
	bool aug_z;
	struct cur insn; /* initial instructions */
};

/* Body of the CIE/FDE at @off (after its length), or false. 32-bit DWARF
 * only: the 64-bit escape 0xffffffff is refused (CPython never uses it). */
static bool eh_body(const u8 *eh, size_t len, size_t off, struct cur *body)
{
	u32 l;

	if (off > len || len - off < 8)
		return false;
	l = get_u32(eh + off);
	if (l < 4 || l == 0xffffffff || l > len - off - 4)
		return false;
	cur_init(body, eh + off + 4, l);
	return true;
}

static bool find_fde(const u8 *eh, size_t len, struct cur *cie, struct cur *fde)
{
	size_t off = 0;
	u32 id;

	/* Each step moves at least 8 bytes; a zero length ends the table. */
	while (eh_body(eh, len, off, fde)) {
		id = get_u32(fde->p);
		if (id) {
			/* The CIE pointer counts back from its own field. */
			if (id > off + 4 || !eh_body(eh, len, off + 4 - id, cie) ||
			    get_u32(cie->p) != 0)
				return false;
			cur_skip(cie, 4);
			cur_skip(fde, 4);
			return true;
		}
		off += 4 + (size_t)(fde->end - fde->p);
	}
	return false;
}

static bool parse_cie(struct cur *c, struct cie *cie)
{
	u8 ver = cur_u8(c);
	const char *aug = (const char *)c->p, *a;
	const u8 *nul = c->bad ? NULL : memchr(c->p, 0, cur_left(c));
	struct cur ad;
	u64 alen;

	if (!nul || (ver != 1 && ver != 3))
		return false;
	cur_skip(c, (size_t)(nul - c->p) + 1);
	cie->code_align = cur_uleb(c);
	cie->data_align = cur_sleb(c);
	cie->ra_reg = ver == 1 ? cur_u8(c) : cur_uleb(c);
	cie->fde_enc = 0;
	cie->aug_z = aug[0] == 'z';
	if (aug[0] && !cie->aug_z)
		return false; /* cannot find the instructions */
	if (cie->aug_z) {
		alen = cur_uleb(c);
		if (c->bad || alen > cur_left(c))
			return false;
		cur_init(&ad, c->p, (size_t)alen);
		cur_skip(c, (size_t)alen);
		/* CPython writes "zR" (docs/cpython-perf.md §2). 'S' has no data; other
		 * letters ('P', 'L') would shift 'R' and are refused. */
		for (a = aug + 1; *a; a++) {
			if (*a == 'R')
				cie->fde_enc = cur_u8(&ad);
			else if (*a != 'S')
				return false;
		}
		if (ad.bad)
			return false;
	}
	cie->insn = *c;
	return !c->bad;
}

/* ---- the CFA interpreter (DWARF 5 §6.4.2) ---- */

enum { RULE_SAME, RULE_OFFSET, RULE_OTHER };

static bool fits32(s64 v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static bool make_row(const struct cfa_regs *r, u64 start, u64 end,
		     struct jit_cfi_row *row)
{
	if (!r->cfa_ok || r->cfa_reg > 255 || !fits32(r->cfa_off) ||
	    r->ra != RULE_OFFSET || !fits32(r->ra_off) || r->fp == RULE_OTHER ||
	    (r->fp == RULE_OFFSET && !fits32(r->fp_off)))
		return false;
	*row = (struct jit_cfi_row){
		.start = (u32)start, .end = (u32)end, .cfa_reg = (u8)r->cfa_reg,
		.cfa_off = (s32)r->cfa_off, .ra_off = (s32)r->ra_off,
		.fp_saved = r->fp == RULE_OFFSET,
		.fp_off = r->fp == RULE_OFFSET ? (s32)r->fp_off : 0,
	};
	return true;
}

/* Close the row [loc, to) under the current rules and move to @to. */
static void vm_advance(struct cfa_vm *vm, u64 to)
{
	u64 hi = to < vm->end ? to : vm->end;
	struct jit_cfi_row row, *last;

	if (hi > vm->loc) { /* to >= loc: every advance is forward */
		if (!make_row(&vm->cur, vm->loc, hi, &row)) {
			vm->fail = true;
			return;
		}
		last = vm->nr ? &vm->rows[vm->nr - 1] : NULL;
		if (last && last->cfa_reg == row.cfa_reg && last->cfa_off == row.cfa_off &&
		    last->ra_off == row.ra_off && last->fp_saved == row.fp_saved &&
		    last->fp_off == row.fp_off) {
			last->end = row.end;
		} else if (ensure_mem((void **)&vm->rows, &vm->cap, sizeof(row), vm->nr + 1)) {
			vm->fail = vm->nomem = true;
			return;
		} else {
			vm->rows[vm->nr++] = row;
		}
	}
	vm->loc = to;
}

static void vm_advance_by(struct cfa_vm *vm, u64 delta)
{
	u64 d;

	if (__builtin_mul_overflow(delta, vm->cie->code_align, &d) ||
	    d > UINT64_MAX - vm->loc)
		d = UINT64_MAX - vm->loc; /* far past the end: only closes rows */
	vm_advance(vm, vm->loc + d);
}

/* A register rule; only the RA column and the frame pointer matter. */
static void vm_set(struct cfa_vm *vm, u64 reg, u8 rule, s64 off)
{
	if (reg == vm->cie->ra_reg) {
		vm->cur.ra = rule;
		vm->cur.ra_off = off;
	} else if (reg == vm->fp_reg) {
		vm->cur.fp = rule;
		vm->cur.fp_off = off;
	}
}

static void vm_restore(struct cfa_vm *vm, u64 reg)
{
	if (reg == vm->cie->ra_reg)
		vm_set(vm, reg, vm->init.ra, vm->init.ra_off);
	else if (reg == vm->fp_reg)
		vm_set(vm, reg, vm->init.fp, vm->init.fp_off);
}

/* A factored offset: @v times the CIE's data alignment. */
static s64 vm_factor(struct cfa_vm *vm, s64 v)
{
	s64 r;

	if (__builtin_mul_overflow(v, vm->cie->data_align, &r))
		vm->fail = true;
	return r;
}

static s64 vm_uoff(struct cfa_vm *vm, u64 v)
{
	if (v > INT64_MAX)
		vm->fail = true;
	return (s64)v;
}

/*
 * Opcodes without an operand in the low 6 bits (DWARF 5 table 7.29). Only
 * what compilers and CPython emit for simple code is decoded; anything
 * else (expressions, register rules, set_loc) fails the decode, which is
 * what the row format would need anyway.
 */
static void vm_op(struct cfa_vm *vm, struct cur *c, u8 op)
{
	u64 reg;

	switch (op) {
	case 0x00: break; /* nop */
	case 0x02: vm_advance_by(vm, cur_u8(c)); break;
	case 0x03: vm_advance_by(vm, cur_u16(c)); break;
	case 0x04: vm_advance_by(vm, cur_u32(c)); break;
	case 0x05: /* offset_extended */
		reg = cur_uleb(c);
		vm_set(vm, reg, RULE_OFFSET, vm_factor(vm, vm_uoff(vm, cur_uleb(c))));
		break;
	case 0x06: vm_restore(vm, cur_uleb(c)); break; /* restore_extended */
	case 0x08: vm_set(vm, cur_uleb(c), RULE_SAME, 0); break; /* same_value */
	case 0x0a: /* remember_state */
		if (vm->depth == CFA_STACK)
			vm->fail = true;
		else
			vm->stack[vm->depth++] = vm->cur;
		break;
	case 0x0b: /* restore_state; the CFA rule comes back too, which the
		    * remember/restore pairs GCC puts around epilogues rely on */
		if (!vm->depth)
			vm->fail = true;
		else
			vm->cur = vm->stack[--vm->depth];
		break;
	case 0x0c: /* def_cfa */
	case 0x12: /* def_cfa_sf */
		vm->cur.cfa_reg = cur_uleb(c);
		vm->cur.cfa_ok = true;
		/* fall through */
	case 0x0e: /* def_cfa_offset */
	case 0x13: /* def_cfa_offset_sf */
		vm->cur.cfa_off = op == 0x0c || op == 0x0e ? vm_uoff(vm, cur_uleb(c))
							   : vm_factor(vm, cur_sleb(c));
		break;
	case 0x0d: vm->cur.cfa_reg = cur_uleb(c); break; /* def_cfa_register */
	case 0x11: /* offset_extended_sf */
		reg = cur_uleb(c);
		vm_set(vm, reg, RULE_OFFSET, vm_factor(vm, cur_sleb(c)));
		break;
	case 0x2d: break; /* GNU_window_save / AARCH64_negate_ra_state: PAC state only */
	case 0x2e: cur_uleb(c); break; /* GNU_args_size */
	default: vm->fail = true;
	}
}

static void vm_run(struct cfa_vm *vm, struct cur *c)
{
	u8 op;

	while (!vm->fail && !c->bad && cur_left(c) && vm->loc < vm->end) {
		op = cur_u8(c);
		switch (op >> 6) {
		case 1: vm_advance_by(vm, op & 0x3f); break; /* advance_loc */
		case 2: /* offset */
			vm_set(vm, op & 0x3f, RULE_OFFSET,
			       vm_factor(vm, vm_uoff(vm, cur_uleb(c))));
			break;
		case 3: vm_restore(vm, op & 0x3f); break;
		default: vm_op(vm, c, op);
		}
	}
	if (c->bad)
		vm->fail = true;
}

int jit_cfi_decode(struct cfa_vm *vm, const u8 *eh, size_t len, u64 code_size,
		   const char **why)
{
	struct cie cie;
	struct cur cc, fc;
	u64 range, alen;

	*why = "no CIE/FDE pair";
	if (!find_fde(eh, len, &cc, &fc))
		return 1;
	*why = "unsupported CIE";
	if (!parse_cie(&cc, &cie))
		return 1;
	*why = "bad FDE";
	if (!read_enc(&fc, cie.fde_enc, &range) || /* pc_begin: unused */
	    !read_enc(&fc, cie.fde_enc, &range))
		return 1;
	if (cie.aug_z) {
		alen = cur_uleb(&fc);
		if (fc.bad || alen > cur_left(&fc))
			return 1;
		cur_skip(&fc, (size_t)alen);
	}
	vm->cie = &cie;
	/* The frame pointer by the RA column: x86-64 RA 16 -> rbp 6 (SysV
	 * psABI Figure 3.36); aarch64 RA 30 -> x29 (DWARF for AArch64). */
	vm->fp_reg = cie.ra_reg == 16 ? 6 : cie.ra_reg == 30 ? 29 : UINT64_MAX;
	vm->end = range < code_size ? range : code_size;
	if (vm->end > UINT32_MAX)
		vm->end = UINT32_MAX;
	vm->loc = vm->nr = vm->depth = 0;
	vm->fail = vm->nomem = false;
	vm->cur = (struct cfa_regs){ .ra = RULE_OTHER, .fp = RULE_SAME };
	vm->init = vm->cur;
	vm_run(vm, &cie.insn);
	vm->init = vm->cur;
	vm->loc = 0; /* advances belong in FDEs; ignore any in the CIE */
	vm->nr = 0;
	vm_run(vm, &fc);
	if (!vm->fail && vm->loc < vm->end)
		vm_advance(vm, vm->end);
	if (vm->nomem)
		return -ENOMEM;
	*why = "CFI the row format cannot express (or malformed instructions)";
	return vm->fail || !vm->nr ? 1 : 0;
}
