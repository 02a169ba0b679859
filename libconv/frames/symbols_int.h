/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to the symbolizer (symbols.c, dso_locate.c, demangle.c,
 * dwarf_lines.c, kallsyms.c); never installed. symbols.h stays the
 * module's interface for the rest of the library.
 *
 * The context and DSO structures the pieces share, and the few functions
 * one piece provides to another. Ownership is as in symbols.c: the ctx
 * owns every DSO, its ELF/DWARF handles and the arena that holds interned
 * strings, until sym_ctx_free().
 */
#ifndef PERFSPY_SYMBOLS_INT_H
#define PERFSPY_SYMBOLS_INT_H

#include "symbols.h"
#include "common/hash.h"

#include <elfutils/libdw.h>
#include <pthread.h>

#define BUILD_ID_MAX 64

/* An address range of a CU or subprogram DIE. */
struct die_range {
	u64 lo, hi;
	Dwarf_Die die;
};

/* Subprogram index of one CU, sorted by lo; built on first use. An
 * entry of sym_dso.cufns (dwarf_lines.c fills it, symbols.c frees it). */
struct cu_fns {
	u64 hash;
	Dwarf_Off key; /* CU DIE offset */
	struct die_range *v;
	size_t n;
};

/* Private to one piece: kern_sym to kallsyms.c, the others to symbols.c. */
struct sym_ent;
struct seg;
struct cache_ent;
struct kern_sym;

/* A file's inflated debug sections, one big_zalloc() buffer. */
struct zbuf {
	void *p;
	size_t n;
	bool mapped;
};

struct sym_dso {
	const char *name;
	u8 bid[BUILD_ID_MAX];
	size_t bid_size; /* 0: unknown */
	/* "/proc/PID/root" of a live process in another mount namespace
	 * (a container) that maps it, whose path is under that root
	 * (sym_dso_set_root()); NULL. In ctx->arena. */
	const char *root;
	/* A live session's /proc/PID/map_files/START-END of one mapping of
	 * it: the mapped file itself, even once deleted or replaced
	 * (sym_dso_set_mapped()); NULL. In ctx->arena. */
	const char *mapped;
	bool opened, found, warned, no_dwarf, dw_tried, dbg_cfi_tried;
	Elf *elf;   /* main binary: segments and symbols */
	Elf *dbg;   /* separate debug file: symbols and DWARF */
	Dwarf *dw;  /* from dbg if it has DWARF, else from elf */
	struct seg *segs;
	size_t nsegs;
	bool seg_guess; /* only a debug file: p_filesz was stripped */
	struct sym_ent *syms;
	size_t nsyms;
	struct htab cache; /* (file offset, is_return) -> struct cache_ent */
	struct die_range *cus; /* fallback CU table (no .debug_aranges) */
	size_t ncus;
	bool cus_built;
	struct htab cufns; /* CU DIE offset -> struct cu_fns; lazily set up */
	u8 *mem_image;      /* our copy of an in-memory ELF ([vdso]) */
	struct zbuf *zbufs; /* debug sections we inflated for libdw */
	size_t nzbufs, zcap;
	Dwarf_CFI *eh_cfi;  /* .eh_frame of the main binary (ours to end) */
	Dwarf_CFI *dbg_cfi; /* .debug_frame, owned by dw */
	bool cfi_tried;
	/* .eh_frame_hdr's search table (initial location, FDE) of the main
	 * binary: names unnamed code by its function's start (symbols.c). */
	const u8 *fde_tab;  /* in libelf's data; NULL: none or unusable */
	size_t fde_n;
	u64 fde_base;	    /* the address table entries are relative to */
	bool fde_big;	    /* big-endian file */
	bool fde_tried;
	const u8 *ehf;	    /* .eh_frame's bytes (libelf's raw data) */
	size_t ehf_len;
	u64 ehf_addr;	    /* its address */
	bool fde_64;	    /* ELFCLASS64: DW_EH_PE_absptr is 8 bytes */
	/* [.init, .fini][start, end) of the main binary, 0s if none
	 * (load_fde_tab()): named without symbols or FDEs. */
	u64 initfini[2][2];
	/* Table entry -> the end of its FDE's range (fde_end()), or
	 * FDE_END_NONE when it cannot be read; only the entries asked for
	 * (a stripped compiler's table has tens of thousands, a conversion
	 * asks for a few thousand: an array of them all was 1.7 MB of
	 * zeroed pages on the build bench file). */
	struct idmap fde_ends;
	/* unnamed_frame()'s names, by the FDE's start: one string per
	 * function, so that its addresses name it with the same pointer
	 * (stacks.c's native_frame() finds the frame by it). */
	struct idmap fde_names;
	/* dso_ahead.c: the thread's state for this DSO (AHEAD_*, atomic;
	 * 0: never queued), and what its open said and counted, kept
	 * for symbols.c's ahead_take() to pass on. `unseen`: made for the thread
	 * only, not yet named by sym_dso_get() (not counted or listed). */
	int ahead;
	struct sym_ahead *ahead_by; /* while queued or busy */
	bool ahead_helped; /* opened by the helper (sym_ahead.help), not the thread */
	bool unseen;
	int ahead_err;
	struct ahead_note *notes;
	size_t nnotes, cap_notes;
	struct sym_stats ahead_stats;
};

