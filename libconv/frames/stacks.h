/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stacks: from one sample to the folder ids of its frames, leaf first.
 *
 * Kernel frames come from the sample's callchain; user frames from the
 * callchain (frame-pointer recordings) or from the DWARF unwinder (the
 * sample has a user stack dump). Each address is resolved once per
 * (DSO, offset), kernel address, or JIT entry, and cached as interned
 * frame ids with flags (Python frame, interpreter-internal frame). A
 * stack that holds Python frames then loses its interpreter frames, as
 * py-spy --native shows stacks (docs/pyspy-formats.md §1.8).
 */
#ifndef PERFSPY_STACKS_H
#define PERFSPY_STACKS_H

#include <pthread.h>

#include "common/hash.h"
#include "machine.h"
#include "python.h"
#include "unwind.h"
#include "common/write.h"

struct perfspy_folder;
struct perfspy_stats;

struct stk_opts {
	bool no_kernel;
	bool keep_interpreter;
	bool python_only;
	bool no_lineno; /* `func (file)` for native frames too (py-spy --nolineno) */
};

struct stk_ctx {
	struct sym_ctx *sym;
	struct machine *mach;
	struct perfspy_folder *folder; /* NULL: unwind for statistics only */
	struct py_ctx *py;
	struct unw_ctx *unw;
	struct perfspy_stats *stats;
	struct stk_opts o;

	struct htab cache; /* struct stk_cache_ent */
	struct idmap raw_ips; /* an FK_DSO entry without a symbol: first -> ip */
	u32 *fids;  /* frame ids of all cached entries */
	u8 *fflags; /* flags per id */
	size_t nr_fids, cap_fids, cap_fflags;

	u32 *stack; /* the sample being built, leaf first */
	u8 *sflags;
	size_t cap_stack, cap_sflags;
	struct unw_frame *uframes;

	/* Frames emitted as inlined callees (issue 14, pprof Lines): a
	 * hash of the frame text -> its id (stk_frame_inlined). */
	struct idmap inlined;
	/* Frames that name a source file, not their library (issue 15,
	 * the flame graph's colours): hash of the text -> library id << 32
	 * | frame id (stk_frame_lib). */
	struct idmap src_frames;
	struct strset libs;
	/* native_frame's shortened source paths (short_filename(), which
	 * stats each parent directory): per path, where the short name
	 * starts in it. */
	struct strset short_paths;
	u32 *short_at;
	size_t cap_short_at;
	/* native_frame's texts by the strings they are made of (struct
	 * name_ent in stacks.c). */
	struct htab names;
	/* render_dso's view of recent DSOs' paths (dso_class() in
	 * stacks.c), in slots by the DSO's address. */
	struct stk_dso_class {
		const struct sym_dso *dso;
		const char *lib; /* the path's last part */
		u8 cls;		 /* DC_* */
	} dso_classes[16];

	s32 pid; /* the sample's process (for the unwinder's lookups) */
	u64 regs_mask; /* the sample's event's sample_regs_user */
	u64 unw_samples, unw_root, unw_cut, unw_lost;
	u32 max_stack_used;
	bool raw; /* render_dso named no symbol (push_frames) */

	/* push_callchain's memo of recent addresses (docs/design.md §6.8):
	 * STK_MEMO slots, allocated at the first callchain. */
	struct stk_memo *memo;
	/* Its memo of runs of STK_BLK_N entries (struct stk_blk in
	 * stacks.c), allocated with it. */
	struct stk_blk *blk;

	/* -j N (docs/design.md §6.4): names come from one symbolizer all
	 * sessions share (@rsym, under @rlock), so each DSO is opened and
	 * each address named once; @rdsos maps this session's DSOs to
	 * their twins there. NULL: c->sym names them. */
	struct sym_ctx *rsym;
	pthread_mutex_t *rlock;
	struct idmap rdsos;

	/* Names taken from the names log (docs/design.md §6.19), written
	 * by a session reading ahead: NULL names them here. @sample: the
	 * number of the sample being built, as the log counts them. */
	struct namer *namer;
	u64 sample;

