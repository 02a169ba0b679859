/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The register facts the unwinder needs for each architecture a recording
 * can come from, whatever machine converts it (docs/arm64.md §1-§2):
 * which perf_regs bit holds which DWARF register, the stack, frame and
 * return-address registers, the callee-saved set a step carries over and
 * the bits of a code address. The unwinder indexes its registers by DWARF
 * number; a slot past the DWARF registers holds the pc where the
 * architecture has no DWARF number for it (aarch64).
 */
#ifndef PERFSPY_ARCH_H
#define PERFSPY_ARCH_H

#include "common/util.h"

/* aarch64: x0-x30 and sp (DWARF 0-31), then the pc slot (32). */
#define ARCH_MAXREGS 33
#define ARCH_NOREG 0xff
#define ARCH_MAXSAVED 11

enum arch_id { ARCH_X86_64, ARCH_ARM64 };

struct arch {
	enum arch_id id;
	const char *name;
	u16 e_machine;
	u8 nregs;	/* register slots used, the pc slot included */
	u8 sp, fp, pc;	/* slots (DWARF numbers; pc may be a slot of ours) */
	u8 lr;		/* the link register (aarch64 x30), else ARCH_NOREG */
	u8 perf_bit[ARCH_MAXREGS]; /* perf_regs bit of each slot, ARCH_NOREG: none */
	u8 saved[ARCH_MAXSAVED];   /* callee-saved registers a step carries */
	u8 nsaved;
	u64 addr_mask;	   /* bits of a user code address (PAC bits dropped) */
	u64 regs_user;	   /* perf's PERF_REGS_MASK: what `--call-graph dwarf` samples */
};

const struct arch *arch_x86_64(void);
const struct arch *arch_arm64(void);
/* By `uname -m` / HEADER_ARCH ("x86_64", "aarch64", "arm64"); NULL if
 * none of ours. */
const struct arch *arch_by_name(const char *name);
/* By ELF e_machine (EM_X86_64, EM_AARCH64); NULL if none of ours. */
const struct arch *arch_by_machine(unsigned e_machine);
/* The machine perfspy was built for, else x86-64. */
const struct arch *arch_host(void);

#endif
