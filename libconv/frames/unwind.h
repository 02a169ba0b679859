/* SPDX-License-Identifier: GPL-2.0 */
/*
 * DWARF unwinding of `--call-graph dwarf` samples: the user registers and
 * the copy of the user stack that perf took (PERF_SAMPLE_REGS_USER and
 * PERF_SAMPLE_STACK_USER, docs/perf-data-format.md §2.3) are walked
 * frame by frame with our own stepping loop:
 *
 *  - a pc in an ELF DSO steps by its CFI (.eh_frame, then .debug_frame),
 *    found and decoded by libdw (dwarf_cfi_addrframe) and evaluated here,
 *    with decoded frames cached per (DSO, address);
 *  - a pc in a CPython perf trampoline steps by the fixed rule of its
 *    variant (docs/cpython-perf.md §1.6-1.7), or by the CFI
 *    rows of its jitdump entry;
 *  - anything else falls back to one frame-pointer step.
 *
 * Registers are those of the recording's architecture (arch.h: x86-64
 * or aarch64, docs/arm64.md), set with unw_ctx_set_arch().
 */
#ifndef PERFSPY_UNWIND_H
#define PERFSPY_UNWIND_H

#include "arch.h"
#include "jit.h"
#include "perfdata/record.h"
#include "symbols.h"

/* x86-64 DWARF register numbers (psABI figure 3.36); aarch64's are
 * x0-x30 = 0-30, sp = 31 (arch.c). */
enum {
	UNW_RAX, UNW_RDX, UNW_RCX, UNW_RBX, UNW_RSI, UNW_RDI, UNW_RBP, UNW_RSP,
	UNW_R8, UNW_R9, UNW_R10, UNW_R11, UNW_R12, UNW_R13, UNW_R14, UNW_R15,
	UNW_RIP, UNW_NREGS
};

/* What a pc points into, as the caller's machine model knows it. */
struct unw_code {
	enum { UNW_CODE_NONE, UNW_CODE_DSO, UNW_CODE_JIT } kind;
	struct sym_dso *dso;	      /* UNW_CODE_DSO */
	u64 file_off;		      /* UNW_CODE_DSO: pc - map start + pgoff */
	const struct jit_entry *jit;  /* UNW_CODE_JIT */
};

/* Look @pc up for the sample's process; 0 or -ENOMEM. */
typedef int (*unw_find_fn)(void *ctx, u64 pc, struct unw_code *out);

enum unw_end {
	UNW_END_ROOT,	/* the CFI says the return address is undefined:
			   the thread's first frame */
	UNW_END_CUT,	/* the next frame lies beyond the stack dump */
	UNW_END_LOST,	/* no CFI, no usable frame pointer, or garbage */
	UNW_END_MAX,	/* the frame limit */
};

struct unw_frame {
	u64 pc;
	bool is_return; /* a return address (not the interrupted pc) */
	struct unw_code code;
};

struct unw_stats {
	u64 samples, frames, steps_cfi, steps_jit, steps_fp;
	u64 end_root, end_cut, end_lost, end_max;
};

struct unw_ctx;

int unw_ctx_new(struct sym_ctx *sym, struct unw_ctx **out);
void unw_ctx_free(struct unw_ctx *u);
void unw_ctx_stats(const struct unw_ctx *u, struct unw_stats *out);
/* The architecture samples are unwound for (default: arch_host()). */
void unw_ctx_set_arch(struct unw_ctx *u, const struct arch *a);
const struct arch *unw_ctx_arch(const struct unw_ctx *u);

/*
 * The leaf's caller from the link register, for frame-pointer samples on
 * an architecture that has one (aarch64 `perf record -g` samples LR):
 * 1 with *@caller = LR when perf script's unwind of the leaf (@leaf, the
 * sample's user pc) from pc and LR alone gives LR: the CFI row says the
 * return address is still in the link register, or no CFI covers the pc,
 * or its CFA is on a register perf does not have (docs/arm64.md §2.3);
 * 0 when the return address is saved on the stack, the DSO's file is
 * missing or the sample has no LR; -ENOMEM.
 */
int unw_leaf_caller(struct unw_ctx *u, const struct rec_sample *s, u64 regs_mask,
		    const struct unw_code *leaf, u64 *caller);

/*
 * Unwind the user part of sample @s of an event with register mask
 * @regs_mask (attr.sample_regs_user). Fills up to @max frames, leaf
 * first; returns the number of frames (0 when the sample has no user
 * registers or stack) or -ENOMEM; *@end tells why the walk stopped.
 */
int unw_sample(struct unw_ctx *u, const struct rec_sample *s, u64 regs_mask,
	       unw_find_fn find, void *find_ctx, struct unw_frame *frames,
	       u32 max, enum unw_end *end);

#endif
