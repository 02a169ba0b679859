/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Symbolizer: turns (binary, file offset) into function names, source
 * files, lines and inlined frames, and kernel addresses into kallsyms
 * names.
 *
 * One struct sym_ctx per session. It owns every DSO it has opened, their
 * ELF/DWARF handles (libelf/libdw), sorted symbol tables and a per-DSO
 * cache of resolved addresses, so each (DSO, offset) is looked up once.
 * Binaries are located by build id first (buildid_dir, [symfs]/usr/lib/debug,
 * symfs), then by path (prefixed with symfs when given). A binary whose
 * build id differs from the recorded one is not used; this is reported
 * once per binary through the log sink.
 *
 * Strings returned (function, file) belong to the ctx and stay valid
 * until sym_ctx_free().
 */
#ifndef PERFSPY_SYMBOLS_H
#define PERFSPY_SYMBOLS_H

#include "common/util.h"

struct sym_ctx;
struct sym_dso;

struct sym_opts {
	const char *symfs;	 /* NULL or a root prefix for binary paths */
	const char *buildid_dir; /* NULL: $HOME/.debug */
	const char *kallsyms;	 /* NULL: /proc/kallsyms; "" disables */
	const struct log_sink *log; /* may be NULL */
	bool no_debuginfod;	    /* never ask $DEBUGINFOD_URLS servers */
};

int sym_ctx_new(const struct sym_opts *opts, struct sym_ctx **out);
void sym_ctx_free(struct sym_ctx *ctx);

/* Counters for the session's stats; all monotonic. */
struct sym_stats {
	u64 dsos;	       /* distinct (file name, build id) DSOs */
	u64 dsos_found;	       /* opened with an ELF file */
	u64 dsos_missing;      /* no usable file (absent, pseudo, wrong build id) */
	u64 build_id_mismatch; /* candidate files rejected for their build id */
	u64 resolves;	       /* sym_resolve() calls */
	u64 cache_misses;      /* of those, resolved without the cache */
	u64 dsos_ahead;	       /* opened by sym_open_ahead()'s thread */
	u64 dsos_helped;       /* of those, opened while waiting for it */
};

void sym_ctx_stats(const struct sym_ctx *ctx, struct sym_stats *out);

/* Every DSO seen so far, sorted by path (dso_list.c): its recorded path
 * and build id (hex, NULL if unknown). The array is the ctx's, valid
 * until the next call or sym_ctx_free(). 0 or -ENOMEM. */
struct sym_dso_info {
	const char *path;
	const char *build_id;
};
int sym_dso_list(struct sym_ctx *ctx, const struct sym_dso_info **out, size_t *n);
/* Entry @idx of that list as the public struct perfspy_dso (perfspy.h:
 * filled up to d->sz); -ENOENT past the end, -PERFSPY_E_OPTS for a bad sz. */
struct perfspy_dso;
int sym_dso_at(struct sym_ctx *ctx, u32 idx, struct perfspy_dso *d);

/*
 * The DSO for a mapped file. @build_id may be NULL (unknown). The same
 * (filename, build id) always returns the same pointer. A DSO whose file
 * cannot be found or opened is still returned; lookups in it resolve to
 * nothing. Only fails with -ENOMEM. Opening is lazy (first resolve).
 */
int sym_dso_get(struct sym_ctx *ctx, const char *filename,
		const u8 *build_id, size_t build_id_size,
		struct sym_dso **out);

/*
 * Open the DSOs @v[0..@n) (from a recording's header list: the files
 * its samples hit), in that order, on a thread of their own while the
 * caller goes on (dso_ahead.c, docs/design.md §6.14). With @front, up
 * to @front DSOs from @v's end come first, through the first whose open
 * inflates AHEAD_BIG bytes of debug sections (§6.24). Each is made as
 * sym_dso_get() would make it, but counted and listed only once
 * sym_dso_get() names it; whichever thread opens a DSO, its messages and
 * counters come when it is first used, as if opened then. Once per ctx;
 * stopped by sym_ctx_free(). 0 (also when no thread could be had) or
 * -ENOMEM.
 */
struct sym_ahead_dso {
	const char *name;
	const u8 *bid;
	size_t bid_size;
	bool no_dwarf; /* sym_dso_set_no_dwarf() */
};
int sym_open_ahead(struct sym_ctx *ctx, const struct sym_ahead_dso *v, size_t n,
		   size_t front);