struct sym_ctx {
	const struct log_sink *log;
	const char *symfs;	 /* NULL or a non-empty prefix */
	const char *buildid_dir; /* NULL if unknown */
	const char *kallsyms;	 /* "" disables */
	bool kallsyms_default;	 /* not chosen by the caller */
	struct arena arena;
	struct htab dsos;      /* (name, build id) -> struct sym_dso * */
	struct htab demangled; /* mangled -> demangled (demangle.c) */
	struct strset paths;   /* interned comp_dir-joined paths */
	bool kern_loaded, kern_real, kern_have_text;
	u64 kern_text;
	/* The recorded kernel (kallsyms.c): build id, OS release, whether
	 * the symbols come from the build-id cache entry of that id, and the
	 * last verdict of sym_kernel_usable() with its reason. */
	u8 kern_bid[20];
	size_t kern_bid_size;
	const char *kern_release;
	bool kern_from_cache, kern_ok;
	const char *kern_why;
	struct kern_sym *ksyms;
	size_t nksyms;
	/* Names read from the kallsyms file when first needed (a regular
	 * file; kallsyms.c), cached by symbol index; kern_fd open meanwhile
	 * (sym_ctx_free() closes it). */
	bool kern_lazy;
	int kern_fd;
	/* The errno of the table's load (its open or a read), not said
	 * yet (kallsyms.c) */
	int kern_errno;
	/* Work to do instead of idling while the converting thread waits
	 * for a DSO opened ahead (settle()): kallsyms.c's table load once
	 * sym_kernel_prefetch() asked for it, else NULL. (A pointer:
	 * symbols.c sits below kallsyms.c.) */
	void (*while_waiting)(struct sym_ctx *ctx);
	struct idmap kern_names;
	struct sym_stats stats;
	bool no_debuginfod;
	struct sym_dfd *dfd; /* debuginfod.c's client, made on first use */
	struct sym_dso_info *dso_list; /* dso_list.c's last list */
	size_t dso_list_n;
	struct sym_ahead *ahead; /* dso_ahead.c's thread, NULL if none */
};

/* symbols.c */
/* Order of symbols at one address, best name first (perf's rule). */
int sym_rank_cmp(u8 ba, bool sa, const char *na, u8 bb, bool sb,
		 const char *nb);

/* dso_locate.c: find and open the DSO's ELF file and debug file (sets
 * dso->elf and dso->dbg, either may stay NULL). In two steps for
 * dso_ahead.c: the local candidates (true when the servers may be asked
 * next), then the end (drops a debug file that is of no use alone). */
void sym_dso_locate(struct sym_ctx *ctx, struct sym_dso *dso);
bool sym_dso_locate_local(struct sym_ctx *ctx, struct sym_dso *dso);
void sym_dso_locate_end(struct sym_dso *dso);
/* Length of build id @b without perf.data's zero padding. */
size_t sym_bid_trim(const u8 *b, size_t n);
/* Build ids equal modulo that padding. */
bool sym_bid_equal(const u8 *a, size_t na, const u8 *b, size_t nb);

