/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Joining py-spy captures with perf-derived stacks (perfspy_merge() in
 * perfspy.h; issue 4). The perf stacks are the clock: every perf sample
 * is written out exactly once, so the merged total equals the perf total.
 * py-spy supplies detail perf cannot see:
 *
 *  - Python mode (perf stacks with Python frames, CPython 3.12+ -X perf):
 *    a perf stack's Python skeleton (the Python frames as (last name
 *    component, file), lines ignored) is looked up among the py-spy
 *    stacks' skeletons; its count is split over the py-spy line variants
 *    of the matched frames in proportion to their py-spy counts, and the
 *    perf frames keep their places with py-spy's current lines in place
 *    of the function first lines perfspy prints
 *    (docs/pyspy-formats.md §1.3 LineNo::LastInstruction vs --function).
 *  - Native join (perf stacks with no Python frame: interpreters without
 *    perf trampolines): the native frames after a py-spy --native stack's
 *    last Python frame (§1.8: extension entry points, ctypes targets) are
 *    matched by name against a run of the perf stack's frames; the perf
 *    stack takes that py-spy stack's frames down to its last Python frame
 *    and keeps its own frames from the matched run on (deeper native and
 *    kernel frames py-spy could not unwind).
 *
 * The pieces: merge_frames.c (what frames are), merge.c (the key index,
 * matching, the public entry), merge_out.c (apportioning, writing).
 */
#ifndef PERFSPY_MERGE_H
#define PERFSPY_MERGE_H

#include "perfspy.h"
#include "pyspy.h"
#include "common/hash.h"
#include "common/util.h"

#define MG_NO_ATOM UINT32_MAX
#define MG_MAX_NATIVE 16 /* native frames of a path used in keys */

enum mg_key_kind {
	MG_K_EXACT = 1,	    /* the whole Python skeleton */
	MG_K_SUFFIX = 2,    /* its last k Python frames */
	MG_K_EXACT_NAT = 3, /* the whole skeleton + a native path prefix */
	MG_K_NATIVE = 4,    /* a native path prefix alone (native join) */
};

/* What one distinct frame text is, per side. */
struct mg_frame {
	u8 kind;  /* pys_kind_of() + 1; 0 = not classified yet */
	u32 atom; /* PYTHON: (name, file) atom; NATIVE: name atom or MG_NO_ATOM */
	s32 line; /* PYTHON: line, 0 when none */
	u64 tid;  /* THREAD: decimal OS thread id, 0 when not decimal */
};

/* A stack of one side, seen through the frames that matter. */
struct mg_view {
	const u32 *ids;
	struct fold_ids buf; /* where ids may lie (fold_stack()) */
	u32 nr;
	u64 count;
	u64 tid;     /* of the thread root, 0 if none */
	u32 first;   /* index of the first frame that is not a pseudo-frame */
	u32 *py;     /* positions of the Python frames */
	u32 nr_py;
	u32 *nat;    /* native atoms after the last Python frame */
	u32 nr_nat;
	size_t cap_py, cap_nat;
};

/* A variant: one line tuple (Python mode) or py-spy prefix (native
 * join), its py-spy weight, and the rounding remainder carried over from
 * earlier perf stacks of the same key (in 1/W sample units). */
struct mg_var {
	u32 rep; /* a py-spy stack index with this variant */
	u64 weight;
	__int128 credit;
};

struct mg_entry {
	u64 hash;
	u64 tid;
	u32 rep;      /* py-spy stack that created the key (verification) */
	u32 len_py;   /* Python frames in the key */
	u32 len_nat;  /* native frames in the key */
	u8 kind;
	u32 head;     /* first link + 1 of the py-spy stacks with this key */
	struct mg_var *vars;
	u32 nr_vars;
	bool built;
	u64 total;    /* sum of the variants' weights */
};

struct mg_link {
	u32 stack;
	u32 next; /* link + 1, 0 = end */
};

/* One input folder and what its frames are. */
struct mg_side {
	const struct perfspy_folder *f;
	struct mg_frame *fr; /* by frame id */
	size_t nr_fr, cap_fr;
	u32 *out;	     /* frame id -> output frame id + 1 (0 = not yet) */
	size_t nr_out, cap_out;
	bool threads;	     /* some stack has a decimal thread root */
};

/* A py-spy stack: its view, kept in pools. */
struct mg_pstack {
	const u32 *ids;
	u32 nr;
	u64 count;
	u64 tid;
	u32 first;
	u32 end;	     /* index of the last Python frame + 1 */
	u32 py_off, nr_py;   /* Python atoms in m->pool, their lines in m->lines */
	u32 nat_off, nr_nat; /* native atoms in m->pool */
};