/* Wait until that thread has opened every DSO still queued (tests). */
void sym_ahead_drain(struct sym_ctx *ctx);
/* After sym_ahead_drain(): the names of the DSOs the thread opened, in
 * its order, up to @max of them into @names; how many (tests). */
size_t sym_ahead_order(const struct sym_ctx *ctx, const char **names, size_t max);

/* Set/replace the recorded build id of a DSO (BUILD_ID feature may come
 * after the MMAP that created it). Ignored once the DSO was opened. */
void sym_dso_set_build_id(struct sym_dso *dso, const u8 *build_id,
			  size_t size);

/*
 * Resolve @dso by its symbol table only, without DWARF lines or inlines
 * (py-spy does so for the python binary and libpython, docs/pyspy-formats.md
 * §1.8 item 3; it also skips reading their debug info). Best called
 * before the first sym_resolve() on @dso; a change drops its cache.
 */
void sym_dso_set_no_dwarf(struct sym_dso *dso, bool no_dwarf);

/*
 * A live session's DSO mapped by a process in another mount namespace (a
 * container): its path is looked for under @root ("/proc/PID/root")
 * after --symfs and before this machine's own path, the build id
 * deciding as everywhere. Only before the DSO is opened; the first root
 * given stays. 0 or -ENOMEM.
 */
int sym_dso_set_root(struct sym_ctx *ctx, struct sym_dso *dso, const char *root);

/*
 * A live session's DSO: @path ("/proc/PID/map_files/START-END" of a
 * mapping of it) opens the mapped file itself, which only root may open
 * (CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN). Tried first for a file the
 * kernel names "(deleted)" (replaced since it was mapped: its path names
 * another file), else after every other place; the build id deciding as
 * everywhere. Only before the DSO is opened; the first path given stays.
 * 0 or -ENOMEM.
 */
int sym_dso_set_mapped(struct sym_ctx *ctx, struct sym_dso *dso, const char *path);

/* The path the DSO was recorded under, as given to sym_dso_get(). */
const char *sym_dso_name(const struct sym_dso *dso);

/* The DSO of @ctx with @dso's path, build id and no-DWARF setting (@dso
 * belongs to another ctx over the same recording: -j N's sessions resolve
 * through one shared ctx, docs/design.md §6.4). 0 or -ENOMEM. */
int sym_dso_twin(struct sym_ctx *ctx, const struct sym_dso *dso, struct sym_dso **out);

/*
 * Unwind tables of @dso for the address at @file_off: *@vaddr gets its
 * ELF address, *@eh the .eh_frame CFI (may be NULL), valid until
 * sym_ctx_free(). Returns 0, -ENOENT when the DSO has no file or the
 * offset lies in no segment, or -ENOMEM.
 */
typedef struct Dwarf_CFI_s Dwarf_CFI;
int sym_dso_unwind_info(struct sym_ctx *ctx, struct sym_dso *dso, u64 file_off,
			u64 *vaddr, Dwarf_CFI **eh);
/* The .debug_frame CFI of a found @dso, or NULL; opens its DWARF on the
 * first call, so ask only when .eh_frame has nothing. Valid until
 * sym_ctx_free(). */
Dwarf_CFI *sym_dso_debug_cfi(struct sym_dso *dso);

/* The function range [*@start, *@end) (ELF addresses) of the
 * .eh_frame FDE holding ELF address @vaddr, as .eh_frame_hdr's table and
 * the FDE give it: what names code without a symbol (`LIB+0xOFF`).
 * 1, 0 when no FDE holds it, or -ENOMEM. */
int sym_dso_fde_range(struct sym_ctx *ctx, struct sym_dso *dso, u64 vaddr,
		      u64 *start, u64 *end);

/* True once opened, if an ELF file was found and used. */
bool sym_dso_found(struct sym_ctx *ctx, struct sym_dso *dso);
/* The ELF e_machine of @dso's file (EM_AARCH64...), 0 if none is found:
 * the architecture of a recording without HEADER_ARCH (docs/arm64.md §1). */
unsigned sym_dso_machine(struct sym_ctx *ctx, struct sym_dso *dso);

/* One resolved frame. Innermost first when there are inlines. */
struct sym_frame {
	const char *func; /* demangled, no parameters; NULL if unknown */
	const char *file; /* absolute or as recorded in DWARF; NULL if none */
	int line;	  /* 0 if unknown */
};

#define SYM_MAX_FRAMES 16