	/* The naming session's record of what it named (stk_name_ahead):
	 * entries of one hash word, a fingerprint of (DSO, offset, return)
	 * (docs/design.md §6.26). */
	struct htab named;
};

/* Name frames through @rsym under @rlock from now on (stk_ctx.rsym). */
void stk_share_names(struct stk_ctx *c, struct sym_ctx *rsym, pthread_mutex_t *rlock);

/* The reading-ahead session's part (docs/design.md §6.19): name, with
 * c->sym, every user address of frame-pointer sample @smp (number
 * @sample) that no earlier sample had, in the order stk_build() would
 * need them, into @nm. Other samples (user stack dumps, LBR call stacks)
 * add nothing: the converting session names those itself. 0 or -ENOMEM. */
int stk_name_ahead(struct stk_ctx *c, const struct rd_evsel *ev,
		   const struct rec_sample *smp, u64 sample, struct namer *nm);

/* Forget every string and symbolizer not c->sym's (the names memo, the
 * shared symbolizer and its DSO twins, the names log): before the
 * symbolizer that owns them goes. */
void stk_drop_names(struct stk_ctx *c);

/* @unw is shared by the session (its CFI cache outlives conversions). */
int stk_init(struct stk_ctx *c, struct sym_ctx *sym, struct machine *mach,
	     struct unw_ctx *unw, struct perfspy_folder *folder,
	     const struct py_opts *py, const struct stk_opts *o,
	     struct perfspy_stats *stats);
void stk_free(struct stk_ctx *c);

/* Free what only building stacks needs (the address cache, buffers),
 * keeping what stk_merge() reads: a finished -j N worker's context. */
void stk_shed(struct stk_ctx *c);

/* Add what @src (another session's context over the same input, issue
 * 16's -j N) learnt to @dst: unwinding counts, the inlined and
 * source-file frame tables (@map: @src's folder ids -> @dst's, from
 * fold_merge) and the Python sources. 0 or -ENOMEM. */
int stk_merge(struct stk_ctx *dst, const struct stk_ctx *src, const u32 *map);

/* Was frame text @s emitted as an inlined callee of the frame above it
 * (one of sym_resolve's frames but the outermost)? A function inlined at
 * one call site and called at another has one text for both: it then
 * counts as inlined. */
bool stk_frame_inlined(const struct stk_ctx *c, const char *s, size_t len);

/* The library (base name) frame text @s came from, when the text names
 * a source file (`f (file.c:LINE)`); NULL when unknown. */
const char *stk_frame_lib(const struct stk_ctx *c, const char *s, size_t len);

/*
 * Build the frames of @smp (event @ev) into c->stack, leaf first, and
 * set *@n. With no folder only the unwinding statistics are updated.
 * Returns 0 or -ENOMEM.
 */
int stk_build(struct stk_ctx *c, const struct rd_evsel *ev,
	      const struct rec_sample *smp, size_t *n);

/*
 * Frames of one address whose map the caller knows (perf resolved it: the
 * dlfilter plugin), appended leaf first to c->stack at *@n like
 * stk_build()'s: a (DSO, file offset), a kernel address (dropped with
 * no_kernel), a JIT/perf-map symbol name (`py::...` becomes a Python
 * frame), or an address with no symbol in @lib (NULL: no map). Then
 * stk_finish() drops interpreter frames as stk_build() does and returns
 * the new length. 0 or -ENOMEM.
 */
int stk_push_dso(struct stk_ctx *c, struct sym_dso *dso, u64 file_off, u64 ip,
		 bool is_return, size_t *n);
int stk_push_kernel(struct stk_ctx *c, u64 ip, bool is_return, size_t *n);
int stk_push_symbol(struct stk_ctx *c, const char *name, size_t *n);
int stk_push_unknown(struct stk_ctx *c, const char *lib, u64 ip, size_t *n);
size_t stk_finish(struct stk_ctx *c, size_t n);

#endif