/* demangle.c: @name demangled into *@out (ctx-owned, or @name itself when
 * it is not a `_Z` name). @stable: @name outlives the ctx. 0 or -ENOMEM.
 * The cache is ctx->demangled, set up here on first use. */
int sym_demangle_name(struct sym_ctx *ctx, const char *name, bool stable,
		      const char **out);

/* dwarf_lines.c: frames for ELF address @pc of @d from its DWARF,
 * innermost first, the last named @outer when not NULL. Returns the
 * number of frames, 0 if DWARF knows nothing, or -ENOMEM. */
int sym_dwarf_frames(struct sym_ctx *ctx, struct sym_dso *d, u64 pc,
		     const char *outer, struct sym_frame *fr);

/* debuginfod.c: ask $DEBUGINFOD_URLS servers for what sym_dso_locate()
 * did not find (dso->elf, dso->dbg); the client's end. */
void sym_debuginfod_locate(struct sym_ctx *ctx, struct sym_dso *dso);
void sym_debuginfod_end(struct sym_ctx *ctx);
/* Whether servers are to be asked at all ($DEBUGINFOD_URLS, the option),
 * and whether sym_debuginfod_locate() would ask them for @dso when they
 * are: reads @dso only, for any thread. */
bool sym_debuginfod_wanted(const struct sym_ctx *ctx);
bool sym_debuginfod_lacks(const struct sym_dso *dso);

/* symbols.c, for dso_ahead.c: sym_dso_get() that counts and lists the
 * DSO only when @seen (else when sym_dso_get() names it); after
 * sym_dso_locate(), the segments and symbols (counted in @ctx->stats);
 * the DSO's DWARF, opened once. */
int sym_dso_make(struct sym_ctx *ctx, const char *filename, const u8 *build_id,
		 size_t build_id_size, bool seen, struct sym_dso **out);
int sym_dso_load(struct sym_ctx *ctx, struct sym_dso *dso);
Dwarf *sym_dso_dwarf(struct sym_dso *d);

/* DSOs opened on a thread ahead of their first use (docs/design.md
 * §6.14): the thread's side in dso_ahead.c, the converting thread's (the
 * gate every use of an unopened DSO passes, the hand-over, the end) in
 * symbols.c. A DSO's state, sym_dso.ahead: */
enum {
	AHEAD_NONE,    /* never queued */
	AHEAD_QUEUED,
	AHEAD_BUSY,    /* the thread opens it */
	AHEAD_DONE,
	AHEAD_PARTIAL, /* located locally; debuginfod and the rest to do */
	AHEAD_MINE,    /* the converting thread's */
};

struct ahead_note {
	int level;
	char *text;
};

struct sym_ahead {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a DSO left AHEAD_BUSY */
	bool stop;	   /* (atomic) */
	bool joined;
	/* dso_ahead.c's, called by the converting thread when it first
	 * waits for a DSO the thread holds: a second thread opens the
	 * DSOs still queued, from the header's front (the order the
	 * conversion needs them in), as the first would, handing them
	 * over the same way. Once; nothing if it cannot start. (A pointer:
	 * symbols.c sits below dso_ahead.c.) */
	void (*help)(struct sym_ahead *a);
	pthread_t helper; /* while helping */
	bool helping;
	bool debuginfod;   /* the session asks servers: sym_debuginfod_wanted() */
	struct sym_dso **q;
	size_t n;
	size_t front;	      /* sym_open_ahead()'s @front */
	struct sym_dso **order; /* what the thread opened, in its order */
	size_t norder;
	/* Who opens: [0] the thread, [1] the helper (help). Each has its
	 * own options ctx (and counters), log and DSO the log keeps for. */
	struct ahead_opener {
		struct sym_ahead *a;
		struct sym_ctx own;
		struct log_sink log;
		struct sym_dso *cur;
	} by[2];
};

/* A DSO whose open inflates this many bytes of debug sections or more
 * ends the thread's start at the header's front (dso_ahead.c). */
#define AHEAD_BIG ((size_t)4 << 20)

/* symbols.c: stop and join the thread, free it (sym_ctx_free()). */
void sym_ahead_stop(struct sym_ctx *ctx);

/* The DSOs in table order, from *@pos = 0 on; NULL after the last. */
struct sym_dso *sym_dso_next(const struct sym_ctx *ctx, size_t *pos);

#endif