/*
 * Resolve @file_off (the offset in the file: ip - map.start + map.pgoff)
 * in @dso. @is_return: the address is a return address (a non-leaf
 * callchain entry), so look up file_off - 1 for the line and inline
 * scopes (the call instruction, as addr2line users do).
 *
 * Fills up to SYM_MAX_FRAMES frames, innermost (deepest inline) first,
 * the outermost being the real function containing the address. Returns
 * the number of frames (>= 0; 0 = nothing known), or -ENOMEM.
 * Results are cached per (dso, file_off, is_return).
 */
int sym_resolve(struct sym_ctx *ctx, struct sym_dso *dso, u64 file_off,
		bool is_return, struct sym_frame *frames);
/* sym_resolve() that neither asks nor fills the cache: for a caller that
 * keeps its own and asks once per (dso, file_off, is_return), the frame
 * cache of stacks.c, where the cache only cost a miss and a copy for
 * each distinct address (docs/design.md §6.10). The frames' strings live
 * as long as @ctx, as sym_resolve()'s do. */
int sym_resolve_once(struct sym_ctx *ctx, struct sym_dso *dso, u64 file_off,
		     bool is_return, struct sym_frame *frames);

/*
 * Whether kernel symbols can be used for a profile whose kernel map
 * started at @text_addr (the pgoff of the `[kernel.kallsyms]_text` MMAP,
 * i.e. the runtime address of _text). True only if the kallsyms file is
 * readable, has real addresses, and its _text equals @text_addr (same
 * boot, same KASLR slide). 0 means "unknown": then use kallsyms as is if
 * the addresses are real. /proc/kallsyms must also be the recorded
 * kernel's (sym_kernel_set_build_id, sym_kernel_set_release): names from
 * another kernel are worse than addresses.
 */
bool sym_kernel_usable(struct sym_ctx *ctx, u64 text_addr);

/*
 * The recorded kernel's build id (the BUILD_ID feature's
 * [kernel.kallsyms] entry). When the caller chose no kallsyms file and
 * perf's build-id cache holds that kernel's symbols
 * (<buildid_dir>/[kernel.kallsyms]/<id>/kallsyms, which perf record
 * saves), they are used instead of /proc/kallsyms: they match the
 * profile even after a reboot, and a plain file reads much faster than
 * /proc. Call before the first kernel lookup. 0 or -ENOMEM.
 */
int sym_kernel_set_build_id(struct sym_ctx *ctx, const u8 *id, size_t size);

/*
 * The recorded OS release (HEADER_OSRELEASE), compared with `uname -r`
 * when no build id tells whether /proc/kallsyms is the recorded
 * kernel's. NULL or "" is "unknown". 0 or -ENOMEM.
 */
int sym_kernel_set_release(struct sym_ctx *ctx, const char *release);

/* What sym_kernel_usable() decided last, for `perfspy info`. Strings
 * belong to the ctx. */
struct sym_kernel_desc {
	char build_id[2 * 20 + 1]; /* recorded, hex; "" if none */
	const char *release;	   /* recorded OS release or NULL */
	const char *kallsyms;	   /* file tried, NULL if disabled */
	bool ok;		   /* kernel frames get names from it */
	const char *why;	   /* when not ok: why not, or NULL */
};

void sym_kernel_describe(const struct sym_ctx *ctx, struct sym_kernel_desc *d);

/*
 * Whether the session will name kernel addresses (an event samples the
 * kernel and kernel frames are kept). Set after sym_kernel_set_build_id()
 * and sym_kernel_set_release(): the table may then be loaded while the
 * caller waits for a DSO opened ahead (docs/design.md §6.27), not at the
 * first kernel address. Its messages are said at that first use all the
 * same.
 */
void sym_kernel_prefetch(struct sym_ctx *ctx, bool on);

/*
 * The caller has nothing else to do for now (a thread waiting for
 * work): what sym_kernel_prefetch() asked for is done here, once, if it
 * was not done yet. Cheap when there is nothing to do.
 */
void sym_while_idle(struct sym_ctx *ctx);

/* Resolve a kernel address (function name only; modules included).
 * Returns 1 and fills frames[0], 0 if unknown, or -ENOMEM. */
int sym_kernel_resolve(struct sym_ctx *ctx, u64 addr, struct sym_frame *frame);

/*
 * Demangle @name (Itanium C++ ABI, `_Z...`) without parameters or return
 * type, py-spy's native style (`ns::Class::method`, template arguments
 * kept). Returns a ctx-owned string, @name itself when it is not
 * mangled, or NULL on ENOMEM.
 */
const char *sym_demangle(struct sym_ctx *ctx, const char *name);

#endif