/* Perf Python files, sorted by basename hash, for canonicalizing
 * py-spy's file names (speedscope full paths vs perfspy short ones). */
struct mg_pfile {
	u64 bhash;
	u32 file;
};

struct mg {
	struct log_sink log;
	/* The py-spy stacks' ids (mg_pstack.ids): fold_stack() lends a
	 * stack's ids only until the next one. Zeroed is empty. */
	struct arena ps_ids;
	const char *const *py_files;
	bool thread_aware, native_join, keep_roots, any_native_keys;
	u32 min_suffix;
	struct perfspy_folder *atoms; /* scratch interner: atom texts */
	struct perfspy_folder *files; /* scratch interner: file names */
	struct mg_side perf, py;
	struct mg_pfile *pfiles;
	size_t nr_pfiles, cap_pfiles;
	u32 *canon; /* file id -> canonical file id + 1; bit 31: on the perf side */
	size_t nr_canon, cap_canon;
	bool pfiles_sorted;

	struct mg_pstack *ps;
	size_t nr_ps, cap_ps;
	u32 *pool;
	size_t nr_pool, cap_pool;
	s32 *lines; /* parallel to pool */
	size_t cap_lines;
	struct mg_entry *ents;
	size_t nr_ents, cap_ents;
	struct htab ent_tab; /* key -> index into ents (struct mg_slot) */
	struct mg_link *links;
	size_t nr_links, cap_links;

	struct perfspy_folder *out;
	struct perfspy_folder *unmatched;
	struct idmap rew; /* (perf frame id, line) -> output frame id */
	char *text;
	size_t cap_text;
	u32 *obuf;
	size_t cap_obuf;
	u64 *alloc;
	size_t cap_alloc;
	u32 *sort;
	size_t cap_sort;
	u64 *hs; /* perf suffix hashes by length */
	size_t cap_hs;
	u32 *pa; /* perf frame atoms */
	size_t cap_pa;
	struct mg_view pv;
	struct perfspy_merge_stats st;
	/* Perf-side definition lines per (name, file) atom (merge_frames.c):
	 * defs[atom] holds the distinct first lines perf's Python frames
	 * carry for that name in that file. */
	struct mg_defs *defs;
	size_t nr_defs, cap_defs;
	/* Sources (perfspy_merge_opts.sources), scanned per canonical file
	 * id on first use (merge_frames.c, py-spy frames). */
	const char *const *sources;
	const char **src_files, **src_dirs; /* sources split, on first use */
	size_t nr_src_files, nr_src_dirs;
	bool src_split;
	struct mg_src *srcs;
	size_t nr_srcs, cap_srcs;
};

struct mg_src {
	struct deftab *tab; /* raw table (source order), NULL: none */
	bool tried;
};

struct mg_defs {
	s32 *line;
	u32 n, cap;
};

/* Classify stack @idx of side @s into @v. 0 or -ENOMEM. */
int mg_build_view(struct mg *m, struct mg_side *s, size_t idx, struct mg_view *v);

/* Classify frame @id of @s (once); NULL on -ENOMEM. */
const struct mg_frame *mg_frame(struct mg *m, struct mg_side *s, u32 id);

/* The output frame for frame @id of @s, or FOLD_NO_ID on -ENOMEM. */
u32 mg_out_id(struct mg *m, struct mg_side *s, u32 id);

/* Variants of @e, built and cached on first use. 0 or -ENOMEM. */
int mg_build_vars(struct mg *m, struct mg_entry *e);

/* Write perf stack @v: as it is, or with entry @e's Python lines, or
 * joined at frame @j with @e's py-spy prefixes. 0 or -ENOMEM. */
int mg_emit_asis(struct mg *m, const struct mg_view *v);
int mg_emit_python(struct mg *m, const struct mg_view *v, struct mg_entry *e);
int mg_emit_native(struct mg *m, const struct mg_view *v, struct mg_entry *e, u32 j);
/* Add @v's skeleton (Python frames, no lines) to opts->unmatched. */
int mg_note_unmatched(struct mg *m, const struct mg_view *v);


/*
 * Split @count over @n variants with weights @vars[i].weight: each gets
 * count * w / W rounded down, and the leftover samples go to the largest
 * remainders, where a remainder includes the credit carried in
 * vars[i].credit (updated here). @out[i] receives the allocation; the
 * allocations sum to @count exactly. @scratch holds @n indices.
 * 0, or -EINVAL when @n or @total is 0.
 */
int mg_apportion(u64 count, struct mg_var *vars, u32 n, u64 total, u64 *out,
		 u32 *scratch);

#endif
