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

#include <elfutils/libdw.h>

#define BUILD_ID_MAX 64

/* String maps: open addressing, keys and values owned by someone else
 * (symbols.c). */
struct strmap_ent {
	u64 hash;
	const char *key; /* NULL: empty slot */
	const char *val;
};

struct strmap {
	struct strmap_ent *tab;
	size_t cap; /* 0 or a power of two */
	size_t n;
};

/* An address range of a CU or subprogram DIE. */
struct die_range {
	u64 lo, hi;
	Dwarf_Die die;
};

/* Subprogram index of one CU, sorted by lo; built on first use. */
struct cu_fns {
	Dwarf_Off key; /* CU DIE offset + 1; 0: empty slot */
	struct die_range *v;
	size_t n;
};

/* Private to one piece: kern_sym to kallsyms.c, the others to symbols.c. */
struct sym_ent;
struct seg;
struct cache_ent;
struct kern_sym;

struct sym_dso {
	struct sym_dso *next; /* hash chain in ctx->dso_tab */
	u64 hash;
	const char *name;
	u8 bid[BUILD_ID_MAX];
	size_t bid_size; /* 0: unknown */
	bool opened, found, warned, no_dwarf, dw_tried;
	Elf *elf;   /* main binary: segments and symbols */
	Elf *dbg;   /* separate debug file: symbols and DWARF */
	Dwarf *dw;  /* from dbg if it has DWARF, else from elf */
	struct seg *segs;
	size_t nsegs;
	bool seg_guess; /* only a debug file: p_filesz was stripped */
	struct sym_ent *syms;
	size_t nsyms;
	struct cache_ent *cache;
	size_t cache_cap, cache_n;
	struct die_range *cus; /* fallback CU table (no .debug_aranges) */
	size_t ncus;
	bool cus_built;
	struct cu_fns *cufns;
	size_t cufns_cap, cufns_n;
	u8 *mem_image;      /* our copy of an in-memory ELF ([vdso]) */
	Dwarf_CFI *eh_cfi;  /* .eh_frame of the main binary (ours to end) */
	Dwarf_CFI *dbg_cfi; /* .debug_frame, owned by dw */
	bool cfi_tried;
};

struct sym_ctx {
	const struct log_sink *log;
	const char *symfs;	 /* NULL or a non-empty prefix */
	const char *buildid_dir; /* NULL if unknown */
	const char *kallsyms;	 /* "" disables */
	bool kallsyms_default;	 /* not chosen by the caller */
	struct arena arena;
	struct sym_dso **dso_tab;
	size_t dso_cap, ndsos;
	struct strmap demangled; /* mangled -> demangled */
	struct strmap paths;	 /* interned comp_dir-joined paths */
	bool kern_loaded, kern_real, kern_have_text;
	u64 kern_text;
	struct kern_sym *ksyms;
	size_t nksyms;
	struct sym_stats stats;
	bool no_debuginfod;
	struct sym_dfd *dfd; /* debuginfod.c's client, made on first use */
	struct sym_dso_info *dso_list; /* dso_list.c's last list */
	size_t dso_list_n;
};

/* symbols.c */
const char *sym_strmap_get(const struct strmap *m, const char *key, u64 h);
int sym_strmap_put(struct strmap *m, const char *key, u64 h, const char *val);
u64 sym_str_hash(const char *s);
/* Build ids equal modulo perf.data's zero padding. */
bool sym_bid_equal(const u8 *a, size_t na, const u8 *b, size_t nb);
/* Order of symbols at one address, best name first (perf's rule). */
int sym_rank_cmp(u8 ba, bool sa, const char *na, u8 bb, bool sb,
		 const char *nb);

/* dso_locate.c: find and open the DSO's ELF file and debug file (sets
 * dso->elf and dso->dbg, either may stay NULL). */
void sym_dso_locate(struct sym_ctx *ctx, struct sym_dso *dso);

/* demangle.c: @name demangled into *@out (ctx-owned, or @name itself when
 * it is not a `_Z` name). @stable: @name outlives the ctx. 0 or -ENOMEM. */
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

#endif
