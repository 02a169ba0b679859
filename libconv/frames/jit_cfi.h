/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to jit.c and jit_cfi.c; never installed. The state of the small
 * DWARF call-frame interpreter (jit_cfi.c), which the jitdump reader
 * (jit.c) keeps across records so that its row buffer is reused, and the
 * one entry point that decodes an .eh_frame into struct jit_cfi_row rows.
 */
#ifndef PERFSPY_JIT_CFI_H
#define PERFSPY_JIT_CFI_H

#include "jit.h"

#define CFA_STACK 8

struct cfa_regs {
	bool cfa_ok; /* false: undefined or a DWARF expression */
	u64 cfa_reg;
	s64 cfa_off;
	u8 ra, fp;   /* RULE_* for the RA column and the frame pointer */
	s64 ra_off, fp_off;
};

struct cfa_vm {
	const struct cie *cie;
	u64 fp_reg;
	u64 loc, end; /* the current offset; rows stop at end */
	struct cfa_regs cur, init, stack[CFA_STACK];
	unsigned depth;
	struct jit_cfi_row *rows; /* growing scratch */
	size_t nr, cap;
	bool fail, nomem;
};

/*
 * Rows for the code of @code_size bytes described by the first FDE of the
 * .eh_frame @eh. Returns 0 with the rows in vm->rows[0..vm->nr), 1 when the
 * CFI cannot be used (with @why set), or -ENOMEM. vm->rows is scratch,
 * reused by the next call; the caller frees it when done.
 */
int jit_cfi_decode(struct cfa_vm *vm, const u8 *eh, size_t len, u64 code_size,
		   const char **why);

#endif
